import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import Router, { type RouterOptions } from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { isDatabaseUnavailable } from '../db/unavailable';
import { AppError, errorBody, isAppError } from '../errors/app-error';
import { createHttpMetrics } from '../metrics/registry';
import type { Lifecycle } from '../lifecycle/lifecycle';
import { inCallerTrace } from '../telemetry/http';
import { ROUTE_HEADER, nameServerSpan, recordingSpan } from '../telemetry/spans';
import { writeAccessLine } from '../log/logger';
import { assertNoContentCoding } from './body';

export interface LoreState {
  requestId: string;
  log: Logger;
  /**
   * What a request no router route matched is counted and logged under (`route` of the HTTP metrics and the access
   * line) when a middleware answered it as a whole surface (the gateway's forwarding: `forward memory`); a bounded
   * name, never a path. Without it such a request is `unmatched`.
   */
  routeLabel?: string;
}

export type LoreContext = Koa.ParameterizedContext<LoreState>;
export type LoreApp = Koa<LoreState>;

export interface HttpAppOptions {
  service: string;
  logger: Logger;
  metrics: Registry;
  /** Largest JSON/text body accepted (bytes); larger bodies answer 413. */
  bodyLimitBytes?: number;
  /** Skip the JSON body parser (gateways that stream bodies through untouched). */
  parseBodies?: boolean;
  /** Trust `X-Forwarded-*` (only behind a known proxy). */
  proxy?: boolean;
  /**
   * When the SDK records, answer the matched route template in `x-lore-route` for a forwarding gateway's span
   * (default true). The gateway's public listener, which answers clients directly, turns it off.
   */
  routeHeader?: boolean;
  /**
   * Words an error that has no body of its own (its own refusals, a fault, a 404 nothing answered) in the service's
   * error family (by the request's path, for a service whose families differ by path), e.g. spec 2's `{detail}`;
   * default: the platform's envelope.
   */
  errorShape?: (err: AppError, path: string) => AppError;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * `ctx.state` of every request. The request's child logger (bound to its id) is built on first use: most
 * requests never log beyond the access line, and a pino child per request is a measurable share of the kit's
 * cost. Handlers may still replace `log` with a more specific child.
 */
class RequestState {
  private child?: Logger;
  [key: string]: unknown;

  constructor(
    private readonly base: Logger,
    readonly requestId: string,
  ) {}

  /** When the kit took the request (`performance.now()`). */
  private readonly began = performance.now();

  elapsedMs(): number {
    return performance.now() - this.began;
  }

  get log(): Logger {
    this.child ??= this.base.child({ request_id: this.requestId });
    return this.child;
  }

  set log(logger: Logger) {
    this.child = logger;
  }

  childIfMade(): Logger | undefined {
    return this.child;
  }
}

/** Where a socket keeps the context of the request it is carrying (see `watchSocket`). */
const IN_FLIGHT = Symbol('lore.inFlightRequest');
/** The last request the socket carried, kept after its middleware settled (its body may still be streaming). */
const LAST_REQUEST = Symbol('lore.lastRequest');
type WatchedSocket = NonNullable<LoreContext['req']['socket']> & { [IN_FLIGHT]?: LoreContext; [LAST_REQUEST]?: LoreContext };

/**
 * The errors client sockets reported of their own (watchSocket), so the app's error listener knows which came from
 * the client's connection.
 */
const CLIENT_SOCKET_ERRORS = new WeakSet<Error>();

/**
 * Koa reports an error of the socket under a response through `ctx.onerror` (its request step attaches
 * `on-finished` listeners to every response for that). The kit does the same with one `error` listener per
 * connection, which passes the error to the request the socket carries at that moment; a socket between requests
 * carries none.
 */
function watchSocket(ctx: LoreContext): WatchedSocket | undefined {
  const socket = ctx.req.socket as WatchedSocket | null;
  if (!socket) return undefined;
  if (!(IN_FLIGHT in socket)) {
    socket.on('error', (err: Error) => {
      // Not the error of a streamed body's source, which Koa's pipeline passes down to the socket after the source
      // failed (a connection the client closed fails the socket first).
      if ((socket[LAST_REQUEST]?.body as { errored?: unknown } | null | undefined)?.errored !== err) CLIENT_SOCKET_ERRORS.add(err);
      const current = socket[IN_FLIGHT];
      socket[IN_FLIGHT] = undefined;
      current?.onerror(err);
    });
  }
  socket[IN_FLIGHT] = ctx;
  socket[LAST_REQUEST] = ctx;
  return socket;
}

/**
 * Koa with the kit's request step in place of Koa's own. Koa's step sets the starting 404, attaches `on-finished`
 * to the response, runs the middleware and then its response step; the kit's (`kitRequest`, set by
 * `createHttpApp`) does the kit's per-request work around the middleware directly (no outer middleware frame),
 * watches the socket once per connection instead of once per response, and sends plain JSON bodies itself. Every
 * other answer still goes through Koa's own step (`koaRespond`), on-finished included.
 */
class KitKoa extends Koa<LoreState> {
  kitRequest!: (ctx: LoreContext, fnMiddleware: (ctx: LoreContext) => Promise<unknown>) => Promise<unknown>;

