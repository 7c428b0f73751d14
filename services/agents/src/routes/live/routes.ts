import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { LiveSession } from '../../application/live-page';
import type { StreamSink } from '../../application/generic-workflows';
import { livePageCsp, livePageHtml } from '../../domain/live-page-html';
import { FAMILY, NONE, errorShape, route } from '../route';
import { serveEventStream } from '../event-stream';

export interface LiveRouteDeps {
  /** The deep search the token opens, or 404. */
  open(token: string | undefined, threadId: string): Promise<LiveSession>;
  follow(session: LiveSession, afterSeq: number, sink: StreamSink): Promise<void>;
  /** Takes a slot of the open streams (503 when none is left, 429 when the tenant holds its share); answers the function that gives it back. */
  enterStream(tenantId: string): () => void;
}

const family = FAMILY.envelope;
/**
 * Any thread id: one that is no deep search's (not even a UUID) opens nothing, and answers the same 404 as a wrong
 * token (until 2026-11-30 one not of a UUID's form was 422 here, and 401 at the gateway without a key).
 */
const liveParams = z.object({ thread_id: z.string() });
const liveQuery = z.object({ token: z.string().max(1_000).optional() });
const NOT_FOUND = {
  404: family.error('no such live page: a wrong, forged or expired token, or no such deep search'),
};
const LAST_ID = /^\d{1,15}$/;

/** Headers of both answers: nothing cached, the token never sent on as a referrer, no framing, no sniffing. */
const PRIVATE_HEADERS = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY' };

const LIVE_STREAM = {
  'text/event-stream': {
    schema: {
      type: 'string',
      description:
        'The session\'s socket messages (docs/agents.md, "Sessions over websockets") as server-sent events: `id: <cursor>`, `event: <type>` (progress, clarification, row, error, done) and `data: <the message as JSON>`. Lines starting with `:` keep a quiet stream open. Ends after `done` or a final `error`; `Last-Event-ID` resumes after that event; a stream asked for after the last event of an ended session answers 204 (EventSource stops).',
    },
  },
};

/**
 * The live page of a deep search (docs/agents.md, "Live session page"): open routes (a browser cannot send the key;
 * the gateway forwards them without a credential), each opened only by the signed token `live_url` carries.
 */
export function liveRoutes(deps: LiveRouteDeps) {
  const common = { security: NONE, invalid: family.invalid, unreadable: family.unreadable, guards: [errorShape('envelope')] };
  return [
    route({
      ...common,
      method: 'get',
      path: '/service-deep-search/live/:thread_id',
      operationId: 'deepSearchLivePage',
      summary: 'The live page of a deep search',
      description: 'An HTML page showing the session live (status, pages visited, rows found with their sources, progress, a clarifying question) from `…/events`. `token` is the signed token of `live_url` (valid LORE_AGENTS_LIVE_URL_TTL_S seconds).',
      tags: ['deepSearch'],
      params: liveParams,
      query: liveQuery,
      ok: { status: 200, description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } },
      responses: NOT_FOUND,
      handler: async (ctx, { params, query }) => {
        const s = await deps.open(query.token, params.thread_id);
        const nonce = randomBytes(16).toString('base64');
        ctx.status = 200;
        ctx.set({ ...PRIVATE_HEADERS, 'content-security-policy': livePageCsp(nonce) });
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = livePageHtml({ threadId: s.threadId, prompt: s.prompt, status: s.status, nonce });
      },
    }),
    route({
      ...common,
      method: 'get',
      path: '/service-deep-search/live/:thread_id/events',
      operationId: 'deepSearchLiveEvents',
      summary: 'The live page\'s stream of a deep search',
      description: 'The session\'s messages after `Last-Event-ID` (from its first without), then live ones until it ends. Opened by the same token as the page.',
      tags: ['deepSearch'],
      params: liveParams,
      query: liveQuery,
      parameters: [{ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'the `id:` of the last event received' }],
      ok: { status: 200, description: 'the session\'s messages as server-sent events', content: LIVE_STREAM },
      responses: { ...NOT_FOUND, 204: { description: 'the session has ended and nothing follows the given Last-Event-ID' }, 429: family.error('the tenant already holds its most open streams on this instance (a quarter of them); Retry-After'), 503: family.error('too many open streams on this instance; Retry-After') },
      handler: async (ctx, { params, query }) => {
        const s = await deps.open(query.token, params.thread_id);
        const header = ctx.get('last-event-id').trim();
        // A browser resends the id it last saw; anything else is not an id, and the stream starts over.
        const after = LAST_ID.test(header) ? Math.min(Number(header), s.lastSeq) : 0;
        if (after >= s.lastSeq && ['completed', 'stopped', 'error'].includes(s.status)) {
          ctx.status = 204;
          ctx.set(PRIVATE_HEADERS);
          return;
        }
        const leave = deps.enterStream(s.tenantId);
        serveEventStream(ctx, (sink) => deps.follow(s, after, sink), leave, { what: 'live', threadId: s.threadId }, { ...PRIVATE_HEADERS, 'cache-control': 'no-store, no-transform' });
      },
    }),
  ];
}
