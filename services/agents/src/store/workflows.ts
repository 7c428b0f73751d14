import type { Db, Sql } from '@lore/runtime';
import { seesWorkflowSql, type Viewer } from './visibility';

/** A row of agents.workflows (migration 0001). */
export interface WorkflowRow {
  tenant_id: string;
  thread_id: string;
  kind: string;
  owner: string;
  status: string;
  current_step: string;
  prompt: string;
  state: Record<string, unknown>;
  total_target: number;
  error_message: string | null;
  list_id: string | null;
  stop_requested: boolean;
  claimed_by: string | null;
  claimed_until: Date | null;
  next_seq: string;
  created_at: Date;
  updated_at: Date;
  /** Credits (migration 0008): usage totals, the totals last charged, credits charged and charges so far. */
  usage_total: Record<string, unknown>;
  usage_billed: Record<string, unknown>;
  credits_used: string;
  usage_charges: number;
}

export interface WorkflowEventRow {
  seq: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

const COLS =
  'tenant_id, thread_id::text AS thread_id, kind, owner, status, current_step, prompt, state, total_target, error_message, list_id::text AS list_id, ' +
  'stop_requested, claimed_by, claimed_until, next_seq, created_at, updated_at, usage_total, usage_billed, credits_used, usage_charges';

export async function insertWorkflow(
  sql: Sql,
  tenantId: string,
  w: { thread_id: string; kind: string; owner: string; status: string; current_step: string; prompt: string; state: Record<string, unknown>; total_target: number; list_id: string | null },
): Promise<WorkflowRow> {
  const r = await sql.query<WorkflowRow>(
    `INSERT INTO agents.workflows (tenant_id, thread_id, kind, owner, status, current_step, prompt, state, total_target, list_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10) RETURNING ${COLS}`,
    [tenantId, w.thread_id, w.kind, w.owner, w.status, w.current_step, w.prompt, JSON.stringify(w.state), w.total_target, w.list_id],
  );
  return r.rows[0]!;
}

/** One workflow of the tenant (of these kinds); `lock`: FOR UPDATE. */
export async function getWorkflow(sql: Sql, tenantId: string, threadId: string, kinds: readonly string[], lock = false): Promise<WorkflowRow | null> {
  const r = await sql.query<WorkflowRow>(
    `SELECT ${COLS} FROM agents.workflows WHERE tenant_id = $1 AND thread_id = $2 AND kind = ANY($3::text[])${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, threadId, kinds],
  );
  return r.rows[0] ?? null;
}

/** The columns a change may set. */
export interface WorkflowPatch {
  status?: string;
  current_step?: string;
  state?: Record<string, unknown>;
  total_target?: number;
  error_message?: string | null;
  list_id?: string | null;
  stop_requested?: boolean;
  claimed_by?: string | null;
  claimed_until_ms?: number | null;
}

/** Applies a change; with `claimedBy`, only while that worker still holds the claim. True when a row changed. */
export async function updateWorkflow(sql: Sql, tenantId: string, threadId: string, patch: WorkflowPatch, claimedBy?: string): Promise<boolean> {
  const sets: string[] = ['updated_at = now()'];
  const params: unknown[] = [tenantId, threadId];
  const add = (column: string, value: unknown, cast = '') => {
    params.push(value);
    sets.push(`${column} = $${params.length}${cast}`);
  };
  if (patch.status !== undefined) add('status', patch.status);
  if (patch.current_step !== undefined) add('current_step', patch.current_step);
  if (patch.state !== undefined) add('state', JSON.stringify(patch.state), '::jsonb');
  if (patch.total_target !== undefined) add('total_target', patch.total_target);
  if (patch.error_message !== undefined) add('error_message', patch.error_message);
  if (patch.list_id !== undefined) add('list_id', patch.list_id, '::uuid');
  if (patch.stop_requested !== undefined) add('stop_requested', patch.stop_requested);
  if (patch.claimed_by !== undefined) add('claimed_by', patch.claimed_by);
  if (patch.claimed_until_ms !== undefined) {
    if (patch.claimed_until_ms === null) sets.push('claimed_until = NULL');
    else {
      params.push(patch.claimed_until_ms);
      sets.push(`claimed_until = now() + make_interval(secs => $${params.length}::double precision / 1000)`);
    }
  }
  let where = 'tenant_id = $1 AND thread_id = $2';
  if (claimedBy !== undefined) {
    params.push(claimedBy);
    where += ` AND claimed_by = $${params.length}`;
  }
  const r = await sql.query(`UPDATE agents.workflows SET ${sets.join(', ')} WHERE ${where}`, params);
  return r.rowCount === 1;
}

/**
 * Claims a workflow still to run for `worker` for `leaseMs`: when nobody holds it, its claim expired, or the worker
 * already holds it. The claimed row, or null.
 */
export async function claimWorkflow(sql: Sql, tenantId: string, threadId: string, worker: string, leaseMs: number): Promise<WorkflowRow | null> {
  const r = await sql.query<WorkflowRow>(
    `UPDATE agents.workflows SET claimed_by = $3, claimed_until = now() + make_interval(secs => $4::double precision / 1000), updated_at = now()
      WHERE tenant_id = $1 AND thread_id = $2 AND status IN ('processing', 'continuing', 'stopping')
        AND (claimed_by IS NULL OR claimed_until IS NULL OR claimed_until < now() OR claimed_by = $3)
      RETURNING ${COLS}`,
    [tenantId, threadId, worker, leaseMs],
  );
  return r.rows[0] ?? null;
}

/** Extends the claim; answers whether the worker still holds it, and whether a stop was asked. */
export async function heartbeatWorkflow(sql: Sql, tenantId: string, threadId: string, worker: string, leaseMs: number): Promise<{ held: boolean; stopRequested: boolean; totalTarget: number }> {
  const r = await sql.query<{ stop_requested: boolean; total_target: number }>(
    `UPDATE agents.workflows SET claimed_until = now() + make_interval(secs => $4::double precision / 1000)
      WHERE tenant_id = $1 AND thread_id = $2 AND claimed_by = $3 RETURNING stop_requested, total_target`,
    [tenantId, threadId, worker, leaseMs],
  );
  const row = r.rows[0];
  return row ? { held: true, stopRequested: row.stop_requested, totalTarget: row.total_target } : { held: false, stopRequested: false, totalTarget: 0 };
}

/** Which of these threads are workflows the viewer sees (`seesWorkflow`). */
export async function visibleThreads(sql: Sql, tenantId: string, viewer: Viewer, threadIds: readonly string[]): Promise<Set<string>> {
  if (threadIds.length === 0) return new Set();
  const params: unknown[] = [tenantId, threadIds];
  const sees = seesWorkflowSql({ owner: 'w.owner', state: 'w.state' }, viewer, params);
  const r = await sql.query<{ thread_id: string }>(`SELECT w.thread_id::text AS thread_id FROM agents.workflows w WHERE w.tenant_id = $1 AND w.thread_id = ANY($2::uuid[]) AND ${sees}`, params);
  return new Set(r.rows.map((x) => x.thread_id));
}

/** The claim and stop flag of several workflows of one tenant, by thread id (absent: no such workflow): a worker's frequent look at its runs (no state read). */
export async function workflowFlagsOf(sql: Sql, tenantId: string, threadIds: readonly string[]): Promise<Map<string, { claimed_by: string | null; stop_requested: boolean }>> {
  const r = await sql.query<{ thread_id: string; claimed_by: string | null; stop_requested: boolean }>(
    `SELECT thread_id::text AS thread_id, claimed_by, stop_requested FROM agents.workflows WHERE tenant_id = $1 AND thread_id = ANY($2::uuid[])`,
    [tenantId, [...threadIds]],
    { prepare: true },
  );
  return new Map(r.rows.map((w) => [w.thread_id, { claimed_by: w.claimed_by, stop_requested: w.stop_requested }]));
}

/** Appends an event to the workflow's log; answers its sequence number and time. */
export async function appendWorkflowEvent(sql: Sql, tenantId: string, threadId: string, type: string, data: Record<string, unknown>): Promise<{ seq: number; created_at: Date }> {
  const r = await sql.query<{ seq: string; created_at: Date }>(
    `WITH s AS (
       UPDATE agents.workflows SET next_seq = next_seq + 1, updated_at = now() WHERE tenant_id = $1 AND thread_id = $2 RETURNING next_seq - 1 AS seq
     )
     INSERT INTO agents.workflow_events (tenant_id, thread_id, seq, type, data)
     SELECT $1, $2, s.seq, $3, $4::jsonb FROM s RETURNING seq, created_at`,
    [tenantId, threadId, type, JSON.stringify(data)],
  );
  const row = r.rows[0];
  if (!row) throw new Error(`workflow ${threadId} not found for its event`);
  return { seq: Number(row.seq), created_at: row.created_at };
}

/**
 * Appends events to a workflow that `workerId` still holds, as a transaction of its own in one round trip
 * (`statementAsTenant`): the claim's check, the row's lock, the sequence numbers and the events in one statement.
 * Answers the events written, in order; null when the workflow is gone or no longer claimed by that worker
 * (nothing is written). How a running session sends a progress message, its most frequent write.
 */
export async function appendClaimedEvents(
  db: Db,
  tenantId: string,
  threadId: string,
  kinds: readonly string[],
  workerId: string,
  events: ReadonlyArray<{ type: string; data: Record<string, unknown> }>,
): Promise<Array<{ seq: number; created_at: Date }> | null> {
  if (events.length === 0) throw new Error('appendClaimedEvents needs at least one event');
  const r = await db.statementAsTenant<{ seq: string; created_at: Date }>(
    tenantId,
    `WITH e AS (
       SELECT x, n FROM jsonb_array_elements($5::jsonb) WITH ORDINALITY AS a(x, n)
     ), s AS (
       UPDATE agents.workflows SET next_seq = next_seq + (SELECT count(*) FROM e), updated_at = now()
        WHERE tenant_id = $1 AND thread_id = $2::uuid AND kind = ANY($3::text[]) AND claimed_by = $4
       RETURNING tenant_id, thread_id, next_seq - (SELECT count(*) FROM e) AS first
     )
     INSERT INTO agents.workflow_events (tenant_id, thread_id, seq, type, data)
     SELECT s.tenant_id, s.thread_id, s.first + e.n - 1, e.x->>'type', e.x->'data' FROM s, e ORDER BY e.n
     RETURNING seq, created_at`,
    [tenantId, threadId, kinds, workerId, JSON.stringify(events.map((e) => ({ type: e.type, data: e.data })))],
  );
  if (r.rows.length === 0) return null;
  return r.rows.map((row) => ({ seq: Number(row.seq), created_at: row.created_at })).sort((a, b) => a.seq - b.seq);
}

/** Events after `afterSeq`, oldest first, at most `limit`. */
export async function listWorkflowEvents(sql: Sql, tenantId: string, threadId: string, afterSeq: number, limit: number): Promise<WorkflowEventRow[]> {
  const r = await sql.query<WorkflowEventRow>(
    `SELECT seq, type, data, created_at FROM agents.workflow_events WHERE tenant_id = $1 AND thread_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
    [tenantId, threadId, afterSeq, limit],
  );
  return r.rows;
}

/** Across tenants, by id only (a security-definer function, migration 0003): searches a dead worker left. */
export async function workflowsToResume(sql: Sql, unclaimedMs: number, limit: number): Promise<Array<{ tenant_id: string; thread_id: string }>> {
  const r = await sql.query<{ tenant_id: string; thread_id: string }>(`SELECT tenant_id, thread_id::text AS thread_id FROM agents.workflows_to_resume($1, $2)`, [
    Math.floor(unclaimedMs),
    limit,
  ]);
  return r.rows;
}
