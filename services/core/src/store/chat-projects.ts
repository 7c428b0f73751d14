import type { Sql } from '@lore/runtime';
import { countUpTo, lockCount } from './caps';

export interface ChatProjectRow {
  project_id: number;
  owner: string;
  name: string;
  description: string;
  time_created: Date;
  time_updated: Date;
  session_count: number;
}

const COLS = `p.project_id, p.owner, p.name, p.description, p.time_created, p.time_updated,
  (SELECT count(*)::int FROM core.chat_sessions s WHERE s.tenant_id = p.tenant_id AND s.project_id = p.project_id AND s.deleted_at IS NULL) AS session_count`;

export async function insertProject(sql: Sql, tenantId: string, owner: string, name: string, description: string): Promise<ChatProjectRow> {
  const r = await sql.query<ChatProjectRow>(
    `WITH p AS (INSERT INTO core.chat_projects (tenant_id, owner, name, description) VALUES ($1, $2, $3, $4) RETURNING *) SELECT ${COLS} FROM p`,
    [tenantId, owner, name, description],
  );
  return r.rows[0]!;
}

/** The owner's projects (counted up to `limit`), after taking the lock every project create of that owner takes. */
export async function countProjectsLocked(sql: Sql, tenantId: string, owner: string, limit: number): Promise<number> {
  await lockCount(sql, 'core.chat_projects', `${tenantId}/${owner}`);
  return countUpTo(sql, 'FROM core.chat_projects WHERE tenant_id = $1 AND owner = $2', [tenantId, owner], limit);
}

/** The owner's first `limit` projects, oldest first. */
export async function listProjects(sql: Sql, tenantId: string, owner: string, limit: number): Promise<ChatProjectRow[]> {
  const r = await sql.query<ChatProjectRow>(`SELECT ${COLS} FROM core.chat_projects p WHERE p.tenant_id = $1 AND p.owner = $2 ORDER BY p.project_id LIMIT $3`, [tenantId, owner, limit]);
  return r.rows;
}

/** The owner's project; `lock` takes a share lock (a session moving into it must not see it deleted meanwhile). */
export async function getProject(sql: Sql, tenantId: string, owner: string, id: number, lock = false): Promise<ChatProjectRow | null> {
  const r = await sql.query<ChatProjectRow>(
    `SELECT ${COLS} FROM core.chat_projects p WHERE p.tenant_id = $1 AND p.owner = $2 AND p.project_id = $3${lock ? ' FOR SHARE OF p' : ''}`,
    [tenantId, owner, id],
  );
  return r.rows[0] ?? null;
}

export async function updateProject(sql: Sql, tenantId: string, owner: string, id: number, patch: { name?: string; description?: string }): Promise<ChatProjectRow | null> {
  const r = await sql.query<ChatProjectRow>(
    `WITH p AS (
       UPDATE core.chat_projects SET name = COALESCE($4, name), description = COALESCE($5, description), time_updated = now()
        WHERE tenant_id = $1 AND owner = $2 AND project_id = $3 RETURNING *
     ) SELECT ${COLS} FROM p`,
    [tenantId, owner, id, patch.name ?? null, patch.description ?? null],
  );
  return r.rows[0] ?? null;
}

/** Deletes the owner's project; its sessions stay, outside any project (the foreign key sets theirs to null). */
export async function deleteProject(sql: Sql, tenantId: string, owner: string, id: number): Promise<boolean> {
  const r = await sql.query(`DELETE FROM core.chat_projects WHERE tenant_id = $1 AND owner = $2 AND project_id = $3`, [tenantId, owner, id]);
  return r.rowCount > 0;
}
