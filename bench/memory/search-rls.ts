/**
 * Search latency over 100k chunks in one tenant, with row-level security on (the application role, exactly as
 * the service queries) against the same query without it (the superuser, which bypasses RLS), plus a second
 * tenant's rows as noise. Lore's design (BM25 over a btree postings table: every predicate is leakproof) is
 * measured next to the naive design (`tsv @@ query` with a GIN index), whose non-leakproof `@@` cannot be an
 * index condition under RLS. Target: Lore's p95 with RLS ≤ 1.5× without.
 *
 *   npx tsx --conditions=lore-src bench/memory/search-rls.ts [--chunks 100000] [--rounds 5]
 * Runs on the test PostgreSQL when LORE_TEST_PG_URL / LORE_TEST_PG_APP_URL are set (a fresh database, dropped
 * afterwards), else on embedded PGlite.
 */
import { performance } from 'node:perf_hooks';
import { GRAPH_MIGRATIONS, lexicalSearch } from '@lore/graph';
import { PgliteDb, PostgresDb, runMigrations, runRuntimeMigrations, type Db, type Sql } from '@lore/runtime';
import { chunkText } from '../../services/graph/src/domain/chunking';
import { insertDocument } from '../../services/graph/src/store/documents';
import { writeChunks } from '../../services/graph/src/store/index-store';
import { ensureMemory } from '../../services/graph/src/store/memories';
import { freshDatabase, type TestDatabase } from '../../test/support/infra';
import { arg, ownerTx, percentile } from './common';

/** Deterministic PRNG (mulberry32) so every run builds the same corpus. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = 'ka lo mi ne ra to shi va pe lu dor an ex il om ur bel cor fin gar hal jor kel mar nor pol quin ros sel tam vor win zel'.split(' ');

function vocabulary(size: number, random: () => number): string[] {
  const words = new Set<string>();
  while (words.size < size) {
    const n = 2 + Math.floor(random() * 3);
    let w = '';
    for (let i = 0; i < n; i += 1) w += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    words.add(w);
  }
  return [...words];
}

/** Zipf-distributed word sampler (exponent 1.05): a few very common words, a long tail of rare ones. */
function zipfSampler(words: string[], random: () => number): () => string {
  const cumulative: number[] = [];
  let sum = 0;
  for (let r = 1; r <= words.length; r += 1) {
    sum += 1 / r ** 1.05;
    cumulative.push(sum);
  }
  return () => {
    const x = random() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return words[lo] as string;
  };
}

async function load(db: Db, tenant: string, memory: string, chunks: number, next: () => string, label: string): Promise<void> {
  const perDoc = 500;
  const docs = Math.ceil(chunks / perDoc);
  const t0 = performance.now();
  for (let d = 0; d < docs; d += 1) {
    const n = Math.min(perDoc, chunks - d * perDoc);
    const paragraphs = Array.from({ length: n }, () => `${Array.from({ length: 40 }, next).join(' ')}.`);
    const content = paragraphs.join('\n\n');
    const docId = `doc_${label}_${d}`;
    const pieces = chunkText(content, { targetWords: 40, maxWords: 60, maxChunks: perDoc }).slice(0, n);
    await db.withTenant(tenant, async (sql) => {
      await ensureMemory(sql, tenant, memory);
      await insertDocument(sql, tenant, {
        doc_id: docId,
        memory_id: memory,
        workspace_id: 'ws',
        vault_id: 'v_unassigned',
        title: `Bench ${d}`,
        content_type: 'text',
        content: '',
        content_sha256: docId,
        source: 'ingest',
        upload_id: null,
        routing_mode: 'review',
        routing_confidence: 0,
        routing_scores: [],
        needs_review: true,
        dlp_matches: 0,
        dlp_kinds: {},
      });
      await writeChunks(sql, tenant, { doc_id: docId, memory_id: memory, workspace_id: 'ws', vault_id: 'v_unassigned', title: `Bench ${d}`, content: '', status: 'queued', upload_id: null }, pieces, null);
    });
    if ((d + 1) % 20 === 0 || d === docs - 1) {
      process.stdout.write(`  ${label}: ${Math.min(chunks, (d + 1) * perDoc)} chunks (${((performance.now() - t0) / 1000).toFixed(0)} s)\n`);
    }
  }
}

