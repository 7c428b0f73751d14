jest.setTimeout(60_000);

import { PgliteDb, runMigrations, runRuntimeMigrations, explainingSql } from '@lore/runtime';
import { GRAPH_MIGRATIONS } from '../graph-service';
import { linkNodes } from './graph-chat';

/**
 * The plan that links a question's phrases to a graph's nodes: one primary-key look-up per folded phrase, never the
 * node index with a filter over every key of the graph (6.7 s on 200,000 keys for a long question). Without any
 * statistics the planner cannot tell the two indexes apart (both look one row wide); embedded mode gathers them
 * (services/embedded/src/statistics.ts), as autovacuum does in a cluster.
 */
describe('linking a question to the graph', () => {
  it('looks each folded phrase up in the keys\' primary key, and finds the longest matches', async () => {
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
      const phrases = ['Person 12', 'ACME', 'Acme Corp', 'nobody'];
      expect(await db.withTenant('t', (sql) => linkNodes(sql, 't', 'g', phrases, 3))).toEqual([
        // Longest key first, then by id (both keys have nine characters); a node once, by its longest key.
        { node_id: '7', match_key: 'acme corp' },
        { node_id: '12', match_key: 'person 12' },
        { node_id: '1', match_key: 'acme' },
      ]);
      const plans: string[] = [];
      await db.withTenant('t', (sql) => linkNodes(explainingSql(sql, plans), 't', 'g', phrases, 3));
      expect(plans[0]).toMatch(/Index (Only )?Scan using kg_node_keys_pkey on kg_node_keys[^\n]*\n\s+Index Cond: \(.*match_key = /);
      expect(plans[0]).not.toMatch(/kg_node_keys_node_idx/);
    } finally {
      await db.close();
    }
  });
});
