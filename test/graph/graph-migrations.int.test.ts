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

describe('graph migration 0015: the database keeps a graph\'s places, whichever worker writes its documents', () => {
  const T = 'tenant-rolling';
  let earlier: EarlierDatabase;
  let db: PgliteDb;

  beforeAll(async () => {
    earlier = await earlierDatabase(GRAPH_MIGRATIONS, (f) => f < '0015');
    db = earlier.db;
  });
  afterAll(async () => {
    await earlier?.close();
  });

  const places = async () =>
    db.withTenant(T, async (sql) =>
      Object.fromEntries((await sql.query<{ graph_id: string; source_places: unknown }>(`SELECT graph_id, source_places FROM graph.knowledge_graphs WHERE tenant_id = $1`, [T])).rows.map((r) => [r.graph_id, r.source_places])),
    );
  /** What a graph-worker from before 0012 writes for a connector document: its Document node and a fact, no places. */
  const oldWorkerWrites = (graph: string, memory: string, doc: string) =>
    db.withTenant(T, async (sql) => {
      const node = async (label: string, key: string) =>
        (await sql.query<{ node_id: string }>(`INSERT INTO graph.kg_nodes (tenant_id, graph_id, label, resolution_key, name, source_kind, source_id) VALUES ($1, $2, $3, $4, $4, 'document', $5) RETURNING node_id`, [T, graph, label, key, `${memory}/1/${doc}`])).rows[0]!.node_id;
      const from = await node('Document', `doc:${memory}/1/${doc}`);
      const to = await node('Company', `name:${doc}-co`);
      await sql.query(
        `INSERT INTO graph.kg_edges (tenant_id, graph_id, from_node, to_node, label, source_kind, source_id, source_ref, job_id) VALUES ($1, $2, $3, $4, 'MENTIONS', 'document', $5, $6, 'job-old')`,
        [T, graph, from, to, `${memory}/1/${doc}`, JSON.stringify({ memory_id: memory, doc_id: doc })],
      );
    });

  it('repairs the graphs an older worker filled after 0013, then names the memory of every document written after it', async () => {
    await db.withTenant(T, async (sql) => {
      for (const [m, ws] of [['m1', 'ws1'], ['m2', 'ws2'], ['m3', 'ws1']]) {
        await sql.query(`INSERT INTO graph.memories (tenant_id, memory_id) VALUES ($1, $2)`, [T, m]);
        await sql.query(
          `INSERT INTO graph.documents (tenant_id, memory_id, workspace_id, doc_id, vault_id, title, content_type, content, content_sha256, routing_mode, routing_confidence, needs_review)
           VALUES ($1, $2, $3, $4, 'v', 'Page', 'text/plain', 'x', 'h', 'auto', 1, false)`,
          [T, m, ws, `d-${m}`],
        );
      }
      for (const g of ['filled-before', 'filled-after', 'current', 'rows']) await sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name) VALUES ($1, $2, $2)`, [T, g]);
    });
    // Between 0013 and 0015: an old worker fills a graph, which is left with no places (open to every credential).
    await oldWorkerWrites('filled-before', 'm1', 'd-m1');
    expect((await places())['filled-before']).toEqual([]);

    await earlier.upgrade();
    expect((await places())['filled-before']).toEqual([{ workspace_id: 'ws1', memory_id: 'm1' }]);

    // After 0015 an old worker still running writes documents of two memories: both are named, each once.
    await oldWorkerWrites('filled-after', 'm2', 'd-m2');
    await oldWorkerWrites('filled-after', 'm1', 'd-m1');
    await oldWorkerWrites('filled-after', 'm2', 'd-m2b');
    // The current worker names the places itself (addGraphSourcePlaces, after its nodes and facts): nothing doubles.
    await oldWorkerWrites('current', 'm3', 'd-m3');
    await db.withTenant(T, (sql) =>
      sql.query(
        `UPDATE graph.knowledge_graphs
            SET source_places = (SELECT coalesce(jsonb_agg(p ORDER BY p), '[]'::jsonb)
                                   FROM (SELECT jsonb_array_elements(source_places) AS p UNION SELECT jsonb_array_elements($3::jsonb)) x)
          WHERE tenant_id = $1 AND graph_id = $2`,
        [T, 'current', JSON.stringify([{ workspace_id: 'ws1', memory_id: 'm3' }])],
      ),
    );
    // A CSV graph's rows say nothing of memories.
    await db.withTenant(T, (sql) => sql.query(`INSERT INTO graph.kg_nodes (tenant_id, graph_id, label, resolution_key, name, source_kind, source_id) VALUES ($1, 'rows', 'Company', 'name:acme', 'Acme', 'row', 'a.csv#2')`, [T]));
    expect(await places()).toEqual({
      'filled-before': [{ workspace_id: 'ws1', memory_id: 'm1' }],
      'filled-after': [
        { workspace_id: 'ws1', memory_id: 'm1' },
        { workspace_id: 'ws2', memory_id: 'm2' },
      ],
      current: [{ workspace_id: 'ws1', memory_id: 'm3' }],
      rows: [],
    });
  });
});

/**
 * 0016 gives people graph chat's new keys — e-mail, the name without honorifics, the first and last parts of the name
 * — those written before it (its backfill) and after it (the node-keys trigger); other nodes get none of them.
 */
describe('graph migration 0016: the keys of people', () => {
  const T = 'tenant-keys';
  let earlier: EarlierDatabase;
  let db: PgliteDb;

  beforeAll(async () => {
    earlier = await earlierDatabase(GRAPH_MIGRATIONS, (f) => f < '0016');
    db = earlier.db;
  });
  afterAll(async () => {
    await earlier?.close();
  });

  const keysOf = (name: string) =>
    db.withTenant(T, async (sql) =>
      (await sql.query<{ match_key: string }>(
        `SELECT k.match_key FROM graph.kg_node_keys k JOIN graph.kg_nodes n USING (tenant_id, graph_id, node_id) WHERE k.tenant_id = $1 AND n.name = $2 ORDER BY k.match_key`,
        [T, name],
      )).rows.map((r) => r.match_key),
    );
  const node = (label: string, key: string, name: string, properties: Record<string, unknown>) =>
    db.withTenant(T, (sql) =>
      sql.query(`INSERT INTO graph.kg_nodes (tenant_id, graph_id, label, resolution_key, name, properties, source_kind, source_id) VALUES ($1, 'g', $2, $3, $4, $5::jsonb, 'row', 'a.csv#2')`, [T, label, key, name, JSON.stringify(properties)]),
    );

  it('adds them to the people already stored, and the trigger to people written since', async () => {
    await db.withTenant(T, (sql) => sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name) VALUES ($1, 'g', 'g')`, [T]));
    await node('Person', "name:dr sarah o connor", "Dr. Sarah O'Connor", { name: "Dr. Sarah O'Connor", email: 'Sarah.OConnor@Helios.example' });
    await node('Company', 'domain:helios.example', 'Helios Robotics', { name: 'Helios Robotics', domain: 'helios.example' });
    expect(await keysOf("Dr. Sarah O'Connor")).toEqual(['dr sarah o connor']);
    await earlier.upgrade();
    expect(await keysOf("Dr. Sarah O'Connor")).toEqual(['dr sarah o connor', 'part:o connor', 'part:sarah', 'sarah o connor', 'sarah oconnor helios example']);
    expect(await keysOf('Helios Robotics')).toEqual(['helios', 'helios example', 'helios robotics']);
    await node('Person', 'name:ada lovelace', 'Ada King Lovelace', { name: 'Ada King Lovelace', title: 'Countess' });
    expect(await keysOf('Ada King Lovelace')).toEqual(['ada king lovelace', 'countess', 'part:ada', 'part:lovelace']);
    await node('Person', 'name:cher', 'Cher', { name: 'Cher' });
    expect(await keysOf('Cher')).toEqual(['cher']);
    // A Chinese name stored spaced is also found as written, without the space (its parts are one letter each).
    await node('Person', 'name:李 雷', '李 雷', { name: '李 雷' });
    expect(await keysOf('李 雷')).toEqual(['李 雷', '李雷']);
  });
});
