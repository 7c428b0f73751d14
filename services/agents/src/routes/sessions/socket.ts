import { cutUnits } from '@lore/ai';

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, createHttpMetrics, IDENTITY_HEADER, isAppError, writeAccessLine, type IdentitySigner, type Logger } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Principal } from '../../application/principal';
import type { SessionKind } from '../../application/sessions/agent';
import type { LoggedEvent, SessionFollow, TimedSessionMessage } from '../../application/sessions/messages';
import { familyOf, principalOf, shapeError } from '../route';
import { answerRequest, stopRequest } from './asyncapi';
import type { z } from 'zod';

/**
 * The session sockets (spec 3; docs/agents.md, "Sessions over websockets"), upgraded on the agents listener:
 * - `/api/service-deep-search/ws/<thread_id>`, `/api/agent/web-and-research?thread_id=…`,
 *   `/api/agent/agentic-crawler?thread_id=…`; optional `cursor=<n>`: replay everything after that cursor.
 * - Authenticated by the identity the gateway signs (it took the key from `?api-key=`): no identity, a wrong key or
 *   the placeholder left unreplaced never reach a handler, and nothing runs. A read-only key is refused (connecting
 *   starts the session); a thread of another tenant or owner is 404, before any upgrade.
 * - The first connect starts the session; every connect replays from its cursor, then follows live.
 * - The client may send `{"type":"stop"}` and clarifying answers `{prompt, thread_id, list_id}`; anything else is
 *   answered with an `error` message (cursor null). Limits: frame size, messages per second, sockets per tenant.
 */

export interface SessionSocketLimits {
  /** Largest client frame (bytes); a larger one closes the socket (1009). */
  maxMessageBytes: number;
  /** Client messages a second (a burst of twice as many); beyond, each is refused with an `error` message. */
  messagesPerSecond: number;
  /** Open session sockets one tenant may have in this process; beyond, an upgrade is refused with 429. */
  socketsPerTenant: number;
  /** How often the server pings; a peer that has not answered the last ping by the next is ended. */
  pingMs: number;
}

export const DEFAULT_SOCKET_LIMITS: SessionSocketLimits = { maxMessageBytes: 16 * 1024, messagesPerSecond: 5, socketsPerTenant: 50, pingMs: 30_000 };

export interface SessionSocketDeps {
  signer: IdentitySigner;
  logger: Logger;
  /** A handshake is counted in `lore_http_requests_total` and its duration, as a plain request is. */
  metrics?: Registry;
  limits?: Partial<SessionSocketLimits>;
  /** The session's ids if the principal may open it (404 otherwise); starts nothing. */
  find(p: Principal, kind: SessionKind, threadId: string): Promise<{ thread_id: string; list_id: string; last_cursor: number }>;
  /** Starts a `ready` session (the first connect): answers the events that wrote; later connects change nothing. */
  connect(p: Principal, kind: SessionKind, threadId: string): Promise<readonly LoggedEvent[]>;
  /** Sends the session's messages after `afterSeq`; `start` (the connect) runs once the follow knows its place in the progress stream. */
  follow: SessionFollow;
  answer(p: Principal, kind: SessionKind, threadId: string, listId: string, prompt: string): Promise<boolean>;
  stop(p: Principal, kind: SessionKind, threadId: string): Promise<string>;
}

