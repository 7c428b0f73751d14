import type { Sql } from '@lore/runtime';
import { personAtCompanyKey, type PersonAtCompany } from '../domain/knowledge-graph';

/**
 * Knowledge graphs, their jobs, typed nodes and bi-temporal edges (migration 0008; docs/memory.md, "Knowledge
 * graphs"). Every function takes the tenant first and runs inside the caller's `db.withTenant` transaction.
 */

export const GRAPH_STATUSES = ['empty', 'building', 'ready', 'error'] as const;
export type GraphStatus = (typeof GRAPH_STATUSES)[number];
export const NODE_LABELS = ['Person', 'Company', 'Position', 'Location', 'ScanReport', 'Document'] as const;
export type NodeLabel = (typeof NODE_LABELS)[number];
export const SOURCE_KINDS = ['document', 'row', 'cell'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];
export const JOB_KINDS = ['upload', 'connectors', 'generate'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface GraphRow {
  graph_id: string;
  name: string;
  description: string;
  source_type: string;
  status: GraphStatus;
  message: string | null;
  node_count: number;
  edge_count: number;
  created_at: string;
  updated_at: string;
  /** It holds what only administrators may see (a connector document that is not public): others find no such graph. */
  admin_only: boolean;
  /** The workspaces and memories its connector documents came from: others find no such graph (`visibleGraph`). */
  source_places: SourcePlace[];
}

/** Where a document lives: its workspace and memory. */
export interface SourcePlace {
  workspace_id: string;
  memory_id: string;
}

const iso = (v: Date | string): string => new Date(v).toISOString();
const isoOrNull = (v: Date | string | null): string | null => (v === null ? null : iso(v));

const GRAPH_COLUMNS = 'graph_id, name, description, source_type, status, message, node_count, edge_count, created_at, updated_at, admin_only, source_places';

type RawGraph = Omit<GraphRow, 'created_at' | 'updated_at'> & { created_at: Date | string; updated_at: Date | string };
const toGraph = (r: RawGraph): GraphRow => ({ ...r, node_count: Number(r.node_count), edge_count: Number(r.edge_count), created_at: iso(r.created_at), updated_at: iso(r.updated_at) });

/** Creates a graph (status `empty`, no nodes or edges); null when the tenant already has one with this id. */
export async function insertGraph(
  sql: Sql,
  tenantId: string,
  g: Pick<GraphRow, 'graph_id' | 'name' | 'description' | 'source_type'>,
  maxGraphs?: number,
): Promise<GraphRow | null> {
  if (maxGraphs !== undefined) {
    // Counted under a lock of the tenant's graphs, so two creates at once cannot both pass the limit.
    await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 11))`, [`graphs:${tenantId}`]);
    const n = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM graph.knowledge_graphs WHERE tenant_id = $1`, [tenantId]);
    if ((n.rows[0]?.n ?? 0) >= maxGraphs) throw new GraphLimitError(maxGraphs);
  }
  const r = await sql.query<RawGraph>(
    `INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name, description, source_type) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, graph_id) DO NOTHING RETURNING ${GRAPH_COLUMNS}`,
    [tenantId, g.graph_id, g.name, g.description, g.source_type],
  );
  return r.rows[0] ? toGraph(r.rows[0]) : null;
}

/** The tenant already has the most graphs it may have. */
export class GraphLimitError extends Error {
  constructor(readonly limit: number) {
    super(`the tenant has ${limit} graphs, the most it may have: delete one first (DELETE /memory/departments/{graph_id})`);
  }
}

/**
 * At most `limit` of a graph's facts, then of its nodes, deleted (a graph's deletion in bounded steps); answers the
 * rows. The batch's rows are gathered first (`ARRAY(...)`, evaluated once) by their physical address, and deleted by
 * it (a TID scan, the statement's own snapshot: the addresses cannot move under it; row-level security still holds):
 * matched by id, or with the graph's columns beside the addresses, the planner, whose statistics of a graph just
 * filled say it is tiny, compared every row of the graph with every row of the batch (5–25 s a batch of a
 * 30,000-row graph).
 */
export async function deleteGraphRowsBatch(sql: Sql, tenantId: string, graphId: string, limit: number): Promise<number> {
  const edges = await sql.query(
    `DELETE FROM graph.kg_edges WHERE ctid = ANY(ARRAY(SELECT ctid FROM graph.kg_edges WHERE tenant_id = $1 AND graph_id = $2 LIMIT $3))`,
    [tenantId, graphId, limit],
  );
  if (edges.rowCount > 0) return edges.rowCount;
  const nodes = await sql.query(
    `DELETE FROM graph.kg_nodes WHERE ctid = ANY(ARRAY(SELECT ctid FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 LIMIT $3))`,
    [tenantId, graphId, limit],
  );
  return nodes.rowCount;
}

