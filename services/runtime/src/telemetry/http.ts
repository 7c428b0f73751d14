import { context, trace } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { withExtractedContext } from './propagation';

/**
 * Runs `fn` in the caller's trace when the request carries a W3C `traceparent` and no instrumentation opened a
 * server span already (propagation-only mode), so log lines and outgoing calls of the request carry the caller's
 * trace id. With the SDK running, or without the header, `fn` runs as is. The header is looked at first: most
 * requests carry none, and they pay one property read.
 */
export function inCallerTrace<T>(headers: IncomingHttpHeaders, fn: () => Promise<T>): Promise<T> {
  const traceparent = headers.traceparent;
  if (typeof traceparent !== 'string' || trace.getSpan(context.active())) return fn();
  const tracestate = headers.tracestate;
  const baggage = headers.baggage;
  return withExtractedContext(
    {
      traceparent,
      tracestate: typeof tracestate === 'string' ? tracestate : undefined,
      baggage: typeof baggage === 'string' ? baggage : undefined,
    },
    fn,
  );
}

/**
 * Koa middleware form of `inCallerTrace` (the kit's own app does the same inside its one outer middleware).
 */
export function traceContextMiddleware() {
  return (ctx: { headers: IncomingHttpHeaders }, next: () => Promise<unknown>) => inCallerTrace(ctx.headers, next);
}
