import { Writable } from 'node:stream';
import {
  createLogger,
  createMetricsRegistry,
  IdentitySigner,
  IDENTITY_HEADER,
  KafkaBus,
  listen,
  MemoryBus,
  PgliteDb,
  PostgresBlobStore,
  PostgresDb,
  type Db,
  type EventBus,
  type Identity,
  type StartedServer,
} from '@lore/runtime';
import { createGraphService, type GraphService, type GraphServiceDeps } from '@lore/graph';
import { freshDatabase, requireEnv, uniqueSuffix, type TestDatabase } from '../support/infra';
import { adminCall, IDENTITY_SECRET, makeKey, startGateway, uid, type GatewayUnderTest } from '../gateway/harness';

export const SECRET = 'memory-tests-identity-secret-0123456789abcdef';

/** Everything the service logs, as text, so tests can assert what never reaches a log line. */
export class LogCapture extends Writable {
  lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.lines.push(chunk.toString('utf8'));
    cb();
  }
  text(): string {
    return this.lines.join('');
  }
}

export interface Harness {
  /** Where clients send requests: the gateway's public URL (`via: 'gateway'`), else the graph's own. */
  url: string;
  /** The graph service's own URL (behind the gateway, when there is one). */
  graphUrl: string;
  via: 'direct' | 'gateway';
  db: Db;
  bus: EventBus;
  graph: GraphService;
  server: StartedServer;
  /** Everything the graph service and (via the gateway) the gateway logged. */
  logs: LogCapture;
  signer: IdentitySigner;
  gateway?: GatewayUnderTest;
  /**
   * Who a request acts as. Directly, the signed identity itself; through the gateway, a description from which
   * the harness makes (once) the tenant, the memory and an API key with the identity's access.
   */
  identity(tenant: string, memory?: string, extra?: Partial<Identity>): Identity;
  /** URL and headers of a request as `who` (the API key and `memory_id` through the gateway). */
  authorize(who: Identity | null, path: string): Promise<{ url: string; headers: Record<string, string> }>;
  /** The scope the graph sees for `who` (through the gateway: the gateway's workspace and memory ids). */
  scopeOf(who: Identity): Promise<{ tenant_id: string; workspace_id: string; memory_id: string }>;
  call(method: string, path: string, identity: Identity | null, body?: unknown): Promise<{ status: number; body: any; text: string; headers: Headers }>;
  /** The same, straight to the graph with a signed identity, bypassing the gateway (or not: `via: 'direct'`). */
  callGraph(method: string, path: string, identity: Identity | null, body?: unknown): Promise<{ status: number; body: any; text: string; headers: Headers }>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  backend: 'postgres' | 'pglite';
  bus?: 'kafka' | 'memory';
  /** Start the worker in-process (default true). */
  worker?: boolean;
  graph?: Partial<GraphServiceDeps>;
  /** Use this database instead of a fresh one (it is not dropped by `close`). */
  database?: TestDatabase;
  /** Identity secret shared with a gateway under test. */
  secret?: string;
  /**
   * `gateway`: clients go through a real gateway (API keys, real PostgreSQL and Redis) in front of the graph,
   * as in production; `direct` (default): to the graph with a signed identity.
   */
  via?: 'direct' | 'gateway';
  /**
   * The Kafka bus's topics and groups carry this prefix (as an install sharing a broker has, `LORE_KAFKA_PREFIX`), so
   * a suite's other consumers read only this harness's messages and no other suite reads them. Default: none.
   */
  kafkaPrefix?: string;
}

