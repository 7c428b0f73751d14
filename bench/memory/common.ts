import { createLogger, createMetricsRegistry, IdentitySigner, IDENTITY_HEADER, listen, MemoryBus, PgliteDb, PostgresBlobStore, PostgresDb, KafkaBus, type Db, type EventBus, type Identity, type Sql } from '@lore/runtime';
import type { Embedder } from '@lore/ai';
import { createGraphService, type GraphService } from '@lore/graph';
import { freshDatabase, type TestDatabase } from '../../test/support/infra';

export const BENCH_SECRET = 'bench-memory-identity-secret-0123456789abcdef';

export interface BenchStack {
  db: Db;
  bus: EventBus;
  graph: GraphService;
  url: string;
  signer: IdentitySigner;
  kind: string;
  close(): Promise<void>;
}

/**
 * The service as it runs: embedded (PGlite + in-process bus) by default; with `--backend cluster` real
 * PostgreSQL (a fresh database, dropped afterwards) and Kafka from the test infrastructure's environment
 * (`set -a; . ~/.cache/lore/run/env; set +a`). `embedder`: default the hashed one.
 */
export async function startStack(options: { embedder?: Embedder } = {}): Promise<BenchStack> {
  const logger = createLogger({ level: process.env.LORE_BENCH_LOG_LEVEL ?? 'warn', service: 'bench-memory' });
  const metrics = createMetricsRegistry('bench', { defaultMetrics: false });
  const cluster = arg('backend', 'embedded') === 'cluster';
  let database: TestDatabase | undefined;
  let db: Db;
  if (cluster) {
    database = await freshDatabase('lore_bench');
    db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 20 }).init();
  } else {
    db = await PgliteDb.open();
  }
  const brokers = cluster ? process.env.LORE_TEST_KAFKA_BROKERS : undefined;
  const bus: EventBus = brokers ? new KafkaBus({ brokers: brokers.split(','), clientId: 'bench-memory', logger }) : new MemoryBus({ logger });
  const signer = new IdentitySigner(BENCH_SECRET);
  const graph = await createGraphService({ db, bus, blobs: new PostgresBlobStore(db), logger, metrics, signer, ocr: null, consumerGroup: `bench-${Date.now()}`, ...(options.embedder ? { embedder: options.embedder } : {}) });
  await graph.worker.start();
  const server = await listen(graph.app, 0, '127.0.0.1');
  return {
    db,
    bus,
    graph,
    url: server.url,
    signer,
    kind: `${db.kind} + ${bus.kind} bus, ${graph.describe().retrieval} retrieval, embedder ${graph.describe().embedder.model}`,
    async close() {
      await server.close(500);
      await graph.close();
      await bus.close();
      await db.close();
      await database?.drop();
    },
  };
}

export function benchIdentity(tenant: string): Identity {
  return { tenant_id: tenant, workspace_id: `ws_${tenant}`, memory_id: `mem_${tenant}`, credential: 'ck_test', subject: 'bench', role: 'admin' };
}

export async function post(stack: BenchStack, path: string, who: Identity, body: unknown): Promise<any> {
  const res = await fetch(`${stack.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [IDENTITY_HEADER]: await stack.signer.sign(who) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return res.json();
}

export async function get(stack: BenchStack, path: string, who: Identity): Promise<any> {
  const res = await fetch(`${stack.url}${path}`, { headers: { [IDENTITY_HEADER]: await stack.signer.sign(who) } });
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return res.json();
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? (process.argv[i + 1] as string) : fallback;
}

/** One transaction as the owner, a superuser on both backends: row-level security does not apply to it. */
export async function ownerTx<T>(db: Db, fn: (sql: Sql) => Promise<T>): Promise<T> {
  return db.asOwner(async (sql) => {
    await sql.query('BEGIN');
    try {
      return await fn(sql);
    } finally {
      await sql.query('COMMIT');
    }
  });
}
