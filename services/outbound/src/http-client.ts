import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import { isIP } from 'node:net';
import { MIMEType, TextDecoder } from 'node:util';
import { HttpProxyAgent } from 'http-proxy-agent';
import { HttpsProxyAgent } from 'https-proxy-agent';
import type { RobotsPolicy } from './robots';
import { TargetGuard, TargetRefusedError, type ResolvedTarget } from './target-guard';
import { untilAborted } from '@lore/runtime/kit';

/**
 * Why a fetch produced no usable response. `refused`: the guard (or the connected peer check) said no, before any
 * byte was sent to a forbidden address; `disallowed`: robots.txt of the URL (or of a redirect hop) says no;
 * `too_large`: the body passed the limit and the caller asked for an error.
 */
export type OutboundErrorKind =
  | 'refused'
  | 'disallowed'
  | 'timeout'
  | 'network_error'
  | 'too_large'
  | 'too_many_redirects'
  | 'invalid_request'
  | 'aborted';

export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundErrorKind,
    message: string,
    /** What had arrived when the fetch failed, for callers that record attempts (a webhook's late answer). */
    readonly partial: { status: number | null; body: Buffer | null } = { status: null, body: null },
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export type OutboundMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

export interface OutboundRequest {
  url: string | URL;
  method?: OutboundMethod;
  /** Caller headers; `host`, `content-length`, `user-agent`, `connection` and `transfer-encoding` are the client's. */
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /**
   * `follow` (default): up to `maxRedirects` hops, every hop checked by the guard again and pinned again;
   * `manual`: a 3xx is returned as the response (webhook deliveries never follow one).
   */
  redirect?: 'follow' | 'manual';
  maxRedirects?: number;
  /** Bytes of body read at most; enforced while reading, so a server cannot stream more at us. */
  maxResponseBytes?: number;
  /**
   * The body limit of the response that answered, chosen once its status and headers are in (a page fetcher reads a
   * PDF whole but an HTML page only up to its text limit); it replaces `maxResponseBytes` for that response.
   */
  maxResponseBytesFor?: (head: { url: string; status: number; headers: IncomingHttpHeaders; contentType: string | null }) => number;
  /** Past `maxResponseBytes`: `error` (default) fails the fetch; `truncate` keeps the first bytes and says so. */
  oversize?: 'error' | 'truncate';
  /** Deadline of the whole fetch: every resolution, connection, redirect hop, header and body byte. */
  timeoutMs?: number;
  /** Deadline of one TCP connection and its TLS handshake (a reused connection has none). */
  connectTimeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Page fetchers opt into robots.txt here: every URL, the first and each redirect hop, must be allowed for the
   * client's product token (its user agent up to the first `/`) before it is requested.
   */
  robots?: RobotsPolicy;
}

export interface OutboundResponse {
  /** The URL that answered (after redirects). */
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** True when the body was cut at `maxResponseBytes` (only with `oversize: 'truncate'`). */
  truncated: boolean;
  /** Media type without parameters, lower case (`text/html`), or null when absent or unparseable. */
  contentType: string | null;
  /** The charset parameter as the server sent it, lower case, or null. */
  charset: string | null;
  /** Every URL redirected to, in order. */
  redirects: string[];
  /** The checked address the final connection went to. */
  address: string;
  elapsedMs: number;
  /** The body decoded with `charset` (UTF-8 when absent or unknown to the platform's decoder). */
  text(): string;
}

export interface OutboundHttpClientOptions {
  guard: TargetGuard;
  /** Sent on every request; fetchers that honour robots.txt use the same product token there. */
  userAgent: string;
  timeoutMs?: number;
  connectTimeoutMs?: number;
  maxResponseBytes?: number;
  maxRedirects?: number;
  /** Test-only: an extra certificate authority (PEM) trusted besides the public roots. */
  extraCaPem?: string;
  /** Sockets kept per origin; also caps parallel connections to one origin. */
  maxSocketsPerOrigin?: number;
  /**
   * An operator's egress proxy every request of this client goes through (docs/outbound.md, "Egress proxies"):
   * `http(s)://[user:password@]host:port`. The guard still checks every target and redirect hop before anything is
   * sent; `https` targets are tunnelled with CONNECT to the checked address, `http` ones are sent in absolute form.
   */
  proxy?: { url: string };
}

