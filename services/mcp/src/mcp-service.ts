import { createHash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import Koa from 'koa';
import type { Identity } from '@lore/contracts';
import { IDENTITY_HEADER, ROUTE_HEADER, assertNoContentCoding, nameServerSpan, recordingSpan, type IdentitySigner, type Logger } from '@lore/runtime';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  isInitializeRequest,
  type CallToolResult,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { BoundedEventStore, type SessionEventStore } from './event-store';
import { visibleTools } from './tools/access';
import { envelopeSchema, ToolInputError, type AnyTool, type UpstreamResult } from './tools/define';
import { allTools } from './tools/registry';
import { Upstream, type UpstreamOptions, type UpstreamTargets } from './tools/upstream';

export const MISSING_KEY = { success: false, error: 'Missing x-api-key header' } as const;

export interface McpServiceOptions {
  /** The gateway's addresses (spec 3: AGENT_CORE_URL, MEMORY_URL); a function when known only after start (embedded). */
  targets: UpstreamTargets | (() => UpstreamTargets);
  signer: IdentitySigner;
  logger: Logger;
  tools?: readonly AnyTool[];
  limits?: Partial<McpLimits>;
  version?: string;
}

export interface McpLimits {
  bodyLimitBytes: number;
  maxSessionsPerKey: number;
  /** Open sessions of one tenant, far below `maxSessions`: one tenant's sessions never refuse another's. */
  maxSessionsPerTenant: number;
  /** Open sessions of the replica in all: the last guard. */
  maxSessions: number;
  sessionIdleMs: number;
  eventStoreMax: number;
  /** UTF-8 bytes of the stream events kept for resumption, in all sessions together. */
  eventStoreBytes: number;
  /** UTF-8 bytes of one session's kept stream events. */
  eventStoreSessionBytes: number;
  upstreamTimeoutMs: number;
  upstreamMaxBytes: number;
}

const DEFAULT_LIMITS: McpLimits = {
  bodyLimitBytes: 1024 * 1024,
  maxSessionsPerKey: 16,
  maxSessionsPerTenant: 200,
  maxSessions: 2_000,
  sessionIdleMs: 15 * 60_000,
  eventStoreMax: 10_000,
  eventStoreBytes: 64 * 1024 * 1024,
  eventStoreSessionBytes: 16 * 1024 * 1024,
  upstreamTimeoutMs: 30_000,
  upstreamMaxBytes: 8 * 1024 * 1024,
};

interface Session {
  id: string;
  keyHash: string;
  tenantId: string;
  transport: SessionTransport;
  server: McpServer;
  lastUsed: number;
  /** The session's view of the event store (resumable streams). */
  events: SessionEventStore;
  /** Ids of the session's requests not answered yet: a request reusing one is refused (`reusedIdRefusal`). */
  inFlight: Set<RequestId>;
  /** The MCP revision the session's initialize negotiated: what a request without `MCP-Protocol-Version` speaks. */
  protocolVersion: string;
}

/** What the SDK hands a tool's handler beside its arguments: the parts the server uses. */
interface ToolCallExtra {
  /** Aborted when the client cancels the call (`notifications/cancelled`) or the session closes. */
  signal: AbortSignal;
  /** The HTTP request that carried the call. */
  requestInfo?: { headers: IncomingHttpHeaders };
}

/**
 * The SDK's transport, telling the session when one of its requests has been answered. The SDK maps a request's id
 * to the stream that carries its answer, one stream an id: a second request with an id still in flight takes the
 * first one's mapping, and one of the two streams then never ends. The session refuses such a request instead, and
 * learns here when an id is free again.
 */
class SessionTransport extends StreamableHTTPServerTransport {
  constructor(
    options: ConstructorParameters<typeof StreamableHTTPServerTransport>[0],
    private readonly answered: (id: RequestId) => void,
  ) {
    super(options);
  }

  override async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    try {
      await super.send(message, options);
    } finally {
      if (isResponse(message)) this.answered(message.id);
    }
  }
}

export interface McpService {
  app: Koa;
  /** Open sessions (tests, metrics). */
  sessionCount(): number;
  /** What the event store keeps for resumption: its events and their UTF-8 bytes (tests, metrics). */
  storedEvents(): { count: number; bytes: number };
  close(): Promise<void>;
}

