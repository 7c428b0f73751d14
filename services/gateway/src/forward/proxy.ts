import { Agent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import type { Duplex } from 'node:stream';
import { IDENTITY_HEADER, ROUTE_HEADER, TRUST_HEADERS } from '@lore/runtime';

/** Where an upstream lives: a TCP address (optionally with a base path) or a unix socket. */
export interface UpstreamTarget {
  name: string;
  protocol: 'http:' | 'https:';
  host?: string;
  port?: number;
  socketPath?: string;
  basePath: string;
  agent: Agent;
}

/**
 * The pool of connections to one upstream. `timeout` bounds how long a connection waits idle in the pool, and it also
 * lets Node honour the upstream's `Keep-Alive: timeout=N` answer: an idle connection is then dropped a second before
 * the upstream would close it (Node applies the hint only when it is shorter than the pool's own timeout; with none,
 * idle connections were kept until the upstream closed them, and a request sent on one at that moment failed with
 * ECONNRESET, a 502 to the client). Lore's services keep idle connections 65 s (`SERVER_KEEP_ALIVE_MS`).
 */
export const UPSTREAM_POOL = { keepAlive: true, maxSockets: 512, timeout: 60_000 } as const;

export function parseUpstream(name: string, spec: string): UpstreamTarget {
  if (spec.startsWith('unix:')) {
    return { name, protocol: 'http:', socketPath: spec.slice('unix:'.length), basePath: '', agent: new Agent(UPSTREAM_POOL) };
  }
  const u = new URL(spec);
  const https = u.protocol === 'https:';
  return {
    name,
    protocol: https ? 'https:' : 'http:',
    host: u.hostname,
    port: Number(u.port || (https ? 443 : 80)),
    basePath: u.pathname.replace(/\/+$/, ''),
    agent: https ? new HttpsAgent(UPSTREAM_POOL) : new Agent(UPSTREAM_POOL),
  };
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);
const STRIPPED = new Set([...TRUST_HEADERS.map((h) => h.toLowerCase()), 'authorization', 'x-api-key', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded', 'x-real-ip']);

export interface ForwardOptions {
  identityToken: string | null;
  requestId: string;
  clientAddress: string | null;
  /** The client's scheme (`clientProto`), sent as `x-forwarded-proto`. */
  clientProto?: 'http' | 'https';
  keepApiKey: boolean;
  apiKeyCookie: string;
  upgrade?: boolean;
}

/** Removes one cookie from a Cookie header, keeping the others. */
function withoutCookie(cookieHeader: string, name: string): string {
  return cookieHeader
    .split(';')
    .map((c) => c.trim())
    .filter((c) => c !== '' && !c.startsWith(`${name}=`))
    .join('; ');
}

/**
 * Headers for the upstream: hop-by-hop and every client-supplied trust or credential header removed, the
 * gateway's signed identity and forwarding facts added. Internal services never see a client's claims.
 */
export function upstreamHeaders(incoming: IncomingHttpHeaders, opts: ForwardOptions): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const connectionTokens = String(incoming.connection ?? '').toLowerCase().split(',').map((t) => t.trim());
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || connectionTokens.includes(lower)) continue;
    if ((STRIPPED.has(lower) || lower.startsWith('x-lore-')) && !(opts.keepApiKey && lower === 'x-api-key')) continue;
    if (lower === 'cookie') {
      const kept = withoutCookie(Array.isArray(value) ? value.join('; ') : value, opts.apiKeyCookie);
      if (kept) out.cookie = kept;
      continue;
    }
    out[lower] = value;
  }
  if (opts.identityToken) out[IDENTITY_HEADER] = opts.identityToken;
  out['x-request-id'] = opts.requestId;
  if (opts.clientAddress) out['x-forwarded-for'] = opts.clientAddress;
  if (incoming.host) out['x-forwarded-host'] = incoming.host;
  if (opts.clientProto) out['x-forwarded-proto'] = opts.clientProto;
  if (opts.upgrade) {
    out.connection = 'Upgrade';
    out.upgrade = incoming.upgrade ?? 'websocket';
  }
  return out;
}

/** Drops the `api-key` query parameter (websocket credential) before the URL goes upstream. */
export function upstreamPath(target: UpstreamTarget, rawUrl: string): string {
  const q = rawUrl.indexOf('?');
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
  if (q < 0) return target.basePath + path;
  const params = new URLSearchParams(rawUrl.slice(q + 1));
  params.delete('api-key');
  const query = params.toString();
  return target.basePath + path + (query ? `?${query}` : '');
}

