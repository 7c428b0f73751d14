import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLUSTER_ENTRY, clusterEnv, clusterPorts, clusterSecrets, opsUrl, type ClusterProcess } from '../e2e/cluster';
import { freePort, startProcess, startReceiver, stopProcess, until, type Receiver, type Started } from '../e2e/processes';
import { runtimeStageEnv } from '../support/dockerfile';
import { http } from '../support/http';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { REPO_ROOT as ROOT, runProcess } from '../support/install';
import { SPAN_KIND, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';

/**
 * One trace from a gateway request through the graph worker to the webhook attempt (docs/runtime.md, "Telemetry"):
 * the cluster-mode processes (gateway, graph, graph-worker, webhooks) each on its own, their built entry points with
 * the image's telemetry preload, on the test PostgreSQL, Redis and Kafka, exporting OTLP/JSON to a
 * receiver on loopback. An ingest through the gateway with a caller's `traceparent`, a webhook subscribed to
 * `memory.ingest.completed`: every span of the path is in the caller's trace, each a descendant of the one before.
 */
jest.setTimeout(300_000);

/** The image's NODE_OPTIONS: the compiled telemetry preload (register.js) before each entry point. */
const IMAGE_NODE_OPTIONS = runtimeStageEnv(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'), ROOT).NODE_OPTIONS ?? '';
const run = randomBytes(4).toString('hex');
const SECRETS = clusterSecrets();
/** The processes an ingest's trace crosses, each on its own. */
const PROCESSES: ClusterProcess[] = ['graph', 'graph-worker', 'webhooks', 'gateway'];

const traceId = () => randomBytes(16).toString('hex');
const spanId = () => randomBytes(8).toString('hex');

/** Whether `span` descends from `ancestor` (its chain of parents, as received, passes through it). */
function descendsFrom(receiver: OtlpReceiver, span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  return receiver.ancestors(span).slice(1).some((s) => s.spanId === ancestor.spanId);
}

/** A span as a line of a failure message: service, name, kind, id and parent. */
const show = (s: ReceivedSpan) => `${s.service} ${JSON.stringify(s.name)} kind=${s.kind} ${s.spanId} <- ${s.parentSpanId ?? 'root'}`;

describe('one trace: gateway request → graph → graph-worker indexing → webhook attempt (cluster mode, OTLP on loopback)', () => {
  let db: TestDatabase;
  let otlp: OtlpReceiver;
  let hooks: Receiver;
  const procs: Record<string, Started> = {};
  let gatewayUrl: string;
  let apiKey: string;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    hooks = await startReceiver();
    db = await freshDatabase('lore_trace');
    expect(IMAGE_NODE_OPTIONS).toMatch(/--require=\S+telemetry\/register\.js/);
    // The chart's migrations script, as its Job runs it.
    const migrated = await runProcess('charts/lore/files/migrate.js', { LORE_APP_DIR: ROOT, LORE_DATABASE_URL: db.url, LORE_DATABASE_OWNER_URL: db.ownerUrl, LOG_LEVEL: 'warn' }, { timeoutMs: 120_000 });
    if (migrated.code !== 0) throw new Error(`migrations failed:\n${migrated.output}`);

    const ports = await clusterPorts();
    gatewayUrl = `http://127.0.0.1:${ports.gatewayPublic}`;
    const adminUrl = `http://127.0.0.1:${ports.gatewayAdmin}`;
    const telemetry = (service: string) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_SERVICE_NAME: service,
    });
    const common = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_OPTIONS: IMAGE_NODE_OPTIONS, LORE_LOG_LEVEL: 'warn', LOG_LEVEL: 'warn' };
    const base = clusterEnv({ databaseUrl: db.url, secrets: SECRETS, kafkaPrefix: `trace-${run}`, redisPrefix: `lore:gw:trace-${run}:`, ports, processes: PROCESSES });
    const env = Object.fromEntries(PROCESSES.map((name) => [name, { entry: CLUSTER_ENTRY[name], env: base[name]!, ops: opsUrl(ports, name) }]));
    for (const [name, p] of Object.entries(env)) {
      procs[name] = startProcess(process.execPath, [p.entry], { cwd: ROOT, env: { ...common, ...telemetry(name), ...p.env } });
    }
    await Promise.all(
      Object.entries(env).map(([name, p]) =>
        until(`${name} /readyz`, async () => ((await fetch(`${p.ops}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined), 180_000, procs[name]),
      ),
    );

    // A tenant and its key through the admin API (what the admin CLI calls), then a webhook through the public API.
    const admin = { authorization: `Bearer ${SECRETS.adminToken}` };
    const tenant = await http(adminUrl, 'POST', '/internal/v1/tenants', { headers: admin, body: { name: 'Trace', tenant_id: `trace-${run}` } });
    expect(tenant.status).toBe(201);
    const key = await http(adminUrl, 'POST', `/internal/v1/tenants/trace-${run}/keys`, { headers: admin, body: { type: 'live', name: 'trace' } });
    expect(key.status).toBe(201);
    apiKey = key.json.key;
    const hook = await http(gatewayUrl, 'POST', '/api/v1/webhooks', { headers: { 'x-api-key': apiKey }, body: { url: hooks.url, events: ['memory.ingest.completed'] } });
    expect(hook.status).toBe(201);
    // A route of the gateway's own tells clients no route template either.
    expect(hook.headers['x-lore-route']).toBeUndefined();
  });

  afterAll(async () => {
    await Promise.allSettled(Object.values(procs).map((p) => stopProcess(p)));
    await otlp?.close();
    await hooks?.close();
    await db?.drop();
  });

  it('links the gateway’s server span, the graph’s, the worker’s indexing and the webhook attempt in the caller’s trace, and the receiver gets it', async () => {
    await expectOneTrace({
      gatewayUrl,
      apiKey,
      otlp,
      hooks,
      webhooks: procs.webhooks!,
      services: { gateway: 'gateway', graph: 'graph', worker: 'graph-worker', webhooks: 'webhooks' },
      system: 'kafka',
    });
  });
});

/**
 * One ingest through the gateway with a caller's `traceparent`, then the path of its trace at the OTLP receiver: the
 * gateway's server span (a child of the caller's span), the graph's, the worker's processing of lore.memory.ingest
 * and its indexing, the webhook worker's processing of the delivery and its attempt, and the attempt's HTTP client
 * span, whose `traceparent` the webhook receiver got; each a descendant of the one before.
 */
async function expectOneTrace(o: {
  gatewayUrl: string;
  apiKey: string;
  otlp: OtlpReceiver;
  hooks: Receiver;
  webhooks: Started;
  services: { gateway: string; graph: string; worker: string; webhooks: string };
  system: 'kafka' | 'lore_memory_bus';
}): Promise<void> {
  const { otlp, hooks, services } = o;
  const T = traceId();
  const S = spanId();
  const ingested = await http(o.gatewayUrl, 'POST', '/api/v1/memory/ingest', {
    headers: { 'x-api-key': o.apiKey, traceparent: `00-${T}-${S}-01` },
    body: { content: 'The Osprey archive is kept in Tromsø.', content_type: 'text', routing: { mode: 'auto' } },
  });
  expect(ingested.status).toBe(200);
  // The upstream's route header is the gateway's, never the client's.
  expect(ingested.headers['x-lore-route']).toBeUndefined();
  const docId: string = ingested.json.doc_id;

  const delivery = await until(
    'the webhook delivery of the ingest',
    async () => hooks.received.find((d) => (JSON.parse(d.body.toString('utf8')) as { payload?: { doc_id?: string } }).payload?.doc_id === docId),
    90_000,
    o.webhooks,
  );
  // The attempt's HTTP call carried the caller's trace.
  const traceparent = String(delivery.headers.traceparent ?? '');
  expect(traceparent).toMatch(new RegExp(`^00-${T}-[0-9a-f]{16}-01$`));

  // Every span of the path exported (the batch processors flush every 200 ms).
  const of = (service: string, name: string, kind: number) => otlp.trace(T).filter((s) => s.service === service && s.name === name && s.kind === kind);
  const path = await until(
    'the spans of the path at the OTLP receiver',
    async () => {
      // The gateway's span continues the caller's; the graph's is the other server span of the ingest route.
      const gateway = of(services.gateway, 'POST /api/v1/memory/ingest', SPAN_KIND.server).find((s) => s.parentSpanId === S);
      const spans = {
        gateway,
        graph: of(services.graph, 'POST /api/v1/memory/ingest', SPAN_KIND.server).find((s) => s !== gateway),
        consume: of(services.worker, 'process lore.memory.ingest', SPAN_KIND.consumer)[0],
        index: of(services.worker, 'index document', SPAN_KIND.internal)[0],
        deliveries: of(services.webhooks, 'process lore.webhook.deliveries', SPAN_KIND.consumer)[0],
        attempt: of(services.webhooks, 'webhook attempt', SPAN_KIND.internal)[0],
        client: otlp.trace(T).find((s) => s.service === services.webhooks && s.kind === SPAN_KIND.client && traceparent.includes(s.spanId)),
      };
      return Object.values(spans).every(Boolean) ? (spans as { [K in keyof typeof spans]: ReceivedSpan }) : undefined;
    },
    30_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\nspans of the trace:\n${otlp.trace(T).map(show).join('\n')}\nrefused exports: ${otlp.refused.join(', ') || 'none'}`);
  });

  const chain = `\n${otlp.trace(T).map(show).join('\n')}`;
  expect(path.gateway.attributes['http.route']).toBe('/api/v1/memory/ingest');
  expect(path.graph.attributes['http.route']).toBe('/api/v1/memory/ingest');
  const links: Array<[keyof typeof path, keyof typeof path]> = [
    ['graph', 'gateway'],
    ['consume', 'graph'],
    ['index', 'consume'],
    ['deliveries', 'index'],
    ['attempt', 'deliveries'],
    ['client', 'attempt'],
  ];
  for (const [child, parent] of links) expect({ [child]: descendsFrom(otlp, path[child], path[parent]) ? parent : 'not a descendant', chain }).toEqual({ [child]: parent, chain });
  // The receiver's traceparent names the attempt's HTTP client span, a direct child of the attempt.
  expect(path.client.parentSpanId).toBe(path.attempt.spanId);
  expect(traceparent.split('-')[2]).toBe(path.client.spanId);
  expect(path.attempt.attributes).toMatchObject({ 'lore.webhook.event': 'memory.ingest.completed', 'lore.webhook.outcome': 'succeeded', 'http.response.status_code': 204, 'lore.webhook.attempt': 1 });
  expect(path.index.attributes).toMatchObject({ 'lore.document.id': docId, 'lore.index.outcome': 'indexed' });
  expect(path.consume.attributes).toMatchObject({ 'messaging.system': o.system, 'messaging.destination.name': 'lore.memory.ingest', 'messaging.operation.type': 'process' });
  // The fan-out handled the event in a batch span of its own trace, linked to the indexing span that emitted it.
  const fanOut = otlp.spans.find((s) => s.service === services.webhooks && s.name === 'process lore.events' && s.links.some((l) => l.traceId === T && l.spanId === path.index.spanId));
  expect(fanOut).toBeDefined();
  // No server span of the trace is left named by its method alone.
  expect(otlp.trace(T).filter((s) => s.kind === SPAN_KIND.server && !s.name.includes(' ')).map(show)).toEqual([]);
}

describe('the same trace in embedded mode (npm start), on the in-process bus', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-trace-embedded-'));
  let otlp: OtlpReceiver;
  let hooks: Receiver;
  let lore: Started;
  let url: string;
  let apiKey: string;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    hooks = await startReceiver();
    const [port, opsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    // The README's way, `npm start`, with the telemetry variables docs/runtime.md names.
    lore = startProcess('npm', ['start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        LORE_OPS_PORT: String(opsPort),
        LORE_ADMIN_PORT: String(adminPort),
        LORE_DATA_DIR: dataDir,
        LORE_LOG_LEVEL: 'warn',
        LORE_OCR: 'false',
        LORE_EMBEDDER: 'hashed',
        LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_SERVICE_NAME: 'lore',
      },
    });
    const credentials = join(dataDir, 'dev-credentials.json');
    apiKey = await until('dev-credentials.json', async () => (existsSync(credentials) ? (JSON.parse(readFileSync(credentials, 'utf8')) as { api_key?: string }).api_key : undefined), 120_000, lore);
    await until('the public port to answer', async () => ((await fetch(`${url}/api/v1/pages/ping`, { headers: { 'x-api-key': apiKey } }).catch(() => undefined))?.status === 200 ? true : undefined), 60_000, lore);
    const hook = await http(url, 'POST', '/api/v1/webhooks', { headers: { 'x-api-key': apiKey }, body: { url: hooks.url, events: ['memory.ingest.completed'] } });
    expect(hook.status).toBe(201);
  });

  afterAll(async () => {
    if (lore) await stopProcess(lore);
    await otlp?.close();
    await hooks?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('links the gateway’s server span, the graph’s, the indexing and the webhook attempt in the caller’s trace, and the receiver gets it', async () => {
    await expectOneTrace({
      gatewayUrl: url,
      apiKey,
      otlp,
      hooks,
      webhooks: lore,
      services: { gateway: 'lore', graph: 'lore', worker: 'lore', webhooks: 'lore' },
      system: 'lore_memory_bus',
    });
  });

  it('exports no query value: a key in a request\'s query, a webhook receiver\'s token', async () => {
    const token = `hooktoken${randomBytes(6).toString('hex')}`;
    const hook = await http(url, 'POST', '/api/v1/webhooks', { headers: { 'x-api-key': apiKey }, body: { url: `${hooks.url}?token=${token}`, events: ['memory.ingest.completed'] } });
    expect(hook.status).toBe(201);
    const word = `probeword${randomBytes(6).toString('hex')}`;
    // A key in the query (a browser's stream), and a search word.
    expect((await fetch(`${url}/api/v1/pages/ping?api-key=${apiKey}&q=${word}`, { headers: { 'x-api-key': apiKey } })).status).toBe(200);
    const ingest = await http(url, 'POST', '/api/v1/memory/ingest', { headers: { 'x-api-key': apiKey }, body: { content: `A note about ${word}.`, title: 'Query check' } });
    expect(ingest.status).toBe(200);
    const delivered = await until('the delivery to the token\'s receiver to be traced', async () => otlp.spans.find((s) => s.kind === SPAN_KIND.client && String(s.attributes['url.full'] ?? '').includes('token=REDACTED')), 60_000, lore);
    expect(String(delivered.attributes['url.full'])).toBe(`${hooks.url}?token=REDACTED`);
    const ping = await until('the ping\'s server span', async () => otlp.spans.find((s) => s.kind === SPAN_KIND.server && String(s.attributes['url.query'] ?? '').startsWith('api-key=')), 30_000, lore);
    expect(ping.attributes['url.query']).toBe('api-key=REDACTED&q=REDACTED');
    const all = JSON.stringify(otlp.spans);
    for (const secret of [apiKey, token]) expect(all).not.toContain(secret);
    expect(all).not.toContain(`q=${word}`);
  });
});