/** Deletes a graph's row with what is left of it (its jobs, nodes and facts cascade); answers the upload bytes its jobs kept. */
export async function deleteGraphRow(sql: Sql, tenantId: string, graphId: string): Promise<string[]> {
  const blobs = await sql.query<{ key: string }>(
    `SELECT params->>'blob_key' AS key FROM graph.graph_jobs WHERE tenant_id = $1 AND graph_id = $2 AND kind = 'upload' AND coalesce(params->>'blob_key', '') <> ''`,
    [tenantId, graphId],
  );
  await sql.query(`DELETE FROM graph.knowledge_graphs WHERE tenant_id = $1 AND graph_id = $2`, [tenantId, graphId]);
  return blobs.rows.map((b) => b.key);
}

/** One graph; with `lock` its row stays locked until the transaction ends (jobs of one graph apply one at a time). */
export async function getGraph(sql: Sql, tenantId: string, graphId: string, lock = false): Promise<GraphRow | null> {
  const r = await sql.query<RawGraph>(
    `SELECT ${GRAPH_COLUMNS} FROM graph.knowledge_graphs WHERE tenant_id = $1 AND graph_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, graphId],
  );
  return r.rows[0] ? toGraph(r.rows[0]) : null;
}

/** The tenant's graphs, newest first. */
export async function listGraphs(sql: Sql, tenantId: string, limit: number): Promise<GraphRow[]> {
  const r = await sql.query<RawGraph>(
    `SELECT ${GRAPH_COLUMNS} FROM graph.knowledge_graphs WHERE tenant_id = $1 ORDER BY created_at DESC, graph_id LIMIT $2`,
    [tenantId, limit],
  );
  return r.rows.map(toGraph);
}

/** The graph now holds what only administrators may see; it stays so (its closed facts keep their history). */
export async function markGraphAdminOnly(sql: Sql, tenantId: string, graphId: string): Promise<void> {
  await sql.query(`UPDATE graph.knowledge_graphs SET admin_only = true WHERE tenant_id = $1 AND graph_id = $2 AND NOT admin_only`, [tenantId, graphId]);
}

/**
 * Marks `admin_only` every graph of the tenant holding one of these Document nodes (by resolution key): a document
 * only administrators may see now, whatever it was when the graph took it.
 */
export async function markGraphsHoldingAdminOnly(sql: Sql, tenantId: string, documentKeys: readonly string[]): Promise<number> {
  if (documentKeys.length === 0) return 0;
  const r = await sql.query(
    `UPDATE graph.knowledge_graphs g SET admin_only = true
      WHERE g.tenant_id = $1 AND NOT g.admin_only
        AND EXISTS (SELECT 1 FROM graph.kg_nodes n WHERE n.tenant_id = g.tenant_id AND n.graph_id = g.graph_id AND n.label = 'Document' AND n.resolution_key = ANY($2::text[]))`,
    [tenantId, [...new Set(documentKeys)]],
  );
  return r.rowCount;
}

/** The graphs that hold connector documents of a memory (their `source_places` name it). */
export async function graphsWithMemory(sql: Sql, tenantId: string, memoryId: string): Promise<string[]> {
  const r = await sql.query<{ graph_id: string }>(
    `SELECT graph_id FROM graph.knowledge_graphs WHERE tenant_id = $1 AND source_places @> jsonb_build_array(jsonb_build_object('memory_id', $2::text)) ORDER BY graph_id`,
    [tenantId, memoryId],
  );
  return r.rows.map((x) => x.graph_id);
}

/**
 * One batch of a memory's erasure from a graph (docs/memory.md, "Deleting a memory"): the facts its connector
 * documents gave (open and closed), then the nodes first seen in them that no fact holds any more (every Document
 * node of the memory, and the entities only it mentioned). Answers the rows deleted; 0 when none is left.
 */
export async function eraseMemoryFactsBatch(sql: Sql, tenantId: string, graphId: string, memoryId: string, limit: number): Promise<{ edges: number; nodes: number }> {
  const edges = await sql.query(
    `DELETE FROM graph.kg_edges WHERE tenant_id = $1 AND graph_id = $2 AND edge_id IN (
       SELECT edge_id FROM graph.kg_edges WHERE tenant_id = $1 AND graph_id = $2 AND source_kind = 'document' AND source_ref->>'memory_id' = $3 LIMIT $4)`,
    [tenantId, graphId, memoryId, limit],
  );
  if (edges.rowCount > 0) return { edges: edges.rowCount, nodes: 0 };
  const nodes = await sql.query(
    `DELETE FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 AND node_id IN (
       SELECT n.node_id FROM graph.kg_nodes n
        WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.source_kind = 'document' AND left(n.source_id, length($3) + 1) = $3 || '/'
          AND NOT EXISTS (SELECT 1 FROM graph.kg_edges e WHERE e.tenant_id = $1 AND e.graph_id = $2 AND (e.from_node = n.node_id OR e.to_node = n.node_id))
        LIMIT $4)`,
    [tenantId, graphId, memoryId, limit],
  );
  return { edges: 0, nodes: nodes.rowCount };
}

/** The memory's facts are gone from the graph: it no longer names the memory among its sources; counts anew. */
export async function forgetGraphSourceMemory(sql: Sql, tenantId: string, graphId: string, memoryId: string): Promise<void> {
  await sql.query(
    `UPDATE graph.knowledge_graphs
        SET source_places = (SELECT coalesce(jsonb_agg(p ORDER BY p), '[]'::jsonb) FROM jsonb_array_elements(source_places) p WHERE p->>'memory_id' <> $3)
      WHERE tenant_id = $1 AND graph_id = $2`,
    [tenantId, graphId, memoryId],
  );
  await refreshGraphCounts(sql, tenantId, graphId);
}

/** The graph now also holds connector documents of these workspaces and memories; kept, as `admin_only` is. */
export async function addGraphSourcePlaces(sql: Sql, tenantId: string, graphId: string, places: readonly SourcePlace[]): Promise<void> {
  await sql.query(
    `UPDATE graph.knowledge_graphs
        SET source_places = (SELECT coalesce(jsonb_agg(p ORDER BY p), '[]'::jsonb)
                               FROM (SELECT jsonb_array_elements(source_places) AS p UNION SELECT jsonb_array_elements($3::jsonb)) x)
      WHERE tenant_id = $1 AND graph_id = $2`,
    [tenantId, graphId, JSON.stringify(places.map((pl) => ({ workspace_id: pl.workspace_id, memory_id: pl.memory_id })))],
  );
}

/**
 * The graph's status and message. `updated_at` is the wall clock (`clock_timestamp()`), not `now()`: a job sets it at
 * the end of its one long transaction, and `now()` there is when the transaction began (a 20-second job read as
 * instant). The same holds for every "when it changed or ended" column a job writes here (`setJobStatus`,
 * `refreshGraphCounts`).
 */
export async function setGraphStatus(sql: Sql, tenantId: string, graphId: string, status: GraphStatus, message: string | null): Promise<void> {
  await sql.query(`UPDATE graph.knowledge_graphs SET status = $3, message = $4, updated_at = clock_timestamp() WHERE tenant_id = $1 AND graph_id = $2`, [
    tenantId,
    graphId,
    status,
    message === null ? null : message.slice(0, 1000),
  ]);
}

/** Recounts the graph's nodes and open (current) edges into its row; returns the counts. */
export async function refreshGraphCounts(sql: Sql, tenantId: string, graphId: string): Promise<{ node_count: number; edge_count: number }> {
  const r = await sql.query<{ node_count: string | number; edge_count: string | number }>(
    `UPDATE graph.knowledge_graphs g
        SET node_count = (SELECT count(*) FROM graph.kg_nodes n WHERE n.tenant_id = $1 AND n.graph_id = $2),
            edge_count = (SELECT count(*) FROM graph.kg_edges e WHERE e.tenant_id = $1 AND e.graph_id = $2 AND e.valid_to IS NULL),
            updated_at = clock_timestamp()
      WHERE g.tenant_id = $1 AND g.graph_id = $2
      RETURNING node_count, edge_count`,
    [tenantId, graphId],
  );
  const row = r.rows[0];
  return { node_count: Number(row?.node_count ?? 0), edge_count: Number(row?.edge_count ?? 0) };
}

// ---------------------------------------------------------------------------------------------------------- jobs

export interface GraphJobRow {
  job_id: string;
  graph_id: string;
  kind: JobKind;
  status: JobStatus;
  message: string;
  params: Record<string, unknown>;
  stats: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
}

const JOB_COLUMNS = 'job_id, graph_id, kind, status, message, params, stats, created_at, updated_at, started_at, finished_at';
type RawJob = Omit<GraphJobRow, 'created_at' | 'updated_at' | 'started_at' | 'finished_at'> & {
  created_at: Date | string;
  updated_at: Date | string;
  started_at: Date | string | null;
  finished_at: Date | string | null;
};
const toJob = (r: RawJob): GraphJobRow => ({
  ...r,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  started_at: isoOrNull(r.started_at),
  finished_at: isoOrNull(r.finished_at),
});

export async function insertJob(
  sql: Sql,
  tenantId: string,
  j: Pick<GraphJobRow, 'job_id' | 'graph_id' | 'kind' | 'message' | 'params'>,
): Promise<GraphJobRow> {
  const r = await sql.query<RawJob>(
    `INSERT INTO graph.graph_jobs (tenant_id, job_id, graph_id, kind, message, params) VALUES ($1, $2, $3, $4, $5, $6::jsonb) RETURNING ${JOB_COLUMNS}`,
    [tenantId, j.job_id, j.graph_id, j.kind, j.message, JSON.stringify(j.params)],
  );
  return toJob(r.rows[0] as RawJob);
}

export async function getJob(sql: Sql, tenantId: string, jobId: string, lock = false): Promise<GraphJobRow | null> {
  const r = await sql.query<RawJob>(`SELECT ${JOB_COLUMNS} FROM graph.graph_jobs WHERE tenant_id = $1 AND job_id = $2${lock ? ' FOR UPDATE' : ''}`, [tenantId, jobId]);
  return r.rows[0] ? toJob(r.rows[0]) : null;
}

/**
 * The job's status, message and stats. Its times are the wall clock (`clock_timestamp()`): `completed` is written at
 * the end of the job's one transaction, whose `now()` is its start (before 2026-11-30 an 18-minute job answered a
 * `finished_at` 0.8 s after its `started_at`).
 */
export async function setJobStatus(
  sql: Sql,
  tenantId: string,
  jobId: string,
  status: JobStatus,
  message: string,
  stats?: Record<string, unknown>,
): Promise<void> {
  await sql.query(
    `UPDATE graph.graph_jobs
        SET status = $3, message = $4, stats = coalesce($5::jsonb, stats), updated_at = clock_timestamp(),
            started_at = CASE WHEN $3 = 'running' THEN coalesce(started_at, clock_timestamp()) ELSE started_at END,
            finished_at = CASE WHEN $3 IN ('completed', 'failed') THEN clock_timestamp() ELSE finished_at END
      WHERE tenant_id = $1 AND job_id = $2`,
    [tenantId, jobId, status, message.slice(0, 1000), stats === undefined ? null : JSON.stringify(stats)],
  );
}

/** Jobs of the graph still queued or running, other than `exceptJobId`. */
export async function unfinishedJobCount(sql: Sql, tenantId: string, graphId: string, exceptJobId: string): Promise<number> {
  const r = await sql.query<{ n: string | number }>(
    `SELECT count(*) AS n FROM graph.graph_jobs WHERE tenant_id = $1 AND graph_id = $2 AND job_id <> $3 AND status IN ('queued', 'running')`,
    [tenantId, graphId, exceptJobId],
  );
  return Number(r.rows[0]?.n ?? 0);
}

// ---------------------------------------------------------------------------------------------- nodes and edges

/** Where a node or an edge came from: a connector document, a row of an uploaded file, a cell of a list. */
export interface Provenance {
  kind: SourceKind;
  /** doc_id, `<job id>:<row number>` or `<record id>:<column id>`. */
  id: string;
  /** The rest: file name, column, external id, link... */
  ref?: Record<string, unknown>;
}

export interface NodeInput {
  label: NodeLabel;
  /** The entity resolution key (services/graph/src/domain/knowledge-graph.ts). */
  key: string;
  name: string;
  properties: Record<string, unknown>;
  source: Provenance;
  /** The node's properties and name become exactly these (a ScanReport: its record as it is now), not a merge. */
  replace?: boolean;
}

export interface NodeRow {
  node_id: string;
  label: NodeLabel;
  resolution_key: string;
  name: string;
  properties: Record<string, unknown>;
  source_kind: SourceKind;
  source_id: string;
  created_at: string;
  updated_at: string;
}

const NODE_COLUMNS = 'node_id, label, resolution_key, name, properties, source_kind, source_id, created_at, updated_at';
type RawNode = Omit<NodeRow, 'node_id' | 'created_at' | 'updated_at'> & { node_id: string | number; created_at: Date | string; updated_at: Date | string };
const toNode = (r: RawNode): NodeRow => ({ ...r, node_id: String(r.node_id), created_at: iso(r.created_at), updated_at: iso(r.updated_at) });

/** `label|key`: how a batch names a node before it has an id. */
export const nodeRef = (label: NodeLabel, key: string): string => `${label}|${key}`;

/** Below this many rows of a graph in a table its look-ups stay cheap whatever the planner believes. */
const STATISTICS_MIN_ROWS = 1_000;

/**
 * Gathers the knowledge-graph tables' planner statistics (migration 0017) when the planner believes this graph has a
 * tenth or less of the nodes, or of the edges, it has (at least `STATISTICS_MIN_ROWS`): no ANALYZE has seen the graph
 * since it grew, in this job's transaction or before. A job's look-ups by label and resolution key, by node id and by
 * an edge's end are then index reads of one entry each, not reads of the whole graph per entry. Answers whether it
 * gathered them; false also when another job holds the tables' statistics lock (it goes on without, as before).
 */
export async function gatherStatisticsIfBlind(sql: Sql, tenantId: string, graphId: string): Promise<boolean> {
  let blind = false;
  for (const table of ['graph.kg_nodes', 'graph.kg_edges']) {
    // What the planner believes first (no rows read): a graph it takes for large enough is not looked up row by row
    // through the wrong index, and nothing is counted (graph chat asks on every question).
    const plan = await sql.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> | string }>(
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${table} WHERE tenant_id = $1 AND graph_id = $2`,
      [tenantId, graphId],
    );
    const raw = plan.rows[0]?.['QUERY PLAN'];
    const doc = typeof raw === 'string' ? (JSON.parse(raw) as Array<{ Plan: { 'Plan Rows': number } }>) : raw;
    const believed = Math.ceil(Number(doc?.[0]?.Plan?.['Plan Rows'] ?? 0));
    if (believed >= STATISTICS_MIN_ROWS) continue;
    // Blind when the graph has at least ten times that, and at least STATISTICS_MIN_ROWS: counted no further.
    const enough = Math.max(STATISTICS_MIN_ROWS, 10 * believed);
    const counted = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${table} WHERE tenant_id = $1 AND graph_id = $2 LIMIT $3) s`,
      [tenantId, graphId, enough],
    );
    if ((counted.rows[0]?.n ?? 0) >= enough) {
      blind = true;
      break;
    }
  }
  if (!blind) return false;
  const r = await sql.query<{ gathered: boolean }>(`SELECT graph.kg_gather_statistics() AS gathered`);
  return r.rows[0]?.gathered === true;
}

/**
 * Creates or resolves nodes: a node with the same label and resolution key is the same entity, and the properties
 * seen now are merged into what it had (a new non-empty value wins; a blank never erases). A node marked `replace`
 * (a ScanReport) instead holds exactly what it is given now, name included, and the keys graph chat found it by that
 * it no longer has are dropped (migration 0010 adds the new ones). Inputs naming the same entity twice are merged first
 * (a later `replace` input wins whole), the name of the first input that has a `name` property kept. Returns every
 * input's node id by `nodeRef`, and how many nodes were new.
 */
export async function upsertNodes(sql: Sql, tenantId: string, graphId: string, nodes: readonly NodeInput[]): Promise<{ ids: Map<string, string>; created: number }> {
  const merged = new Map<string, NodeInput>();
  for (const n of nodes) {
    const ref = nodeRef(n.label, n.key);
    const seen = merged.get(ref);
    if (!seen || n.replace) merged.set(ref, n);
    else merged.set(ref, { ...seen, name: seen.properties.name === undefined && n.properties.name !== undefined ? n.name : seen.name, properties: { ...seen.properties, ...n.properties } });
  }
  const ids = new Map<string, string>();
  let created = 0;
  const list = [...merged.values()];
  for (const replace of [false, true]) {
    const group = list.filter((n) => (n.replace === true) === replace);
    if (group.length === 0) continue;
    // Before each group: the first may have written the nodes that make the graph large.
    await gatherStatisticsIfBlind(sql, tenantId, graphId);
    const written = await writeNodes(sql, tenantId, graphId, group, replace);
    for (const [ref, id] of written.ids) ids.set(ref, id);
    created += written.created;
  }
  return { ids, created };
}

async function writeNodes(sql: Sql, tenantId: string, graphId: string, list: readonly NodeInput[], replace: boolean): Promise<{ ids: Map<string, string>; created: number }> {
  const params = [
    tenantId,
    graphId,
    list.map((n) => n.label),
    list.map((n) => n.key),
    list.map((n) => n.name),
    list.map((n) => JSON.stringify(dropEmpty(n.properties))),
    list.map((n) => n.source.kind),
    list.map((n) => n.source.id),
  ];
  if (replace) {
    // The keys of what a replaced node held: another record's values (a name, a title) must not find it any more.
    // Two statements: the changed nodes, one look-up per input (LATERAL ... LIMIT 1 keeps the inputs outside), then
    // their keys by node id. The DELETE that joined both tables once read every key of the graph for every node
    // (10 s for 5,000 nodes, the graph's row locked), planned without statistics of the graph
    // (`gatherStatisticsIfBlind`); these two have no join order to get wrong.
    const changed = await sql.query<{ node_id: string | number }>(
      `SELECT n.node_id
         FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS x(label, key, name, props)
         CROSS JOIN LATERAL (
           SELECT n.node_id, n.name, n.properties FROM graph.kg_nodes n
            WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.label = x.label AND n.resolution_key = x.key
            LIMIT 1
         ) n
        WHERE n.properties <> x.props::jsonb OR n.name <> x.name`,
      params.slice(0, 6),
    );
    if (changed.rows.length > 0) {
      await sql.query(`DELETE FROM graph.kg_node_keys WHERE tenant_id = $1 AND graph_id = $2 AND node_id = ANY($3::bigint[])`, [
        tenantId,
        graphId,
        changed.rows.map((r) => String(r.node_id)),
      ]);
    }
  }
  // A node that already holds every property seen now (exactly them, when replaced) is not rewritten (no new row
  // version, no index or trigger work): it is read back by its key instead. The read sees the statement's snapshot,
  // where such a node exists: writers of one graph hold its row lock (`getGraph(..., true)`), so none can add it
  // between the two. It is one look-up per input (LATERAL ... LIMIT 1), never a join order that reads the graph for
  // each input (6 s for 5,000 inputs when the planner had no statistics of the graph).
  const update = replace
    ? `DO UPDATE SET properties = EXCLUDED.properties, name = EXCLUDED.name, updated_at = now()
         WHERE n.properties <> EXCLUDED.properties OR n.name <> EXCLUDED.name`
    : `DO UPDATE SET properties = n.properties || EXCLUDED.properties, updated_at = now()
         WHERE NOT (n.properties @> EXCLUDED.properties)`;
  const r = await sql.query<{ node_id: string | number; label: NodeLabel; resolution_key: string; inserted: boolean }>(
    `WITH x AS (
       SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS x(label, key, name, props, skind, sid)
     ), written AS (
       INSERT INTO graph.kg_nodes AS n (tenant_id, graph_id, label, resolution_key, name, properties, source_kind, source_id)
       SELECT $1, $2, x.label, x.key, x.name, x.props::jsonb, x.skind, x.sid FROM x
       ON CONFLICT (tenant_id, graph_id, label, resolution_key)
       ${update}
       RETURNING node_id, label, resolution_key, (xmax = 0) AS inserted
     )
     SELECT node_id, label, resolution_key, inserted FROM written
     UNION ALL
     SELECT n.node_id, n.label, n.resolution_key, false FROM x
       CROSS JOIN LATERAL (
         SELECT n.node_id, n.label, n.resolution_key FROM graph.kg_nodes n
          WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.label = x.label AND n.resolution_key = x.key
          LIMIT 1
       ) n
      WHERE NOT EXISTS (SELECT 1 FROM written w WHERE w.label = x.label AND w.resolution_key = x.key)`,
    params,
  );
  const ids = new Map<string, string>();
  let created = 0;
  for (const row of r.rows) {
    ids.set(nodeRef(row.label, row.resolution_key), String(row.node_id));
    if (row.inserted) created += 1;
  }
  return { ids, created };
}

/** Properties without empty values, so a blank cell never erases what an earlier source said. */
function dropEmpty(p: Record<string, unknown>): Record<string, unknown> {
  // Without a prototype: a property named `__proto__` (a column's header) is kept like any other.
  const out = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(p)) {
    if (v === null || v === undefined || (typeof v === 'string' && v.trim() === '')) continue;
    out[k] = v;
  }
  return out;
}

/** The longest key graph chat's node keys hold (migration 0010): a longer name is looked up nowhere. */
const MAX_MATCH_KEY = 200;

/**
 * The graph's companies keyed by their domain whose name (the node's `name`, or its `name` property) folds to one of
 * `names` (folded by `foldName`): folded name → their resolution keys. Found through graph chat's node keys
 * (migration 0010), which hold every node's folded names; `graph.kg_fold` folds as `foldName` does.
 */
export async function domainCompaniesNamed(sql: Sql, tenantId: string, graphId: string, names: readonly string[]): Promise<Map<string, Set<string>>> {
  const wanted = [...new Set(names)].filter((n) => n !== '' && n.length <= MAX_MATCH_KEY);
  const out = new Map<string, Set<string>>();
  if (wanted.length === 0) return out;
  await gatherStatisticsIfBlind(sql, tenantId, graphId);
  const r = await sql.query<{ folded: string; key: string }>(
    `SELECT DISTINCT k.match_key AS folded, n.resolution_key AS key
       FROM graph.kg_node_keys k
       CROSS JOIN LATERAL (
         SELECT n.resolution_key FROM graph.kg_nodes n
          WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.node_id = k.node_id
            AND n.label = 'Company' AND left(n.resolution_key, 7) = 'domain:'
            AND (graph.kg_fold(n.name) = k.match_key OR graph.kg_fold(n.properties ->> 'name') = k.match_key)
          LIMIT 1
       ) n
      WHERE k.tenant_id = $1 AND k.graph_id = $2 AND k.match_key = ANY($3::text[])`,
    [tenantId, graphId, wanted],
  );
  for (const row of r.rows) {
    const set = out.get(row.folded) ?? new Set<string>();
    set.add(row.key);
    out.set(row.folded, set);
  }
  return out;
}

/**
 * The graph's people keyed by a profile URL whose name folds to one of these people's names and who work or worked
 * (a WORKS_AT fact, open or closed) at that person's company (by its resolution key): `personAtCompanyKey` → their
 * resolution keys.
 */
export async function profiledPeopleAt(
  sql: Sql,
  tenantId: string,
  graphId: string,
  people: readonly PersonAtCompany[],
): Promise<Map<string, Set<string>>> {
  const wanted = people.filter((p) => p.name !== '' && p.name.length <= MAX_MATCH_KEY);
  const out = new Map<string, Set<string>>();
  if (wanted.length === 0) return out;
  await gatherStatisticsIfBlind(sql, tenantId, graphId);
  const pairs = new Set(wanted.map(personAtCompanyKey));
  const r = await sql.query<{ folded: string; company_key: string; key: string }>(
    `SELECT DISTINCT k.match_key AS folded, c.resolution_key AS company_key, p.resolution_key AS key
       FROM graph.kg_node_keys k
       CROSS JOIN LATERAL (
         SELECT p.node_id, p.resolution_key FROM graph.kg_nodes p
          WHERE p.tenant_id = $1 AND p.graph_id = $2 AND p.node_id = k.node_id
            AND p.label = 'Person' AND left(p.resolution_key, 8) = 'profile:'
            AND (graph.kg_fold(p.name) = k.match_key OR graph.kg_fold(p.properties ->> 'name') = k.match_key)
          LIMIT 1
       ) p
       CROSS JOIN LATERAL (
         SELECT e.to_node FROM graph.kg_edges e
          WHERE e.tenant_id = $1 AND e.graph_id = $2 AND e.from_node = p.node_id AND e.label = 'WORKS_AT'
         OFFSET 0
       ) e
       CROSS JOIN LATERAL (
         SELECT c.resolution_key FROM graph.kg_nodes c
          WHERE c.tenant_id = $1 AND c.graph_id = $2 AND c.node_id = e.to_node
            AND c.label = 'Company' AND c.resolution_key = ANY($4::text[])
          LIMIT 1
       ) c
      WHERE k.tenant_id = $1 AND k.graph_id = $2 AND k.match_key = ANY($3::text[])`,
    [tenantId, graphId, [...new Set(wanted.map((p) => p.name))], [...new Set(wanted.map((p) => p.companyKey))]],
  );
  for (const row of r.rows) {
    const pair = personAtCompanyKey({ name: row.folded, companyKey: row.company_key });
    if (!pairs.has(pair)) continue;
    const set = out.get(pair) ?? new Set<string>();
    set.add(row.key);
    out.set(pair, set);
  }
  return out;
}

export interface EdgeInput {
  from: string;
  to: string;
  label: string;
  properties?: Record<string, unknown>;
  source: Provenance;
}

/**
 * Opens edges (valid from now, recorded now) in one statement; a fact already open from the same source is left as
 * it is (its `valid_from` keeps when Lore first learnt it). Returns how many were opened. "Now" is `now()` on
 * purpose, here and where edges close: the start of the job's transaction, one instant for every fact the job opens
 * or closes, so what it closes ends exactly where what it opens begins and a question about the past sees a job
 * whole or not at all (the job's own end is `finished_at`).
 */
export async function openEdges(sql: Sql, tenantId: string, graphId: string, jobId: string, edges: readonly EdgeInput[]): Promise<number> {
  if (edges.length === 0) return 0;
  const r = await sql.query(
    `INSERT INTO graph.kg_edges (tenant_id, graph_id, from_node, to_node, label, properties, source_kind, source_id, source_ref, job_id)
     SELECT $1, $2, x.f, x.t, x.label, x.props::jsonb, x.skind, x.sid, x.sref::jsonb, $3
       FROM unnest($4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[]) AS x(f, t, label, props, skind, sid, sref)
     ON CONFLICT (tenant_id, graph_id, from_node, label, to_node, source_kind, source_id) WHERE valid_to IS NULL DO NOTHING`,
    [
      tenantId,
      graphId,
      jobId,
      edges.map((e) => e.from),
      edges.map((e) => e.to),
      edges.map((e) => e.label),
      edges.map((e) => JSON.stringify(e.properties ?? {})),
      edges.map((e) => e.source.kind),
      edges.map((e) => e.source.id),
      edges.map((e) => JSON.stringify(e.source.ref ?? {})),
    ],
  );
  return r.rowCount;
}

/**
 * Closes (sets `valid_to` now on) the open edges of these sources that are not among `keep` (facts as
 * `from|label|to`): what a changed source no longer says stops being current, and stays in the graph's history.
 * Returns how many were closed.
 */
export async function closeEdgesOfSources(
  sql: Sql,
  tenantId: string,
  graphId: string,
  kind: SourceKind,
  sourceIds: readonly string[],
  keep: ReadonlySet<string>,
): Promise<number> {
  if (sourceIds.length === 0) return 0;
  const r = await sql.query(
    `UPDATE graph.kg_edges SET valid_to = greatest(now(), valid_from)
      WHERE tenant_id = $1 AND graph_id = $2 AND source_kind = $3 AND source_id = ANY($4::text[]) AND valid_to IS NULL
        AND NOT ((from_node::text || '|' || label || '|' || to_node::text || '|' || source_id) = ANY($5::text[]))`,
    [tenantId, graphId, kind, [...new Set(sourceIds)], [...keep]],
  );
  return r.rowCount;
}

/**
 * Closes the open facts of a file's rows past `lastRow` (`<filename>#<row>` sources): the rows a shorter version of
 * the file, uploaded again, no longer has.
 */
