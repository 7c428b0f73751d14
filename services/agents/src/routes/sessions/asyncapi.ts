import { z } from 'zod';

/**
 * The AsyncAPI 3 document of the session sockets (docs/agents.md, "Sessions over websockets"), built from the zod
 * schemas of every message, committed as services/agents/asyncapi.json and served at `/api/agents/asyncapi.json`.
 * The schemas are also what the socket suite checks each message it receives against.
 */

const cursor = z.number().int().min(1).describe('the sequence number of the event this message comes from: reconnect with `?cursor=<it>` to get everything after it');
const threadId = z.string().describe('the session');
const listId = z.string().describe('the list the session writes its rows into');
const at = z.string().describe('ISO 8601: when the event was written (for a refusal of a client message: when it was refused)');

export const progressMessage = z
  .object({ type: z.literal('progress'), cursor, at, thread_id: threadId, stage: z.string().describe('`started`, `answered`, `searching`, `fetching`... (the agent\'s word)'), message: z.string(), data: z.record(z.string(), z.unknown()).optional() })
  .describe('What the session is doing (a page read, a search, the start, an answer received)');
export const clarificationMessage = z
  .object({ type: z.literal('clarification'), cursor, at, thread_id: threadId, list_id: listId, index: z.number().int().min(0).describe('the question\'s number in the session'), question: z.string() })
  .describe('A question the session waits on: answer with `{prompt, thread_id, list_id}` over the socket (or, for deep search, by calling start again with them)');
export const provenance = z.object({ source_url: z.string(), fetched_at: z.string().describe('ISO 8601'), snippet: z.string().describe('the words on the page the row was taken from, at most 500 characters') });
export const rowMessage = z
  .object({
    type: z.literal('row'),
    cursor,
    at,
    thread_id: threadId,
    list_id: listId,
    row: z.object({ row_id: z.string(), entity_key: z.string(), entity_type: z.string().describe('`company`, `person`, `page`...'), fields: z.record(z.string(), z.unknown()), provenance }),
  })
  .describe('A result row, already written into the list');
export const errorMessage = z
  .object({ type: z.literal('error'), cursor: cursor.nullable(), at, thread_id: threadId, message: z.string() })
  .describe('With a cursor: the session failed and ends. With cursor null: the client\'s last message was refused (unknown, too many, not waiting for an answer); the session goes on');
export const doneMessage = z
  .object({
    type: z.literal('done'),
    cursor,
    at,
    thread_id: threadId,
    list_id: listId,
    status: z.enum(['completed', 'stopped']),
    outcome: z.enum(['completed', 'stopped', 'budget']).describe('`budget`: a budget (fetches, wall time, model tokens) was spent; `summary` says which'),
    summary: z.string(),
    rows: z.number().int().min(0),
  })
  .describe('The session ended; the server closes the socket (1000) after it');
export const sessionMessage = z.discriminatedUnion('type', [progressMessage, clarificationMessage, rowMessage, errorMessage, doneMessage]);

export const stopRequest = z.strictObject({ type: z.literal('stop') }).describe('Stop the session now (it ends with `done`, status `stopped`)');
export const answerRequest = z.strictObject({ prompt: z.string().min(1).max(4000), thread_id: z.string(), list_id: z.string() }).describe('The answer to the clarification the session waits on');

const schema = (s: z.ZodType) => z.toJSONSchema(s, { target: 'draft-2020-12' });

const SOCKETS = {
  deepSearch: { address: '/api/service-deep-search/ws/{thread_id}', title: 'Deep search', parameters: { thread_id: { description: 'the thread_id deep search start answered' } } },
  webResearch: { address: '/api/agent/web-and-research', title: 'Web research', parameters: {} },
  agenticCrawler: { address: '/api/agent/agentic-crawler', title: 'Agentic crawler', parameters: {} },
} as const;

export function sessionsAsyncApi(version: string): Record<string, unknown> {
  const messages = {
    progress: { name: 'progress', payload: schema(progressMessage) },
    clarification: { name: 'clarification', payload: schema(clarificationMessage) },
    row: { name: 'row', payload: schema(rowMessage) },
    error: { name: 'error', payload: schema(errorMessage) },
    done: { name: 'done', payload: schema(doneMessage) },
    stop: { name: 'stop', payload: schema(stopRequest) },
    answer: { name: 'answer', payload: schema(answerRequest) },
  };
  const ref = (name: string) => ({ $ref: `#/components/messages/${name}` });
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  for (const [id, s] of Object.entries(SOCKETS)) {
    channels[id] = {
      address: s.address,
      title: `${s.title} session socket`,
      description:
        'Query: `api-key` (the key, in the query only; the gateway removes it), `thread_id` (web research, crawler), `cursor` (optional: replay after this cursor, 0 from the start). The first connect starts the session. Every message is one JSON text frame.',
      ...(Object.keys(s.parameters).length > 0 ? { parameters: s.parameters } : {}),
      messages: Object.fromEntries(Object.keys(messages).map((m) => [m, ref(m)])),
    };
    operations[`${id}Receive`] = {
      action: 'send',
      channel: { $ref: `#/channels/${id}` },
      summary: 'What the server sends',
      messages: ['progress', 'clarification', 'row', 'error', 'done'].map((m) => ({ $ref: `#/channels/${id}/messages/${m}` })),
    };
    operations[`${id}Client`] = {
      action: 'receive',
      channel: { $ref: `#/channels/${id}` },
      summary: 'What the client may send (at most 16 KiB a message, 5 a second)',
      messages: ['stop', 'answer'].map((m) => ({ $ref: `#/channels/${id}/messages/${m}` })),
    };
  }
  return {
    asyncapi: '3.0.0',
    info: { title: 'Lore agents session sockets', version, description: 'Deep search, web research and the agentic crawler over websockets (spec 3; docs/agents.md, "Sessions over websockets").' },
    defaultContentType: 'application/json',
    channels,
    operations,
    components: { messages },
  };
}