export interface SessionSockets {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Open sockets now. */
  open(): number;
  /** Closes every socket (shutdown); their sessions go on, and a client reconnects with its cursor. */
  close(): void;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A path segment percent-decoded; null for a malformed encoding (`%E0%A4%A`), which names no session (404). Until
 * 2026-11-30 the decoding threw outside the handshake's error handling, and one such handshake ended the process.
 */
function decodedSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** The session kind and thread a socket path names, or null for a path that is no session socket. */
export function socketTarget(url: string): { kind: SessionKind; threadId: string | null; query: URLSearchParams; path: string } | null {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const deep = /^\/api\/service-deep-search\/ws\/([^/]+)$/.exec(path);
  if (deep) return { kind: 'deep_search', threadId: decodedSegment(deep[1]!), query, path };
  if (path === '/api/agent/web-and-research') return { kind: 'web_research', threadId: query.get('thread_id'), query, path };
  if (path === '/api/agent/agentic-crawler') return { kind: 'agentic_crawler', threadId: query.get('thread_id'), query, path };
  return null;
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error' };

/** The route templates of the socket paths, for the access line. */
const SOCKET_ROUTES: Record<SessionKind, string> = {
  deep_search: '/api/service-deep-search/ws/:thread_id',
  web_research: '/api/agent/web-and-research',
  agentic_crawler: '/api/agent/agentic-crawler',
};

function refuse(socket: Duplex, path: string, err: AppError): number {
  const shaped = shapeError(familyOf(path), err);
  const body = JSON.stringify(shaped.body);
  const head = [`HTTP/1.1 ${shaped.status} ${REASONS[shaped.status] ?? 'Error'}`, 'content-type: application/json; charset=utf-8', `content-length: ${Buffer.byteLength(body)}`, 'connection: close'];
  for (const [k, v] of Object.entries(shaped.headers)) head.push(`${k}: ${v}`);
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  return shaped.status;
}


type ClientMessage = { kind: 'stop' } | { kind: 'answer'; answer: z.infer<typeof answerRequest> } | { kind: 'invalid'; problem: string };

const USAGE = 'send {"type":"stop"} or a clarifying answer {"prompt","thread_id","list_id"}';
/** How much of a client's own key or value a refusal quotes: a refusal never echoes a whole 16 KiB frame back. */
const QUOTED_CHARS = 40;

/** A client's key or value as a refusal quotes it: JSON-quoted, cut to a short prefix. */
export function quoted(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(text.length > QUOTED_CHARS ? `${cutUnits(text, QUOTED_CHARS)}…` : text);
}

/** What is wrong with a message by its schema's first issue, quoting no more of the client's keys than a prefix. */
function invalid(name: string, error: z.ZodError): ClientMessage {
  const issue = error.issues[0]!;
  const at = issue.path.length > 0 ? `${issue.path.map((k) => (typeof k === 'string' && k.length > QUOTED_CHARS ? `${cutUnits(k, QUOTED_CHARS)}…` : String(k))).join('.')}: ` : '';
  // Zod's own wording of unrecognised keys quotes each key whole.
  const problem = issue.code === 'unrecognized_keys' ? `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.slice(0, 3).map(quoted).join(', ')}${issue.keys.length > 3 ? ', …' : ''}` : issue.message;
  return { kind: 'invalid', problem: `invalid ${name}: ${at}${problem}` };
}

/**
 * What a client's message is, by the AsyncAPI document's two client messages (`stopRequest`, `answerRequest`, both
 * closed: a field they do not name is refused); an invalid one is told what is wrong with it. A `type` other than
 * `stop` is a message Lore does not know (until 2026-11-30 it was called a broken stop message), and an answer that is
 * only white space is empty (it was answered "the session is not waiting").
 */
export function clientMessage(body: unknown): ClientMessage {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { kind: 'invalid', problem: `unknown message (not a JSON object): ${USAGE}` };
  if ('type' in body) {
    const type = (body as { type: unknown }).type;
    if (type !== 'stop') return { kind: 'invalid', problem: `unknown message: type ${quoted(type)} is not one Lore reads; ${USAGE}` };
    const stop = stopRequest.safeParse(body);
    return stop.success ? { kind: 'stop' } : invalid('stop message', stop.error);
  }
  if ('prompt' in body) {
    const answer = answerRequest.safeParse(body);
    if (!answer.success) return invalid('clarifying answer', answer.error);
    if (answer.data.prompt.trim() === '') return { kind: 'invalid', problem: 'invalid clarifying answer: prompt: the answer is empty (only white space)' };
    return { kind: 'answer', answer: answer.data };
  }
  return { kind: 'invalid', problem: `unknown message: ${USAGE}` };
}

/**
 * A client's frame read as a message: JSON text, or a refusal. A binary frame is refused as one whatever it holds
 * (until 2026-11-30 it was called "not a JSON object").
 */
export function clientFrame(data: RawData, isBinary: boolean): ClientMessage {
  if (isBinary) return { kind: 'invalid', problem: `binary frames are not accepted: ${USAGE} as a JSON text frame` };
  let body: unknown;
  try {
    body = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data).toString('utf8'));
  } catch {
    body = undefined;
  }
  return clientMessage(body);
}

