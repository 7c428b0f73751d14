import type { Principal } from '../../application/principal';
import type { SessionKind, SessionOptions } from '../../application/sessions/agent';
import type { PreparedSession, PrepareInput, UploadedFile } from '../../application/sessions/service';
import { agentsError } from '../../application/errors';
import { readFilePart } from '../multipart';
import { AGENTS_SECURITY, FAMILY, envelopeValidationError, route, type AgentsGuard, type AgentsState } from '../route';
import type { RouterContext } from '@koa/router';
import { sessionsAsyncApi } from './asyncapi';
import { unconfiguredCountryMessage } from '../../domain/egress';
import { UPLOAD_BODY, crawlerBody, deepSearchBody, deepSearchPreparedView, preparedView, uploadView, webResearchBody, type SessionStartBody } from './schema';

export interface SessionRouteDeps {
  guard: AgentsGuard;
  prepare(p: Principal, kind: SessionKind, input: PrepareInput): Promise<PreparedSession>;
  upload(p: Principal, threadId: string, file: UploadedFile): Promise<{ workspace_id: string; paths: string[] }>;
  /** The configured model a label maps to (null: the service's default model). */
  modelOf(label: string | null): string | null;
  /** Largest reference file a deep search upload keeps. */
  maxUploadBytes(): number;
  /** The country codes with a configured egress proxy (a `proxy_country_code` outside them is 422). */
  egressCountries(): string[];
  /** A deep search's live page path with its signed token (docs/agents.md, "Live session page"). */
  livePath(p: Principal, threadId: string): string;
  /** The service's version (the AsyncAPI document's). */
  version(): string;
}

/** Where the AsyncAPI document of the session sockets is served (open, like the OpenAPI document). */
export const SESSIONS_ASYNCAPI_PATH = '/api/agents/asyncapi.json';

/** The websocket paths of the session kinds, as the gateway forwards them (spec 3). */
export const SOCKET_PATHS = {
  deep_search: (threadId: string) => `/api/service-deep-search/ws/${threadId}?api-key=<your-api-key>`,
  web_research: (threadId: string) => `/api/agent/web-and-research?api-key=<your-api-key>&thread_id=${threadId}`,
  agentic_crawler: (threadId: string) => `/api/agent/agentic-crawler?api-key=<your-api-key>&thread_id=${threadId}`,
} as const;

/**
 * The public address the client called, as the gateway forwarded it (`x-forwarded-host`, `x-forwarded-proto`):
 * sockets are `wss://` when the call came over https, `ws://` otherwise.
 */
function publicOrigin(ctx: RouterContext<AgentsState>): { ws: string; http: string } {
  const host = (ctx.get('x-forwarded-host') || ctx.get('host')).split(',')[0]!.trim();
  const secure = ctx.get('x-forwarded-proto').split(',')[0]!.trim() === 'https';
  return { ws: `${secure ? 'wss' : 'ws'}://${host}`, http: `${secure ? 'https' : 'http'}://${host}` };
}

const family = FAMILY.envelope;
const responses = {
  404: family.error("thread_id names no session of the caller's (another tenant's is not found either)"),
  422: { description: 'invalid input (an unknown llm_model label or proxy_country_code, proxy without a code, a code with no configured egress proxy): body (a); ids already in use, or a session not waiting for an answer: body (b)', schema: family.invalidView },
};

/**
 * Spec 3's session start routes (envelope family) and deep search's upload. A start prepares a session and runs
 * nothing: the session runs once a client connects to `websocket_url` with the placeholder replaced by its key.
 */
