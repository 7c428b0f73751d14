import type { Db, Sql } from '@lore/runtime';
import { isoRequired } from './rows';

export interface Workspace {
  workspace_id: string;
  name: string;
  slug: string;
  primary_memory_id: string | null;
  created_at: string;
}

const COLS = 'workspace_id, name, slug, primary_memory_id, created_at';

function toWorkspace(r: Record<string, unknown>): Workspace {
  return {
    workspace_id: String(r.workspace_id),
    name: String(r.name),
    slug: String(r.slug),
    primary_memory_id: (r.primary_memory_id as string | null) ?? null,
    created_at: isoRequired(r.created_at),
  };
}

export async function insertWorkspace(sql: Sql, tenantId: string, ws: { workspace_id: string; name: string; slug: string }): Promise<Workspace> {
  const r = await sql.query(
    `INSERT INTO gateway.workspaces (tenant_id, workspace_id, name, slug) VALUES ($1, $2, $3, $4) RETURNING ${COLS}`,
    [tenantId, ws.workspace_id, ws.name, ws.slug],
  );
  return toWorkspace(r.rows[0]!);
}

/** The tenant's workspaces (counted up to `limit`); the caller holds the tenant's row (lockTenantIn). */
export async function countWorkspacesIn(sql: Sql, tenantId: string, limit: number): Promise<number> {
  const r = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM gateway.workspaces WHERE tenant_id = $1 LIMIT $2) counted`, [tenantId, limit]);
  return r.rows[0]!.n;
}

export async function setPrimaryMemory(sql: Sql, tenantId: string, workspaceId: string, memoryId: string): Promise<void> {
  await sql.query(`UPDATE gateway.workspaces SET primary_memory_id = $3 WHERE tenant_id = $1 AND workspace_id = $2`, [tenantId, workspaceId, memoryId]);
}

/** A deleted memory stops being any workspace's primary memory; answers the workspaces whose primary it was. */
export async function clearPrimaryMemoryIn(sql: Sql, tenantId: string, memoryId: string): Promise<string[]> {
  const r = await sql.query<{ workspace_id: string }>(
    `UPDATE gateway.workspaces SET primary_memory_id = NULL WHERE tenant_id = $1 AND primary_memory_id = $2 RETURNING workspace_id`,
    [tenantId, memoryId],
  );
  return r.rows.map((w) => w.workspace_id);
}

/**
 * Gives each of these workspaces whose primary memory is missing — none, deleted, or moved to another workspace — its
 * oldest live memory as primary (none when it has none left). Answers how many workspaces changed.
 */
export async function promotePrimaryMemoryIn(sql: Sql, tenantId: string, workspaceIds: readonly string[]): Promise<number> {
  const r = await sql.query(
    `UPDATE gateway.workspaces w
        SET primary_memory_id = (SELECT m.memory_id FROM gateway.memories m
                                  WHERE m.tenant_id = w.tenant_id AND m.workspace_id = w.workspace_id AND m.deleted_at IS NULL
                                  ORDER BY m.created_at, m.memory_id LIMIT 1)
      WHERE w.tenant_id = $1 AND w.workspace_id = ANY($2::text[])
        AND NOT EXISTS (SELECT 1 FROM gateway.memories p
                         WHERE p.tenant_id = w.tenant_id AND p.memory_id = w.primary_memory_id AND p.workspace_id = w.workspace_id AND p.deleted_at IS NULL)
        AND EXISTS (SELECT 1 FROM gateway.memories m WHERE m.tenant_id = w.tenant_id AND m.workspace_id = w.workspace_id AND m.deleted_at IS NULL)`,
    [tenantId, [...workspaceIds]],
  );
  return r.rowCount;
}

export async function listWorkspacesIn(sql: Sql, tenantId: string, limit = 1000): Promise<Workspace[]> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.workspaces WHERE tenant_id = $1 ORDER BY created_at, workspace_id LIMIT $2`, [tenantId, limit]);
  return r.rows.map(toWorkspace);
}

export async function listWorkspaces(db: Db, tenantId: string): Promise<Workspace[]> {
  return db.withTenant(tenantId, (sql) => listWorkspacesIn(sql, tenantId));
}

export async function getWorkspaceIn(sql: Sql, tenantId: string, workspaceId: string): Promise<Workspace | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.workspaces WHERE tenant_id = $1 AND workspace_id = $2`, [tenantId, workspaceId]);
  return r.rows[0] ? toWorkspace(r.rows[0]) : null;
}

export async function slugTaken(sql: Sql, tenantId: string, slug: string): Promise<boolean> {
  const r = await sql.query(`SELECT 1 FROM gateway.workspaces WHERE tenant_id = $1 AND slug = $2`, [tenantId, slug]);
  return r.rowCount > 0;
}
