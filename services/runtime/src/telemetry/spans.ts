import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import { RPCType, getRPCMetadata } from '@opentelemetry/core';

/**
 * Lore's own spans. The HTTP instrumentation opens the server and client spans of every request; these name them
 * and add what it cannot see: a consumed message's processing (a child of the span that produced the message, its
 * trace carried in the message's headers) and the named steps of workers (a document's indexing, a webhook attempt).
 * Without the SDK (propagation-only mode) the API's tracer is a no-op: the spans cost an object each, export nothing,
 * and the producer's trace id still reaches every log line.
 */

const TRACER_NAME = '@lore/runtime';

/** The tracer of Lore's own spans. */
export function loreTracer() {
  return trace.getTracer(TRACER_NAME);
}

/** Headers a message or a request carries its trace context in (W3C Trace Context and Baggage). */
export const TRACE_HEADERS = ['traceparent', 'tracestate', 'baggage'] as const;

type Carrier = Record<string, string | undefined>;

const GETTER = {
  get: (carrier: Carrier, key: string) => carrier[key.toLowerCase()] ?? carrier[key],
  keys: (carrier: Carrier) => Object.keys(carrier),
};

/** The context `headers` carry (a consumed message's, a stored row's), on top of `base`; `base` without a `traceparent`. */
export function contextFromHeaders(headers: Carrier, base: Context = context.active()): Context {
  return headers.traceparent ? propagation.extract(base, headers, GETTER) : base;
}

/** Only the trace headers of `headers` (what a message derived from another carries on, e.g. a webhook delivery). */
export function traceHeadersOf(headers: Carrier): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of TRACE_HEADERS) {
    const v = headers[name];
    if (v) out[name] = v;
  }
  return out;
}

/** Ends `span` with the outcome of `run`: an error is recorded on it and thrown on. */
async function endWith<T>(span: Span, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (span.isRecording()) {
      span.recordException(err instanceof Error ? err : new Error(String(err)));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message.slice(0, 300) : undefined });
    }
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Runs `fn` inside a new span `name` (a child of the active span), ended when `fn` settles; a throw marks it failed.
 * `fn` gets the span to add attributes it learns on the way.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  const parent = context.active();
  const span = loreTracer().startSpan(name, { kind, attributes }, parent);
  return context.with(trace.setSpan(parent, span), () => endWith(span, () => fn(span)));
}

/** What the bus knows of a message it hands to a handler. */
export interface ConsumedMessage {
  topic: string;
  partition: number;
  offset: string;
  headers: Carrier;
}

/** `kafka` for the Kafka bus; `lore_memory_bus` for embedded mode's in-process bus. */
export type MessagingSystem = 'kafka' | 'lore_memory_bus';

function messageAttributes(system: MessagingSystem, topic: string, group: string): Attributes {
  return {
    'messaging.system': system,
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': topic,
    'messaging.consumer.group.name': group,
  };
}

/**
 * A handler's processing of one message: span `process {topic}` (CONSUMER, OpenTelemetry's messaging conventions),
 * a child of the span that published the message (its `traceparent` header: the outbox keeps the enqueuing
 * request's), so one trace runs from the request through every consumer. A message without trace headers starts a
 * trace of its own. Each delivery of a redelivered message is a span of its own, the failed ones marked failed.
 */
export function inConsumerSpan<T>(system: MessagingSystem, group: string, message: ConsumedMessage, fn: () => Promise<T>): Promise<T> {
  const parent = contextFromHeaders(message.headers, ROOT_CONTEXT);
  const attributes = messageAttributes(system, message.topic, group);
  attributes['messaging.destination.partition.id'] = String(message.partition);
  attributes[system === 'kafka' ? 'messaging.kafka.offset' : 'messaging.lore.offset'] = Number(message.offset);
  const id = message.headers['event-id'];
  if (id) attributes['messaging.message.id'] = id;
  const span = loreTracer().startSpan(`process ${message.topic}`, { kind: SpanKind.CONSUMER, attributes }, parent);
  return context.with(trace.setSpan(parent, span), () => endWith(span, fn));
}

/**
 * A batch handler's processing of messages taken together: span `process {topic}` (CONSUMER) in a trace of its own,
 * linked to each message's producing span (a batch has many parents; the conventions link them). Work the batch
 * does for one message continues that message's trace by carrying its headers on (`traceHeadersOf`).
 */
export function inBatchConsumerSpan<T>(system: MessagingSystem, group: string, messages: readonly ConsumedMessage[], fn: () => Promise<T>): Promise<T> {
  const first = messages[0];
  const topic = first?.topic ?? 'unknown';
  const links: Link[] = [];
  for (const m of messages) {
    if (!m.headers.traceparent) continue;
    const linked = trace.getSpanContext(contextFromHeaders(m.headers, ROOT_CONTEXT));
    if (linked && trace.isSpanContextValid(linked)) links.push({ context: linked });
  }
  const attributes = messageAttributes(system, topic, group);
  attributes['messaging.batch.message_count'] = messages.length;
  if (first) attributes['messaging.destination.partition.id'] = String(first.partition);
  const span = loreTracer().startSpan(`process ${topic}`, { kind: SpanKind.CONSUMER, attributes, links, root: true }, ROOT_CONTEXT);
  return context.with(trace.setSpan(ROOT_CONTEXT, span), () => endWith(span, fn));
}

/** The response header an internal service names its matched route template in, for the gateway's server span. */
export const ROUTE_HEADER = 'x-lore-route';

/** The active span when the SDK records it (a server span inside a request), else undefined. */
export function recordingSpan(): Span | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/**
 * Names a server span as OpenTelemetry's HTTP conventions say: `{method} {route}` with `http.route`, the route
 * template the request matched (`POST /api/v1/memory/ingest`, `GET /api/v1/memory/documents/:doc_id`), never the
 * concrete path. The instrumentation's own end step reads the route from the request's RPC metadata, set here too,
 * so it keeps this name. Requests no route matched keep the method alone.
 */
export function nameServerSpan(span: Span, method: string, route: string): void {
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
  const rpc = getRPCMetadata(context.active());
  if (rpc?.type === RPCType.HTTP) rpc.route = route;
}

/** Marks `span` failed with `message` (an outcome that is no exception: a receiver's 500, a timeout). */
export function markSpanFailed(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: message.slice(0, 300) });
}
