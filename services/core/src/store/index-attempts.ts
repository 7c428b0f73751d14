import type { Sql } from '@lore/runtime';
import type { AttemptKind, AttemptStatus, AttemptTrigger } from '../domain/indexing';

export interface IndexAttemptRow {
  tenant_id: string;
  id: number;
  cc_pair_id: number;
  kind: AttemptKind;
  prune: boolean;
  trigger: AttemptTrigger;
  status: AttemptStatus;
  new_docs_indexed: number;
  docs_unchanged: number;
  docs_skipped: number;
  docs_removed: number;
  total_docs_indexed: number | null;
  error_msg: string | null;
  time_created: Date;
  time_started: Date | null;
  time_updated: Date;
}

const COLS =
  'tenant_id, id, cc_pair_id, kind, prune, trigger, status, new_docs_indexed, docs_unchanged, docs_skipped, docs_removed, total_docs_indexed, error_msg, time_created, time_started, time_updated';

/** A new `not_started` attempt, or null when the pair already has a live one (the partial unique index). */
export async function insertAttempt(sql: Sql, tenantId: string, a: { cc_pair_id: number; kind: AttemptKind; prune: boolean; trigger: AttemptTrigger }): Promise<IndexAttemptRow | null> {
  const r = await sql.query<IndexAttemptRow>(
    `INSERT INTO core.index_attempts (tenant_id, cc_pair_id, kind, prune, trigger) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, cc_pair_id) WHERE status IN ('not_started', 'in_progress') DO NOTHING RETURNING ${COLS}`,
    [tenantId, a.cc_pair_id, a.kind, a.prune, a.trigger],
  );
  return r.rows[0] ?? null;
}

export async function getAttempt(sql: Sql, tenantId: string, id: number, lock = false): Promise<IndexAttemptRow | null> {
  const r = await sql.query<IndexAttemptRow>(`SELECT ${COLS} FROM core.index_attempts WHERE tenant_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [tenantId, id]);
  return r.rows[0] ?? null;
}

/** The pair's live attempt (not started or in progress), locked. */
export async function liveAttempt(sql: Sql, tenantId: string, ccPairId: number): Promise<IndexAttemptRow | null> {
  const r = await sql.query<IndexAttemptRow>(
    `SELECT ${COLS} FROM core.index_attempts WHERE tenant_id = $1 AND cc_pair_id = $2 AND status IN ('not_started', 'in_progress') FOR UPDATE`,
    [tenantId, ccPairId],
  );
  return r.rows[0] ?? null;
}

/** Claims a `not_started` attempt for a worker (→ `in_progress`); null when another claimed it or it was canceled. */
export async function claimAttempt(sql: Sql, tenantId: string, id: number): Promise<IndexAttemptRow | null> {
  const r = await sql.query<IndexAttemptRow>(
    `UPDATE core.index_attempts SET status = 'in_progress', time_started = now(), time_updated = now()
      WHERE tenant_id = $1 AND id = $2 AND status = 'not_started' RETURNING ${COLS}`,
    [tenantId, id],
  );
  return r.rows[0] ?? null;
}

export interface AttemptProgress {
  new_docs_indexed: number;
  docs_unchanged: number;
  docs_skipped: number;
  docs_removed: number;
}

/** Adds a batch's counts to a running attempt; false when it is no longer in progress (canceled, failed by recovery). */
export async function addProgress(sql: Sql, tenantId: string, id: number, p: AttemptProgress): Promise<boolean> {
  const r = await sql.query(
    `UPDATE core.index_attempts SET new_docs_indexed = new_docs_indexed + $3, docs_unchanged = docs_unchanged + $4,
            docs_skipped = docs_skipped + $5, docs_removed = docs_removed + $6, time_updated = now()
      WHERE tenant_id = $1 AND id = $2 AND status = 'in_progress'`,
    [tenantId, id, p.new_docs_indexed, p.docs_unchanged, p.docs_skipped, p.docs_removed],
  );
  return r.rowCount === 1;
}

/** Ends a live attempt; false when it had already ended. */
export async function finishAttempt(sql: Sql, tenantId: string, id: number, status: AttemptStatus, errorMsg: string | null, totalDocs: number | null): Promise<boolean> {
  const r = await sql.query(
    `UPDATE core.index_attempts SET status = $3, error_msg = $4, total_docs_indexed = $5, time_updated = now()
      WHERE tenant_id = $1 AND id = $2 AND status IN ('not_started', 'in_progress')`,
    [tenantId, id, status, errorMsg, totalDocs],
  );
  return r.rowCount === 1;
}

/** The pair's attempts, newest first. */
export async function listAttempts(sql: Sql, tenantId: string, ccPairId: number, limit: number): Promise<IndexAttemptRow[]> {
  const r = await sql.query<IndexAttemptRow>(
    `SELECT ${COLS} FROM core.index_attempts WHERE tenant_id = $1 AND cc_pair_id = $2 ORDER BY id DESC LIMIT $3`,
    [tenantId, ccPairId, limit],
  );
  return r.rows;
}

/** The statuses of the pair's last `n` ended attempts (not deletions), newest first. */
export async function lastEndedStatuses(sql: Sql, tenantId: string, ccPairId: number, n: number): Promise<AttemptStatus[]> {
  const r = await sql.query<{ status: AttemptStatus }>(
    `SELECT status FROM core.index_attempts
      WHERE tenant_id = $1 AND cc_pair_id = $2 AND kind <> 'delete' AND status NOT IN ('not_started', 'in_progress')
      ORDER BY id DESC LIMIT $3`,
    [tenantId, ccPairId, n],
  );
  return r.rows.map((x) => x.status);
}

export async function deleteAttemptsOfPair(sql: Sql, tenantId: string, ccPairId: number): Promise<void> {
  await sql.query(`DELETE FROM core.index_attempts WHERE tenant_id = $1 AND cc_pair_id = $2`, [tenantId, ccPairId]);
}
