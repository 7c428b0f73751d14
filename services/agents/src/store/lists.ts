import type { Db, Sql } from '@lore/runtime';
import { seesWorkflowSql, type Viewer } from './visibility';

/** A row of agents.lists (migration 0001). */
export interface ListRow {
  tenant_id: string;
  list_id: string;
  thread_id: string | null;
  owner: string;
  name: string;
  description: string;
  list_type: string;
  status: string;
  columns: unknown[];
  created_at: Date;
  updated_at: Date;
}

/** A row of agents.list_rows. */
export interface ListRowRow {
  row_id: string;
  entity_key: string;
  position: number;
  cells: Record<string, unknown>;
  step_source: string;
  metadata: Record<string, unknown>;
}

const LIST_COLS = 'tenant_id, list_id::text AS list_id, thread_id::text AS thread_id, owner, name, description, list_type, status, columns, created_at, updated_at';
const ROW_COLS = 'row_id, entity_key, position, cells, step_source, metadata';

export async function insertList(
  sql: Sql,
  tenantId: string,
  l: { list_id: string; thread_id: string | null; owner: string; name: string; description: string; list_type: string; status: string; columns: unknown[] },
): Promise<void> {
  await sql.query(
    `INSERT INTO agents.lists (tenant_id, list_id, thread_id, owner, name, description, list_type, status, columns) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)`,
    [tenantId, l.list_id, l.thread_id, l.owner, l.name, l.description, l.list_type, l.status, JSON.stringify(l.columns)],
  );
}

export async function getList(sql: Sql, tenantId: string, listId: string): Promise<ListRow | null> {
  const r = await sql.query<ListRow>(`SELECT ${LIST_COLS} FROM agents.lists WHERE tenant_id = $1 AND list_id = $2`, [tenantId, listId]);
  return r.rows[0] ?? null;
}

export async function updateList(sql: Sql, tenantId: string, listId: string, patch: { status?: string; columns?: unknown[]; name?: string }): Promise<void> {
  await sql.query(
    `UPDATE agents.lists SET status = coalesce($3, status), columns = coalesce($4::jsonb, columns), name = coalesce($5, name), updated_at = now()
      WHERE tenant_id = $1 AND list_id = $2`,
    [tenantId, listId, patch.status ?? null, patch.columns === undefined ? null : JSON.stringify(patch.columns), patch.name ?? null],
  );
}

/**
 * The tenant's lists the viewer sees (`seesWorkflow`, by the list's owner and its workflow's starter), newest first,
 * with their row counts, and how many there are.
 */
