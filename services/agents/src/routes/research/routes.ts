import type { RouterContext } from '@koa/router';
import { AppError } from '@lore/runtime';
import type { StreamSink } from '../../application/generic-workflows';
import type { Principal } from '../../application/principal';
import type { ResearchStartInput, ResearchView } from '../../application/research/research';
import type { ActiveResearchRow } from '../../store/research';
import { AGENTS_SECURITY, FAMILY, route, type AgentsGuard, type AgentsState } from '../route';
import { serveEventStream } from '../event-stream';
import { RESEARCH_STREAM, activeView, presentActive, presentResult, presentStatus, researchResultView, researchStatusView, respondBody, respondQuery, respondView, startBody, stopView, streamQuery, threadParams } from './schema';

export interface ResearchRouteDeps {
  guard: AgentsGuard;
  start(p: Principal, input: ResearchStartInput): Promise<ResearchView>;
  view(p: Principal, threadId: string): Promise<ResearchView>;
  active(p: Principal): Promise<ActiveResearchRow[]>;
  respond(p: Principal, threadId: string, answer: string): Promise<{ thread_id: string; status: string; message: string }>;
  stop(p: Principal, threadId: string): Promise<{ thread_id: string; status: string; message: string }>;
  /** The caller's research and its last event's number, or 404. */
  streamable(p: Principal, threadId: string): Promise<{ thread_id: string; last_seq: number }>;
  follow(tenantId: string, threadId: string, afterSeq: number, sink: StreamSink): Promise<void>;
  /** Takes a slot of the open streams (503 when none is left, 429 when the tenant holds its share); answers the function that gives it back. */
  enterStream(tenantId: string): () => void;
}

const family = FAMILY.envelope;
const NOT_FOUND = { 404: family.error("no such research of the caller (another tenant's is not found either)") };
const INVALID = (what: string) => ({ 422: { description: `invalid input: body (a); ${what}: body (b)`, schema: family.invalidView } });
const LAST_ID = /^\d{1,15}$/;

/** The position to resume after: `Last-Event-ID` (or `?last_event_id=`), 0 without; 422 body (a) for anything else. */
function resumePoint(ctx: RouterContext<AgentsState>, query: { last_event_id?: string }, lastSeq: number): number {
  const header = ctx.get('last-event-id');
  const [raw, field] = header !== '' ? [header.trim(), 'header.Last-Event-ID'] : [query.last_event_id?.trim(), 'query.last_event_id'];
  if (raw === undefined || raw === '') return 0;
  const refuse = (message: string) => new AppError('UNPROCESSABLE', message, { body: { status_code: 422, message: 'validation failed', errors: [{ field, message, type: 'value_error' }], data: null } });
  if (!LAST_ID.test(raw)) throw refuse('an event id is a whole number (the `id:` of a received event)');
  const n = Number(raw);
  if (n > lastSeq) throw refuse(`no event ${n} yet: the research's last event is ${lastSeq}`);
  return n;
}

/** Answers a server-sent stream of the research's events after `afterSeq`; the slot `leave` is given back when it ends. */
function serveStream(ctx: RouterContext<AgentsState>, deps: ResearchRouteDeps, threadId: string, afterSeq: number, leave: () => void): void {
  const tenantId = ctx.state.principal.tenantId;
  serveEventStream(ctx, (sink) => deps.follow(tenantId, threadId, afterSeq, sink), leave, { what: 'research', threadId });
}

