import { runMigrations, runRuntimeMigrations } from '@lore/runtime';
import { GRAPH_MIGRATIONS } from '@lore/graph';
import { readSubgraph } from '../../services/graph/src/application/graph-chat';
import type { GraphViewer } from '../../services/graph/src/application/knowledge-graphs';
import { domainCompaniesNamed, openEdges, profiledPeopleAt, upsertNodes, type NodeInput } from '../../services/graph/src/store/knowledge-graphs';
import { freshPostgresDb, rowsRead } from '../runtime/support';

jest.setTimeout(180_000);

/**
 * A graph job's statements on a graph whose tables have no statistics yet: a fresh install's first jobs, whose one
 * transaction writes thousands of nodes the planner then believes are one row. Each look-up must stay one index read
 * per input. Before, three of them were planned as joins that read the whole graph for every input: a ScanReport's
 * key clean-up held a graph's row lock 10 s for 5,000 nodes (the fuzzing suite's connector request timed out behind
 * it). Measured in rows read (the transaction's own counters), not in time.
 */
describe('a graph job\'s look-ups on tables without statistics', () => {
  const T = 'tenant-plans';
  const G = 'g';
  const N = 5_000;

  it('reads each input once by an index, whatever the graph holds', async () => {
    const stack = await freshPostgresDb();
    try {
      await runRuntimeMigrations(stack.db);
      await runMigrations(stack.db, GRAPH_MIGRATIONS);
      await stack.db.withTenant(T, async (sql) => {
        await sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name) VALUES ($1, $2, 'Plans')`, [T, G]);
        const src = (i: number) => ({ kind: 'row' as const, id: `people.csv#${i}` });
        const company = (i: number): NodeInput => ({ label: 'Company', key: `domain:c${i}.example`, name: `Company ${i}`, properties: { name: `Company ${i}`, domain: `c${i}.example` }, source: src(i) });
        const person = (i: number): NodeInput => ({ label: 'Person', key: `profile:example.org/in/p${i}`, name: `Person ${i}`, properties: { name: `Person ${i}` }, source: src(i) });
        const report = (i: number, v: string): NodeInput => ({ label: 'ScanReport', key: `ref:people.csv:${i}`, name: `Row ${i} ${v}`, properties: { id: `row-${i}`, title: `Row ${i} ${v}` }, source: src(i), replace: true });
        const range = Array.from({ length: N }, (_, i) => i + 1);

        const before = await rowsRead(sql, ['graph'], ['kg_nodes', 'kg_node_keys', 'kg_edges']);
        const first = await upsertNodes(sql, T, G, range.flatMap((i) => [company(i), person(i), report(i, 'first')]));
        expect(first.created).toBe(3 * N);
        await openEdges(sql, T, G, 'job-1', range.map((i) => ({ from: first.ids.get(`Person|profile:example.org/in/p${i}`)!, to: first.ids.get(`Company|domain:c${i}.example`)!, label: 'WORKS_AT', source: src(i) })));

        // Every node again: the companies and people unchanged (read back by their keys), the reports replaced.
        const second = await upsertNodes(sql, T, G, range.flatMap((i) => [company(i), person(i), report(i, 'second')]));
        expect(second.created).toBe(0);
        expect(second.ids.size).toBe(3 * N);
        const named = await domainCompaniesNamed(sql, T, G, range.map((i) => `company ${i}`));
        expect(named.size).toBe(N);
        expect([...named.get('company 17')!]).toEqual(['domain:c17.example']);
        const people = await profiledPeopleAt(sql, T, G, range.map((i) => ({ name: `person ${i}`, companyKey: `domain:c${i}.example` })));
        expect(people.size).toBe(N);
        expect([...people.values()].every((keys) => keys.size === 1)).toBe(true);
        const read = (await rowsRead(sql, ['graph'], ['kg_nodes', 'kg_node_keys', 'kg_edges'])) - before;

        // The replaced reports lost the keys of what they said before and gained the new ones.
        const keys = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM graph.kg_node_keys WHERE tenant_id = $1 AND graph_id = $2 AND match_key LIKE 'row % first'`, [T, G]);
        expect(keys.rows[0]?.n).toBe(0);
        const fresh = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM graph.kg_node_keys WHERE tenant_id = $1 AND graph_id = $2 AND match_key LIKE 'row % second'`, [T, G]);
        expect(fresh.rows[0]?.n).toBe(N);
        // A few rows per input and statement (about 235,000 in all); a join that reads the graph for every input reads
        // N × N (25 million) each time (188 million in all).
        expect(read).toBeLessThan(40 * 3 * N);
      });
    } finally {
      await stack.close();
    }
  });

  it('graph chat over a graph no ANALYZE has seen gathers its statistics first', async () => {
    const stack = await freshPostgresDb();
    try {
      await runRuntimeMigrations(stack.db);
      await runMigrations(stack.db, GRAPH_MIGRATIONS);
      // Autovacuum stays away from this database's graph tables: only graph chat may analyze them here.
      await stack.db.asOwner(async (sql) => {
        for (const t of ['kg_nodes', 'kg_node_keys', 'kg_edges']) await sql.query(`ALTER TABLE graph.${t} SET (autovacuum_enabled = false)`);
      });
      await stack.db.withTenant(T, async (sql) => {
        await sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name, status) VALUES ($1, $2, 'Chat', 'ready')`, [T, G]);
        const people = Array.from({ length: 2_000 }, (_, i): NodeInput => ({ label: 'Person', key: `profile:example.org/in/p${i}`, name: `Person ${i}`, properties: { name: `Person ${i}` }, source: { kind: 'row', id: `people.csv#${i}` } }));
        await upsertNodes(sql, T, G, people);
      });
      // What the last ANALYZE counted (-1: never analyzed); pg_stats hides the statistics of tables under row-level
      // security.
      const analyzed = () => stack.db.withTenant(T, async (sql) => Number((await sql.query<{ n: number }>(`SELECT reltuples AS n FROM pg_class WHERE oid = 'graph.kg_node_keys'::regclass`)).rows[0]?.n));
      expect(await analyzed()).toBe(-1);
      const viewer: GraphViewer = { tenantId: T, admin: true, reach: { readsDocuments: true } as GraphViewer['reach'] };
      const sub = await readSubgraph(stack.db, viewer, G, 'Who is Person 17?');
      expect(sub.nodes.map((n) => n.name)).toContain('Person 17');
      expect(await analyzed()).toBeGreaterThanOrEqual(2_000);
    } finally {
      await stack.close();
    }
  });
});