export const OUTBOUND_DEFAULTS = {
  timeoutMs: 10_000,
  connectTimeoutMs: 5_000,
  maxResponseBytes: 5 * 1024 * 1024,
  maxRedirects: 5,
  maxSocketsPerOrigin: 16,
} as const;

/** Hard ceilings a caller's per-request values are clamped to. */
const MAX_REDIRECTS_CEILING = 20;
const MAX_TIMEOUT_MS = 5 * 60_000;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const METHODS = new Set<string>(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Headers the client owns: framing, the pinned host and the product token. */
const CLIENT_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'user-agent', 'keep-alive', 'upgrade', 'te', 'trailer']);
/** Credentials a redirect to another origin must not carry along. */
const ORIGIN_BOUND_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

/**
 * The one way a Lore service talks to a URL a user chose. Every hop goes through the guard (scheme, names, every
 * DNS answer), the connection is pinned to the checked address, the connected peer is checked again, and bodies,
 * time and redirects are bounded. Compression is not negotiated (`accept-encoding: identity`), so the size limit is
 * the size of what the caller gets.
 */
/**
 * The content coding of a response body the client did not ask for (it sends `accept-encoding: identity`), or null
 * for a plain body: bytes no reader of Lore decodes, which read as text would be noise.
 */
export function unrequestedEncoding(res: Pick<OutboundResponse, 'headers'>): string | null {
  const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
  return encoding === '' || encoding === 'identity' ? null : encoding.slice(0, 40);
}

/**
 * The `lookup` of a connection to a checked target: it answers the address the guard checked, never a fresh DNS
 * answer, and answers it once pending ticks have run, as `dns.lookup` does. Answered at once, a connect that fails at once (no
 * route to an IPv6-only name on an IPv4-only host: ENETUNREACH) destroyed the socket before the HTTP request had
 * attached its error handler, and the unhandled error ended the whole process (before 2026-11-30).
 */
export function pinnedLookupOf(target: Pick<ResolvedTarget, 'address' | 'family'>): LookupFunction {
  return (_hostname, options, callback) => {
    const all = (options as { all?: boolean }).all === true;
    setImmediate(() => {
      if (all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: target.address, family: target.family }]);
      else callback(null, target.address, target.family);
    });
  };
}

export class OutboundHttpClient {
  private readonly guard: TargetGuard;
  private readonly http: HttpAgent;
  private readonly https: HttpsAgent;
  private readonly userAgent: string;
  /** The product token robots.txt groups are matched against (`LoreBot` of `LoreBot/1 (+https://…)`). */
  readonly robotsAgent: string;
  private readonly defaults: { timeoutMs: number; connectTimeoutMs: number; maxResponseBytes: number; maxRedirects: number };
  private readonly secureContext: ReturnType<typeof createSecureContext> | undefined;
  private readonly proxy: { http: HttpProxyAgent<string>; https: HttpsProxyAgent<string> } | null;