export async function closeEdgesOfRowsBeyond(sql: Sql, tenantId: string, graphId: string, filename: string, lastRow: number): Promise<number> {
  const r = await sql.query(
    `UPDATE graph.kg_edges SET valid_to = greatest(now(), valid_from)
      WHERE tenant_id = $1 AND graph_id = $2 AND source_kind = 'row' AND valid_to IS NULL
        AND left(source_id, length($3) + 1) = $3 || '#' AND substr(source_id, length($3) + 2) ~ '^[0-9]{1,9}$'
        AND substr(source_id, length($3) + 2)::integer > $4`,
    [tenantId, graphId, filename, lastRow],
  );
  return r.rowCount;
}

/** The key `closeEdgesOfSources` keeps an edge by: its fact and its source. */
export const factKey = (e: Pick<EdgeInput, 'from' | 'label' | 'to' | 'source'>): string => `${e.from}|${e.label}|${e.to}|${e.source.id}`;

/** Nodes by id (those of this graph). */
export async function nodesByIds(sql: Sql, tenantId: string, graphId: string, nodeIds: readonly string[]): Promise<NodeRow[]> {
  if (nodeIds.length === 0) return [];
  const r = await sql.query<RawNode>(`SELECT ${NODE_COLUMNS} FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 AND node_id = ANY($3::bigint[]) ORDER BY node_id`, [
    tenantId,
    graphId,
    [...nodeIds],
  ]);
  return r.rows.map(toNode);
}

