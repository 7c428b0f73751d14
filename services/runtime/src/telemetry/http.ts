import { context, trace } from '@opentelemetry/api';
import { withExtractedContext } from './propagation';

/**
 * Koa middleware: continues the caller's trace when no instrumentation did (propagation-only mode), so log lines
 * and outgoing calls of this request carry the caller's trace id. With the SDK running, the HTTP instrumentation
 * has already opened a server span and this passes through.
 */
export function traceContextMiddleware() {
  return (ctx: { headers: Record<string, string | string[] | undefined> }, next: () => Promise<unknown>) => {
    if (trace.getSpan(context.active())) return next();
    const traceparent = ctx.headers.traceparent;
    if (typeof traceparent !== 'string') return next();
    const tracestate = ctx.headers.tracestate;
    const baggage = ctx.headers.baggage;
    return withExtractedContext(
      {
        traceparent,
        tracestate: typeof tracestate === 'string' ? tracestate : undefined,
        baggage: typeof baggage === 'string' ? baggage : undefined,
      },
      next,
    );
  };
}