/** A client that sends this many seconds' worth of messages over the limit in a row is disconnected (1008). */
const FLOOD_SECONDS = 20;

export function sessionSockets(deps: SessionSocketDeps): SessionSockets {
  const httpMetrics = deps.metrics ? createHttpMetrics(deps.metrics) : undefined;
  const limits = { ...DEFAULT_SOCKET_LIMITS, ...deps.limits };
  const wss = new WebSocketServer({ noServer: true, maxPayload: limits.maxMessageBytes, perMessageDeflate: false });
  const perTenant = new Map<string, number>();
  const sockets = new Set<WebSocket>();

  const serve = (ws: WebSocket, p: Principal, kind: SessionKind, ids: { thread_id: string; list_id: string }, cursor: number) => {
    const closed = new AbortController();
    const log = deps.logger.child({ thread_id: ids.thread_id, session: kind });
    const send = (m: TimedSessionMessage) =>
      new Promise<void>((resolve) => {
        if (ws.readyState !== ws.OPEN) return resolve();
        ws.send(JSON.stringify(m), () => resolve());
      });
    const clientError = (message: string) => send({ type: 'error', cursor: null, at: new Date().toISOString(), thread_id: ids.thread_id, message });
    let tokens = limits.messagesPerSecond * 2;
    let refilled = Date.now();
    // Messages dropped in a row, and when the client was last told: a flood is told once a second, not answered
    // message for message, and a client that keeps on is cut off.
    let dropped = 0;
    let toldAt = 0;
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const now = Date.now();
      tokens = Math.min(limits.messagesPerSecond * 2, tokens + ((now - refilled) / 1000) * limits.messagesPerSecond);
      refilled = now;
      if (tokens < 1) {
        dropped += 1;
        if (dropped > limits.messagesPerSecond * FLOOD_SECONDS) {
          ws.close(1008, 'too many messages');
          return;
        }
        if (now - toldAt >= 1000) {
          toldAt = now;
          void clientError(`too many messages: at most ${limits.messagesPerSecond} a second`);
        }
        return;
      }
      dropped = 0;
      tokens -= 1;
      void (async () => {
        const message = clientFrame(data, isBinary);
        if (message.kind === 'stop') {
          await deps.stop(p, kind, ids.thread_id);
          return;
        }
        if (message.kind === 'invalid') return clientError(message.problem);
        const answer = message.answer;
        if (answer.thread_id.toLowerCase() !== ids.thread_id) return clientError('thread_id is not this socket\'s session');
        if (!(await deps.answer(p, kind, ids.thread_id, answer.list_id, answer.prompt))) return clientError('the session is not waiting for an answer (or list_id is not its list)');
      })().catch((err: unknown) => {
        log.warn({ err }, 'session socket message failed');
        void clientError(isAppError(err) && err.status < 500 ? err.message : 'the message could not be handled');
      });
    });
    // A peer that answers no ping until the next one is gone (a dropped network, a suspended laptop): its socket is
    // ended, so it holds no slot of the tenant's until TCP gives up.
    let answered = true;
    ws.on('pong', () => {
      answered = true;
    });
    const ping = setInterval(() => {
      if (!answered) {
        log.info('session socket peer answered no ping: ended');
        ws.terminate();
        return;
      }
      answered = false;
      ws.ping();
    }, limits.pingMs);
    ping.unref();
    ws.on('close', () => {
      clearInterval(ping);
      closed.abort();
      sockets.delete(ws);
      const n = (perTenant.get(p.tenantId) ?? 1) - 1;
      if (n <= 0) perTenant.delete(p.tenantId);
      else perTenant.set(p.tenantId, n);
    });
    ws.on('error', () => ws.terminate());
    void (async () => {
      await deps.follow(p.tenantId, ids.thread_id, ids.list_id, cursor, send, closed.signal, () => deps.connect(p, kind, ids.thread_id));
      // The session ended and every message was sent.
      if (!closed.signal.aborted) ws.close(1000, 'session ended');
    })().catch((err: unknown) => {
      log.error({ err }, 'session socket failed');
      if (!closed.signal.aborted) ws.close(1011, 'internal error');
    });
  };

  const upgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const began = performance.now();
    const target = socketTarget(req.url ?? '/');
    // One access line per handshake Lore answers, as the kit writes for a plain request (the query, which holds no
    // key here but may hold a cursor, stays out of it as it does there). A handshake ws itself refuses (no
    // Sec-WebSocket-Key…) is answered by ws, and logged by the gateway that relays it.
    const answered = (status: number) => {
      const requestId = req.headers['x-request-id'];
      const route = target ? SOCKET_ROUTES[target.kind] : 'unmatched';
      const ms = performance.now() - began;
      httpMetrics?.observe(req.method ?? 'GET', route, status, ms / 1000);
      writeAccessLine(deps.logger, {
        ...(typeof requestId === 'string' ? { request_id: requestId } : {}),
        method: req.method ?? 'GET',
        path: target?.path ?? (req.url ?? '/').split('?')[0]!,
        route,
        status,
        duration_ms: Math.round(ms * 10) / 10,
      });
    };
    if (!target) return answered(refuse(socket, req.url ?? '/', AppError.notFound('route')));
    try {
      const identity = await deps.signer.verify(typeof req.headers[IDENTITY_HEADER] === 'string' ? req.headers[IDENTITY_HEADER] : undefined);
      const p = principalOf(identity);
      if (identity.scopes?.access === 'read') throw new AppError('FORBIDDEN', 'this key is read-only: connecting starts the session');
      if (!target.threadId || !UUID.test(target.threadId)) throw AppError.notFound('session');
      const rawCursor = target.query.get('cursor');
      // Decimal digits only: `Number()` read an empty cursor as 0 (the whole session again), and `0x0` or `1e0`.
      const cursor = rawCursor === null ? 0 : /^\d{1,15}$/.test(rawCursor) ? Number(rawCursor) : NaN;
      if (!Number.isSafeInteger(cursor) || cursor < 0) throw new AppError('BAD_REQUEST', 'cursor must be a whole number in decimal digits, the last cursor a message carried');
      const found = await deps.find(p, target.kind, target.threadId.toLowerCase());
      // A cursor no message carried yet would be waited for in silence, the end included.
      if (cursor > found.last_cursor) throw new AppError('BAD_REQUEST', `cursor ${cursor} is beyond this session's last message (cursor ${found.last_cursor}): resume from the last cursor a message carried`);
      const ids = { thread_id: found.thread_id, list_id: found.list_id };
      if ((perTenant.get(p.tenantId) ?? 0) >= limits.socketsPerTenant) {
        throw new AppError('RATE_LIMITED', `at most ${limits.socketsPerTenant} session sockets a tenant at once`, { headers: { 'retry-after': '5' } });
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        answered(101);
        // Counted once upgraded (a handshake ws refuses never reaches here), uncounted on close.
        perTenant.set(p.tenantId, (perTenant.get(p.tenantId) ?? 0) + 1);
        sockets.add(ws);
        serve(ws, p, target.kind, ids, cursor);
      });
    } catch (err) {
      if (isAppError(err)) return answered(refuse(socket, target.path, err));
      deps.logger.error({ err }, 'session socket upgrade failed');
      answered(refuse(socket, target.path, new AppError('INTERNAL', 'internal error')));
    }
  };

  return {
    handleUpgrade: (req, socket, head) => {
      socket.on('error', () => socket.destroy());
      // Nothing a handshake holds may end the process: whatever escapes the handshake's own handling closes its socket.
      upgrade(req, socket, head).catch((err: unknown) => {
        deps.logger.error({ err }, 'session socket upgrade failed');
        socket.destroy();
      });
    },
    open: () => sockets.size,
    close: () => {
      for (const ws of sockets) ws.terminate();
      sockets.clear();
      wss.close();
    },
  };
}
