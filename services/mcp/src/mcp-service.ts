import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import Koa from 'koa';
import type { Identity } from '@lore/contracts';
import { IDENTITY_HEADER, ROUTE_HEADER, nameServerSpan, recordingSpan, type IdentitySigner, type Logger } from '@lore/runtime';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { BoundedEventStore, type SessionEventStore } from './event-store';
import { visibleTools } from './tools/access';
import { envelopeSchema, type AnyTool, type UpstreamResult } from './tools/define';
import { allTools } from './tools/registry';
import { Upstream, type UpstreamTargets } from './tools/upstream';

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
  maxSessions: number;
  sessionIdleMs: number;
  eventStoreMax: number;
  upstreamTimeoutMs: number;
  upstreamMaxBytes: number;
}

const DEFAULT_LIMITS: McpLimits = {
  bodyLimitBytes: 1024 * 1024,
  maxSessionsPerKey: 16,
  maxSessions: 2_000,
  sessionIdleMs: 15 * 60_000,
  eventStoreMax: 10_000,
  upstreamTimeoutMs: 30_000,
  upstreamMaxBytes: 8 * 1024 * 1024,
};

interface Session {
  id: string;
  keyHash: string;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastUsed: number;
  /** The session's view of the event store (resumable streams). */
  events: SessionEventStore;
}

export interface McpService {
  app: Koa;
  /** Open sessions (tests, metrics). */
  sessionCount(): number;
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
  const events = new BoundedEventStore(limits.eventStoreMax);
  const sessions = new Map<string, Session>();
  const targets = () => (typeof options.targets === 'function' ? options.targets() : options.targets);

  function buildServer(apiKey: string, identity: Identity): McpServer {
    const server = new McpServer({ name: 'lore', version: options.version ?? '0.1.0' }, { capabilities: { tools: {} } });
    // The SDK answers bad arguments (and a tool that throws) with a plain-text error; spec 3 wants every tool's answer
    // to be the JSON envelope, so its error result is replaced (docs/mcp.md, "Answers").
    (server as unknown as { createToolError: (message: string) => CallToolResult }).createToolError = (message) => toolResult({ success: false, error: message });
    for (const tool of visibleTools(tools, identity.scopes)) {
      server.registerTool(
        tool.name,
        { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: envelopeSchema(tool.data), annotations: tool.annotations },
        async (args: unknown) => {
          const upstream = new Upstream(targets(), apiKey, { timeoutMs: limits.upstreamTimeoutMs, maxAnswerBytes: limits.upstreamMaxBytes });
          try {
            return toolResult(await tool.call(args as never, upstream));
          } catch (err) {
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
        ctx.body = jsonRpcError(read.status === 413 ? -32600 : -32700, read.error);
        return;
      }
      body = read.value;
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
      const mine = [...sessions.values()].filter((s) => s.keyHash === keyHash).length;
      if (mine >= limits.maxSessionsPerKey || sessions.size >= limits.maxSessions) {
        ctx.status = 429;
        ctx.body = jsonRpcError(-32000, mine >= limits.maxSessionsPerKey ? `this key has ${mine} open sessions, the most allowed; close one (DELETE /mcp) or wait for one to idle out` : 'too many open sessions');
        return;
      }
      const server = buildServer(apiKey, identity);
      const created: Session = { id: '', keyHash, server, lastUsed: Date.now(), transport: undefined as unknown as StreamableHTTPServerTransport, events: events.forSession() };
      created.transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        // The session's own view: its events replay to it alone (docs/mcp.md, "Sessions").
        eventStore: created.events,
        onsessioninitialized: (id) => {
          created.id = id;
          sessions.set(id, created);
        },
        onsessionclosed: () => forgetSession(created),
      });
      created.transport.onclose = () => forgetSession(created);
      await server.connect(created.transport);
      session = created;
    }
    ctx.respond = false;
    await session.transport.handleRequest(ctx.req, ctx.res, body);
  });

  return {
    app,
    sessionCount: () => sessions.size,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => closeSession(s)));
    },
  };
}

function isInit(body: unknown): boolean {
  return Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

async function readBody(req: IncomingMessage, limit: number): Promise<{ ok: true; value: unknown } | { ok: false; status: number; error: string }> {
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