export interface EdgeRow {
  edge_id: string;
  from_node: string;
  to_node: string;
  label: string;
  properties: Record<string, unknown>;
  valid_from: string;
  valid_to: string | null;
  recorded_at: string;
  source_kind: SourceKind;
  source_id: string;
  source_ref: Record<string, unknown>;
  job_id: string;
}

const EDGE_COLUMNS = 'edge_id, from_node, to_node, label, properties, valid_from, valid_to, recorded_at, source_kind, source_id, source_ref, job_id';
type RawEdge = Omit<EdgeRow, 'edge_id' | 'from_node' | 'to_node' | 'valid_from' | 'valid_to' | 'recorded_at'> & {
  edge_id: string | number;
  from_node: string | number;
  to_node: string | number;
  valid_from: Date | string;
  valid_to: Date | string | null;
  recorded_at: Date | string;
};
const toEdge = (r: RawEdge): EdgeRow => ({
  ...r,
  edge_id: String(r.edge_id),
  from_node: String(r.from_node),
  to_node: String(r.to_node),
  valid_from: iso(r.valid_from),
  valid_to: isoOrNull(r.valid_to),
  recorded_at: iso(r.recorded_at),
});

/** Every edge of the graph, open and closed (its history), optionally only those of one source. */
export async function listEdges(
  sql: Sql,
  tenantId: string,
  graphId: string,
  options: { sourceId?: string; current?: boolean; limit: number },
): Promise<EdgeRow[]> {
  const r = await sql.query<RawEdge>(
    `SELECT ${EDGE_COLUMNS} FROM graph.kg_edges
      WHERE tenant_id = $1 AND graph_id = $2 AND ($3::text IS NULL OR source_id = $3) AND (NOT $4::boolean OR valid_to IS NULL)
      ORDER BY edge_id LIMIT $5`,
    [tenantId, graphId, options.sourceId ?? null, options.current === true, options.limit],
  );
  return r.rows.map(toEdge);
}

