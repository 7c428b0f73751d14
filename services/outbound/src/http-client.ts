import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction, Socket } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import { TargetGuard, TargetRefusedError, type ResolvedTarget } from './target-guard';

export type AttemptOutcome = 'succeeded' | 'http_error' | 'redirect' | 'timeout' | 'network_error' | 'refused';

export interface AttemptResult {
  outcome: AttemptOutcome;
  statusCode: number | null;
  latencyMs: number;
  /** The start of the response body, at most `snippetBytes` bytes, as text. */
  responseSnippet: string | null;
  /** Why the attempt failed, safe to show to the subscriber. */
  error: string | null;
}

export interface SendInput {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export interface WebhookHttpClientOptions {
  guard: TargetGuard;
  /** Whole-attempt deadline: resolution, connection, TLS, response headers and body. */
  timeoutMs: number;
  /** Bytes of the response body kept for the attempt record. */
  snippetBytes?: number;
  /** Bytes read before the rest of a large response is dropped with its connection. */
  maxResponseBytes?: number;
  /** Test-only: an extra certificate authority (PEM) trusted besides the public roots. */
  extraCaPem?: string;
  /** Sockets kept per receiver origin; also caps parallel connections to one origin. */
  maxSocketsPerOrigin?: number;
  userAgent?: string;
}

const ERROR_TEXT_MAX = 300;

/**
 * Sends one delivery attempt. Redirects are never followed (a 3xx is a failed attempt): following one would need
 * the same address checks again and gives a receiver a way to point the worker elsewhere; a subscriber who moves
 * its endpoint updates the subscription instead.
 */
export class WebhookHttpClient {
  private readonly agent: Agent;
  private readonly guard: TargetGuard;
  private readonly timeoutMs: number;
  private readonly snippetBytes: number;
  private readonly maxResponseBytes: number;
  private readonly userAgent: string;

  constructor(options: WebhookHttpClientOptions) {
    this.guard = options.guard;
    this.timeoutMs = options.timeoutMs;
    this.snippetBytes = options.snippetBytes ?? 1024;
    this.maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
    this.userAgent = options.userAgent ?? 'Lore-Webhooks/1';
    const maxSockets = options.maxSocketsPerOrigin ?? 16;
    this.agent = new Agent({
      keepAlive: true,
      keepAliveMsecs: 10_000,
      maxSockets,
      // Idle connections are kept up to the same bound: closing them only to open new ones costs a TLS handshake
      // per attempt on a busy endpoint.
      maxFreeSockets: maxSockets,
      scheduling: 'lifo',
      // A prepared context rather than a `ca` list: the agent keys its socket pool on the options, and a long CA
      // list in them would be serialised on every request.
      ...(options.extraCaPem ? { secureContext: createSecureContext({ ca: [...rootCertificates, options.extraCaPem] }) } : {}),
    });
  }

  async send(input: SendInput): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.max(0, Math.round(performance.now() - started));
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.timeoutMs);
    try {
      let target: ResolvedTarget;
      try {
        target = await untilAborted(this.guard.resolve(input.url), deadline.signal);
      } catch (err) {
        if (err instanceof TargetRefusedError) return failure('refused', null, elapsed(), null, err.message);
        if (deadline.signal.aborted) return failure('timeout', null, elapsed(), null, `no response within ${this.timeoutMs} ms`);
        throw err;
      }
      const result = await this.exchange(target, input, deadline.signal);
      const latencyMs = elapsed();
      // A response that completed after the deadline is not an acknowledgement, whatever its status.
      if (deadline.signal.aborted || latencyMs > this.timeoutMs) {
        return failure('timeout', result.statusCode, latencyMs, result.snippet, `no complete response within ${this.timeoutMs} ms`);
      }
      if (result.error) return failure(result.error.outcome, result.statusCode, latencyMs, result.snippet, result.error.message);
      const status = result.statusCode ?? 0;
      if (status >= 200 && status < 300) return { outcome: 'succeeded', statusCode: status, latencyMs, responseSnippet: result.snippet, error: null };
      if (status >= 300 && status < 400) {
        return failure('redirect', status, latencyMs, result.snippet, 'redirects are not followed; update the subscription URL instead');
      }
      return failure('http_error', status, latencyMs, result.snippet, `receiver answered ${status}`);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.agent.destroy();
  }

