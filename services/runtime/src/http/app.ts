import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { AppError, errorBody, isAppError } from '../errors/app-error';
import { createHttpMetrics } from '../metrics/registry';
import type { Lifecycle } from '../lifecycle/lifecycle';
import { inCallerTrace } from '../telemetry/http';
import { writeAccessLine } from '../log/logger';

export interface LoreState {
  requestId: string;
  log: Logger;
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

/** The methods whose bodies are parsed (the body parser's own default set); other requests never reach it. */
const BODY_METHODS = ['POST', 'PUT', 'PATCH'];

/**
 * The Koa app every Lore process uses: request ids, a child logger per request, access logs, RED metrics per
 * route template, body-size limits, one error mapping and the closed 404 body for anything no route answered.
 * Routes are added by the caller.
 *
 * All of it runs in one outer middleware (one async frame per request instead of one per concern): the caller's
 * trace is continued first, then the request id, the timing, the body parser (called directly, and only for
 * methods that carry a body), the error mapping, the RED metrics and the access line, and last a JSON body is
 * sent (see `respondJson`).
 */
export function createHttpApp(options: HttpAppOptions): LoreApp {
  const app = new Koa<LoreState>({ proxy: options.proxy ?? false });
  const http = createHttpMetrics(options.metrics);
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

  const handle = async (ctx: LoreContext, next: Koa.Next): Promise<void> => {
    const incoming = ctx.req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const state = new RequestState(logger, requestId);
    ctx.state = state as unknown as LoreState;
    ctx.res.setHeader('x-request-id', requestId);
    const start = performance.now();
    try {
      if (parseBody !== undefined && BODY_METHODS.includes(ctx.method)) await parseBody(ctx, next);
      else await next();
      // Nothing answered the request: the closed 404 body, not Koa's plain-text "Not Found".
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError('NOT_FOUND', 'route not found');
    } catch (err) {
      respondWithError(ctx, err);
    } finally {
      const ms = performance.now() - start;
      const method = ctx.method;
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      const status = ctx.res.statusCode;
      http.observe(method, route, status, ms / 1000);
      const durationMs = Math.round(ms * 10) / 10;
      // A handler that logged already made the request's child logger (it carries request_id and whatever the
      // handler bound); otherwise the base logger writes the id as a field and no child is built at all.
      const child = state.childIfMade();
      if (child) writeAccessLine(child, { method, path: ctx.path, route, status, duration_ms: durationMs });
      else writeAccessLine(logger, { request_id: requestId, method, path: ctx.path, route, status, duration_ms: durationMs });
    }
    respondJson(ctx);
  };

  // Errors Koa itself meets (a body that cannot be sent, a failed stream) go to the log, not to Koa's console
  // printer; like Koa's, 404s, client errors it exposes and a silent app write nothing.
  app.on('error', (err: Error & { status?: number; expose?: boolean }, ctx?: LoreContext) => {
    if (err.status === 404 || err.expose || app.silent) return;
    (ctx?.state?.log ?? logger).error({ err }, 'response failed');
  });

  // The caller's trace (W3C traceparent) becomes this request's context first, so every log line (the access
  // line too), outgoing call and published event of the request carries it, with or without the SDK.
  app.use((ctx, next) => (ctx.req.headers.traceparent === undefined ? handle(ctx, next) : inCallerTrace(ctx.req.headers, () => handle(ctx, next))));
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
 * here: Koa's body setter removed it, and `node:http` then falls back to chunked encoding.)
 */
function respondJson(ctx: LoreContext): void {
  const body: unknown = ctx.body;
  if (body === null || typeof body !== 'object' || ctx.respond === false) return;
  const proto = Object.getPrototypeOf(body) as unknown;
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return;
  const res = ctx.res;
  if (ctx.method === 'HEAD' || EMPTY_STATUS.has(res.statusCode) || res.headersSent || res.writableEnded) return;
  if (res.socket && !res.socket.writable) return;
  const json = JSON.stringify(body);
  ctx.respond = false;
  if (!res.hasHeader('transfer-encoding')) res.setHeader('content-length', Buffer.byteLength(json));
  res.end(json);
}

function respondWithError(ctx: LoreContext, err: unknown): void {
  let appError: AppError;
  if (isAppError(err)) {
    appError = err;
  } else {
    const status = (err as { status?: number; expose?: boolean }).status;
    if (status === 413) appError = new AppError('PAYLOAD_TOO_LARGE', 'request body is too large');
    else if (status === 415) appError = new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported content type');
    else if (status === 400 && (err as { expose?: boolean }).expose) appError = new AppError('BAD_REQUEST', (err as Error).message);
    else {
      ctx.state.log?.error({ err }, 'unhandled error');
      appError = new AppError('INTERNAL', 'internal error');
    }
  }
  if (appError.status >= 500 && isAppError(err)) ctx.state.log?.warn({ err }, 'request failed');
  ctx.status = appError.status;
  for (const [k, v] of Object.entries(appError.headers)) ctx.set(k, v);
  ctx.body = errorBody(appError, ctx.state.requestId ?? 'unknown');
}

/**
 * `/livez` (the process is up: always 200), `/readyz` (dependencies ready: 200 or 503) and `/metrics`.
 * The gateway serves these on its separate operations port so no unversioned route is public.
 */
export function opsRouter(lifecycle: Lifecycle, metrics: Registry): Router<LoreState> {
  const router = new Router<LoreState>();
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
