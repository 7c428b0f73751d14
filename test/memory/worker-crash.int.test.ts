import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { TOPICS } from '@lore/contracts';
import { createLogger, OutboxRelay } from '@lore/runtime';
import { Client } from 'pg';
import { requireEnv, uniqueSuffix } from '../support/infra';
import { eventually, SECRET, startHarness, type Harness } from './support';

jest.setTimeout(300_000);

const ROOT = join(__dirname, '..', '..');

/** graph-worker as a real process, from the TypeScript sources. */
function startWorker(env: Record<string, string>, logs: string[]): ChildProcess {
  const child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/graph/src/worker-main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
  return child;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

describe('graph-worker killed mid-batch', () => {
  let h: Harness & { database?: { url: string; ownerUrl: string } };
  const children: ChildProcess[] = [];
  const logs: string[] = [];

  beforeAll(async () => {
    // The API in-process without consumers; the test relays what it writes.
    h = await startHarness({ backend: 'postgres', worker: false });
    await h.bus.ensureTopics([TOPICS.memoryIngest, TOPICS.memoryUploads, TOPICS.events]);
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(children.map(exited));
    await h?.close();
  });

  it('indexes every document exactly once after a SIGKILL and a restart', async () => {
    const run = uniqueSuffix();
    const tenant = `t_crash_${run}`;
    const who = h.identity(tenant);
    const env = {
      LORE_LOG_LEVEL: 'info',
      LORE_DATABASE_URL: h.database!.url,
      LORE_DATABASE_OWNER_URL: h.database!.ownerUrl,
      LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
      LORE_IDENTITY_SECRET: SECRET,
      LORE_GRAPH_PORT: '0',
      LORE_GRAPH_WORKER_PORT: '0',
      LORE_GRAPH_HOST: '127.0.0.1',
      LORE_GRAPH_OCR: 'false',
      LORE_GRAPH_CONSUMER_GROUP: `graph-worker-crash-${run}`,
    };
    const paragraph = (i: number) =>
      Array.from({ length: 30 }, (_, j) => `Record ${i}-${j}: the Kestrel ledger entry ${j} for account ${i} settled on day ${(i * 7 + j) % 28}.`).join(' ');
    const total = 120;
    const docIds: string[] = [];
    for (let i = 0; i < total; i += 1) {
      const r = await h.call('POST', '/api/v1/memory/ingest', who, { content: `# Ledger ${i}\n\n${paragraph(i)}`, routing: { mode: 'auto' } });
      expect(r.status).toBe(200);
      docIds.push(r.body.doc_id);
    }
    // Publish everything the API wrote, so the worker starts with a full backlog.
    const relay = new OutboxRelay({ db: h.db, bus: h.bus, logger: createLogger({ level: 'silent', service: 'relay' }) });
    while ((await relay.drainOnce()) > 0);

    const owner = new Client({ connectionString: h.database!.ownerUrl });
    await owner.connect();
    const indexedCount = async () =>
      Number((await owner.query(`SELECT count(*) AS n FROM graph.documents WHERE tenant_id = $1 AND status = 'indexed'`, [tenant])).rows[0].n);
    try {
      const first = startWorker(env, logs);
      children.push(first);
      const before = await eventually(async () => {
        const n = await indexedCount();
        return n >= 5 ? n : undefined;
      }, 120_000, 'the first worker to index some documents').catch((err) => {
        throw new Error(`${(err as Error).message}\n--- worker output ---\n${logs.join('').slice(-3000)}`);
      });
      first.kill('SIGKILL');
      await exited(first);
      const atKill = await indexedCount();
      // The worker records its consumers' starts in the start journal (docs/runtime.md, "Crash loops"); a killed
      // process could not clear them.
      const recorded = await owner.query(`SELECT count(*)::int AS n FROM runtime.consumer_starts WHERE starts_with(consumer_group, $1)`, [env.LORE_GRAPH_CONSUMER_GROUP]);
      expect(recorded.rows[0].n).toBeGreaterThan(0);
      expect(before).toBeGreaterThanOrEqual(5);
      expect(atKill).toBeLessThan(total);

      const second = startWorker(env, logs);
      children.push(second);
      await eventually(async () => ((await indexedCount()) === total ? true : undefined), 180_000, 'every document indexed after the restart');
      second.kill('SIGTERM');
      await exited(second);

      const perDoc = await owner.query(
        `SELECT d.doc_id, d.chunk_count, count(c.chunk_id)::int AS chunks, count(DISTINCT c.ord)::int AS ords
           FROM graph.documents d LEFT JOIN graph.chunks c ON c.tenant_id = d.tenant_id AND c.doc_id = d.doc_id
          WHERE d.tenant_id = $1 GROUP BY d.doc_id, d.chunk_count`,
        [tenant],
      );
      expect(perDoc.rows).toHaveLength(total);
      for (const row of perDoc.rows) {
        expect(row.chunks).toBeGreaterThan(0);
        expect(row.chunks).toBe(row.chunk_count);
        expect(row.ords).toBe(row.chunks);
      }
      // One completion event per document was committed (the relay may deliver it twice; receivers dedupe).
      const completions = await owner.query(
        `SELECT value->'payload'->>'doc_id' AS doc_id, count(*)::int AS n FROM runtime.outbox
          WHERE topic = 'lore.events' AND value->>'event' = 'memory.ingest.completed' AND value->'scope'->>'tenant_id' = $1
          GROUP BY 1`,
        [tenant],
      );
      expect(completions.rows).toHaveLength(total);
      expect(completions.rows.every((x) => x.n === 1)).toBe(true);
      // BM25 statistics were folded in once per document: they equal a recount.
      const drift = await owner.query(
        `SELECT count(*)::int AS n FROM graph.term_stats ts
           LEFT JOIN (SELECT term, count(*)::int AS df FROM graph.postings WHERE tenant_id = $1 GROUP BY term) p ON p.term = ts.term
          WHERE ts.tenant_id = $1 AND ts.df IS DISTINCT FROM p.df`,
        [tenant],
      );
      expect(drift.rows[0].n).toBe(0);
      const stats = await owner.query(`SELECT chunk_count::int AS n FROM graph.corpus_stats WHERE tenant_id = $1`, [tenant]);
      const chunks = await owner.query(`SELECT count(*)::int AS n FROM graph.chunks WHERE tenant_id = $1`, [tenant]);
      expect(stats.rows[0].n).toBe(chunks.rows[0].n);
    } finally {
      await owner.end();
    }
    const search = await h.call('POST', '/api/v1/memory/search', who, { query: 'Kestrel ledger account 42' });
    expect(search.status).toBe(200);
    expect(search.body.citations.length).toBeGreaterThan(0);
  });
});