export function openUpstream(target: UpstreamTarget, method: string, path: string, headers: OutgoingHttpHeaders): ClientRequest {
  const common = { method, path, headers, agent: target.agent };
  if (target.socketPath) return httpRequest({ ...common, socketPath: target.socketPath });
  const opts = { ...common, host: target.host, port: target.port };
  return target.protocol === 'https:' ? httpsRequest(opts) : httpRequest(opts);
}

export type ProxyFailure = { kind: 'unavailable' | 'timeout' | 'too_large'; message: string };

const RESPONSE_HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'trailer']);

function responseHeaders(res: IncomingMessage): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(res.headers)) {
    // The upstream's route template is for the gateway's trace (proxyHttp's onRoute), not for clients.
    if (value !== undefined && !RESPONSE_HOP_BY_HOP.has(name.toLowerCase()) && name.toLowerCase() !== ROUTE_HEADER) out[name] = value;
  }
  return out;
}

export interface ProxyTimeouts {
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  idleTimeoutMs: number;
  maxBodyBytes: number;
}

/** Methods a reset request may be sent again with: those that change nothing (RFC 9110's safe methods). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Streams one request to the upstream and its response back, chunk by chunk (SSE, multipart and large bodies
 * are never buffered). Resolves with the status sent to the client, or with a failure when nothing was sent
 * yet so the caller can answer 502/504/413 in the gateway's error shape.
 *
 * A request on a pooled connection that fails before any answer with ECONNRESET or EPIPE (a replica that is stopping
 * closed the connection as the request was written to it) is sent once more on another connection when its method is
 * a safe one without a body (GET, HEAD, OPTIONS): the same error also comes from an upstream that read the request
 * and then died or was cut, so a request that may change something is never sent twice; it gets the 502.
 */
export function proxyHttp(
  req: IncomingMessage,
  res: ServerResponse,
  target: UpstreamTarget,
  path: string,
  headers: OutgoingHttpHeaders,
  timeouts: ProxyTimeouts,
  extraResponseHeaders: Record<string, string>,
  /** Told the route template the upstream matched (its `x-lore-route`, sent when it traces), to name the span. */
  onRoute?: (route: string) => void,
): Promise<{ status: number } | ProxyFailure> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (v: { status: number } | ProxyFailure) => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    };
    let connectTimer: NodeJS.Timeout | undefined;
    const timers: { response?: NodeJS.Timeout } = {};
    const clear = () => {
      clearTimeout(connectTimer);
      clearTimeout(timers.response);
    };
    // Sent once more at most, and only what changes nothing and carries no body.
    const bodiless = (req.headers['content-length'] === undefined || req.headers['content-length'] === '0') && req.headers['transfer-encoding'] === undefined;
    let replayable = SAFE_METHODS.has((req.method ?? 'GET').toUpperCase()) && bodiless;
    let upstream = openUpstream(target, req.method ?? 'GET', path, headers);
    const fail = (failure: ProxyFailure) => {
      clear();
      upstream.destroy();
      if (res.headersSent) {
        res.destroy();
        settle({ status: res.statusCode });
      } else settle(failure);
    };

    const wire = (up: ClientRequest) => {
      up.on('socket', (socket) => {
        const connecting = (socket as unknown as { connecting?: boolean }).connecting;
        if (connecting) {
          clearTimeout(connectTimer);
          connectTimer = setTimeout(() => fail({ kind: 'timeout', message: `upstream ${target.name} did not accept the connection in time` }), timeouts.connectTimeoutMs);
          socket.once('connect', () => clearTimeout(connectTimer));
        }
      });

      up.on('error', (err: NodeJS.ErrnoException) => {
        if (settled || up !== upstream) return;
        if (replayable && up.reusedSocket && !res.headersSent && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          replayable = false;
          req.unpipe(up);
          up.destroy();
          upstream = openUpstream(target, req.method ?? 'GET', path, headers);
          wire(upstream);
          upstream.end();
          return;
        }
        fail({ kind: 'unavailable', message: `upstream ${target.name} is unavailable (${err.code ?? 'error'})` });
      });

      up.on('response', (upRes) => {
        clear();
        replayable = false;
        // An upstream that refused the body as too large, or answered before it was all written, may leave the rest of
        // it unread on the connection: that connection must carry no other request, so it is closed once this response
        // ends instead of going back to the pool. Were it kept, the next request written to it (any tenant's) would be
        // read as the rest of this body, or meet a connection the upstream closes, and hang or fail.
        if (upRes.statusCode === 413 || !up.writableFinished) up.shouldKeepAlive = false;
        // The upstream answered before the client finished sending (an early 413, say): the rest of the client's body is
        // read and dropped once the answer has gone (below, at the upstream's end), within the listener's drain bound
        // (`createServiceServer`), so the client can finish writing and read the answer. Closing the connection after
        // the answer instead (before 2026-11-30) reset many clients still writing: they saw EPIPE, not the 413.
        const route = upRes.headers[ROUTE_HEADER];
        if (onRoute && typeof route === 'string') onRoute(route);
        const h = responseHeaders(upRes);
        for (const [k, v] of Object.entries(extraResponseHeaders)) h[k] = v;
        res.writeHead(upRes.statusCode ?? 502, h);
        // Streams (SSE) must reach the client as they are produced.
        res.flushHeaders();
        upRes.setTimeout(timeouts.idleTimeoutMs, () => {
          upRes.destroy();
          res.destroy();
        });
        upRes.pipe(res);
        upRes.on('end', () => {
          if (!req.complete) {
            req.unpipe(up);
            req.resume();
          }
          settle({ status: upRes.statusCode ?? 502 });
        });
        upRes.on('error', () => {
          res.destroy();
          settle({ status: upRes.statusCode ?? 502 });
        });
      });
    };
    wire(upstream);
    timers.response = setTimeout(() => fail({ kind: 'timeout', message: `upstream ${target.name} did not answer in time` }), timeouts.responseTimeoutMs);

    res.on('close', () => {
      // The client went away: stop the upstream work too.
      if (!res.writableFinished) upstream.destroy();
      clear();
      settle({ status: res.statusCode });
    });

    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > timeouts.maxBodyBytes) {
        req.unpipe(upstream);
        fail({ kind: 'too_large', message: `request body exceeds ${timeouts.maxBodyBytes} bytes` });
      }
    });
    req.pipe(upstream);
  });
}

