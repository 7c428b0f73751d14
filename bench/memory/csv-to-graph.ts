/**
 * CSV to knowledge graph: rows per second of an uploaded table of people (name, title, company, website, profile,
 * city, a score) becoming typed nodes and bi-temporal edges — accepted as `POST /memory/upload` accepts it, applied
 * by the worker's `lore.graph.jobs` consumer in one transaction — against a plain `COPY` of the same file into a
 * table of text columns on the same database, measured in the same run. Target (issue 15): the graph's rate ≥ 25%
 * of COPY's.
 *
 *   set -a; . ~/.cache/lore/run/env; set +a
 *   npx tsx --conditions=lore-src bench/memory/csv-to-graph.ts [--rows 100000] [--companies 5000]
 * Needs the test PostgreSQL (LORE_TEST_PG_URL, LORE_TEST_PG_APP_URL) and `psql` for the COPY baseline (a fresh
 * database, dropped afterwards); Kafka from LORE_TEST_KAFKA_BROKERS when set, else the in-process bus.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createGraphService } from '@lore/graph';
import { createLogger, createMetricsRegistry, IdentitySigner, KafkaBus, MemoryBus, PostgresBlobStore, PostgresDb, type EventBus } from '@lore/runtime';
import { acceptUploadJob } from '../../services/graph/src/application/knowledge-graphs';
import { createGraph as createKnowledgeGraph } from '../../services/graph/src/application/knowledge-graphs';
import { getJob } from '../../services/graph/src/store/knowledge-graphs';
import { freshDatabase } from '../../test/support/infra';
import { arg } from './common';

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'John', 'Katherine', 'Ken', 'Margaret', 'Niklaus', 'Radia', 'Tim', 'Vint'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Backus', 'Johnson', 'Thompson', 'Hamilton', 'Wirth', 'Perlman', 'Berners', 'Cerf'];
const TITLES = ['CTO', 'CEO', 'VP Engineering', 'Head of Data', 'Staff Engineer', 'Product Lead', 'CFO', 'Research Scientist'];
const CITIES = ['Berlin', 'Paris', 'London', 'Madrid', 'Rome', 'Vienna', 'Warsaw', 'Lisbon', 'Oslo', 'Dublin', 'Prague', 'Zurich'];

function table(rows: number, companies: number): string {
  const lines = ['Name,Title,Company,Website,LinkedIn,City,Score'];
  for (let i = 0; i < rows; i += 1) {
    const c = i % companies;
    const name = `${FIRST[i % FIRST.length]} ${LAST[Math.floor(i / FIRST.length) % LAST.length]} ${i}`;
    lines.push(`${name},${TITLES[i % TITLES.length]},Company ${c},https://company${c}.example,https://linkedin.com/in/person-${i},${CITIES[i % CITIES.length]},${i % 10}`);
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const rows = Number(arg('rows', '100000'));
  const companies = Number(arg('companies', '5000'));
  const csv = table(rows, companies);
  const dir = mkdtempSync(join(tmpdir(), 'lore-csv-graph-'));
  const file = join(dir, 'people.csv');
  writeFileSync(file, csv);
  const database = await freshDatabase('lore_bench_kg');
  const logger = createLogger({ level: process.env.LORE_BENCH_LOG_LEVEL ?? 'warn', service: 'bench-csv-graph' });
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 10 }).init();
  const brokers = process.env.LORE_TEST_KAFKA_BROKERS;
  const bus: EventBus = brokers ? new KafkaBus({ brokers: brokers.split(','), clientId: 'bench-csv-graph', logger }) : new MemoryBus({ logger });
  const graph = await createGraphService({
    db, bus, blobs: new PostgresBlobStore(db), logger, metrics: createMetricsRegistry('bench', { defaultMetrics: false }), signer: new IdentitySigner('bench-csv-graph-secret-0123456789abcdef'), ocr: null, consumerGroup: `bench-kg-${Date.now()}`,
  });
  try {
    await graph.worker.start();
    // Baseline: the same file into a table of text columns with COPY, as the database owner through psql.
    execFileSync('psql', [database.ownerUrl, '-qc', 'CREATE TABLE bench_copy (name text, title text, company text, website text, linkedin text, city text, score text)']);
    const c0 = performance.now();
    execFileSync('psql', [database.ownerUrl, '-qc', `\\copy bench_copy FROM '${file}' WITH (FORMAT csv, HEADER true)`]);
    const copySeconds = (performance.now() - c0) / 1000;

    const tenant = 't_bench_kg';
    const g = await createKnowledgeGraph(graph.memory, tenant, { name: 'bench' });
    const t0 = performance.now();
    const job = await acceptUploadJob(graph.memory, { tenantId: tenant, admin: true, reach: { workspaceId: null, memoryIds: null, readsDocuments: true } }, g.graph_id, { filename: 'people.csv', contentType: 'text/csv', data: Buffer.from(csv) });
    let done = null;
    for (;;) {
      done = await db.withTenant(tenant, (sql) => getJob(sql, tenant, job.jobId));
      if (done && (done.status === 'completed' || done.status === 'failed')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const graphSeconds = (performance.now() - t0) / 1000;
    if (done.status !== 'completed') throw new Error(`the job failed: ${done.message}`);
    const copyRate = rows / copySeconds;
    const graphRate = rows / graphSeconds;
    const out = [
      `CSV to graph, ${rows} rows (${(csv.length / 1024 / 1024).toFixed(1)} MiB, ${companies} companies), ${db.kind} + ${bus.kind} bus`,
      `  COPY into a text table: ${copySeconds.toFixed(2)} s, ${Math.round(copyRate)} rows/s`,
      `  upload job to graph:    ${graphSeconds.toFixed(2)} s, ${Math.round(graphRate)} rows/s (${JSON.stringify(done.stats)})`,
      `  ratio graph/COPY: ${(graphRate / copyRate).toFixed(3)} (target >= 0.25)`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await graph.close();
    await bus.close();
    await db.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
