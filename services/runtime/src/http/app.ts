import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { AppError, errorBody, isAppError } from '../errors/app-error';
import { createHttpMetrics } from '../metrics/registry';
import type { Lifecycle } from '../lifecycle/lifecycle';
import { traceContextMiddleware } from '../telemetry/http';

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

/**
 * The Koa app every Lore process uses: request ids, a child logger per request, access logs, RED metrics per
 * route template, body-size limits and one error mapping. Routes are added by the caller.
 */
export function createHttpApp(options: HttpAppOptions): LoreApp {
  const app = new Koa<LoreState>({ proxy: options.proxy ?? false });
  const http = createHttpMetrics(options.metrics);
  const limit = options.bodyLimitBytes ?? 1024 * 1024;

  // First: the caller's trace (W3C traceparent) becomes this request's context, so every log line, outgoing call
  // and published event of the request carries it, with or without the SDK exporting spans.
  app.use(traceContextMiddleware());
  app.use(async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const state = new RequestState(options.logger, requestId);
    ctx.state = state as unknown as LoreState;
    ctx.set('x-request-id', requestId);
    const start = process.hrtime.bigint();
    try {
      await next();
    } catch (err) {
      respondWithError(ctx, err);
    } finally {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      const labels = { method: ctx.method, route: String(route), status: String(ctx.status) };
      http.requestDuration.observe(labels, seconds);
      http.requestsTotal.inc(labels);
      const line = { method: ctx.method, path: ctx.path, route, status: ctx.status, duration_ms: Math.round(seconds * 1e4) / 10 };
      // A handler that logged already made the request's child logger (it carries request_id and whatever the
      // handler bound); otherwise the base logger writes the id as a field and no child is built at all.
      const child = state.childIfMade();
      if (child) child.info(line, 'request');
      else options.logger.info({ request_id: requestId, ...line }, 'request');
    }
  });

  if (options.parseBodies !== false) {
    app.use(
      bodyParser({
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
      }),
    );
  }
  return app;
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

/** Answers every otherwise-unmatched request with the closed 404 body. */
export function notFoundFallback() {
  return async (ctx: LoreContext, next: Koa.Next) => {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) {
      throw new AppError('NOT_FOUND', 'route not found');
    }
  };
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