/** The text and structured answer of a tool: spec 3's JSON string, and the same object as `structuredContent`. */
export function toolResult(result: UpstreamResult): CallToolResult {
  const envelope = result.success ? { success: true, data: result.data ?? null } : { success: false, error: result.error };
  return { content: [{ type: 'text', text: JSON.stringify(envelope) }], structuredContent: envelope, isError: !result.success };
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

/**
 * Lore's MCP tool server (docs/mcp.md): Streamable HTTP at `/mcp` with sessions and resumable streams, `GET /health`.
 * Every call carries `x-api-key`; the gateway in front of it has checked the key and signed the request's identity,
 * which tells the key's scope (the tool list a session sees). Tools call the API back with the caller's key.
 */
export function createMcpService(options: McpServiceOptions): McpService {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const tools = options.tools ?? allTools();
  const logger = options.logger;
  const events = new BoundedEventStore({ maxEvents: limits.eventStoreMax, maxBytes: limits.eventStoreBytes, maxSessionBytes: limits.eventStoreSessionBytes });
  const sessions = new Map<string, Session>();
  /** Sessions whose initialize is being answered: they count against the caps before the SDK names them. */
  const opening = new Set<Session>();
  const targets = () => (typeof options.targets === 'function' ? options.targets() : options.targets);

  function buildServer(apiKey: string, keyHash: string, identity: Identity, place: UpstreamOptions['place']): McpServer {
    const server = new McpServer({ name: 'lore', version: options.version ?? '0.1.0' }, { capabilities: { tools: {} } });
    // The SDK answers bad arguments (and a tool that throws) with a plain-text error; spec 3 wants every tool's answer
    // to be the JSON envelope, so its error result is replaced (docs/mcp.md, "Answers").
    // Its message carries the SDK's `MCP error <code>: ` prefix, which is protocol framing, not the tool's answer.
    (server as unknown as { createToolError: (message: string) => CallToolResult }).createToolError = (message) =>
      toolResult({ success: false, error: message.replace(/^MCP error -?\d+: /, '') });
    for (const tool of visibleTools(tools, identity.scopes)) {
      server.registerTool(
        tool.name,
        { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: envelopeSchema(tool.data), annotations: tool.annotations },
        async (args: unknown, extra: ToolCallExtra) => {
          const address = forwardedClient(extra.requestInfo?.headers);
          const upstream = new Upstream(targets(), apiKey, {
            timeoutMs: limits.upstreamTimeoutMs,
            maxAnswerBytes: limits.upstreamMaxBytes,
            place,
            signal: extra.signal,
            ...(address ? { clientAddress: () => options.signer.signClientAddress(address, keyHash) } : {}),
          });
          try {
            return toolResult(await tool.call(args as never, upstream));
          } catch (err) {
            if (err instanceof ToolInputError) return toolResult({ success: false, error: `Input validation error: ${err.message}` });
            logger.warn({ tool: tool.name, err: err instanceof Error ? err.message : String(err) }, 'mcp tool failed');
            return toolResult({ success: false, error: `${tool.name} failed` });
          }
        },
      );
    }
    return server;
  }

  /** A session that ended leaves the table, and its streams' events the store. */
  function forgetSession(s: Session): void {
    if (s.id) sessions.delete(s.id);
    s.events.forget();
  }

  async function closeSession(s: Session): Promise<void> {
    forgetSession(s);
    await s.server.close().catch(() => undefined);
  }

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const s of [...sessions.values()]) if (now - s.lastUsed > limits.sessionIdleMs) void closeSession(s);
  }, Math.min(60_000, Math.max(250, Math.floor(limits.sessionIdleMs / 4))));
  sweep.unref();

  const app = new Koa();
  app.proxy = false;
  app.use(async (ctx, next) => {
    // Its two routes name the request's server span when the SDK records it (docs/runtime.md, "Telemetry").
    if (ctx.path === '/health' || ctx.path === '/mcp') {
      const span = recordingSpan();
      if (span) {
        nameServerSpan(span, ctx.method, ctx.path);
        ctx.res.setHeader(ROUTE_HEADER, ctx.path);
      }
    }
    if (ctx.path === '/health') {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
        ctx.status = 405;
        ctx.body = { success: false, error: 'method not allowed' };
        return;
      }
      ctx.body = { status: 'ok', service: 'mcp' };
      return;
    }
    // Anything else than /mcp passes on (a cluster process adds its probes and metrics after this).
    if (ctx.path !== '/mcp') return next();
    const apiKey = ctx.get('x-api-key');
    if (!apiKey) {
      ctx.status = 401;
      ctx.body = MISSING_KEY;
      return;
    }
    let identity: Identity;
    try {
      identity = await options.signer.verify(ctx.get(IDENTITY_HEADER) || undefined);
    } catch {
      ctx.status = 401;
      ctx.body = { success: false, error: 'invalid gateway identity' };
      return;
    }
    const keyHash = hashKey(apiKey);

    let body: unknown;
    if (ctx.method === 'POST') {
      const read = await readBody(ctx.req, limits.bodyLimitBytes);
      if (!read.ok) {
        ctx.status = read.status;
        ctx.body = jsonRpcError(read.status === 400 ? -32700 : read.status === 413 ? -32600 : -32000, read.error);
        return;
      }
      body = read.value;
      // A request without the version header speaks what its session negotiated (MCP: a server falls back to
      // 2025-03-26 only when it has no other way to know).
      const known = sessions.get(ctx.get('mcp-session-id'));
      const version = ctx.get('mcp-protocol-version') || (known?.keyHash === keyHash ? known.protocolVersion : '');
      const refusal = jsonRpcRefusal(body, version);
      if (refusal) {
        ctx.status = refusal.status;
        ctx.body = refusal.body;
        return;
      }
    }

    const sessionId = ctx.get('mcp-session-id');
    let session: Session | undefined;
    if (sessionId) {
      session = sessions.get(sessionId);
      // Another key's session is as unknown as a missing one.
      if (!session || session.keyHash !== keyHash) {
        ctx.status = 404;
        ctx.body = jsonRpcError(-32001, 'Session not found');
        return;
      }
      session.lastUsed = Date.now();
    } else {
      if (ctx.method !== 'POST' || !isInit(body)) {
        ctx.status = 400;
        ctx.body = jsonRpcError(-32000, 'Bad Request: no mcp-session-id header, and not an initialize request');
        return;
      }
      const full = sessionCapReached([...new Set([...sessions.values(), ...opening])], keyHash, identity.tenant_id, limits);
      if (full) {
        ctx.status = 429;
        // A session frees when its client ends it or it idles out; a minute is a fair first wait.
        ctx.set('Retry-After', '60');
        ctx.body = jsonRpcError(-32000, full);
        return;
      }
      // A session opened in a named place acts there (the gateway has checked the names against the key's reach and
      // signed what they resolved to).
      const place = { ...(ctx.query.memory_id !== undefined && identity.memory_id ? { memory_id: identity.memory_id } : {}), ...(ctx.query.workspace_id !== undefined ? { workspace_id: identity.workspace_id } : {}) };
      const server = buildServer(apiKey, keyHash, identity, place);
      const created: Session = {
        id: '', keyHash, tenantId: identity.tenant_id, server, lastUsed: Date.now(), transport: undefined as unknown as SessionTransport, events: events.forSession(), inFlight: new Set(),
        protocolVersion: negotiatedVersion(body),
      };
      created.transport = new SessionTransport({
        sessionIdGenerator: () => randomUUID(),
        // The session's own view: its events replay to it alone (docs/mcp.md, "Sessions").
        eventStore: created.events,
        onsessioninitialized: (id) => {
          created.id = id;
          sessions.set(id, created);
        },
        onsessionclosed: () => forgetSession(created),
      }, (id) => created.inFlight.delete(id));
      created.transport.onclose = () => forgetSession(created);
      opening.add(created);
      try {
        await server.connect(created.transport);
        ctx.respond = false;
        await created.transport.handleRequest(ctx.req, ctx.res, body);
      } finally {
        opening.delete(created);
      }
      return;
    }
    const refused = reusedIdRefusal(session, body);
    if (refused) {
      ctx.status = 400;
      ctx.body = refused;
      return;
    }
    const reserved = requestIds(body);
    for (const id of reserved) session.inFlight.add(id);
    for (const id of cancelledIds(body)) session.inFlight.delete(id);
    ctx.respond = false;
    try {
      await session.transport.handleRequest(ctx.req, ctx.res, body);
    } finally {
      // The SDK answered the request itself (a bad header, say): it ran nothing, and its ids are free again. A request
      // it runs is answered 200, its ids freed when their answers are sent.
      if (ctx.res.statusCode !== 200) for (const id of reserved) session.inFlight.delete(id);
    }
  });

  return {
    app,
    sessionCount: () => sessions.size,
    storedEvents: () => ({ count: events.size, bytes: events.bytes }),
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => closeSession(s)));
    },
  };
}