  constructor(options: OutboundHttpClientOptions) {
    this.guard = options.guard;
    this.userAgent = options.userAgent;
    this.robotsAgent = options.userAgent.split(/[/\s]/)[0] || options.userAgent;
    this.defaults = {
      timeoutMs: options.timeoutMs ?? OUTBOUND_DEFAULTS.timeoutMs,
      connectTimeoutMs: options.connectTimeoutMs ?? OUTBOUND_DEFAULTS.connectTimeoutMs,
      maxResponseBytes: options.maxResponseBytes ?? OUTBOUND_DEFAULTS.maxResponseBytes,
      maxRedirects: options.maxRedirects ?? OUTBOUND_DEFAULTS.maxRedirects,
    };
    const maxSockets = options.maxSocketsPerOrigin ?? OUTBOUND_DEFAULTS.maxSocketsPerOrigin;
    // Idle connections are kept up to the same bound: closing them only to open new ones costs a TLS handshake per
    // request on a busy origin.
    const pool = { keepAlive: true, keepAliveMsecs: 10_000, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo' as const };
    // A prepared context rather than a `ca` list: the agent keys its socket pool on the options, and a long CA
    // list in them would be serialised on every request.
    this.secureContext = options.extraCaPem ? createSecureContext({ ca: [...rootCertificates, options.extraCaPem] }) : undefined;
    this.http = new HttpAgent(pool);
    this.https = new HttpsAgent({ ...pool, ...(this.secureContext ? { secureContext: this.secureContext } : {}) });
    this.proxy = null;
    if (options.proxy) {
      const proxyUrl = checkProxyUrl(options.proxy.url);
      const https = new HttpsProxyAgent(proxyUrl, pool);
      const http = new HttpProxyAgent(proxyUrl, pool);
      // Said outright rather than guessed by the agents from the call stack.
      https.protocol = 'https:';
      http.protocol = 'http:';
      this.proxy = { http, https };
    }
  }

  async fetch(input: OutboundRequest): Promise<OutboundResponse> {
    const started = performance.now();
    const timeoutMs = clamp(input.timeoutMs ?? this.defaults.timeoutMs, 1, MAX_TIMEOUT_MS);
    const connectTimeoutMs = clamp(input.connectTimeoutMs ?? this.defaults.connectTimeoutMs, 1, timeoutMs);
    const maxRedirects = clamp(input.maxRedirects ?? this.defaults.maxRedirects, 0, MAX_REDIRECTS_CEILING);
    const limits = { maxBytes: Math.max(0, input.maxResponseBytes ?? this.defaults.maxResponseBytes), truncate: input.oversize === 'truncate' };
    let method = (input.method ?? 'GET').toUpperCase();
    if (!METHODS.has(method)) throw new OutboundError('invalid_request', `method ${method.slice(0, 20)} is not supported`);
    let body: Buffer | null = input.body === undefined ? null : Buffer.from(input.body);
    let headers = callerHeaders(input.headers ?? {});

    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new OutboundError('timeout', `no complete response within ${timeoutMs} ms`)), timeoutMs);
    const onCallerAbort = () => deadline.abort(new OutboundError('aborted', 'the fetch was cancelled'));
    if (input.signal?.aborted) onCallerAbort();
    else input.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const signal = deadline.signal;