export function sessionRoutes(deps: SessionRouteDeps) {
  const common = { security: AGENTS_SECURITY, invalid: family.invalid, unreadable: family.unreadable };
  const optionsOf = (b: Partial<SessionStartBody>): SessionOptions => {
    // A code of spec 3's set that this Lore has no egress proxy for cannot be honoured: refused before anything is kept.
    const code = b.proxy ? b.proxy_country_code : undefined;
    if (code && !deps.egressCountries().includes(code)) throw envelopeValidationError([{ path: 'proxy_country_code', message: unconfiguredCountryMessage(code, deps.egressCountries()) }], 'body');
    return optionsFrom(b);
  };
  const optionsFrom = (b: Partial<SessionStartBody>): SessionOptions => ({
    llm_model: b.llm_model ?? null,
    model: deps.modelOf(b.llm_model ?? null),
    live_url: b.live_url ?? false,
    proxy: b.proxy ?? false,
    proxy_country_code: b.proxy ? (b.proxy_country_code ?? null) : null,
    workspace_id: null,
    uploads: [],
  });
  const startOf = (kind: SessionKind, b: Partial<SessionStartBody> & { prompt: string }): PrepareInput => ({ prompt: b.prompt, thread_id: b.thread_id, list_id: b.list_id, options: optionsOf(b) });
  let asyncApi: Record<string, unknown> | undefined;
  return [
    route({
      method: 'get',
      path: SESSIONS_ASYNCAPI_PATH,
      operationId: 'sessionsAsyncApiDocument',
      summary: 'The AsyncAPI 3 document of the session sockets',
      description: 'Every message the deep search, web research and crawler sockets send and accept (services/agents/asyncapi.json).',
      tags: ['sessions'],
      security: [],
      ok: { status: 200, description: 'the AsyncAPI 3.0 document', content: { 'application/json': { schema: { type: 'object' } } } },
      handler: (ctx) => {
        ctx.set('cache-control', 'public, max-age=300');
        asyncApi ??= sessionsAsyncApi(deps.version());
        return asyncApi;
      },
    }),
    route({
      ...common,
      method: 'post',
      path: '/service-deep-search/start',
      operationId: 'deepSearchStart',
      summary: 'Prepare a deep search session, or answer its clarifying question',
      description:
        'Answers status `processing` with the websocket address; the search runs once a client connects. Called again with the same `thread_id` and `list_id` while the session waits on a clarifying question, `prompt` is the answer.',
      tags: ['deepSearch'],
      guards: deps.guard('write', 'envelope'),
      body: deepSearchBody,
      ok: { status: 200, description: 'the session-preparation response', schema: deepSearchPreparedView },
      responses,
      handler: async (ctx, { body }) => {
        const s = await deps.prepare(ctx.state.principal, 'deep_search', startOf('deep_search', body));
        const origin = publicOrigin(ctx);
        return {
          success: true,
          thread_id: s.thread_id,
          list_id: s.list_id,
          websocket_url: origin.ws + SOCKET_PATHS.deep_search(s.thread_id),
          status: 'processing',
          live_url: s.options.live_url ? origin.http + deps.livePath(ctx.state.principal, s.thread_id) : null,
          workspace_id: s.options.workspace_id,
        };
      },
    }),
    route({
      ...common,
      method: 'post',
      path: '/service-deep-search/upload',
      operationId: 'deepSearchUpload',
      summary: "Add a reference file to a deep search's workspace",
      description: 'Multipart: `file` and `thread_id` (from start). Answers the workspace and the server-side paths of every file the session has; the client\'s file name is cleaned, never used as a path.',
      tags: ['deepSearch'],
      guards: deps.guard('write', 'envelope'),
      bodyKind: 'stream',
      bodyContent: UPLOAD_BODY,
      ok: { status: 200, description: 'the file is kept', schema: uploadView },
      responses: {
        400: family.error('a malformed multipart body'),
        404: responses[404],
        413: family.error('the file is larger than the upload limit'),
        415: family.error('the body is not multipart/form-data'),
        422: { description: 'no `file` part, or no `thread_id`: body (a)', schema: family.invalidView },
      },
      handler: async (ctx) => {
        const { file: part, fields } = await readFilePart(ctx, 'file', deps.maxUploadBytes());
        const threadId = fields.thread_id;
        const issues = [
          ...(part ? [] : [{ path: 'file', message: 'Field required: a file part named "file"' }]),
          ...(threadId ? [] : [{ path: 'thread_id', message: 'Field required: the thread_id deep search start answered' }]),
        ];
        if (issues.length > 0 || !part || !threadId) throw envelopeValidationError(issues, 'body');
        if (part.tooLarge) throw agentsError('PAYLOAD_TOO_LARGE', `the file is larger than ${deps.maxUploadBytes()} bytes`);
        const r = await deps.upload(ctx.state.principal, threadId, { filename: part.filename, bytes: part.bytes, contentType: 'application/octet-stream' });
        return { success: true, workspace_id: r.workspace_id, paths: r.paths };
      },
    }),
    route({
      ...common,
      method: 'post',
      path: '/webandreasearch/start',
      operationId: 'webResearchStart',
      summary: 'Prepare a web research session',
      description: 'Answers status `ready`; nothing runs until a client connects to `websocket_url` (the placeholder replaced by the key). `llm_model` takes the legacy labels only.',
      tags: ['webResearch'],
      guards: deps.guard('write', 'envelope'),
      body: webResearchBody,
      ok: { status: 200, description: 'the session-preparation response', schema: preparedView },
      responses,
      handler: async (ctx, { body }) => {
        const s = await deps.prepare(ctx.state.principal, 'web_research', startOf('web_research', body));
        return {
          success: true,
          message: s.answered ? 'the answer was passed to the session' : 'session ready: connect to websocket_url to start it',
          thread_id: s.thread_id,
          list_id: s.list_id,
          websocket_url: publicOrigin(ctx).ws + SOCKET_PATHS.web_research(s.thread_id),
          status: s.answered ? s.status : 'ready',
        };
      },
    }),
    route({
      ...common,
      method: 'post',
      path: '/agentic-crawler/start',
      operationId: 'agenticCrawlerStart',
      summary: 'Prepare an agentic crawler session',
      description: 'Answers status `ready`; the crawler starts when a client connects to `websocket_url`. It reads the prompt\'s URLs (or what a web search for the prompt finds) and writes the companies and people it finds into `list_id`.',
      tags: ['agenticCrawler'],
      guards: deps.guard('write', 'envelope'),
      body: crawlerBody,
      ok: { status: 200, description: 'the session-preparation response', schema: preparedView },
      responses,
      handler: async (ctx, { body }) => {
        const s = await deps.prepare(ctx.state.principal, 'agentic_crawler', startOf('agentic_crawler', body));
        return {
          success: true,
          message: s.answered ? 'the answer was passed to the session' : 'session ready: connect to websocket_url to start it',
          thread_id: s.thread_id,
          list_id: s.list_id,
          websocket_url: publicOrigin(ctx).ws + SOCKET_PATHS.agentic_crawler(s.thread_id),
          status: s.answered ? s.status : 'ready',
        };
      },
    }),
  ];
}
