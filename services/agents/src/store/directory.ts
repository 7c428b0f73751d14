import type { Sql } from '@lore/runtime';
import type { DirectoryKind } from '../sources/directory';

/** Every SQL statement of the directory (agents.directory). The tenant is every function's first argument. */

export interface DirectoryRow {
  record_id: string;
  kind: DirectoryKind;
  data: Record<string, unknown>;
  source: string;
  updated_at: Date;
}

export interface DirectoryWrite {
  kind: DirectoryKind;
  recordId: string;
  data: Record<string, unknown>;
  source: string;
}

/** Longest a search statement may run (a pathological regular expression, a huge directory). */
export const SEARCH_TIMEOUT_MS = 5_000;

/** Bounds the statements that follow in this transaction. */
export async function limitStatementTime(sql: Sql, ms: number): Promise<void> {
  await sql.query(`SELECT set_config('statement_timeout', $1, true)`, [`${Math.trunc(ms)}ms`]);
}

/**
 * A page of the tenant's records of `kind` matching `condition` (a compiled filter over `d.data` whose placeholders
 * start at $3), most recently updated first.
 */
export async function searchRecords(
  sql: Sql,
  tenantId: string,
  kind: DirectoryKind,
  condition: { sql: string; params: unknown[] },
  page: { limit: number; offset: number },
): Promise<DirectoryRow[]> {
  const n = 2 + condition.params.length;
  const r = await sql.query<DirectoryRow>(
    `SELECT d.record_id, d.kind, d.data, d.source, d.updated_at FROM agents.directory d
      WHERE d.tenant_id = $1 AND d.kind = $2 AND (${condition.sql})
      ORDER BY d.updated_at DESC, d.record_id
      LIMIT $${n + 1} OFFSET $${n + 2}`,
    [tenantId, kind, ...condition.params, page.limit, page.offset],
  );
  return r.rows;
}

/** How many of the tenant's records of `kind` match `condition` (placeholders from $3). */
export async function countRecords(sql: Sql, tenantId: string, kind: DirectoryKind, condition: { sql: string; params: unknown[] }): Promise<number> {
  const r = await sql.query<{ n: string }>(
    `SELECT count(*) AS n FROM agents.directory d WHERE d.tenant_id = $1 AND d.kind = $2 AND (${condition.sql})`,
    [tenantId, kind, ...condition.params],
  );
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * Writes records in one statement: a new record is inserted, an existing one (same kind and id) gets the new fields
 * merged over its own, the new source and a new updated_at. `records` must not hold one (kind, id) twice.
 */
export async function upsertRecords(sql: Sql, tenantId: string, records: readonly DirectoryWrite[]): Promise<number> {
  if (records.length === 0) return 0;
  const rows = records.map((r) => ({ kind: r.kind, record_id: r.recordId, data: r.data, source: r.source }));
  const r = await sql.query(
    `INSERT INTO agents.directory (tenant_id, kind, record_id, data, source, updated_at)
     SELECT $1, r.kind, r.record_id, r.data, r.source, now()
       FROM jsonb_to_recordset($2::jsonb) AS r(kind text, record_id text, data jsonb, source text)
     ON CONFLICT (tenant_id, kind, record_id) DO UPDATE
       SET data = agents.directory.data || excluded.data, source = excluded.source, updated_at = now()`,
    [tenantId, JSON.stringify(rows)],
  );
  return r.rowCount;
}