/** A connector document as a graph job reads it. */
export interface GraphSourceDocument {
  doc_id: string;
  workspace_id: string;
  memory_id: string;
  cc_pair_id: number;
  title: string;
  content: string;
  link: string | null;
  source_type: string | null;
  external_id: string | null;
  /** Seen by everyone in the tenant; otherwise by administrators only. */
  access_public: boolean;
}

/**
 * The tenant's connector documents for a connector ingest: of the memories within the caller's reach (`workspaceId`,
 * `memoryIds`; null: every one), of the given source types (all when null), public ones only unless `admin`,
 * changed after `changedSince` when given (an incremental ingest), at most `limit` in a stable order; content cut at
 * `maxChars`.
 */
export async function connectorDocumentsForGraph(
  sql: Sql,
  tenantId: string,
  options: {
    sourceTypes: readonly string[] | null;
    admin: boolean;
    changedSince: string | null;
    limit: number;
    maxChars: number;
    workspaceId: string | null;
    memoryIds: readonly string[] | null;
  },
): Promise<GraphSourceDocument[]> {
  const r = await sql.query<GraphSourceDocument>(
    `SELECT doc_id, workspace_id, memory_id, cc_pair_id, title, left(content, $6) AS content, link, source_type, external_id, access_public FROM graph.documents
      WHERE tenant_id = $1 AND cc_pair_id IS NOT NULL
        AND ($2::text[] IS NULL OR source_type = ANY($2::text[]))
        AND ($3::boolean OR access_public)
        AND ($4::timestamptz IS NULL OR updated_at > $4::timestamptz)
        AND ($7::text IS NULL OR workspace_id = $7::text)
        AND ($8::text[] IS NULL OR memory_id = ANY($8::text[]))
      ORDER BY doc_id LIMIT $5`,
    [
      tenantId,
      options.sourceTypes === null ? null : [...options.sourceTypes],
      options.admin,
      options.changedSince,
      options.limit,
      options.maxChars,
      options.workspaceId,
      options.memoryIds === null ? null : [...options.memoryIds],
    ],
  );
  return r.rows;
}

