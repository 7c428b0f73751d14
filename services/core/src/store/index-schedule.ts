import type { Db, Sql } from '@lore/runtime';

/**
 * The scheduler's table (no row-level security: ids and times only; see migrations/0005_indexing.sql). Reads across
 * tenants run on the pool; everything that changes a tenant's pair runs in that tenant's transaction.
 */

export interface ScheduleRow {
  tenant_id: string;
  cc_pair_id: number;
  next_run_at: Date;
  attempt_id: number | null;
}

/** Tenants with a pair due now and no live attempt (at most `limit`). */
export async function tenantsDue(db: Pick<Db, 'query'>, limit: number): Promise<string[]> {
  const r = await db.query<{ tenant_id: string }>(
    `SELECT DISTINCT tenant_id FROM (SELECT tenant_id FROM core.index_schedule WHERE attempt_id IS NULL AND next_run_at <= now() ORDER BY next_run_at LIMIT $1) d`,
    [limit],
  );
  return r.rows.map((x) => x.tenant_id);
}

/** The tenant's due pairs, locked so a second scheduler skips them (FOR UPDATE SKIP LOCKED). */
export async function lockDuePairs(sql: Sql, tenantId: string, limit: number): Promise<number[]> {
  const r = await sql.query<{ cc_pair_id: number }>(
    `SELECT cc_pair_id FROM core.index_schedule
      WHERE tenant_id = $1 AND attempt_id IS NULL AND next_run_at <= now()
      ORDER BY next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [tenantId, limit],
  );
  return r.rows.map((x) => x.cc_pair_id);
}

/** Running attempts whose worker has not said it is alive for `staleMs` (across tenants). */
export async function staleAttempts(db: Pick<Db, 'query'>, staleMs: number, limit: number): Promise<Array<{ tenant_id: string; cc_pair_id: number; attempt_id: number }>> {
  const r = await db.query<{ tenant_id: string; cc_pair_id: number; attempt_id: number }>(
    `SELECT tenant_id, cc_pair_id, attempt_id FROM core.index_schedule
      WHERE attempt_running AND heartbeat_at < now() - make_interval(secs => $1::float8 / 1000) LIMIT $2`,
    [staleMs, limit],
  );
  return r.rows;
}

/** The pair's schedule row, locked; null when it has none (paused, or gone). */
export async function lockSchedule(sql: Sql, tenantId: string, ccPairId: number): Promise<ScheduleRow | null> {
  const r = await sql.query<ScheduleRow>(
    `SELECT tenant_id, cc_pair_id, next_run_at, attempt_id FROM core.index_schedule WHERE tenant_id = $1 AND cc_pair_id = $2 FOR UPDATE`,
    [tenantId, ccPairId],
  );
  return r.rows[0] ?? null;
}

/** Makes the pair schedulable, due at `at` (default now); an existing row keeps its live attempt. */
export async function schedulePair(sql: Sql, tenantId: string, ccPairId: number, at: Date | null = null): Promise<void> {
  await sql.query(
    `INSERT INTO core.index_schedule (tenant_id, cc_pair_id, next_run_at) VALUES ($1, $2, coalesce($3::timestamptz, now()))
     ON CONFLICT (tenant_id, cc_pair_id) DO UPDATE SET next_run_at = excluded.next_run_at`,
    [tenantId, ccPairId, at],
  );
}

/** Records the pair's live attempt (queued: not running yet). */
export async function setScheduledAttempt(sql: Sql, tenantId: string, ccPairId: number, attemptId: number): Promise<void> {
  await sql.query(
    `INSERT INTO core.index_schedule (tenant_id, cc_pair_id, attempt_id, attempt_running, heartbeat_at) VALUES ($1, $2, $3, false, now())
     ON CONFLICT (tenant_id, cc_pair_id) DO UPDATE SET attempt_id = $3, attempt_running = false, heartbeat_at = now()`,
    [tenantId, ccPairId, attemptId],
  );
}

/** The attempt's worker is alive (also marks it running). False when the row no longer names this attempt. */
export async function heartbeat(sql: Sql, tenantId: string, ccPairId: number, attemptId: number): Promise<boolean> {
  const r = await sql.query(
    `UPDATE core.index_schedule SET attempt_running = true, heartbeat_at = now() WHERE tenant_id = $1 AND cc_pair_id = $2 AND attempt_id = $3`,
    [tenantId, ccPairId, attemptId],
  );
  return r.rowCount === 1;
}

/** The attempt ended: the pair is due again at `next` (null: it leaves the schedule, e.g. paused). */
export async function clearAttempt(sql: Sql, tenantId: string, ccPairId: number, attemptId: number, next: Date | null): Promise<void> {
  if (next === null) {
    await sql.query(`DELETE FROM core.index_schedule WHERE tenant_id = $1 AND cc_pair_id = $2 AND attempt_id = $3`, [tenantId, ccPairId, attemptId]);
    return;
  }
  await sql.query(
    `UPDATE core.index_schedule SET attempt_id = NULL, attempt_running = false, heartbeat_at = NULL, next_run_at = $4
      WHERE tenant_id = $1 AND cc_pair_id = $2 AND attempt_id = $3`,
    [tenantId, ccPairId, attemptId, next],
  );
}

export async function unschedulePair(sql: Sql, tenantId: string, ccPairId: number): Promise<void> {
  await sql.query(`DELETE FROM core.index_schedule WHERE tenant_id = $1 AND cc_pair_id = $2`, [tenantId, ccPairId]);
}