/**
 * Why a new session is refused, or null: the key's cap, then the tenant's (far below the replica's, so one tenant's
 * sessions never refuse another's), then the replica's own, the last guard.
 */
function sessionCapReached(open: Session[], keyHash: string, tenantId: string, limits: McpLimits): string | null {
  const mine = open.filter((s) => s.keyHash === keyHash).length;
  if (mine >= limits.maxSessionsPerKey) return `this key has ${mine} open sessions, the most allowed; close one (DELETE /mcp) or wait for one to idle out`;
  const tenant = open.filter((s) => s.tenantId === tenantId).length;
  if (tenant >= limits.maxSessionsPerTenant) {
    return `this tenant has ${tenant} open sessions on this replica, the most one tenant may hold; close one (DELETE /mcp) or wait for one to idle out`;
  }
  return open.length >= limits.maxSessions ? 'too many open sessions' : null;
}

const isResponse = (m: JSONRPCMessage): m is JSONRPCMessage & { id: RequestId } => 'id' in m && ('result' in m || 'error' in m);

/** The ids of the requests (not notifications, not responses) a body carries. */
function requestIds(body: unknown): RequestId[] {
  return (Array.isArray(body) ? body : [body]).filter((m) => isObject(m) && 'method' in m && isId(m.id)).map((m) => (m as { id: RequestId }).id);
}

