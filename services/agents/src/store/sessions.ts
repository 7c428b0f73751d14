import type { Sql } from '@lore/runtime';

/** Across tenants, by id only (a security-definer function, migration 0007): sessions a dead worker left. */
export async function sessionsToResume(sql: Sql, unclaimedMs: number, limit: number): Promise<Array<{ tenant_id: string; thread_id: string }>> {
  const r = await sql.query<{ tenant_id: string; thread_id: string }>(`SELECT tenant_id, thread_id::text AS thread_id FROM agents.sessions_to_resume($1, $2)`, [Math.floor(unclaimedMs), limit]);
  return r.rows;
}
