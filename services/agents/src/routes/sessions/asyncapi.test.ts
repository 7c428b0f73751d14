import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENTS_VERSION } from '../../agents-service';
import { messageOf } from '../../application/sessions/messages';
import { sessionMessage, sessionsAsyncApi } from './asyncapi';

describe('the session sockets AsyncAPI document', () => {
  it('is committed as generated (node --conditions=lore-src --import tsx services/agents/src/cli/write-openapi.ts)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'asyncapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(sessionsAsyncApi(AGENTS_VERSION))));
  });

  it('names the three socket addresses and every message kind', () => {
    const d = sessionsAsyncApi('1.0.0') as { asyncapi: string; channels: Record<string, { address: string; messages: Record<string, unknown> }> };
    expect(d.asyncapi).toBe('3.0.0');
    expect(Object.values(d.channels).map((c) => c.address)).toEqual(['/api/service-deep-search/ws/{thread_id}', '/api/agent/web-and-research', '/api/agent/agentic-crawler']);
    for (const c of Object.values(d.channels)) expect(Object.keys(c.messages).sort()).toEqual(['answer', 'clarification', 'done', 'error', 'progress', 'row', 'stop']);
  });

  it('describes every message a logged event becomes', () => {
    const events = [
      { seq: 1, type: 'started', data: { kind: 'agentic_crawler' }, at: '2026-11-25T12:00:00.000Z' },
      { seq: 2, type: 'progress', data: { stage: 'fetching', message: 'read a page', data: { url: 'https://a.example/' } }, at: '2026-11-25T12:00:00.000Z' },
      { seq: 3, type: 'clarification', data: { index: 0, question: 'which site?' }, at: '2026-11-25T12:00:00.000Z' },
      { seq: 4, type: 'answer', data: { index: 0, answer: 'https://a.example/' }, at: '2026-11-25T12:00:00.000Z' },
      { seq: 5, type: 'row', data: { row_id: 'row_1', entity_key: 'company:a.example', entity_type: 'company', fields: { name: 'A' }, provenance: { source_url: 'https://a.example/', fetched_at: '2026-11-25T12:00:00.000Z', snippet: 'A makes things' } }, at: '2026-11-25T12:00:00.000Z' },
      { seq: 6, type: 'done', data: { outcome: 'budget', summary: 'budget spent: fetches', rows: 1 }, at: '2026-11-25T12:00:00.000Z' },
      { seq: 7, type: 'error', data: { message: 'failed' }, at: '2026-11-25T12:00:00.000Z' },
      { seq: 8, type: 'stopped', data: { before_start: true }, at: '2026-11-25T12:00:00.000Z' },
    ];
    const messages = events.map((e) => messageOf(e, 'thread', 'list'));
    for (const m of messages) expect(sessionMessage.safeParse(m)).toMatchObject({ success: true });
    expect(messages.map((m) => m.type)).toEqual(['progress', 'progress', 'clarification', 'progress', 'row', 'done', 'error', 'done']);
    expect(messages[5]).toMatchObject({ status: 'completed', outcome: 'budget', rows: 1 });
    expect(messages[7]).toMatchObject({ status: 'stopped' });
  });
});
