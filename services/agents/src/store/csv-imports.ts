import type { Sql } from '@lore/runtime';
import type { ListRowRow } from './lists';

/**
 * Every SQL statement of the CSV import: its thread (agents.workflows, kind `csv_import`) and event log, its list
 * and rows. The tenant is every function's first argument (after the connection).
 */

export interface CsvImportRow {
  thread_id: string;
  owner: string;
  status: string;
  state: Record<string, unknown>;
  list_id: string | null;
  claimed_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ListRow {
  list_id: string;
  thread_id: string | null;
  name: string;
  description: string;
  list_type: string;
  status: string;
  columns: unknown[];
}

/** A list row as it is read back (agents.list_rows); an import's `cells` hold a JSON array (ImportedRow). */
export type StoredRow = ListRowRow;

/**
 * A list row as the import writes it: `values` (stored as `cells`, a JSON array) in the list's column order,
 * without what every row shares; the restore expands them into cells.
 */
export interface ImportedRow {
  row_id: string;
  entity_key: string;
  position: number;
  values: string[];
  step_source: string;
  metadata: Record<string, unknown>;
}

const IMPORT_COLUMNS = 'thread_id, owner, status, state, list_id, claimed_by, created_at, updated_at';

export async function insertImport(sql: Sql, tenantId: string, i: { threadId: string; owner: string; status: string; state: Record<string, unknown> }): Promise<void> {
  await sql.query(
    `INSERT INTO agents.workflows (tenant_id, thread_id, kind, owner, status, current_step, state, total_target)
     VALUES ($1, $2, 'csv_import', $3, $4, $4, $5::jsonb, 0)`,
    [tenantId, i.threadId, i.owner, i.status, JSON.stringify(i.state)],
  );
}

/** The import, locked for the transaction when `lock`; null when the tenant has none with that id. */
export async function getImport(sql: Sql, tenantId: string, threadId: string, lock = false): Promise<CsvImportRow | null> {
  const r = await sql.query<CsvImportRow>(
    `SELECT ${IMPORT_COLUMNS} FROM agents.workflows WHERE tenant_id = $1 AND thread_id = $2 AND kind = 'csv_import'${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, threadId],
  );
  return r.rows[0] ?? null;
}

/** Sets the import's status (and current step), merges `state` into its document, and sets its list when given. */
export async function updateImport(sql: Sql, tenantId: string, threadId: string, change: { status: string; state?: Record<string, unknown>; listId?: string; errorMessage?: string | null; release?: boolean }): Promise<void> {
  await sql.query(
    `UPDATE agents.workflows
        SET status = $3, current_step = $3, state = state || $4::jsonb, list_id = COALESCE($5::uuid, list_id),
            error_message = CASE WHEN $6::boolean THEN $7 ELSE error_message END,
            claimed_by = CASE WHEN $8::boolean THEN NULL ELSE claimed_by END,
            claimed_until = CASE WHEN $8::boolean THEN NULL ELSE claimed_until END,
            updated_at = now()
      WHERE tenant_id = $1 AND thread_id = $2 AND kind = 'csv_import'`,
    [tenantId, threadId, change.status, JSON.stringify(change.state ?? {}), change.listId ?? null, change.errorMessage !== undefined, change.errorMessage ?? null, change.release === true],
  );
}

/** Appends events to the import's log, numbered from its next sequence number, in the order given. */
export async function appendEvents(sql: Sql, tenantId: string, threadId: string, events: ReadonlyArray<{ type: string; data: Record<string, unknown> }>): Promise<void> {
  if (events.length === 0) return;
  await sql.query(
    `WITH w AS (
       UPDATE agents.workflows SET next_seq = next_seq + $3, updated_at = now()
        WHERE tenant_id = $1 AND thread_id = $2
        RETURNING next_seq - $3 AS first)
     INSERT INTO agents.workflow_events (tenant_id, thread_id, seq, type, data)
     SELECT $1, $2, w.first + e.ord - 1, e.item->>'type', e.item->'data'
       FROM w, jsonb_array_elements($4::jsonb) WITH ORDINALITY AS e(item, ord)`,
    [tenantId, threadId, events.length, JSON.stringify(events)],
  );
}

/** The import's events in order (tests and diagnostics). */
export async function listEvents(sql: Sql, tenantId: string, threadId: string): Promise<Array<{ seq: number; type: string; data: Record<string, unknown> }>> {
  const r = await sql.query<{ seq: string; type: string; data: Record<string, unknown> }>(
    `SELECT seq, type, data FROM agents.workflow_events WHERE tenant_id = $1 AND thread_id = $2 ORDER BY seq`,
    [tenantId, threadId],
  );
  return r.rows.map((e) => ({ seq: Number(e.seq), type: e.type, data: e.data }));
}

/**
 * Claims an accepted or running import for `worker` until `leaseMs` from now, when nobody holds it (or a claim
 * expired); an `importing` import becomes `processing`. Null when it is not there to claim.
 */
export async function claimImport(sql: Sql, tenantId: string, threadId: string, worker: string, leaseMs: number): Promise<CsvImportRow | null> {
  const r = await sql.query<CsvImportRow>(
    `UPDATE agents.workflows
        SET claimed_by = $3, claimed_until = now() + make_interval(secs => $4::double precision / 1000),
            status = 'processing', current_step = 'processing', updated_at = now()
      WHERE tenant_id = $1 AND thread_id = $2 AND kind = 'csv_import' AND status IN ('importing', 'processing')
        AND (claimed_until IS NULL OR claimed_until < now())
      RETURNING ${IMPORT_COLUMNS}`,
    [tenantId, threadId, worker, leaseMs],
  );
  return r.rows[0] ?? null;
}

/**
 * Records a written batch: the import's checkpoint (`imported_rows`) and the renewal of `worker`'s claim. False
 * when the claim is no longer the worker's (it expired and another took it): the batch must not count.
 */
export async function checkpointImport(sql: Sql, tenantId: string, threadId: string, worker: string, leaseMs: number, importedRows: number): Promise<boolean> {
  const r = await sql.query(
    `UPDATE agents.workflows
        SET state = jsonb_set(state, '{imported_rows}', to_jsonb($5::integer)),
            claimed_until = now() + make_interval(secs => $4::double precision / 1000), updated_at = now()
      WHERE tenant_id = $1 AND thread_id = $2 AND kind = 'csv_import' AND status = 'processing' AND claimed_by = $3`,
    [tenantId, threadId, worker, leaseMs, importedRows],
  );
  return r.rowCount === 1;
}

/** Gives up `worker`'s claim (a stopping process), so the next sweep resumes the import at once. */
export async function releaseImport(sql: Sql, tenantId: string, threadId: string, worker: string): Promise<void> {
  await sql.query(
    `UPDATE agents.workflows SET claimed_by = NULL, claimed_until = NULL WHERE tenant_id = $1 AND thread_id = $2 AND claimed_by = $3`,
    [tenantId, threadId, worker],
  );
}

/**
 * Imports the sweep must look at across tenants (agents.csv_imports_to_resume, migration 0002): ids and status only
 * — those to resume, and those `analyzing` for longer than `staleAnalysisMs`.
 */
export async function importsToResume(sql: Sql, limit: number, staleAnalysisMs: number): Promise<Array<{ tenant_id: string; thread_id: string; status: string }>> {
  const r = await sql.query<{ tenant_id: string; thread_id: string; status: string }>(
    `SELECT tenant_id, thread_id, status FROM agents.csv_imports_to_resume($1, make_interval(secs => $2::double precision / 1000))`,
    [limit, staleAnalysisMs],
  );
  return r.rows;
}

/** Ends an analysis left unfinished for longer than `staleMs` in `error`; false when it is not (any more). */
export async function failStaleAnalysis(sql: Sql, tenantId: string, threadId: string, staleMs: number, errors: unknown[]): Promise<boolean> {
  const r = await sql.query(
    `UPDATE agents.workflows
        SET status = 'error', current_step = 'error', state = state || jsonb_build_object('errors', $4::jsonb), error_message = $4::jsonb->0->>'message', updated_at = now()
      WHERE tenant_id = $1 AND thread_id = $2 AND kind = 'csv_import' AND status = 'analyzing'
        AND updated_at < now() - make_interval(secs => $3::double precision / 1000)`,
    [tenantId, threadId, staleMs, JSON.stringify(errors)],
  );
  return r.rowCount === 1;
}

export async function insertList(sql: Sql, tenantId: string, l: { listId: string; threadId: string; owner: string; name: string; description: string; columns: unknown[] }): Promise<void> {
  await sql.query(
    `INSERT INTO agents.lists (tenant_id, list_id, thread_id, owner, name, description, list_type, status, columns)
     VALUES ($1, $2, $3, $4, $5, $6, 'csv_import', 'processing', $7::jsonb)`,
    [tenantId, l.listId, l.threadId, l.owner, l.name, l.description, JSON.stringify(l.columns)],
  );
}

export async function setListStatus(sql: Sql, tenantId: string, listId: string, status: string): Promise<void> {
  await sql.query(`UPDATE agents.lists SET status = $3, updated_at = now() WHERE tenant_id = $1 AND list_id = $2`, [tenantId, listId, status]);
}

/** A CSV import's list; null when the tenant has no such list of that type. */
export async function getCsvList(sql: Sql, tenantId: string, listId: string): Promise<ListRow | null> {
  const r = await sql.query<ListRow>(
    `SELECT list_id, thread_id, name, description, list_type, status, columns FROM agents.lists WHERE tenant_id = $1 AND list_id = $2 AND list_type = 'csv_import'`,
    [tenantId, listId],
  );
  return r.rows[0] ?? null;
}

/** Writes rows keyed by `entity_key`: a row already written (a resumed import) is left as it is. Returns how many were new. */
export async function insertRows(sql: Sql, tenantId: string, listId: string, rows: readonly ImportedRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const r = await sql.query(
    `INSERT INTO agents.list_rows (tenant_id, list_id, row_id, entity_key, position, cells, step_source, metadata)
     SELECT $1, $2, r.row_id, r.entity_key, r.position, r."values", r.step_source, r.metadata
       FROM jsonb_to_recordset($3::jsonb) AS r(row_id text, entity_key text, position integer, "values" jsonb, step_source text, metadata jsonb)
     ON CONFLICT DO NOTHING`,
    [tenantId, listId, JSON.stringify(rows)],
  );
  return r.rowCount;
}

export async function countRows(sql: Sql, tenantId: string, listId: string): Promise<number> {
  const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM agents.list_rows WHERE tenant_id = $1 AND list_id = $2`, [tenantId, listId]);
  return Number(r.rows[0]?.n ?? 0);
}

/** The list's rows in file order after position `after` (0: from the first), at most `limit`. */
export async function listRowsAfter(sql: Sql, tenantId: string, listId: string, after: number, limit: number): Promise<StoredRow[]> {
  const r = await sql.query<StoredRow>(
    `SELECT row_id, entity_key, position, cells, step_source, metadata FROM agents.list_rows
      WHERE tenant_id = $1 AND list_id = $2 AND position > $3 ORDER BY position LIMIT $4`,
    [tenantId, listId, after, limit],
  );
  return r.rows;
}
