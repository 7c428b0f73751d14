import { socketTarget } from './socket';

describe('socketTarget', () => {
  it('knows the three session socket paths and their thread', () => {
    expect(socketTarget('/api/service-deep-search/ws/abc?cursor=3')).toMatchObject({ kind: 'deep_search', threadId: 'abc', path: '/api/service-deep-search/ws/abc' });
    expect(socketTarget('/api/agent/web-and-research?thread_id=t1')).toMatchObject({ kind: 'web_research', threadId: 't1' });
    expect(socketTarget('/api/agent/agentic-crawler?thread_id=t2&cursor=9')?.query.get('cursor')).toBe('9');
    expect(socketTarget('/api/agent/agentic-crawler')).toMatchObject({ kind: 'agentic_crawler', threadId: null });
  });

  it('answers null for every other path', () => {
    for (const p of ['/api/agent', '/api/agent/other', '/api/service-deep-search/ws/a/b', '/agentic-crawler/start', '/']) expect(socketTarget(p)).toBeNull();
  });
});
