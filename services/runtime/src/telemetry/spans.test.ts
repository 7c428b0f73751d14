import type { IncomingMessage, ServerResponse } from 'node:http';
import Router from '@koa/router';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { RPCType, setRPCMetadata } from '@opentelemetry/core';
import { tracing } from '@opentelemetry/sdk-node';
import pino from 'pino';
import { z } from 'zod';
import { createHttpApp, type LoreState } from '../http/app';
import { RouteTable, routeFor } from '../http/routes';
import { listen, type StartedServer } from '../http/server';
import { createMetricsRegistry } from '../metrics/registry';
import { MemoryBus } from '../bus/memory-bus';
import { injectTraceHeaders } from './propagation';
import { startTelemetry } from './setup';
import { ROUTE_HEADER, inSpan, traceHeadersOf } from './spans';

/**
 * Lore's spans with a real tracer provider (the SDK's, exporting to memory). The HTTP server span is opened here the
 * way the HTTP instrumentation opens it (a SERVER span named by the method, the request's RPC metadata in its
 * context), so what is tested is the kit's naming of it.
 */
const exporter = new tracing.InMemorySpanExporter();
const provider = new tracing.BasicTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
const serverTracer = () => provider.getTracer('instrumentation-http-standin');

beforeAll(() => {
  startTelemetry({}); // context manager and W3C propagation
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const finished = () => exporter.getFinishedSpans();

describe('server spans are named {method} {route}', () => {
  const route = routeFor<LoreState>();
  let server: StartedServer;
  /** Whether the stand-in instrumentation opens a recording span (false: the SDK is off). */
  let recording = true;

  beforeAll(async () => {
    const app = createHttpApp({ service: 'spans-test', logger: pino({ level: 'silent' }), metrics: createMetricsRegistry('spans_test') });
    const table = new RouteTable<LoreState>({ bodyLimitBytes: 1024 });
    table.add(
      route({
        method: 'get',
        path: '/api/v1/things/:thing_id',
        operationId: 'getThing',
        summary: 'one thing',
        params: z.object({ thing_id: z.string() }),
        ok: { status: 200, description: 'the thing', schema: z.object({ id: z.string() }) },
        handler: (_ctx, { params }) => ({ id: params.thing_id }),
      }),
      route({
        method: 'post',
        path: '/api/v1/memory/ingest',
        operationId: 'ingest',
        summary: 'ingest',
        body: z.object({ content: z.string() }),
        ok: { status: 200, description: 'ok', schema: z.object({ ok: z.boolean() }) },
        handler: () => ({ ok: true }),
      }),
    );
    const router = new Router<LoreState>();
    table.mount(router);
    app.use(router.routes());
    const handler = app.callback();
    server = await listen((req: IncomingMessage, res: ServerResponse) => {
      if (!recording) return handler(req, res);
      const span = serverTracer().startSpan(req.method ?? 'GET', { kind: SpanKind.SERVER });
      res.once('finish', () => span.end());
      const ctx = setRPCMetadata(trace.setSpan(context.active(), span), { type: RPCType.HTTP, span });
      return context.with(ctx, () => handler(req, res));
    }, 0, '127.0.0.1');
  });
  afterAll(() => server.close());

  it('names a matched route by its template, with http.route, and tells a forwarding gateway the template', async () => {
    const res = await fetch(`${server.url}/api/v1/things/th_42`);
    expect(res.status).toBe(200);
    expect(res.headers.get(ROUTE_HEADER)).toBe('/api/v1/things/:thing_id');
    const posted = await fetch(`${server.url}/api/v1/memory/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"content":"x"}' });
    expect(posted.status).toBe(200);
    const spans = finished().map((s) => ({ name: s.name, route: s.attributes['http.route'] }));
    expect(spans).toEqual([
      { name: 'GET /api/v1/things/:thing_id', route: '/api/v1/things/:thing_id' },
      { name: 'POST /api/v1/memory/ingest', route: '/api/v1/memory/ingest' },
    ]);
  });

  it('keeps the method alone for a request no route matched, and names a refused request by its route', async () => {
    const missing = await fetch(`${server.url}/api/v1/nothing/here`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get(ROUTE_HEADER)).toBeNull();
    const invalid = await fetch(`${server.url}/api/v1/memory/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"content":1}' });
    expect(invalid.status).toBe(400);
    expect(finished().map((s) => [s.name, s.attributes['http.route'] ?? null])).toEqual([
      ['GET', null],
      ['POST /api/v1/memory/ingest', '/api/v1/memory/ingest'],
    ]);
  });

  it('without a recording span (the SDK off) sends no route header', async () => {
    recording = false;
    try {
      const res = await fetch(`${server.url}/api/v1/things/th_1`);
      expect(res.status).toBe(200);
      expect(res.headers.get(ROUTE_HEADER)).toBeNull();
      expect(finished()).toEqual([]);
    } finally {
      recording = true;
    }
  });
});

describe('bus consumers', () => {
  let bus: MemoryBus;
  beforeEach(() => {
    bus = new MemoryBus({ logger: pino({ level: 'silent' }) });
  });
  afterEach(async () => {
    await bus.close();
  });

  it('processes each message in span process {topic}, a child of the span that published it', async () => {
    await bus.ensureTopics(['lore.memory.ingest']);
    const seen: Array<{ traceId: string; spanId: string }> = [];
    const done = new Promise<void>((resolve) => {
      void bus.subscribe({ groupId: 'g-each', topics: ['lore.memory.ingest'], fromBeginning: true }, async () => {
        const sc = trace.getActiveSpan()!.spanContext();
        seen.push({ traceId: sc.traceId, spanId: sc.spanId });
        resolve();
      });
    });
    const producer = await inSpan('produce', {}, async (span) => {
      await bus.publish('lore.memory.ingest', [{ key: 'k', value: '{}', headers: { 'event-id': 'ev_1' } }]);
      return span.spanContext();
    });
    await done;
    const processSpan = finished().find((s) => s.name === 'process lore.memory.ingest')!;
    expect(processSpan).toBeDefined();
    expect(processSpan.kind).toBe(SpanKind.CONSUMER);
    expect(processSpan.spanContext().traceId).toBe(producer.traceId);
    expect(processSpan.parentSpanContext?.spanId).toBe(producer.spanId);
    expect(processSpan.attributes).toMatchObject({
      'messaging.system': 'lore_memory_bus',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'lore.memory.ingest',
      'messaging.consumer.group.name': 'g-each',
      'messaging.message.id': 'ev_1',
    });
    // The handler runs inside that span.
    expect(seen).toEqual([{ traceId: producer.traceId, spanId: processSpan.spanContext().spanId }]);
  });

  it('marks the span of a failed delivery failed, and the redelivery gets a span of its own', async () => {
    await bus.ensureTopics(['lore.events']);
    let calls = 0;
    const done = new Promise<void>((resolve) => {
      void bus.subscribe({ groupId: 'g-fail', topics: ['lore.events'], fromBeginning: true, retry: { initialMs: 1, maxMs: 1 } }, async () => {
        calls += 1;
        if (calls === 1) throw new Error('first delivery fails');
        resolve();
      });
    });
    await bus.publish('lore.events', [{ key: 'k', value: '{}' }]);
    await done;
    await new Promise((r) => setTimeout(r, 20));
    const spans = finished().filter((s) => s.name === 'process lore.events');
    expect(spans.map((s) => s.status.code)).toEqual([SpanStatusCode.ERROR, SpanStatusCode.UNSET]);
    expect(spans[0]!.status.message).toBe('first delivery fails');
  });

  it('processes a batch in one span linked to every message’s producer, and the messages keep their own trace headers', async () => {
    await bus.ensureTopics(['lore.events']);
    const producers = await Promise.all(
      [1, 2].map((n) =>
        inSpan(`produce ${n}`, {}, async (span) => {
          await bus.publish('lore.events', [{ key: 'same-key', value: `{"n":${n}}` }]);
          return span.spanContext();
        }),
      ),
    );
    const batches: Array<Array<Record<string, string>>> = [];
    await new Promise<void>((resolve) => {
      void bus.subscribeBatch({ groupId: 'g-batch', topics: ['lore.events'], fromBeginning: true, maxBatch: 10 }, async (ms) => {
        batches.push(ms.map((m) => traceHeadersOf(m.headers)));
        if (batches.flat().length === 2) resolve();
      });
    });
    const processSpans = finished().filter((s) => s.name === 'process lore.events');
    expect(processSpans.length).toBe(batches.length);
    const linked = processSpans.flatMap((s) => s.links.map((l) => l.context.spanId)).sort();
    expect(linked).toEqual(producers.map((p) => p.spanId).sort());
    // A batch's span is the root of a trace of its own: it is none of the producers'.
    for (const s of processSpans) {
      expect(s.parentSpanContext).toBeUndefined();
      expect(producers.map((p) => p.traceId)).not.toContain(s.spanContext().traceId);
    }
    expect(batches.flat().map((h) => h.traceparent?.split('-')[1]).sort()).toEqual(producers.map((p) => p.traceId).sort());
  });

  it('a message published with trace headers of its own keeps them over the active context', async () => {
    await bus.ensureTopics(['lore.webhook.deliveries']);
    const carried = await inSpan('the event', {}, async () => injectTraceHeaders({}));
    let headers: Record<string, string> = {};
    const done = new Promise<void>((resolve) => {
      void bus.subscribe({ groupId: 'g-carried', topics: ['lore.webhook.deliveries'], fromBeginning: true }, async (m) => {
        headers = m.headers;
        resolve();
      });
    });
    await inSpan('another request', {}, () => bus.publish('lore.webhook.deliveries', [{ key: 'k', value: '{}', headers: carried }]));
    await done;
    expect(headers.traceparent).toBe(carried.traceparent);
  });
});