/** The graph service in-process over HTTP, on real PostgreSQL + Kafka (or PGlite + the memory bus). */
export async function startHarness(options: HarnessOptions): Promise<Harness & { database?: TestDatabase }> {
  let database: TestDatabase | undefined;
  let db: Db;
  const ownDatabase = options.backend === 'postgres' && !options.database;
  if (options.backend === 'postgres') {
    database = options.database ?? (await freshDatabase('lore_mem'));
    db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl }).init();
  } else {
    db = await PgliteDb.open();
  }
  const logs = new LogCapture();
  const logger = createLogger({ level: 'debug', service: 'graph-test', destination: logs });
  const metrics = createMetricsRegistry('graph-test', { defaultMetrics: false });
  const bus: EventBus =
    (options.bus ?? (options.backend === 'postgres' ? 'kafka' : 'memory')) === 'kafka'
      ? new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: `graph-test-${uniqueSuffix()}`, logger, partitions: 2, ...(options.kafkaPrefix ? { prefix: options.kafkaPrefix } : {}) })
      : new MemoryBus({ logger });
  const via = options.via ?? 'direct';
  if (via === 'gateway' && options.backend !== 'postgres') throw new Error('the gateway runs on PostgreSQL only');
  const signer = new IdentitySigner(options.secret ?? (via === 'gateway' ? IDENTITY_SECRET : SECRET));
  const suffix = uniqueSuffix();
  const graph = await createGraphService({
    db,
    bus,
    blobs: new PostgresBlobStore(db),
    logger,
    metrics,
    signer,
    ocr: null,
    consumerGroup: `graph-worker-${suffix}`,
    // Every answer of every memory suite is checked against the schema its route declares.
    checkResponses: true,
    ...options.graph,
  });
  if (options.worker !== false) await graph.worker.start();
  const server = await listen(graph.app, 0, '127.0.0.1');
  const identity = (tenant: string, memory = `mem_${tenant}`, extra: Partial<Identity> = {}): Identity => ({
    tenant_id: tenant,
    workspace_id: `ws_${tenant}`,
    memory_id: memory,
    credential: 'ck_test',
    subject: `key_${tenant}`,
    role: 'admin',
    ...extra,
  });
  const gateway =
    via === 'gateway' && database
      ? await startGateway(
          database,
          { upstreams: { graph: server.url }, rateLimit: { perSecond: 1000, burst: 2000 } },
          { redisPrefix: `mem-${uid()}`, logger: createLogger({ level: 'debug', service: 'gateway-test', destination: logs }) },
        )
      : undefined;

  // Through the gateway: one tenant per identity tenant, one gateway memory per identity memory (memory ids are
  // global in the gateway), and one API key per tenant and access level, made through the admin API.
  const tenants = new Map<string, Promise<string>>();
  const memories = new Map<string, Promise<{ memory_id: string; workspace_id: string }>>();
  const keys = new Map<string, Promise<string>>();
  const gw = (): GatewayUnderTest => gateway as GatewayUnderTest;
  const tenantOf = (tenantId: string): Promise<string> => {
    let p = tenants.get(tenantId);
    if (!p) {
      p = adminCall(gw(), 'POST', '/internal/v1/tenants', { tenant_id: tenantId, name: `Tenant ${tenantId}` }).then((r) => {
        if (r.status !== 201 && r.status !== 200) throw new Error(`tenant creation failed: ${r.status} ${r.text}`);
        return r.json.default_workspace_id as string;
      });
      tenants.set(tenantId, p);
    }
    return p;
  };
  const memoryOf = (who: Identity): Promise<{ memory_id: string; workspace_id: string }> => {
    const k = `${who.tenant_id}/${who.memory_id}`;
    let p = memories.get(k);
    if (!p) {
      p = tenantOf(who.tenant_id).then(async () => {
        // A memory id another tenant already holds in the gateway gets a tenant-specific one.
        for (const memoryId of [who.memory_id, `${who.memory_id}.${uid()}`]) {
          const r = await adminCall(gw(), 'PUT', `/internal/v1/tenants/${who.tenant_id}/memories/${memoryId}`, { name: memoryId, hostname: `m-${uid()}.memory.test` });
          if (r.status === 200) return { memory_id: r.json.memory_id as string, workspace_id: r.json.workspace_id as string };
          if (r.status !== 409 && r.status !== 404) throw new Error(`memory creation failed: ${r.status} ${r.text}`);
        }
        throw new Error(`no gateway memory for ${k}`);
      });
      memories.set(k, p);
    }
    return p;
  };
  const keyOf = (who: Identity): Promise<string> => {
    const access = who.scopes?.access ?? 'write';
    const k = `${who.tenant_id}/${access}`;
    let p = keys.get(k);
    if (!p) {
      p = tenantOf(who.tenant_id).then(async () => (await makeKey(gw(), who.tenant_id, access === 'write' ? {} : { scopes: { access } })).key);
      keys.set(k, p);
    }
    return p;
  };
  const authorize = async (who: Identity | null, path: string): Promise<{ url: string; headers: Record<string, string> }> => {
    if (via === 'direct') return { url: `${server.url}${path}`, headers: who ? { [IDENTITY_HEADER]: await signer.sign(who) } : {} };
    const base = gw().publicUrl;
    if (!who) return { url: `${base}${path}`, headers: {} as Record<string, string> };
    const [memory, key] = await Promise.all([memoryOf(who), keyOf(who)]);
    const sep = path.includes('?') ? '&' : '?';
    return { url: `${base}${path}${sep}memory_id=${encodeURIComponent(memory.memory_id)}`, headers: { 'x-api-key': key } };
  };
  const scopeOf: Harness['scopeOf'] = async (who) => {
    if (via === 'direct') return { tenant_id: who.tenant_id, workspace_id: who.workspace_id, memory_id: who.memory_id };
    const m = await memoryOf(who);
    return { tenant_id: who.tenant_id, workspace_id: m.workspace_id, memory_id: m.memory_id };
  };
  const send = async (target: { url: string; headers: Record<string, string> }, method: string, body: unknown) => {
    const headers = { ...target.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(target.url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: res.status, body: parsed as any, text, headers: res.headers };
  };
  const call: Harness['call'] = async (method, path, who, body) => send(await authorize(who, path), method, body);
  const callGraph: Harness['callGraph'] = async (method, path, who, body) =>
    send({ url: `${server.url}${path}`, headers: who ? { [IDENTITY_HEADER]: await signer.sign(who) } : {} }, method, body);
  return {
    url: gateway ? gateway.publicUrl : server.url,
    graphUrl: server.url,
    via,
    db,
    bus,
    graph,
    server,
    logs,
    signer,
    gateway,
    identity,
    authorize,
    scopeOf,
    call,
    callGraph,
    database,
    async close() {
      await gateway?.close();
      await server.close(1000);
      await graph.close();
      await bus.close();
      await db.close();
      if (ownDatabase) await database?.drop();
    },
  };
}

/** Polls until `fn` returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(fn: () => Promise<T | undefined>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Waits until the document is indexed (or failed) and returns its status body. A harness's fresh consumer group
 * first replays what the shared test broker's ingest topic already holds (every earlier suite's messages on a
 * long-lived broker), so the first wait of a suite may take a while: 90 s by default.
 */
export async function waitIndexed(h: Harness, who: Identity, docId: string, timeoutMs = 90_000): Promise<any> {
  return eventually(async () => {
    const r = await h.call('GET', `/api/v1/memory/documents/${docId}`, who);
    return r.status === 200 && r.body.status !== 'queued' ? r.body : undefined;
  }, timeoutMs, `document ${docId} indexed`);
}

/** Parses an SSE body into frames. */
export function parseSse(text: string): Array<{ event: string; data: any; id?: string }> {
  return text
    .split('\n\n')
    .filter((f) => f.trim())
    .map((frame) => {
      const lines = frame.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
      const id = lines.find((l) => l.startsWith('id: '))?.slice(4);
      const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      return { event, data: JSON.parse(data), id };
    });
}