    try {
      let url: URL | string = input.url;
      const redirects: string[] = [];
      for (;;) {
        // The guard first, so a forbidden URL reports as refused; then robots.txt, fetched through this same client.
        const target = await this.check(url, signal);
        if (input.robots) await this.checkRobots(input.robots, target.url, signal);
        const res = await this.exchange(target, { method, headers, body, connectTimeoutMs }, signal);
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (input.redirect !== 'manual' && REDIRECT_STATUSES.has(status) && typeof location === 'string' && location !== '') {
          // The body of a redirect is not wanted; the socket is dropped rather than drained.
          res.destroy();
          if (redirects.length >= maxRedirects) throw new OutboundError('too_many_redirects', `more than ${maxRedirects} redirects`, { status, body: null });
          let next: URL;
          try {
            next = new URL(location, target.url);
          } catch {
            throw new OutboundError('refused', 'redirect to an invalid URL', { status, body: null });
          }
          if (next.origin !== target.url.origin) headers = withoutOriginBound(headers);
          // 303 always, and 301/302 after a POST as every browser does, continue as GET without a body.
          if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
            if (method !== 'HEAD') method = 'GET';
            body = null;
            headers = withoutBodyHeaders(headers);
          }
          redirects.push(next.href);
          url = next;
          continue;
        }
        const { contentType, charset } = parseContentType(res.headers['content-type']);
        const bodyLimits = input.maxResponseBytesFor ? { ...limits, maxBytes: Math.max(0, input.maxResponseBytesFor({ url: target.url.href, status, headers: res.headers, contentType })) } : limits;
        const read = await readBody(res, bodyLimits, signal);
        const finalBody = read.body;
        return {
          url: target.url.href,
          status,
          headers: res.headers,
          body: finalBody,
          truncated: read.truncated,
          contentType,
          charset,
          redirects,
          address: target.address,
          elapsedMs: Math.round(performance.now() - started),
          text: () => decode(finalBody, charset),
        };
      }
    } catch (err) {
      // Whatever was in flight when the deadline or the caller ended the fetch reports as that, not as a socket error.
      if (signal.aborted && signal.reason instanceof OutboundError && !(err instanceof OutboundError && err.kind === signal.reason.kind)) {
        const partial = err instanceof OutboundError ? err.partial : undefined;
        throw new OutboundError(signal.reason.kind, signal.reason.message, partial);
      }
      throw err;
    } finally {
      clearTimeout(timer);
      input.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  close(): void {
    this.http.destroy();
    this.https.destroy();
    this.proxy?.http.destroy();
    this.proxy?.https.destroy();
  }

  private async checkRobots(robots: RobotsPolicy, url: string | URL, signal: AbortSignal): Promise<void> {
    const href = typeof url === 'string' ? url : url.href;
    if (!(await untilAborted(robots.isAllowed(href, this.robotsAgent), signal))) {
      throw new OutboundError('disallowed', `robots.txt does not allow ${this.robotsAgent} to fetch this URL`);
    }
  }

  private async check(url: string | URL, signal: AbortSignal): Promise<ResolvedTarget> {
    try {
      return await this.guard.resolve(url, signal);
    } catch (err) {
      if (err instanceof TargetRefusedError) throw new OutboundError('refused', err.message);
      throw err;
    }
  }

  /**
   * One request and its response head. A kept-alive connection the server closed just as it was reused breaks
   * before any answer (Node's documented race with the server's idle timeout): a GET, HEAD or OPTIONS then goes once
   * more on a new connection (`staleRetry`), since the server never saw it.
   */
  private exchange(
    target: ResolvedTarget,
    req: { method: string; headers: Record<string, string>; body: Buffer | null; connectTimeoutMs: number },
    signal: AbortSignal,
    staleRetry = true,
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const fail = (err: OutboundError) => {
        if (settled) return;
        settled = true;
        cleanup();
        outgoing.destroy();
        reject(err);
      };
      const cleanup = () => {
        clearTimeout(connectTimer);
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = () => fail(signal.reason as OutboundError);

      const pinnedLookup = pinnedLookupOf(target);
      const https = target.url.protocol === 'https:';
      const proxy = this.proxy;
      // Through an egress proxy: an https target is tunnelled with CONNECT to the checked address (the TLS handshake
      // still verifies the certificate for the host name); an http target goes in absolute form with the host name,
      // which the proxy resolves itself (docs/outbound.md, "Egress proxies").
      const route: RequestOptions = !proxy
        ? { hostname: target.hostname, agent: https ? this.https : this.http, lookup: pinnedLookup, family: target.family }
        : https
          ? { hostname: target.address, agent: proxy.https, ...(isIP(target.hostname) ? {} : { servername: target.hostname }), ...(this.secureContext ? { secureContext: this.secureContext } : {}) }
          : { hostname: target.hostname, agent: proxy.http };
      const options: RequestOptions = {
        method: req.method,
        ...route,
        port: target.port,
        path: `${target.url.pathname}${target.url.search}`,
        headers: {
          ...req.headers,
          host: target.url.host,
          'user-agent': this.userAgent,
          ...(req.headers['accept-encoding'] === undefined ? { 'accept-encoding': 'identity' } : {}),
          ...(req.body !== null ? { 'content-length': String(req.body.length) } : {}),
        },
      };
      let outgoing: ReturnType<typeof httpRequest>;
      try {
        outgoing = (https ? httpsRequest : httpRequest)(options);
      } catch (err) {
        // Node refuses bad header names or values (CR/LF) before any connection.
        cleanup();
        return reject(new OutboundError('invalid_request', `request refused: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`));
      }
      signal.addEventListener('abort', onAbort, { once: true });

      // A proxy that will not open the tunnel answers CONNECT with an error status: that is the proxy's failure, not a
      // response of the target (the agent hands its status line to the request otherwise).
      outgoing.on('proxyConnect', (answer: { statusCode?: number }) => {
        if (answer.statusCode !== 200) fail(new OutboundError('network_error', `the egress proxy refused the tunnel (${answer.statusCode ?? 'no status'})`));
      });
      outgoing.on('socket', (socket: Socket) => {
        // The peer of a proxied request is the operator's proxy, not the target; the target was checked by the guard.
        if (proxy) return;
        // Second line of defence: whatever socket the request ends up on, its peer must be an allowed address.
        const checkPeer = () => {
          const peer = socket.remoteAddress;
          if (peer && !this.guard.isAllowedAddress(peer)) fail(new OutboundError('refused', 'connected peer address is not allowed'));
        };
        if (socket.remoteAddress) checkPeer();
        else socket.once('connect', checkPeer);
        if (socket.connecting) {
          connectTimer = setTimeout(() => fail(new OutboundError('timeout', `no connection within ${req.connectTimeoutMs} ms`)), req.connectTimeoutMs);
          socket.once(https ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
        }
      });
      outgoing.on('response', (res: IncomingMessage) => {
        if (settled) return void res.destroy();
        // 407 is only ever a proxy's answer: the egress proxy refused its credentials.
        if (proxy && res.statusCode === 407) {
          res.destroy();
          return fail(new OutboundError('network_error', 'the egress proxy refused the request (407)'));
        }
        settled = true;
        cleanup();
        resolve(res);
      });
      outgoing.on('error', (err) => {
        if (!settled && staleRetry && outgoing.reusedSocket && SAFE_METHODS.has(req.method) && STALE_CODES.has((err as NodeJS.ErrnoException).code ?? '')) {
          settled = true;
          cleanup();
          outgoing.destroy();
          return resolve(this.exchange(target, req, signal, false));
        }
        fail(new OutboundError('network_error', describe(err)));
      });
      outgoing.end(req.body ?? undefined);
    });
  }
}

