import { context, propagation, trace, type Context } from '@opentelemetry/api';

/** Copies the active trace context (W3C `traceparent`, `tracestate`, `baggage`) into `headers`, which it returns. */
export function injectTraceHeaders(headers: Record<string, string>): Record<string, string> {
  propagation.inject(context.active(), headers);
  return headers;
}

/**
 * Runs `fn` inside the trace context carried by `headers` (an incoming request, a consumed message). Without a
 * `traceparent` the current context is kept, so a span already started by an instrumentation stays the parent.
 */
export function withExtractedContext<T>(headers: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  if (!headers.traceparent) return fn();
  const extracted: Context = propagation.extract(context.active(), headers, {
    get: (carrier, key) => carrier[key.toLowerCase()] ?? carrier[key],
    keys: (carrier) => Object.keys(carrier),
  });
  return context.with(extracted, fn);
}

/** The trace id of the active context, if any (for logs and tests). */
export function activeTraceId(): string | undefined {
  const ctx = trace.getSpanContext(context.active());
  return ctx && trace.isSpanContextValid(ctx) ? ctx.traceId : undefined;
}
