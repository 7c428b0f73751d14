import type { Sql } from '@lore/runtime';

/** Deep research's own reads of agents.workflows (kind `deep_research`); the row and its events are store/workflows.ts'. */

export interface ActiveResearchRow {
  thread_id: string;
  status: string;
  current_step: string;
  prompt: string;
  service_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The tenant's research workflows still active (running, or waiting for a clarification), of `owner` unless null; newest first. */
export async function activeResearch(sql: Sql, tenantId: string, owner: string | null, statuses: readonly string[], limit: number): Promise<ActiveResearchRow[]> {
  const r = await sql.query<ActiveResearchRow>(
    `SELECT thread_id::text AS thread_id, status, current_step, prompt, state->>'service_id' AS service_id, created_at, updated_at
       FROM agents.workflows
      WHERE tenant_id = $1 AND kind = 'deep_research' AND status = ANY($2::text[]) AND ($3::text IS NULL OR owner = $3)
      ORDER BY created_at DESC, thread_id
      LIMIT $4`,
    [tenantId, statuses, owner, limit],
  );
  return r.rows;
}

/** Across tenants, by id only (a security-definer function, migration 0006): research runs a dead worker left. */
export async function researchToResume(sql: Sql, unclaimedMs: number, limit: number): Promise<Array<{ tenant_id: string; thread_id: string }>> {
  const r = await sql.query<{ tenant_id: string; thread_id: string }>(`SELECT tenant_id, thread_id::text AS thread_id FROM agents.research_to_resume($1, $2)`, [Math.floor(unclaimedMs), limit]);
  return r.rows;
}