  /** Koa calls this for every request (a method of Koa's application its typings leave out). */
  handleRequest(ctx: LoreContext, fnMiddleware: (ctx: LoreContext) => Promise<unknown>): Promise<unknown> {
    return this.kitRequest(ctx, fnMiddleware);
  }

  /**
   * Koa's own request step for a request the kit's middleware has already run: a middleware that only puts the
   * status back (Koa's step starts by setting 404), then Koa's response step, with its `on-finished` watch and
   * its error handling.
   */
  koaRespond(ctx: LoreContext): Promise<void> {
    const status = ctx.res.statusCode;
    const koaStep = (Koa.prototype as unknown as { handleRequest(ctx: LoreContext, fn: () => Promise<void>): Promise<void> }).handleRequest;
    return koaStep.call(this, ctx, () => {
      ctx.res.statusCode = status;
      return Promise.resolve();
    });
  }
}

/**
 * With the SDK recording, the request's server span is named `{method} {route}` with `http.route` (OpenTelemetry's
 * HTTP conventions), and the template is told to a forwarding gateway in `x-lore-route` (which it removes). Without
 * the SDK nothing is done: one lookup of the active span.
 */
function nameTracedRequest(ctx: LoreContext, method: string, route: string, routeHeader: boolean): void {
  const span = recordingSpan();
  if (span === undefined) return;
  nameServerSpan(span, method, route);
  if (routeHeader && !ctx.res.headersSent) ctx.res.setHeader(ROUTE_HEADER, route);
}

/** The methods whose bodies are parsed (the body parser's own default set); other requests never reach it. */
const BODY_METHODS = ['POST', 'PUT', 'PATCH'];

/**
 * The Koa app every Lore process uses: request ids, a child logger per request, access logs, RED metrics per
 * route template, body-size limits, one error mapping and the closed 404 body for anything no route answered.
 * Routes are added by the caller.
 *
 * All of it runs in the app's request step (`KitKoa`), around the app's middleware rather than as a middleware of
 * its own: the caller's trace is continued first, then the request id, the timing, the body parser (called
 * directly, and only for methods that carry a body), the error mapping, the RED metrics and the access line, and
 * last a JSON body is sent (see `respondJson`) or the answer is left to Koa's response step.
 */
/** The status proxies record for a client that closed its request before it was answered. */
const CLIENT_CLOSED_REQUEST = 499;

/** True when the client closed the connection before its request's body arrived whole. */
function clientLeftMidRequest(ctx: LoreContext): boolean {
  const req = ctx.req;
  return !req.complete && (req.readableAborted || req.socket?.destroyed === true);
}

/** Error codes of a connection the other side closed (a write to it, a read from it). */
const CONNECTION_GONE = new Set(['EPIPE', 'ECONNRESET', 'ECONNABORTED']);

/**
 * True when the error is the client's connection going away under a response already started: a connection error
 * its own socket reported. The same code from an upstream (a streamed body's source) is a real failure: Koa's
 * pipeline destroys the client's socket with that one too, so only where the error came from tells them apart.
 */
function clientLeftMidResponse(err: Error & { code?: string }, ctx: LoreContext): boolean {
  return err.code !== undefined && CONNECTION_GONE.has(err.code) && CLIENT_SOCKET_ERRORS.has(err) && ctx.res.headersSent;
}

export function createHttpApp(options: HttpAppOptions): LoreApp {
  const app = new KitKoa({ proxy: options.proxy ?? false });
  const http = createHttpMetrics(options.metrics);
  const routeHeader = options.routeHeader ?? true;
  const limit = options.bodyLimitBytes ?? 1024 * 1024;
  const logger = options.logger;
  const parseBody =
    options.parseBodies === false
      ? undefined
      : bodyParser({
          parsedMethods: BODY_METHODS,
          enableTypes: ['json', 'text', 'form'],
          jsonLimit: limit,
          textLimit: limit,
          formLimit: limit,
          encoding: 'utf-8',
          onError: (err: Error & { status?: number; type?: string }) => {
            if (err.status === 413 || err.type === 'entity.too.large') {
              throw new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
            }
            throw new AppError('BAD_REQUEST', 'request body is not valid JSON');
          },
        });

  /**
   * What the kit does once the app's middleware has finished or failed: the 404 or the error body, metrics, the
   * access line, then the answer (a plain JSON body here, anything else through Koa's response step). Reads the
   * request and response objects directly where Koa's context would only delegate to them.
   */
  const settle = (ctx: LoreContext, state: RequestState, socket: WatchedSocket | undefined, failed: boolean, failure: unknown): Promise<void> | undefined => {
    try {
      try {
        // The client left before its request arrived whole (an upload cancelled halfway): there is no one to answer.
        // Counted and logged as 499, the status proxies give a client that closed its request, not as whatever the
        // handler had not set yet (a 404) or the error its broken read raised.
        if (clientLeftMidRequest(ctx)) {
          if (!ctx.res.headersSent) ctx.res.statusCode = CLIENT_CLOSED_REQUEST;
        } else if (failed) respondWithError(ctx, failure, options.errorShape);
        // Nothing answered the request: the closed 404 body, not Koa's plain-text "Not Found".
        else if (ctx.res.statusCode === 404 && ctx.response.body === undefined) respondWithError(ctx, new AppError('NOT_FOUND', 'route not found'), options.errorShape);
      } finally {
        const ms = state.elapsedMs();
        const method = ctx.req.method ?? 'GET';
        const matched = (ctx as unknown as { _matchedRoute?: string })._matchedRoute;
        const route = matched ?? ctx.state.routeLabel ?? 'unmatched';
        const status = ctx.res.statusCode;
        http.observe(method, route, status, ms / 1000);
        if (matched !== undefined) nameTracedRequest(ctx, method, matched, routeHeader);
        const durationMs = Math.round(ms * 10) / 10;
        // A handler that logged already made the request's child logger (it carries request_id and whatever the
        // handler bound); otherwise the base logger writes the id as a field and no child is built at all.
        const child = state.childIfMade();
        if (child) writeAccessLine(child, { method, path: ctx.path, route, status, duration_ms: durationMs });
        else writeAccessLine(logger, { request_id: state.requestId, method, path: ctx.path, route, status, duration_ms: durationMs });
      }
      if (socket !== undefined) socket[IN_FLIGHT] = undefined;
      if (!respondJson(ctx)) return app.koaRespond(ctx);
    } catch (err) {
      // As in Koa's own step: an answer that cannot be sent (a body that does not serialise) is Koa's 500.
      ctx.onerror(err as Error);
    }
    return undefined;
  };

  const handle = (ctx: LoreContext, fnMiddleware: (ctx: LoreContext) => Promise<unknown>): Promise<void | undefined> => {
    ctx.res.statusCode = 404; // Koa's starting status
    const socket = watchSocket(ctx);
    const incoming = ctx.req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const state = new RequestState(logger, requestId);
    ctx.state = state as unknown as LoreState;
    ctx.res.setHeader('x-request-id', requestId);
    let run: Promise<unknown>;
    try {
      // A coded body is refused (415) before any byte of it is read, as every raw-body reader of Lore does: the body
      // parser would inflate it (before 2026-11-30 the admin API did, before checking the caller).
      if (parseBody !== undefined && BODY_METHODS.includes(ctx.req.method ?? 'GET')) assertNoContentCoding(ctx.req);
      run = parseBody !== undefined && BODY_METHODS.includes(ctx.req.method ?? 'GET') ? parseBody(ctx, () => fnMiddleware(ctx)) : fnMiddleware(ctx);
    } catch (err) {
      run = Promise.reject(err);
    }
    return run.then(
      () => settle(ctx, state, socket, false, undefined),
      (err: unknown) => settle(ctx, state, socket, true, err),
    );
  };
  app.kitRequest = (ctx, fnMiddleware) =>
    // The caller's trace (W3C traceparent) becomes this request's context first, so every log line (the access
    // line too), outgoing call and published event of the request carries it, with or without the SDK.
    ctx.req.headers.traceparent === undefined ? handle(ctx, fnMiddleware) : inCallerTrace(ctx.req.headers, () => handle(ctx, fnMiddleware));

  // Errors Koa itself meets (a body that cannot be sent, a failed stream, a socket error during a request) go to
  // the log, not to Koa's console printer; like Koa's, 404s, client errors it exposes and a silent app write nothing.
  app.on('error', (err: Error & { status?: number; expose?: boolean; code?: string }, ctx?: LoreContext) => {
    if (err.status === 404 || err.expose || app.silent) return;
    // A streamed body whose client left before its end (a stream read halfway, a cancelled answer): the client's
    // choice, not a fault of the service, so no error line for an alert to count.
    if (err.code === 'ERR_STREAM_PREMATURE_CLOSE') {
      (ctx?.state?.log ?? logger).info('the client left before the response ended');
      return;
    }
    // A write to (or read from) the connection of a client that closed it while its answer streamed: EPIPE or
    // ECONNRESET rather than a premature close, depending on when the close reached the socket (before 2026-11-30
    // logged as "response failed" with its stack). The client's choice as well.
    if (ctx && clientLeftMidResponse(err, ctx)) {
      (ctx.state?.log ?? logger).info({ code: err.code }, 'the client left before the response ended');
      return;
    }
    // A client that closed its connection in the middle of its request's body: its choice too.
    if (ctx && clientLeftMidRequest(ctx)) {
      (ctx.state?.log ?? logger).info('the client left before its request ended');
      return;
    }
    (ctx?.state?.log ?? logger).error({ err }, 'response failed');
  });

  return app;
}

/** Statuses whose responses carry no body (Koa strips it). */
const EMPTY_STATUS = new Set([204, 205, 304]);

/**
 * Sends a plain-object or array body as JSON, as Koa's response step would (`JSON.stringify`, Content-Length
 * unless Transfer-Encoding is set; the type was set by Koa's body setter), minus that step's generic checks for
 * every other kind of body. Anything else (strings, buffers, streams, other objects, HEAD, empty statuses, a
 * response already started or closed, `ctx.respond = false`) is left to Koa. A body that cannot be serialised
 * throws before anything is sent, so Koa's own error handling answers as before. (Content-Length must be set
 * here: Koa's body setter removed it, and `node:http` then falls back to chunked encoding.) True when it sent the
 * body.
 */
function respondJson(ctx: LoreContext): boolean {
  const body: unknown = ctx.body;
  if (body === null || typeof body !== 'object' || ctx.respond === false) return false;
  const proto = Object.getPrototypeOf(body) as unknown;
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return false;
  const res = ctx.res;
  if (ctx.method === 'HEAD' || EMPTY_STATUS.has(res.statusCode) || res.headersSent || res.writableEnded) return false;
  if (res.socket && !res.socket.writable) return false;
  const json = JSON.stringify(body);
  ctx.respond = false;
  if (!res.hasHeader('transfer-encoding')) res.setHeader('content-length', Buffer.byteLength(json));
  res.end(json);
  return true;
}

function respondWithError(ctx: LoreContext, err: unknown, shape?: (err: AppError, path: string) => AppError): void {
  let appError: AppError;
  if (isAppError(err)) {
    appError = err;
  } else {
    const status = (err as { status?: number; expose?: boolean }).status;
    if (status === 413) appError = new AppError('PAYLOAD_TOO_LARGE', 'request body is too large');
    else if (status === 415) appError = new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported content type');
    else if (status === 400 && (err as { expose?: boolean }).expose) appError = new AppError('BAD_REQUEST', (err as Error).message);
    else if (isDatabaseUnavailable(err)) {
      // A dependency that is down, not a fault of the request: nothing was written (docs/faults.md).
      ctx.state.log?.warn({ err }, 'database unavailable');
      appError = new AppError('UNAVAILABLE', 'the database is unavailable; retry shortly', { headers: { 'Retry-After': '1' } });
    } else {
      ctx.state.log?.error({ err }, 'unhandled error');
      appError = new AppError('INTERNAL', 'internal error');
    }
  }
  if (appError.status >= 500 && isAppError(err)) ctx.state.log?.warn({ err }, 'request failed');
  if (shape && appError.body === undefined) appError = shape(appError, ctx.path);
  ctx.status = appError.status;
  for (const [k, v] of Object.entries(appError.headers)) ctx.set(k, v);
  ctx.body = errorBody(appError, ctx.state.requestId ?? 'unknown');
}

/**
 * `/livez` (the process is up: always 200), `/readyz` (dependencies ready: 200 or 503) and `/metrics`.
 * The gateway serves these on its separate operations port so no unversioned route is public.
 */
/**
 * A router of Lore's: paths match exactly as written, case and trailing slash included (`@koa/router` matches
 * case-insensitively and with a trailing slash by default), so each route has one spelling and every other is 404.
 */
export function createRouter<S>(options: Omit<RouterOptions, 'sensitive' | 'strict'> = {}): Router<S> {
  return new Router<S>({ ...options, sensitive: true, strict: true });
}

export function opsRouter(lifecycle: Lifecycle, metrics: Registry): Router<LoreState> {
  const router = createRouter<LoreState>();
  router.get('/livez', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const r = await lifecycle.readiness();
    ctx.status = r.ready ? 200 : 503;
    ctx.body = { status: r.ready ? 'ready' : 'not_ready', checks: r.checks };
  });
  router.get('/metrics', async (ctx) => {
    ctx.set('content-type', metrics.contentType);
    ctx.body = await metrics.metrics();
  });
  return router;
}
