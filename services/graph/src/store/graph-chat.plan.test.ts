jest.setTimeout(60_000);

import { PgliteDb, runMigrations, runRuntimeMigrations, explainingSql } from '@lore/runtime';
import { GRAPH_MIGRATIONS } from '../graph-service';
import { currentRelationCounts, edgesOfNodes, matchKeys } from './graph-chat';

/**
 * The plan that links a question's phrases to a graph's nodes: one primary-key look-up per folded phrase, never the
 * node index with a filter over every key of the graph (6.7 s on 200,000 keys for a long question). Without any
 * statistics the planner cannot tell the two indexes apart (both look one row wide); embedded mode gathers them
 * (services/embedded/src/statistics.ts), as autovacuum does in a cluster.
 */
describe('linking a question to the graph', () => {
  it('looks each folded phrase up in the keys\' primary key, and finds each phrase\'s first nodes', async () => {
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      await runMigrations(db, GRAPH_MIGRATIONS);
      await db.asOwner((sql) =>
        sql.query(`INSERT INTO graph.kg_node_keys (tenant_id, graph_id, match_key, node_id)
                   SELECT 't', 'g', 'person ' || i, i FROM generate_series(1, 100000) AS i
                   UNION ALL SELECT 't', 'g', 'acme', i FROM generate_series(1, 40) AS i
                   UNION ALL SELECT 't', 'g', 'acme corp', 7`),
      );
      await db.asOwner((sql) => sql.query(`ANALYZE graph.kg_node_keys`));
      const phrases = ['Person 12', 'ACME', 'Acme Corp', 'nobody'].map((text) => ({ text, weak: false }));
      const found = await db.withTenant('t', (sql) => matchKeys(sql, 't', 'g', phrases, [], 3));
      // Each folded phrase's first nodes by id, at most `perKey` (3) of them; ranking is the caller's.
      expect(found.keys.sort((a, b) => a.match_key.localeCompare(b.match_key) || Number(a.node_id) - Number(b.node_id))).toEqual([
        { node_id: '1', match_key: 'acme', phrases: [1] },
        { node_id: '2', match_key: 'acme', phrases: [1] },
        { node_id: '3', match_key: 'acme', phrases: [1] },
        { node_id: '7', match_key: 'acme corp', phrases: [2] },
        { node_id: '12', match_key: 'person 12', phrases: [0] },
      ]);
      const plans: string[] = [];
      // A weak phrase (an ordinary word) reads each candidate node by its primary key for the domain-label test.
      const weak = [...phrases.map((p) => ({ ...p, weak: p.text === 'ACME' })), { text: 'linkedin.com/in/someone', weak: false, profile: true }];
      await db.withTenant('t', (sql) => matchKeys(explainingSql(sql, plans), 't', 'g', weak, ['Person'], 3));
      expect(plans[0]).toMatch(/Index (Only )?Scan using kg_node_keys_pkey on kg_node_keys[^\n]*\n\s+Index Cond: \(.*match_key = /);
      expect(plans[0]).not.toMatch(/kg_node_keys_node_idx/);
      // The domain-label test reads one node by its id per candidate, never every node of the graph.
      expect(plans[0]).toMatch(/Index Scan using \w+ on kg_nodes m[^\n]*\n\s+Index Cond: \([^\n]*node_id = n\.node_id/);
      expect(plans[0]).not.toMatch(/hashed SubPlan/);
      // A profile URL: the person by the nodes' unique (label, resolution key) index.
      expect(plans[0]).toMatch(/Index (Only )?Scan using kg_nodes_tenant_id_graph_id_label_resolution_key_key on kg_nodes n[^\n]*\n\s+Index Cond: \([^\n]*resolution_key = u\.key/);
    } finally {
      await db.close();
    }
  });

  it('reads each frontier node\'s edges and counts a hub\'s relations through the edge indexes', async () => {
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      await runMigrations(db, GRAPH_MIGRATIONS);
      // A hub (node 1) with 20,000 people, a small node (2) with three relations.
      await db.asOwner(async (sql) => {
        await sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name, status) VALUES ('t', 'g', 'Plan', 'ready')`);
        await sql.query(`INSERT INTO graph.kg_nodes (tenant_id, graph_id, label, resolution_key, name, source_kind, source_id)
                         OVERRIDING SYSTEM VALUE
                         SELECT 't', 'g', 'Person', 'p' || i, 'P ' || i, 'row', 'r' FROM generate_series(1, 20010) AS i`);
        await sql.query(`INSERT INTO graph.kg_edges (tenant_id, graph_id, from_node, to_node, label, source_kind, source_id, job_id)
                         SELECT 't', 'g', i, 1, 'WORKS_AT', 'row', 'r' || i, 'j' FROM generate_series(3, 20002) AS i
                         UNION ALL SELECT 't', 'g', 2, i, 'LOCATED_IN', 'row', 'x' || i, 'j' FROM generate_series(20003, 20005) AS i
                         UNION ALL SELECT 't', 'g', 1, 20006, 'LOCATED_IN', 'row', 'y', 'j'`);
        await sql.query('ANALYZE graph.kg_edges');
        await sql.query('ANALYZE graph.kg_nodes');
      });
      const read = await db.withTenant('t', (sql) => edgesOfNodes(sql, 't', 'g', ['1', '2'], false, 20));
      const of = (node: string) => read.rows.filter((r) => r.node === node);
      // The hub's one location comes before its second person; the small node's relations are all there.
      expect(of('1').slice(0, 2).map((r) => r.label)).toEqual(['WORKS_AT', 'LOCATED_IN']);
      expect(of('1')).toHaveLength(21);
      expect(of('2').map((r) => r.to_node)).toEqual(['20003', '20004', '20005']);
      expect([...read.full]).toEqual(['1']);
      expect(await db.withTenant('t', (sql) => currentRelationCounts(sql, 't', 'g', ['1', '2']))).toEqual([
        { node: '1', label: 'WORKS_AT', count: 20_000, atLeast: false },
        { node: '1', label: 'LOCATED_IN', count: 1, atLeast: false },
        { node: '2', label: 'LOCATED_IN', count: 3, atLeast: false },
      ]);
      expect(await db.withTenant('t', (sql) => currentRelationCounts(sql, 't', 'g', ['1'], 5_000))).toEqual([
        { node: '1', label: 'WORKS_AT', count: 5_000, atLeast: true },
        { node: '1', label: 'LOCATED_IN', count: 1, atLeast: false },
      ]);
      const plans: string[] = [];
      await db.withTenant('t', (sql) => edgesOfNodes(explainingSql(sql, plans), 't', 'g', ['1', '2'], true, 20));
      await db.withTenant('t', (sql) => currentRelationCounts(explainingSql(sql, plans), 't', 'g', ['1', '2']));
      for (const plan of plans) {
        expect(plan).not.toMatch(/Seq Scan on kg_edges/);
        // By one of the edge indexes of either end (0008's of current edges, 0014's of all), the node an index condition.
        expect(plan).toMatch(/(Index (Only )?Scan using|Bitmap Index Scan on) kg_edges_(from_idx|from_all_idx)[^\n]*\n\s+Index Cond: \([^\n]*from_node = f\.node/);
        expect(plan).toMatch(/(Index (Only )?Scan using|Bitmap Index Scan on) kg_edges_(to_idx|to_all_idx)[^\n]*\n\s+Index Cond: \([^\n]*to_node = f\.node/);
      }
    } finally {
      await db.close();
    }
  });
});