export async function listLists(
  sql: Sql,
  tenantId: string,
  viewer: Viewer,
  page: { limit: number; offset: number },
): Promise<{ lists: Array<ListRow & { rows: string }>; total: number }> {
  const params: unknown[] = [tenantId];
  const sees = seesWorkflowSql({ owner: 'l.owner', state: 'w.state' }, viewer, params);
  const from = `FROM agents.lists l LEFT JOIN agents.workflows w ON w.tenant_id = l.tenant_id AND w.thread_id = l.thread_id
      WHERE l.tenant_id = $1 AND ${sees}`;
  const r = await sql.query<ListRow & { rows: string }>(
    `SELECT l.tenant_id, l.list_id::text AS list_id, l.thread_id::text AS thread_id, l.owner, l.name, l.description, l.list_type, l.status, l.columns,
            l.created_at, l.updated_at,
            (SELECT count(*) FROM agents.list_rows r WHERE r.tenant_id = l.tenant_id AND r.list_id = l.list_id) AS rows
       ${from}
      ORDER BY l.created_at DESC, l.list_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, page.limit, page.offset],
  );
  const c = await sql.query<{ n: string }>(`SELECT count(*) AS n ${from}`, params);
  return { lists: r.rows, total: Number(c.rows[0]?.n ?? 0) };
}

/** A row to insert: every column a stored row has. */
export type NewListRow = ListRowRow;

/**
 * Adds rows in one statement; a row whose entity_key (or row_id) the list already holds is skipped, so a resumed run
 * writes no duplicate. Answers the entity keys actually added.
 */
export async function insertListRows(sql: Sql, tenantId: string, listId: string, rows: readonly NewListRow[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const r = await sql.query<{ entity_key: string }>(
    `INSERT INTO agents.list_rows (tenant_id, list_id, row_id, entity_key, position, cells, step_source, metadata)
     SELECT $1, $2, x->>'row_id', x->>'entity_key', (x->>'position')::integer, x->'cells', x->>'step_source', x->'metadata'
       FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS a(x, n) ORDER BY n
     ON CONFLICT DO NOTHING RETURNING entity_key`,
    [tenantId, listId, JSON.stringify(rows)],
  );
  return r.rows.map((x) => x.entity_key);
}

/**
 * A running session's rows (docs/agents.md, "Sessions over websockets"), as a transaction of its own in one round
 * trip (`statementAsTenant`): the claim's check and lock (the workflow `workerId` holds, of these kinds), the rows
 * placed after the list's others (a row whose entity key the list holds is left as it is), and a `row` event for each
 * row written, numbered in the rows' order. Each row carries its event's data. Null when the claim is not (any
 * longer) that worker's: nothing is written. "After the others" is after the list's last position, one index read
 * (not a count of the list: a session writes its rows one at a time, and counting read the whole list for each).
 */
export async function insertClaimedListRows(
  db: Db,
  claim: { tenantId: string; threadId: string; kinds: readonly string[]; workerId: string },
  listId: string,
  rows: ReadonlyArray<NewListRow & { event: Record<string, unknown> }>,
): Promise<Array<{ seq: number; at: string; data: Record<string, unknown> }> | null> {
  const r = await db.statementAsTenant<{ held: number; events: Array<{ seq: number; at: string; data: Record<string, unknown> }> }>(
    claim.tenantId,
    `WITH w AS (
       SELECT tenant_id, thread_id FROM agents.workflows
        WHERE tenant_id = $1 AND thread_id = $2::uuid AND kind = ANY($3::text[]) AND claimed_by = $4 FOR UPDATE
     ), n AS (
       SELECT coalesce((SELECT position FROM agents.list_rows WHERE tenant_id = $1 AND list_id = $5::uuid ORDER BY position DESC LIMIT 1), 0) AS last
     ), a AS (
       SELECT x, i FROM jsonb_array_elements($6::jsonb) WITH ORDINALITY AS a(x, i)
     ), ins AS (
       INSERT INTO agents.list_rows (tenant_id, list_id, row_id, entity_key, position, cells, step_source, metadata)
       SELECT $1, $5::uuid, a.x->>'row_id', a.x->>'entity_key', n.last + a.i, a.x->'cells', a.x->>'step_source', a.x->'metadata'
         FROM w, n, a ORDER BY a.i
       ON CONFLICT DO NOTHING RETURNING position
     ), e AS (
       SELECT a.x->'event' AS data, row_number() OVER (ORDER BY ins.position) AS k FROM ins, n, a WHERE ins.position = n.last + a.i
     ), s AS (
       UPDATE agents.workflows wf SET next_seq = wf.next_seq + (SELECT count(*) FROM e), updated_at = now()
         FROM w WHERE wf.tenant_id = w.tenant_id AND wf.thread_id = w.thread_id AND EXISTS (SELECT 1 FROM e)
       RETURNING wf.next_seq - (SELECT count(*) FROM e) AS first
     ), ev AS (
       INSERT INTO agents.workflow_events (tenant_id, thread_id, seq, type, data)
       SELECT $1, $2::uuid, s.first + e.k - 1, 'row', e.data FROM s, e
       RETURNING seq, created_at, data
     )
     SELECT (SELECT count(*) FROM w)::integer AS held,
            coalesce((SELECT jsonb_agg(jsonb_build_object('seq', ev.seq, 'at', ev.created_at, 'data', ev.data) ORDER BY ev.seq) FROM ev), '[]'::jsonb) AS events`,
    [claim.tenantId, claim.threadId, claim.kinds, claim.workerId, listId, JSON.stringify(rows)],
  );
  const row = r.rows[0];
  if (!row || Number(row.held) === 0) return null;
  return row.events.map((e) => ({ seq: Number(e.seq), at: new Date(e.at).toISOString(), data: e.data }));
}

/** Replaces the cells (and merges the metadata) of several rows in one statement. */
export async function updateListRowCells(
  sql: Sql,
  tenantId: string,
  listId: string,
  rows: ReadonlyArray<{ row_id: string; cells: Record<string, unknown>; metadata?: Record<string, unknown> }>,
): Promise<void> {
  if (rows.length === 0) return;
  await sql.query(
    `UPDATE agents.list_rows r SET cells = r.cells || (x->'cells'), metadata = r.metadata || coalesce(x->'metadata', '{}'::jsonb)
       FROM jsonb_array_elements($3::jsonb) AS a(x)
      WHERE r.tenant_id = $1 AND r.list_id = $2 AND r.row_id = x->>'row_id'`,
    [tenantId, listId, JSON.stringify(rows)],
  );
}

/** A list's rows in position order, at most `limit`. */
export async function listRowsOf(sql: Sql, tenantId: string, listId: string, limit: number): Promise<ListRowRow[]> {
  const r = await sql.query<ListRowRow>(`SELECT ${ROW_COLS} FROM agents.list_rows WHERE tenant_id = $1 AND list_id = $2 ORDER BY position, row_id LIMIT $3`, [
    tenantId,
    listId,
    limit,
  ]);
  return r.rows;
}

/**
 * A list's first `limit` rows as a snapshot shows them: of the metadata, only `source` and `score` (the rest holds
 * each candidate's source text, which no snapshot shows and a status poll should not read).
 */
export async function listRowsShownOf(sql: Sql, tenantId: string, listId: string, limit: number): Promise<ListRowRow[]> {
  const r = await sql.query<ListRowRow>(
    `SELECT row_id, entity_key, position, cells, step_source, jsonb_build_object('source', metadata->'source', 'score', metadata->'score') AS metadata
       FROM agents.list_rows WHERE tenant_id = $1 AND list_id = $2 ORDER BY position, row_id LIMIT $3`,
    [tenantId, listId, limit],
  );
  return r.rows;
}

/** The entity keys of a list's first `limit` rows, in order: what a collecting batch checks its candidates against. */
export async function listRowKeysOf(sql: Sql, tenantId: string, listId: string, limit: number): Promise<string[]> {
  const r = await sql.query<{ entity_key: string }>(
    `SELECT entity_key FROM agents.list_rows WHERE tenant_id = $1 AND list_id = $2 ORDER BY position, row_id LIMIT $3`,
    [tenantId, listId, limit],
  );
  return r.rows.map((x) => x.entity_key);
}

/**
 * The rows an enrichment batch works on: among a list's first `scan` rows, those with a pending cell that is not an
 * enrichment column's or is one of `enriching` (the columns being enriched), the first `limit` of them in order,
 * and how many such rows there are. One statement; only the batch's rows (with their metadata) are read back.
 */
export async function openListRows(
  sql: Sql,
  tenantId: string,
  listId: string,
  enriching: readonly string[],
  limit: number,
  scan: number,
): Promise<{ rows: ListRowRow[]; open: number }> {
  const r = await sql.query<ListRowRow & { open: string }>(
    `SELECT ${ROW_COLS}, open FROM (
       SELECT r.*, count(*) OVER () AS open
         FROM (SELECT ${ROW_COLS} FROM agents.list_rows WHERE tenant_id = $1 AND list_id = $2 ORDER BY position, row_id LIMIT $3) r
        WHERE EXISTS (SELECT 1 FROM jsonb_each(r.cells) c
                       WHERE c.value->>'status' = 'pending'
                         AND (NOT starts_with(c.value->>'column_id', 'enrich_') OR c.value->>'column_id' = ANY($4::text[])))
     ) o ORDER BY position, row_id LIMIT $5`,
    [tenantId, listId, scan, [...enriching], limit],
  );
  return { rows: r.rows.map(({ open: _open, ...row }) => row), open: Number(r.rows[0]?.open ?? 0) };
}

export async function countListRows(sql: Sql, tenantId: string, listId: string): Promise<number> {
  const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM agents.list_rows WHERE tenant_id = $1 AND list_id = $2`, [tenantId, listId]);
  return Number(r.rows[0]?.n ?? 0);
}