/**
 * The request ids a body's `notifications/cancelled` name: the SDK sends no answer to a cancelled request. An id the
 * SDK does not cancel stays reserved: its cancellation handler skips a falsy id (`0`, `""`), runs that request on
 * and answers it, so the id is free only once that answer is sent.
 */
function cancelledIds(body: unknown): RequestId[] {
  return (Array.isArray(body) ? body : [body])
    .filter((m) => isObject(m) && m.method === 'notifications/cancelled' && isObject(m.params) && isId(m.params.requestId) && Boolean(m.params.requestId))
    .map((m) => ((m as { params: { requestId: RequestId } }).params.requestId));
}

/** The revision an initialize negotiates, as the SDK answers it: the one asked for when it knows it, else its newest. */
function negotiatedVersion(body: unknown): string {
  const init = (Array.isArray(body) ? body : [body]).find((m) => isInitializeRequest(m));
  const asked = init?.params.protocolVersion;
  return asked !== undefined && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
}

/**
 * The client's address as the gateway forwarded the `/mcp` request that runs a tool: the gateway drops whatever
 * `X-Forwarded-For` a client sends and writes the one address it checked the key's allowlist against. Only the
 * gateway reaches this server (a request without its signed identity is refused before any tool runs).
 */
function forwardedClient(headers: IncomingHttpHeaders | undefined): string | undefined {
  const raw = headers?.['x-forwarded-for'];
  const last = (Array.isArray(raw) ? raw.join(',') : raw)?.split(',').at(-1)?.trim();
  return last && isIP(last) !== 0 ? last : undefined;
}

/**
 * A request whose id the session has not answered yet (or that a batch repeats) is refused, 400 with -32600 and the
 * id: JSON-RPC asks a client for a unique id per request, and the SDK, which maps an id to one answer stream, would
 * otherwise leave one of the two streams open for good.
 */
function reusedIdRefusal(session: Session, body: unknown): unknown {
  const seen = new Set<RequestId>();
  for (const id of requestIds(body)) {
    if (session.inFlight.has(id) || seen.has(id)) {
      return { jsonrpc: '2.0', error: { code: -32600, message: `Invalid Request: id ${JSON.stringify(id)} belongs to a request of this session that is not answered yet; give every request its own id` }, id };
    }
    seen.add(id);
  }
  return null;
}

function isInit(body: unknown): boolean {
  return Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
}

/** The first revision without JSON-RPC batches: a client that negotiated it or a later one sends none. */
const NO_BATCHES_SINCE = '2025-06-18';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A JSON-RPC id as MCP takes it: a string or an integer (the SDK refuses a fractional one). */
const isId = (v: unknown) => typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));

/**
 * What is wrong with one JSON-RPC message, by JSON-RPC 2.0 and MCP (an id is a string or a number, never null), or
 * null: a request or notification (`method`), or a response to one of the server's requests (`result` or `error`).
 */
function messageProblem(m: unknown): { code: number; message: string } | null {
  const invalid = (why: string) => ({ code: -32600, message: `Invalid Request: ${why}` });
  if (!isObject(m)) return invalid('a message is a JSON object');
  if (m.jsonrpc !== '2.0') return invalid('"jsonrpc" must be "2.0"');
  if ('method' in m) {
    if (typeof m.method !== 'string' || m.method === '') return invalid('"method" must be a non-empty string');
    if ('id' in m && !isId(m.id)) return invalid('"id" must be a string or an integer');
    // An initialize without an id is a notification: it could start no session and nothing would answer it.
    if (m.method === 'initialize' && !('id' in m)) return invalid('initialize is a request: it needs an "id"');
    if ('params' in m && !isObject(m.params)) return invalid('"params" must be an object');
    const params = (m.params ?? {}) as Record<string, unknown>;
    if (m.method === 'initialize' && typeof params.protocolVersion !== 'string') return { code: -32602, message: 'Invalid params: initialize needs "params.protocolVersion"' };
    if (m.method === 'tools/call') {
      if (typeof params.name !== 'string' || params.name === '') return { code: -32602, message: 'Invalid params: tools/call needs "params.name", the tool\'s name' };
      if ('arguments' in params && !isObject(params.arguments)) return { code: -32602, message: 'Invalid params: "params.arguments" must be an object' };
    }
    return null;
  }
  if (!isId(m.id)) return invalid('a message without "method" is a response, whose "id" is a string or an integer');
  if (!('result' in m) && !isObject(m.error)) return invalid('a response carries "result" or "error"');
  return null;
}

