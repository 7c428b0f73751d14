import { clientMessage, socketTarget } from './socket';

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

describe('clientMessage', () => {
  const ids = { thread_id: 't', list_id: 'l' };
  it('reads a stop and a clarifying answer, exactly as the AsyncAPI document has them', () => {
    expect(clientMessage({ type: 'stop' })).toEqual({ kind: 'stop' });
    expect(clientMessage({ prompt: 'alpha', ...ids })).toEqual({ kind: 'answer', answer: { prompt: 'alpha', ...ids } });
  });

  it('says what is wrong with a message that is almost one of them', () => {
    const problem = (body: unknown) => (clientMessage(body) as { problem: string }).problem;
    expect(problem({ type: 'stop', reason: 'x' })).toMatch(/^invalid stop message: .*reason/);
    expect(problem({ type: 'pause' })).toMatch(/^invalid stop message: type: /);
    expect(problem({ prompt: 'alpha', ...ids, extra: 1 })).toMatch(/^invalid clarifying answer: .*extra/);
    expect(problem({ prompt: '', ...ids })).toMatch(/^invalid clarifying answer: prompt: /);
    expect(problem({ prompt: 'x'.repeat(4001), ...ids })).toMatch(/^invalid clarifying answer: prompt: /);
    expect(problem({ prompt: 'alpha', thread_id: 't' })).toMatch(/^invalid clarifying answer: list_id: /);
    // A stop with an answer's fields is no stop (before, any object with type "stop" stopped the session).
    expect(clientMessage({ type: 'stop', prompt: 'alpha', ...ids }).kind).toBe('invalid');
    for (const other of [{ hello: 1 }, null, [], 'stop', 42, undefined]) expect(problem(other)).toMatch(/^unknown message/);
  });
});