/** The naive design for contrast: `@@` over a GIN index. */
const NAIVE = `SELECT c.chunk_id, ts_rank_cd(c.tsv, q) AS score
  FROM graph.chunks c, plainto_tsquery('english', $3) q
 WHERE c.tenant_id = $1 AND c.memory_id = $2 AND c.tsv @@ q
 ORDER BY score DESC LIMIT 40`;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const chunks = Number(arg('chunks', '100000'));
  const rounds = Number(arg('rounds', '5'));
  if (!(chunks >= 1000 && chunks <= 1_000_000)) throw new Error('--chunks must be in [1000, 1000000]');
  let database: TestDatabase | undefined;
  let db: Db;
  if (process.env.LORE_TEST_PG_URL && process.env.LORE_TEST_PG_APP_URL) {
    database = await freshDatabase('lore_bench_rls');
    db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl }).init();
  } else {
    db = await PgliteDb.open();
  }
  try {
    await runRuntimeMigrations(db);
    await runMigrations(db, GRAPH_MIGRATIONS);
    const random = rng(42);
    const words = vocabulary(30_000, random);
    const next = zipfSampler(words, random);
    console.log(`loading ${chunks} chunks for tenant A and ${Math.round(chunks / 5)} for tenant B on ${db.kind}`);
    await load(db, 't_bench_a', 'mem_a', chunks, next, 'A');
    await load(db, 't_bench_b', 'mem_b', Math.round(chunks / 5), next, 'B');
    await db.asOwner((sql) => sql.query('CREATE INDEX IF NOT EXISTS bench_chunks_tsv_gin ON graph.chunks USING gin (tsv)'));
    // What autovacuum does in production: visibility map (index-only scans) and statistics.
    for (const t of ['chunks', 'postings', 'term_stats', 'corpus_stats']) await db.asOwner((sql) => sql.query(`VACUUM (ANALYZE) graph.${t}`));

    // Queries: two to four words from the head, body and tail of the distribution.
    const qr = rng(7);
    const queries = Array.from({ length: 40 }, (_, i) => {
      const n = 2 + (i % 3);
      return Array.from({ length: n }, () => words[Math.floor(qr() ** 2 * 3000)] as string).join(' ');
    });
    const scope = { tenantId: 't_bench_a', memoryId: 'mem_a' };
    const modes: Record<string, (q: string) => Promise<unknown>> = {
      'lore  RLS on ': (q) => db.withTenant(scope.tenantId, (sql) => lexicalSearch(sql, scope, q, 40)),
      'lore  RLS off': (q) => ownerTx(db, (sql) => lexicalSearch(sql, scope, q, 40)),
      'naive RLS on ': (q) => db.withTenant(scope.tenantId, (sql) => sql.query(NAIVE, [scope.tenantId, scope.memoryId, q])),
      'naive RLS off': (q) => ownerTx(db, (sql) => sql.query(NAIVE, [scope.tenantId, scope.memoryId, q])),
    };
    for (const q of queries) for (const fn of Object.values(modes)) await fn(q); // warm caches
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(modes).map((k) => [k, []]));
    for (let r = 0; r < rounds; r += 1) {
      for (const q of queries) {
        for (const [name, fn] of Object.entries(modes)) samples[name]?.push(await timed(() => fn(q)));
      }
    }
    const plan = async (sql: Sql, text: string, params: unknown[]) =>
      (await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, params)).rows.map((r) => r['QUERY PLAN']).filter((l) => /Scan|Index/.test(l)).map((l) => l.trim()).slice(0, 2).join(' / ');
    const sample = queries[0] as string;
    const naivePlanRls = await db.withTenant(scope.tenantId, (sql) => plan(sql, NAIVE, [scope.tenantId, scope.memoryId, sample]));
    const naivePlanOwner = await ownerTx(db, (sql) => plan(sql, NAIVE, [scope.tenantId, scope.memoryId, sample]));

    console.log(`\n${queries.length} queries x ${rounds} rounds per mode (ms)`);
    console.log('mode            p50      p95      p99');
    for (const [name, xs] of Object.entries(samples)) {
      console.log(`${name}  ${percentile(xs, 50).toFixed(2).padStart(7)}  ${percentile(xs, 95).toFixed(2).padStart(7)}  ${percentile(xs, 99).toFixed(2).padStart(7)}`);
    }
    const ratio = (a: string, b: string) => percentile(samples[a] ?? [], 95) / percentile(samples[b] ?? [], 95);
    const lore = ratio('lore  RLS on ', 'lore  RLS off');
    console.log(`\nlore  p95 RLS on / off: ${lore.toFixed(2)}x (target <= 1.5x)`);
    console.log(`naive p95 RLS on / off: ${ratio('naive RLS on ', 'naive RLS off').toFixed(2)}x`);
    console.log(`naive plan with RLS:    ${naivePlanRls}`);
    console.log(`naive plan without RLS: ${naivePlanOwner}`);
    console.log(lore <= 1.5 ? 'OK: within target' : 'FAIL: above target');
    if (lore > 1.5) process.exitCode = 1;
  } finally {
    await db.close();
    await database?.drop();
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
