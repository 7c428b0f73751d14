import type { Sql } from '@lore/runtime';
import { seesWorkflowSql, type Viewer } from './visibility';

/** Reads and changes of the generic workflow API that the workflow store does not have (docs/agents.md, "Generic workflow API"). */

/**
 * Serialises starts and continues of one (tenant, serviceId) until the transaction ends, so two at once cannot both
 * pass the per-service limit.
 */
export async function lockService(sql: Sql, tenantId: string, serviceId: string): Promise<void> {
  await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [`agents-service:${tenantId}:${serviceId}`]);
}

/** Running workflows of the tenant recorded against `serviceId` (other than `except`). */
export async function countRunningForService(sql: Sql, tenantId: string, serviceId: string, except?: string): Promise<number> {
  const r = await sql.query<{ n: string }>(
    `SELECT count(*) AS n FROM agents.workflows
      WHERE tenant_id = $1 AND status IN ('processing', 'continuing', 'stopping') AND state->>'service_id' = $2
        AND ($3::uuid IS NULL OR thread_id <> $3::uuid)`,
    [tenantId, serviceId, except ?? null],
  );
  return Number(r.rows[0]?.n ?? 0);
}

export async function workflowExists(sql: Sql, tenantId: string, threadId: string): Promise<boolean> {
  const r = await sql.query(`SELECT 1 FROM agents.workflows WHERE tenant_id = $1 AND thread_id = $2`, [tenantId, threadId]);
  return (r.rowCount ?? 0) > 0;
}

export async function listExists(sql: Sql, tenantId: string, listId: string): Promise<boolean> {
  const r = await sql.query(`SELECT 1 FROM agents.lists WHERE tenant_id = $1 AND list_id = $2`, [tenantId, listId]);
  return (r.rowCount ?? 0) > 0;
}

export interface ThreadRow {
  thread_id: string;
  tenant_id: string;
  status: string;
  service_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A kind's workflows of the tenant the viewer sees (`seesWorkflow`), newest first. */
export async function listThreads(sql: Sql, tenantId: string, viewer: Viewer, kind: string, page: { limit: number; offset: number }): Promise<ThreadRow[]> {
  const params: unknown[] = [tenantId, kind];
  const sees = seesWorkflowSql({ owner: 'w.owner', state: 'w.state' }, viewer, params);
  const r = await sql.query<ThreadRow>(
    `SELECT w.thread_id::text AS thread_id, w.tenant_id, w.status, w.state->>'service_id' AS service_id, w.created_at, w.updated_at FROM agents.workflows w
      WHERE w.tenant_id = $1 AND w.kind = $2 AND ${sees}
      ORDER BY w.created_at DESC, w.thread_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, page.limit, page.offset],
  );
  return r.rows;
}

/** Takes a column's cells out of every row of a list. */
export async function removeColumnCells(sql: Sql, tenantId: string, listId: string, columnId: string): Promise<void> {
  await sql.query(`UPDATE agents.list_rows SET cells = cells - $3::text WHERE tenant_id = $1 AND list_id = $2 AND cells ? $3::text`, [tenantId, listId, columnId]);
}