  private exchange(
    target: ResolvedTarget,
    input: SendInput,
    signal: AbortSignal,
  ): Promise<{ statusCode: number | null; snippet: string | null; error?: { outcome: AttemptOutcome; message: string } }> {
    return new Promise((resolve) => {
      let settled = false;
      let statusCode: number | null = null;
      const chunks: Buffer[] = [];
      let kept = 0;
      let received = 0;
      const snippet = () => (kept > 0 ? toSnippet(Buffer.concat(chunks), this.snippetBytes) : null);
      const done = (error?: { outcome: AttemptOutcome; message: string }) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve({ statusCode, snippet: snippet(), ...(error ? { error } : {}) });
      };

      // The connection goes to the address the guard checked, never to a fresh DNS answer.
      const pinnedLookup: LookupFunction = (_hostname, options, callback) => {
        const all = (options as { all?: boolean }).all === true;
        if (all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: target.address, family: target.family }]);
        else callback(null, target.address, target.family);
      };
      const path = `${target.url.pathname}${target.url.search}`;
      const options: RequestOptions = {
        method: 'POST',
        hostname: target.hostname,
        port: target.port,
        path,
        agent: this.agent,
        lookup: pinnedLookup,
        family: target.family,
        headers: {
          ...input.headers,
          host: target.url.host,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(input.body)),
          'user-agent': this.userAgent,
        },
      };
      const req = request(options);

      const onAbort = () => {
        req.destroy();
        done({ outcome: 'timeout', message: `no complete response within ${this.timeoutMs} ms` });
      };
      signal.addEventListener('abort', onAbort, { once: true });

      // Second line of defence: whatever socket the request ends up on, its peer must be an allowed address.
      req.on('socket', (socket: Socket) => {
        const check = () => {
          const peer = socket.remoteAddress;
          if (peer && !this.guard.isAllowedAddress(peer)) {
            req.destroy();
            done({ outcome: 'refused', message: 'connected peer address is not allowed' });
          }
        };
        if (socket.remoteAddress) check();
        else socket.once('connect', check);
      });
      req.on('response', (res: IncomingMessage) => {
        statusCode = res.statusCode ?? null;
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (kept < this.snippetBytes) {
            chunks.push(chunk);
            kept += chunk.length;
          }
          if (received > this.maxResponseBytes) {
            // Enough is known; do not let a receiver stream at us. The socket is discarded, not reused.
            res.destroy();
            done();
          }
        });
        res.on('end', () => done());
        res.on('error', (err) => done({ outcome: 'network_error', message: describe(err) }));
        res.on('aborted', () => done({ outcome: 'network_error', message: 'response aborted' }));
      });
      req.on('error', (err) => done({ outcome: 'network_error', message: describe(err) }));
      req.end(input.body);
    });
  }
}

function failure(outcome: AttemptOutcome, statusCode: number | null, latencyMs: number, snippet: string | null, error: string): AttemptResult {
  return { outcome, statusCode, latencyMs, responseSnippet: snippet, error: error.slice(0, ERROR_TEXT_MAX) };
}

/** `promise`, or a rejection as soon as `signal` aborts (a resolver that hangs must not outlive the deadline). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Text of at most `maxBytes` bytes, without NUL (PostgreSQL text refuses it) and without a torn last character. */
function toSnippet(data: Buffer, maxBytes: number): string {
  const text = data.subarray(0, maxBytes).toString('utf8').replace(/\u0000/g, '');
  // A multi-byte character cut at the limit decodes to U+FFFD; drop it rather than store a broken character.
  const trimmed = data.length > maxBytes ? text.replace(/\uFFFD$/, '') : text;
  return trimmed.slice(0, maxBytes);
}

function describe(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  // TLS and socket errors carry codes that are safe and useful to show; messages may contain addresses.
  return code ? `connection failed: ${code}` : `connection failed: ${err.message}`;
}
