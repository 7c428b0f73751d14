/**
 * Graph chat latency on a large knowledge graph against memory search latency on the same machine and server
 * (issue 15: graph chat p95 on a 1M-edge graph ≤ 2× the memory search p95). Both are asked over HTTP of the same
 * graph service, each answered by the embedded defaults (the deterministic graph answer; the extractive answerer).
 *
 * The graph is written straight into the store's tables with set-based SQL (one statement per table, the kg_nodes
 * triggers keeping the link keys as in production): P people, each working at one of P/17 companies, located in one
 * of 500 locations and holding one of 200 positions — 3 edges a person, `--edges` in all. A location is a hub of
 * ~P/500 people, so a two-hop neighbourhood always meets the 100-edge bound. The memory holds `--docs` ingested
 * documents, indexed by the worker.
 *
 *   npx tsx --conditions=lore-src bench/memory/graph-chat.ts [--backend cluster] [--edges 1000000] [--docs 300] [--rounds 5]
 *
 * It also times the two-hop neighbourhood walk alone (walkNeighbourhood: link the question's entities, two hops within
 * the answer's bounds, read the nodes — exactly what graph chat runs in its transaction) as the application role
 * with row-level security, against the same walk as the owner, a superuser that bypasses it (issue 15: ≤ 1.5×).
 *
 * Print only; record figures in docs/memory-benchmarks.md only from a quiet machine (load average below the core count).
 */