export function writeRawResponse(socket: Duplex, status: number, reason: string, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${reason}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(payload)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${payload}`);
}

/** Opens the upstream websocket (or any Upgrade) and splices the two sockets together. */
export function proxyUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: UpstreamTarget,
  path: string,
  headers: OutgoingHttpHeaders,
  timeouts: ProxyTimeouts,
  onFailure: (failure: ProxyFailure) => void,
  /** Told the status the client was sent: the upstream's refusal, or 101 once the socket is spliced. */
  onAnswer: (status: number) => void = () => undefined,
): void {
  const upstream = openUpstream(target, req.method ?? 'GET', path, headers);
  const timer = setTimeout(() => {
    upstream.destroy();
    onFailure({ kind: 'timeout', message: `upstream ${target.name} did not answer in time` });
  }, timeouts.responseTimeoutMs);
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    clearTimeout(timer);
    onFailure({ kind: 'unavailable', message: `upstream ${target.name} is unavailable (${err.code ?? 'error'})` });
  });
  upstream.on('response', (upRes) => {
    // The upstream refused the upgrade: relay its answer as is.
    clearTimeout(timer);
    const lines = [`HTTP/1.1 ${upRes.statusCode} ${upRes.statusMessage ?? ''}`];
    for (const [k, v] of Object.entries(responseHeaders(upRes))) lines.push(`${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`);
    lines.push('Connection: close');
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    upRes.pipe(socket);
    onAnswer(upRes.statusCode ?? 502);
  });
  upstream.on('upgrade', (upRes, upSocket, upHead) => {
    clearTimeout(timer);
    const lines = [`HTTP/1.1 101 Switching Protocols`];
    for (const [k, v] of Object.entries(upRes.headers)) {
      if (v !== undefined) lines.push(`${k}: ${Array.isArray(v) ? v.join(', ') : v}`);
    }
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) upSocket.write(head);
    onAnswer(101);
    upSocket.setTimeout(timeouts.idleTimeoutMs, () => upSocket.destroy());
    upSocket.pipe(socket).pipe(upSocket);
    const close = () => {
      upSocket.destroy();
      socket.destroy();
    };
    upSocket.on('error', close);
    socket.on('error', close);
    upSocket.on('close', close);
    socket.on('close', close);
  });
  upstream.end();
}
