import { GRAPH_MIGRATIONS } from '@lore/graph';
import type { PgliteDb } from '@lore/runtime';
import { earlierDatabase, type EarlierDatabase } from '../support/migrations';

jest.setTimeout(120_000);

/**
 * Graph migrations over data written before them (embedded mode's database, as an upgraded data directory holds it):
 * 0013 gives a graph built before 0012 the places of its Document nodes, which 0012 read from document facts only.
 */
describe('graph migration 0013: the places of a graph built before 0012', () => {
  const T = 'tenant-upgraded';
  let earlier: EarlierDatabase;
  let db: PgliteDb;

  beforeAll(async () => {
    // The migrations as a data directory written before 0013 had them.
    earlier = await earlierDatabase(GRAPH_MIGRATIONS, (f) => f < '0013');
    db = earlier.db;
  });
  afterAll(async () => {
    await earlier?.close();
  });

  it('adds the memory of every Document node and document fact, with its documents\' workspace, to what the graph held', async () => {
    await db.withTenant(T, async (sql) => {
      // A document of memory m1 in workspace ws1 (m2 has none left).
      await sql.query(`INSERT INTO graph.memories (tenant_id, memory_id) VALUES ($1, 'm1')`, [T]);
      await sql.query(
        `INSERT INTO graph.documents (tenant_id, memory_id, workspace_id, doc_id, vault_id, title, content_type, content, content_sha256, routing_mode, routing_confidence, needs_review)
         VALUES ($1, 'm1', 'ws1', 'd1', 'v', 'Page', 'text/plain', 'x', 'h', 'auto', 1, false)`,
        [T],
      );
      for (const g of ['docs-only', 'empty', 'rows', 'job-placed']) await sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name) VALUES ($1, $2, $2)`, [T, g]);
      // Document nodes that no fact names (a page that mentions no entity): what 0012 missed.
      for (const [g, source] of [['docs-only', 'm1/d1'], ['docs-only', 'm2/d9'], ['job-placed', 'm1/d1']]) {
        await sql.query(`INSERT INTO graph.kg_nodes (tenant_id, graph_id, label, resolution_key, name, source_kind, source_id) VALUES ($1, $2, 'Document', $3, 'Page', 'document', $3)`, [T, g, source]);
      }
      // A CSV graph's nodes say nothing of memories.
      await sql.query(`INSERT INTO graph.kg_nodes (tenant_id, graph_id, label, resolution_key, name, source_kind, source_id) VALUES ($1, 'rows', 'Company', 'name:acme', 'Acme', 'row', 'a.csv#2')`, [T]);
      // A graph a job placed since 0012: what it holds is kept.
      await sql.query(`UPDATE graph.knowledge_graphs SET source_places = '[{"workspace_id": "ws1", "memory_id": "m1"}, {"workspace_id": "ws3", "memory_id": "m3"}]' WHERE tenant_id = $1 AND graph_id = 'job-placed'`, [T]);
    });
    await earlier.upgrade();
    const places = await db.withTenant(T, async (sql) =>
      Object.fromEntries((await sql.query<{ graph_id: string; source_places: unknown }>(`SELECT graph_id, source_places FROM graph.knowledge_graphs WHERE tenant_id = $1`, [T])).rows.map((r) => [r.graph_id, r.source_places])),
    );
    expect(places).toEqual({
      'docs-only': [
        { workspace_id: 'ws1', memory_id: 'm1' },
        { workspace_id: '', memory_id: 'm2' },
      ],
      'empty': [],
      rows: [],
      'job-placed': [
        { workspace_id: 'ws1', memory_id: 'm1' },
        { workspace_id: 'ws3', memory_id: 'm3' },
      ],
    });
  });
});