/** Spec 3's deep research routes (envelope family: 422 bodies (a) and (b)). */
export function researchRoutes(deps: ResearchRouteDeps) {
  const common = { security: AGENTS_SECURITY, invalid: family.invalid, unreadable: family.unreadable };
  const tags = ['research'];
  return [
    route({
      ...common,
      method: 'post',
      path: '/research/start',
      operationId: 'researchStart',
      summary: 'Start a deep research run',
      description:
        '`query` 1–4,000 (required); `serviceId` (required; at most LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE running workflows per serviceId, else 429); `allow_clarification` (default false: with true, the run first asks one clarifying question and waits for `POST /research/respond/{thread_id}`); `max_concurrent_research_units` 1–20 (5): researchers at once; `max_researcher_iterations` 1–10 (3): search/fetch/think iterations per researcher; `tenant_id` is ignored (the tenant is the caller\'s). Answers the research result with status `processing`; follow it with the stream route.',
      tags,
      guards: deps.guard('write', 'envelope'),
      body: startBody,
      ok: { status: 200, description: 'the research result, status processing', schema: researchResultView },
      responses: { 429: family.error('the serviceId already has its most running workflows; Retry-After'), ...INVALID('a blank query') },
      handler: async (ctx, { body }) => presentResult(await deps.start(ctx.state.principal, body)),
    }),
    route({
      ...common,
      method: 'get',
      path: '/research/stream/:thread_id',
      operationId: 'researchStream',
      summary: 'Follow a research run as server-sent events',
      description:
        'Every event of the run after `Last-Event-ID` (header; or `?last_event_id=`), each once and in order, then live ones until it completes, fails or is stopped; without either, from its first event. A waiting clarification stays open (keep-alive comments) until answered. An id beyond the run\'s last event is 422 body (a).',
      tags,
      guards: deps.guard('read', 'envelope'),
      params: threadParams,
      query: streamQuery,
      parameters: [{ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'the `id:` of the last event received' }],
      ok: { status: 200, description: 'the research\'s events as server-sent events', content: RESEARCH_STREAM },
      responses: { ...NOT_FOUND, 429: family.error('the tenant already holds its most open streams on this instance (a quarter of them); Retry-After'), 503: family.error('too many open streams on this instance; Retry-After'), ...INVALID('none') },
      handler: async (ctx, { params, query }) => {
        const w = await deps.streamable(ctx.state.principal, params.thread_id);
        const after = resumePoint(ctx, query, w.last_seq);
        serveStream(ctx, deps, w.thread_id, after, deps.enterStream(ctx.state.principal.tenantId));
      },
    }),
    route({
      ...common,
      method: 'get',
      path: '/research/status/:thread_id',
      operationId: 'researchStatus',
      summary: 'A research run\'s status',
      description: 'The research result `{thread_id, status, message, research_brief, final_report}` and where the run is: `current_step`, `clarification_question`, `partial` (a budget ended it early), the sources read, its settings.',
      tags,
      guards: deps.guard('read', 'envelope'),
      params: threadParams,
      ok: { status: 200, description: 'the status object', schema: researchStatusView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => presentStatus(await deps.view(ctx.state.principal, params.thread_id)),
    }),
    route({
      ...common,
      method: 'get',
      path: '/research/active',
      operationId: 'researchActive',
      summary: 'The caller\'s active research runs',
      description: 'Running (`processing`, `stopping`) or waiting for a clarification (`awaiting_clarification`), newest first, at most 200: the caller\'s own (a key or an administrator: the tenant\'s).',
      tags,
      guards: deps.guard('read', 'envelope'),
      ok: { status: 200, description: 'the active research runs', schema: activeView },
      handler: async (ctx) => presentActive(await deps.active(ctx.state.principal)),
    }),
    route({
      ...common,
      method: 'post',
      path: '/research/respond/:thread_id',
      operationId: 'researchRespond',
      summary: 'Answer the clarifying question',
      description:
        '`response` 1–4,000: the answer, as spec 3\'s query parameter `?response=` or in a JSON body (`response`, or `query`); the query parameter wins when both are sent, and one of them is required (422). The run continues (status `processing`). A run not waiting for an answer: 422 body (b).',
      tags,
      guards: deps.guard('write', 'envelope'),
      params: threadParams,
      query: respondQuery,
      body: respondBody,
      ok: { status: 200, description: 'status and message', schema: respondView },
      responses: {
        ...NOT_FOUND,
        ...INVALID('no answer given, or a run not waiting for an answer'),
        // Node's HTTP parser answers it, with no body, before Lore reads the request: a long answer belongs in the body.
        431: { description: 'the request line and headers are longer than the server reads (16 KiB): send a long `response` in the JSON body' },
      },
      handler: async (ctx, { params, query, body }) => {
        const answer = query.response ?? body.response ?? body.query;
        if (answer === undefined) throw family.invalid([{ path: 'response', message: 'response is required' }], 'body');
        return deps.respond(ctx.state.principal, params.thread_id, answer);
      },
    }),
    route({
      ...common,
      method: 'delete',
      path: '/research/stop/:thread_id',
      operationId: 'researchStop',
      summary: 'Stop a research run',
      description: 'A running one goes `stopping` and its worker ends it `stopped` within about a second; one waiting for a clarification is `stopped` at once; an ended one answers its own status.',
      tags,
      guards: deps.guard('write', 'envelope'),
      params: threadParams,
      ok: { status: 200, description: 'the stop result', schema: stopView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => ({ success: true, ...(await deps.stop(ctx.state.principal, params.thread_id)) }),
    }),
  ];
}
