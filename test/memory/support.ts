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
  url: string;
  db: Db;
  bus: EventBus;
  graph: GraphService;
  server: StartedServer;
  logs: LogCapture;
  signer: IdentitySigner;
  identity(tenant: string, memory?: string, extra?: Partial<Identity>): Identity;
  call(method: string, path: string, identity: Identity | null, body?: unknown): Promise<{ status: number; body: any; text: string; headers: Headers }>;
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
      ? new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: `graph-test-${uniqueSuffix()}`, logger, partitions: 2 })
      : new MemoryBus({ logger });
  const signer = new IdentitySigner(options.secret ?? SECRET);
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
  const call: Harness['call'] = async (method, path, who, body) => {
    const headers: Record<string, string> = {};
    if (who) headers[IDENTITY_HEADER] = await signer.sign(who);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  };
  return {
    url: server.url,
    db,
    bus,
    graph,
    server,
    logs,
    signer,
    identity,
    call,
    database,
    async close() {
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

/** Waits until the document is indexed (or failed) and returns its status body. */
export async function waitIndexed(h: Harness, who: Identity, docId: string, timeoutMs = 30_000): Promise<any> {
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