import { loadavg, cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { walkNeighbourhood } from '../../services/graph/src/application/graph-chat';
import { arg, benchIdentity, get, ownerTx, percentile, post, startStack, type BenchStack } from './common';

const TENANT = 't_bench_chat';
const GRAPH = 'g_bench_chat';

async function seedGraph(stack: BenchStack, edges: number): Promise<{ people: number; companies: number }> {
  const people = Math.max(1, Math.floor(edges / 3));
  const companies = Math.max(1, Math.floor(people / 17));
  await stack.db.asOwner(async (sql) => {
    await sql.query('BEGIN');
    try {
      // Row-level security is forced on the owner too: act as the tenant.
      await sql.query(`SELECT set_config('lore.tenant_id', $1, true)`, [TENANT]);
      await sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name, status) VALUES ($1, $2, 'Bench', 'ready')`, [TENANT, GRAPH]);
      const nodes = (label: string, prefix: string, count: number, props: string) =>
        sql.query(
          `INSERT INTO graph.kg_nodes (tenant_id, graph_id, label, resolution_key, name, properties, source_kind, source_id)
           SELECT $1, $2, $3, $4 || i, initcap($4) || ' ' || i, ${props}, 'row', 'bench:' || i FROM generate_series(1, $5::int) AS i`,
          [TENANT, GRAPH, label, prefix, count],
        );
      await nodes('Company', 'company', companies, `jsonb_build_object('name', 'Company ' || i, 'domain', 'company' || i || '.example')`);
      await nodes('Location', 'city', 500, `jsonb_build_object('name', 'City ' || i)`);
      await nodes('Position', 'role', 200, `jsonb_build_object('name', 'Role ' || i, 'title', 'Role ' || i)`);
      await nodes('Person', 'person', people, `jsonb_build_object('name', 'Person ' || i, 'linkedin_url', 'https://linkedin.com/in/person-' || i)`);
      // Statistics of the fresh rows, or the planner joins a million edges to nodes it believes are a handful.
      await sql.query('ANALYZE graph.kg_nodes');
      const link = (label: string, toLabel: string, toPrefix: string, modulo: number) =>
        sql.query(
          `INSERT INTO graph.kg_edges (tenant_id, graph_id, from_node, to_node, label, source_kind, source_id, job_id)
           SELECT $1, $2, p.node_id, t.node_id, $3, 'row', 'bench:' || i, 'bench'
             FROM generate_series(1, $4::int) AS i
             JOIN graph.kg_nodes p ON p.tenant_id = $1 AND p.graph_id = $2 AND p.label = 'Person' AND p.resolution_key = 'person' || i
             JOIN graph.kg_nodes t ON t.tenant_id = $1 AND t.graph_id = $2 AND t.label = $5 AND t.resolution_key = $6 || (1 + i % $7::int)`,
          [TENANT, GRAPH, label, people, toLabel, toPrefix, modulo],
        );
      await link('WORKS_AT', 'Company', 'company', companies);
      await link('LOCATED_IN', 'Location', 'city', 500);
      await link('HOLDS_POSITION', 'Position', 'role', 200);
      await sql.query('COMMIT');
    } catch (err) {
      await sql.query('ROLLBACK');
      throw err;
    }
    for (const t of ['kg_nodes', 'kg_edges', 'kg_node_keys']) await sql.query(`VACUUM (ANALYZE) graph.${t}`);
  });
  return { people, companies };
}

const WORDS = 'invoice budget roadmap contract vendor audit release incident migration pricing onboarding security backup quarterly revenue hiring office travel policy renewal'.split(' ');

async function seedMemory(stack: BenchStack, docs: number): Promise<void> {
  const who = benchIdentity(TENANT);
  const ids: string[] = [];
  for (let d = 0; d < docs; d += 1) {
    const sentences = Array.from({ length: 30 }, (_, s) => `Team ${d % 40} reviewed the ${WORDS[(d + s) % WORDS.length]} and the ${WORDS[(d * 7 + s) % WORDS.length]} of Company ${1 + ((d + s) % 50)}.`);
    ids.push((await post(stack, '/api/v1/memory/ingest', who, { content: sentences.join(' '), title: `Note ${d}`, routing: { mode: 'review' } })).doc_id as string);
  }
  for (const id of ids) {
    for (;;) {
      const doc = await get(stack, `/api/v1/memory/documents/${id}`, who);
      if (doc.status !== 'queued') break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const edges = Number(arg('edges', '1000000'));
  const docs = Number(arg('docs', '300'));
  const rounds = Number(arg('rounds', '5'));
  if (!(edges >= 3_000 && edges <= 3_000_000)) throw new Error('--edges must be in [3000, 3000000]');
  const stack = await startStack();
  try {
    console.log(`${stack.kind}; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} cores`);
    let t0 = performance.now();
    const { people, companies } = await seedGraph(stack, edges);
    console.log(`graph: ${people} people, ${companies} companies, ${people * 3} edges in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    t0 = performance.now();
    await seedMemory(stack, docs);
    console.log(`memory: ${docs} documents indexed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const who = benchIdentity(TENANT);
    const n = 40;
    const questions = Array.from({ length: n }, (_, i) =>
      i % 2 === 0 ? `Who works at Company ${1 + ((i * 97) % companies)}?` : `Where is person ${1 + ((i * 7919) % people)} located and what is their role?`,
    );
    const queries = Array.from({ length: n }, (_, i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 3 + 1) % WORDS.length]} Company ${1 + (i % 50)}`);
    const modes: Record<string, (i: number) => Promise<unknown>> = {
      'graph chat   ': (i) => post(stack, '/memory/chat', who, { listId: GRAPH, question: questions[i] }),
      'memory search': (i) => post(stack, '/api/v1/memory/search', who, { query: queries[i] }),
    };
    const check = (await post(stack, '/memory/chat', who, { listId: GRAPH, question: questions[0] })) as { nodes: unknown[]; edges: unknown[] };
    if (check.nodes.length === 0) throw new Error('graph chat linked nothing: the benchmark would measure an empty answer');
    for (let i = 0; i < n; i += 1) for (const fn of Object.values(modes)) await fn(i); // warm caches
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(modes).map((k) => [k, []]));
    for (let r = 0; r < rounds; r += 1) {
      for (let i = 0; i < n; i += 1) for (const [name, fn] of Object.entries(modes)) samples[name]?.push(await timed(() => fn(i)));
    }
    console.log(`\n${n} questions x ${rounds} rounds per mode (ms); a chat answer holds ${check.nodes.length} nodes and ${check.edges.length} edges`);
    console.log('mode             p50      p95      p99');
    for (const [name, xs] of Object.entries(samples)) {
      console.log(`${name}  ${percentile(xs, 50).toFixed(2).padStart(7)}  ${percentile(xs, 95).toFixed(2).padStart(7)}  ${percentile(xs, 99).toFixed(2).padStart(7)}`);
    }
    const ratio = percentile(samples['graph chat   '] ?? [], 95) / percentile(samples['memory search'] ?? [], 95);
    console.log(`\ngraph chat p95 / memory search p95: ${ratio.toFixed(2)}x (target <= 2x); load average now ${loadavg()[0]?.toFixed(1)}`);

    // The two-hop walk alone, RLS on (the application role, as the service runs it) and off (the superuser owner).
    const walks: Record<string, (q: string) => Promise<{ edges: unknown[] }>> = {
      'walk RLS on ': (q) => stack.db.withTenant(TENANT, (sql) => walkNeighbourhood(sql, TENANT, GRAPH, q, false)),
      'walk RLS off': (q) => ownerTx(stack.db, (sql) => walkNeighbourhood(sql, TENANT, GRAPH, q, false)),
    };
    const on = await walks['walk RLS on ']!(questions[0]!);
    const off = await walks['walk RLS off']!(questions[0]!);
    if (on.edges.length === 0 || on.edges.length !== off.edges.length) throw new Error(`the walk found ${on.edges.length} edges with RLS and ${off.edges.length} without: nothing comparable to time`);
    for (const q of questions) for (const fn of Object.values(walks)) await fn(q); // warm caches
    const walkSamples: Record<string, number[]> = Object.fromEntries(Object.keys(walks).map((k) => [k, []]));
    for (let r = 0; r < rounds; r += 1) {
      for (const q of questions) for (const [name, fn] of Object.entries(walks)) walkSamples[name]?.push(await timed(() => fn(q)));
    }
    console.log(`\ntwo-hop walk, ${n} questions x ${rounds} rounds per mode (ms); ${on.edges.length} edges for the first question`);
    console.log('mode            p50      p95      p99');
    for (const [name, xs] of Object.entries(walkSamples)) {
      console.log(`${name}    ${percentile(xs, 50).toFixed(2).padStart(7)}  ${percentile(xs, 95).toFixed(2).padStart(7)}  ${percentile(xs, 99).toFixed(2).padStart(7)}`);
    }
    const rls = percentile(walkSamples['walk RLS on '] ?? [], 95) / percentile(walkSamples['walk RLS off'] ?? [], 95);
    console.log(`\ntwo-hop walk p95 RLS on / off: ${rls.toFixed(2)}x (target <= 1.5x)`);
    console.log(ratio <= 2 ? 'OK: graph chat within target' : 'FAIL: graph chat above target');
    console.log(rls <= 1.5 ? 'OK: two-hop walk within target' : 'FAIL: two-hop walk above target');
    if (ratio > 2 || rls > 1.5) process.exitCode = 1;
  } finally {
    await stack.close();
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
