import type { Db, Sql } from '@lore/runtime';
import { isoRequired } from './rows';

export interface Project {
  project_id: string;
  workspace_id: string;
  name: string;
  slug: string;
  description: string;
  icon: string;
  created_at: string;
}

const COLS = 'project_id, workspace_id, name, slug, description, icon, created_at';

function toProject(r: Record<string, unknown>): Project {
  return {
    project_id: String(r.project_id),
    workspace_id: String(r.workspace_id),
    name: String(r.name),
    slug: String(r.slug),
    description: String(r.description ?? ''),
    icon: String(r.icon ?? ''),
    created_at: isoRequired(r.created_at),
  };
}

export async function listProjects(db: Db, tenantId: string, workspaceId: string, opts: { onlyProjectId?: string | null; limit: number }): Promise<Project[]> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(
      `SELECT ${COLS} FROM gateway.projects WHERE tenant_id = $1 AND workspace_id = $2 AND ($3::text IS NULL OR project_id = $3)
        ORDER BY created_at, project_id LIMIT $4`,
      [tenantId, workspaceId, opts.onlyProjectId ?? null, opts.limit],
    );
    return r.rows.map(toProject);
  });
}

/** Projects of the tenant, all workspaces: what `max_projects` counts. */
export async function countProjectsIn(sql: Sql, tenantId: string): Promise<number> {
  const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM gateway.projects WHERE tenant_id = $1`, [tenantId]);
  return Number(r.rows[0]?.n ?? 0);
}

export async function getProject(db: Db, tenantId: string, projectId: string): Promise<Project | null> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(`SELECT ${COLS} FROM gateway.projects WHERE tenant_id = $1 AND project_id = $2`, [tenantId, projectId]);
    return r.rows[0] ? toProject(r.rows[0]) : null;
  });
}

/** The workspace a project of this tenant lives in; null when the tenant has no such project. */
export async function projectWorkspaceIn(sql: Sql, tenantId: string, projectId: string): Promise<string | null> {
  const r = await sql.query<{ workspace_id: string }>(`SELECT workspace_id FROM gateway.projects WHERE tenant_id = $1 AND project_id = $2`, [tenantId, projectId]);
  return r.rows[0]?.workspace_id ?? null;
}

/**
 * Inserts a project in the caller's transaction; null when the slug is taken in the workspace. The conflict does
 * not abort the transaction, so the caller can try another slug under the same lock.
 */
export async function insertProjectIn(
  sql: Sql,
  tenantId: string,
  p: { project_id: string; workspace_id: string; name: string; slug: string; description: string; icon: string },
): Promise<Project | null> {
  const r = await sql.query(
    `INSERT INTO gateway.projects (tenant_id, project_id, workspace_id, name, slug, description, icon)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant_id, workspace_id, slug) DO NOTHING RETURNING ${COLS}`,
    [tenantId, p.project_id, p.workspace_id, p.name, p.slug, p.description, p.icon],
  );
  return r.rows[0] ? toProject(r.rows[0]) : null;
}