/** An egress proxy's address: http or https, a host, no path; credentials (Basic) allowed. */
function checkProxyUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('the egress proxy is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`the egress proxy must be an http or https URL, not ${url.protocol}`);
  if (!url.hostname) throw new Error('the egress proxy has no host');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) throw new Error('the egress proxy URL must not have a path, query or fragment');
  return url.href;
}

/** The body, at most `maxBytes`; the rest is never read (the connection is discarded instead). */
function readBody(res: IncomingMessage, limits: { maxBytes: number; truncate: boolean }, signal: AbortSignal): Promise<{ body: Buffer; truncated: boolean }> {
  const status = res.statusCode ?? null;
  const declared = Number(res.headers['content-length']);
  if (!limits.truncate && Number.isFinite(declared) && declared > limits.maxBytes) {
    res.destroy();
    return Promise.reject(new OutboundError('too_large', `response of ${declared} bytes is larger than the limit of ${limits.maxBytes}`, { status, body: null }));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const finish = (err: OutboundError | null, truncated = false) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      const body = Buffer.concat(chunks).subarray(0, limits.maxBytes);
      if (err) reject(new OutboundError(err.kind, err.message, { status, body }));
      else resolve({ body, truncated });
    };
    const onAbort = () => {
      res.destroy();
      finish(signal.reason as OutboundError);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    res.on('data', (chunk: Buffer) => {
      if (settled) return;
      received += chunk.length;
      chunks.push(chunk);
      if (received > limits.maxBytes) {
        // Enough is known; do not let a server stream at us. The socket is discarded, not reused.
        if (limits.truncate) finish(null, true);
        else finish(new OutboundError('too_large', `response is larger than the limit of ${limits.maxBytes} bytes`));
        res.destroy();
      }
    });
    res.on('end', () => finish(null));
    res.on('error', (err) => finish(new OutboundError('network_error', describe(err))));
    res.on('aborted', () => finish(new OutboundError('network_error', 'response aborted')));
    res.on('close', () => {
      if (!res.complete) finish(new OutboundError('network_error', 'response aborted'));
    });
  });
}

/** Media type and charset of a Content-Type header; nulls for an absent or malformed one. */
export function parseContentType(header: string | undefined): { contentType: string | null; charset: string | null } {
  if (!header) return { contentType: null, charset: null };
  try {
    const mime = new MIMEType(header);
    return { contentType: mime.essence, charset: mime.params.get('charset')?.toLowerCase() ?? null };
  } catch {
    return { contentType: null, charset: null };
  }
}

function decode(body: Buffer, charset: string | null): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8');
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return decoder.decode(body);
}

function callerHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (!CLIENT_HEADERS.has(lower)) out[lower] = value;
  }
  return out;
}

function withoutOriginBound(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !ORIGIN_BOUND_HEADERS.has(name)));
}

function withoutBodyHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !name.startsWith('content-')));
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(Math.floor(value), min), max);
}

/** Methods sent again after a reused connection broke before any answer (they change nothing on the server). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** How a reused connection the server had already closed fails (a reset, or a write to a closed socket). */
const STALE_CODES = new Set(['ECONNRESET', 'EPIPE']);

function describe(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  // TLS and socket errors carry codes that are safe and useful to show; messages may contain addresses.
  return code ? `connection failed: ${code}` : `connection failed: ${err.message}`;
}