/**
 * A body the server answers itself, before the SDK reads it: JSON that is no JSON-RPC message is an Invalid Request
 * (-32600; the SDK would call it a parse error), params a request cannot be run with are Invalid params (-32602; the
 * SDK would answer -32603 with its validation dump), and a batch is refused once the session's revision has none
 * (2025-06-18 removed them), as is an empty one always. Errors of a request carry its id. A batch with a bad message
 * is refused whole and answered per message (`batchRefusal`).
 */
function jsonRpcRefusal(body: unknown, protocolVersion: string): { status: number; body: unknown } | null {
  if (Array.isArray(body)) {
    if (body.length === 0) return { status: 400, body: jsonRpcError(-32600, 'Invalid Request: an empty batch') };
    if (protocolVersion >= NO_BATCHES_SINCE) {
      return { status: 400, body: jsonRpcError(-32600, `Invalid Request: MCP ${protocolVersion} has no JSON-RPC batches; send one message a request`) };
    }
    return batchRefusal(body);
  }
  const problem = messageProblem(body);
  return problem ? { status: problemAnswered(body, problem) ? 200 : 400, body: problemAnswer(body, problem) } : null;
}

/**
 * A batch with a bad message is not run (the SDK would answer the first bad message alone and leave the batch's other
 * requests unanswered for good), and every request in it is answered: a bad message with its own error, a good
 * request with -32600 saying it was not run, so the client can send it again; notifications and responses get
 * nothing, as JSON-RPC has it. 200 when every bad message is a request whose params are wrong, else 400.
 */
function batchRefusal(batch: unknown[]): { status: number; body: unknown } | null {
  const problems = batch.map((m) => messageProblem(m));
  const bad = problems.flatMap((p, i) => (p ? [i] : []));
  if (bad.length === 0) return null;
  const notRun = {
    code: -32600,
    message: `Invalid Request: not run: message ${bad.map((i) => i + 1).join(', ')} of this batch ${bad.length === 1 ? 'is' : 'are'} invalid, so none of it ran; send the batch again without ${bad.length === 1 ? 'it' : 'them'}`,
  };
  const answers = batch.flatMap((m, i) => {
    const problem = problems[i];
    if (problem) return [problemAnswer(m, problem)];
    return isObject(m) && 'method' in m && 'id' in m ? [{ jsonrpc: '2.0', error: notRun, id: m.id }] : [];
  });
  const answered = bad.every((i) => problemAnswered(batch[i], problems[i]!));
  return { status: answered ? 200 : 400, body: answers };
}

/** The error answering a bad message, with its id when it has a usable one (else null, as JSON-RPC has it). */
function problemAnswer(m: unknown, problem: { code: number; message: string }) {
  return { jsonrpc: '2.0', error: problem, id: isObject(m) && isId(m.id) ? m.id : null };
}

/**
 * A well-formed request whose params are wrong is answered (200), as the SDK answers its other errors; a message that
 * is none, and an initialize that cannot start a session, are a bad request.
 */
function problemAnswered(m: unknown, problem: { code: number }): boolean {
  return problem.code === -32602 && isObject(m) && m.method !== 'initialize';
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

async function readBody(req: IncomingMessage, limit: number): Promise<{ ok: true; value: unknown } | { ok: false; status: number; error: string }> {
  // A content coding is refused with 415, as every Lore body reader refuses it (Lore decodes none).
  try {
    assertNoContentCoding(req);
  } catch (err) {
    return { ok: false, status: 415, error: (err as Error).message };
  }
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) return { ok: false, status: 413, error: `body larger than ${limit} bytes` };
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return { ok: false, status: 413, error: `body larger than ${limit} bytes` };
    chunks.push(chunk as Buffer);
  }
  try {
    return { ok: true, value: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks))) };
  } catch {
    return { ok: false, status: 400, error: 'Parse error: the body is not valid UTF-8 JSON' };
  }
}