/**
 * Closes the open edges whose source document no longer exists (a connector deleted it): a document source is the
 * connector's document (`source_ref` memory_id, cc_pair_id, external_id), whichever copy of it the memory holds.
 */
export async function closeEdgesOfDeletedDocuments(sql: Sql, tenantId: string, graphId: string): Promise<number> {
  const r = await sql.query(
    `UPDATE graph.kg_edges e SET valid_to = greatest(now(), e.valid_from)
      WHERE e.tenant_id = $1 AND e.graph_id = $2 AND e.source_kind = 'document' AND e.valid_to IS NULL
        AND NOT EXISTS (SELECT 1 FROM graph.documents d
                         WHERE d.tenant_id = $1 AND d.memory_id = e.source_ref->>'memory_id'
                           AND d.cc_pair_id = (e.source_ref->>'cc_pair_id')::integer AND d.external_id = e.source_ref->>'external_id')`,
    [tenantId, graphId],
  );
  return r.rowCount;
}

/** When the graph's last completed job of this kind started (an incremental connector ingest reads what changed since). */
export async function lastCompletedJobStart(sql: Sql, tenantId: string, graphId: string, kind: JobKind, exceptJobId: string): Promise<string | null> {
  const r = await sql.query<{ started_at: Date | string | null }>(
    `SELECT max(started_at) AS started_at FROM graph.graph_jobs
      WHERE tenant_id = $1 AND graph_id = $2 AND kind = $3 AND status = 'completed' AND job_id <> $4`,
    [tenantId, graphId, kind, exceptJobId],
  );
  return isoOrNull(r.rows[0]?.started_at ?? null);
}
