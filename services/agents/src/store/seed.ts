import type { Sql } from '@lore/runtime';

/** A row of agents.seed_statuses (migration 0005). */
export interface SeedStatusRow {
  seed_type: string;
  prompt_id: string;
  prompt: string;
  status: string;
  thread_id: string | null;
  list_id: string | null;
  reason: string;
  created_at: Date;
  updated_at: Date;
}

const COLS = 'seed_type, prompt_id, prompt, status, thread_id::text AS thread_id, list_id::text AS list_id, reason, created_at, updated_at';

/** Every prompt of a seed type gets a row (`pending`) if it has none; answers the rows in the order of `prompts`. */
export async function ensureSeedItems(sql: Sql, tenantId: string, seedType: string, owner: string, prompts: ReadonlyArray<{ prompt_id: string; prompt: string }>): Promise<SeedStatusRow[]> {
  await sql.query(
    `INSERT INTO agents.seed_statuses (tenant_id, seed_type, prompt_id, prompt, status, owner)
     SELECT $1, $2, p.id, p.prompt, 'pending', $3 FROM unnest($4::text[], $5::text[]) AS p(id, prompt)
     ON CONFLICT (tenant_id, seed_type, prompt_id) DO NOTHING`,
    [tenantId, seedType, owner, prompts.map((p) => p.prompt_id), prompts.map((p) => p.prompt)],
  );
  const r = await sql.query<SeedStatusRow>(`SELECT ${COLS} FROM agents.seed_statuses WHERE tenant_id = $1 AND seed_type = $2 AND prompt_id = ANY($3::text[])`, [
    tenantId,
    seedType,
    prompts.map((p) => p.prompt_id),
  ]);
  const byId = new Map(r.rows.map((row) => [row.prompt_id, row]));
  return prompts.map((p) => byId.get(p.prompt_id)).filter((row): row is SeedStatusRow => row !== undefined);
}

/**
 * Takes an item for this start (status `processing`; its thread and list ids stay): a pending or failed one, or one a
 * start left mid-way (`processing`, `list_created`, `people_workflow_started`) untouched for `staleMs` (its process
 * stopped). Null when it is not to be taken: completed, or in another start's hands; the conditional update lets
 * exactly one of two concurrent starts have it.
 */
export async function claimSeedItem(sql: Sql, tenantId: string, seedType: string, promptId: string, owner: string, staleMs: number): Promise<SeedStatusRow | null> {
  const r = await sql.query<SeedStatusRow>(
    `UPDATE agents.seed_statuses SET status = 'processing', reason = '', owner = $4, updated_at = now()
      WHERE tenant_id = $1 AND seed_type = $2 AND prompt_id = $3
        AND (status IN ('pending', 'failed')
             OR (status IN ('processing', 'list_created', 'people_workflow_started') AND updated_at < now() - make_interval(secs => $5::double precision / 1000)))
      RETURNING ${COLS}`,
    [tenantId, seedType, promptId, owner, staleMs],
  );
  return r.rows[0] ?? null;
}

export async function updateSeedItem(sql: Sql, tenantId: string, seedType: string, promptId: string, patch: { status: string; thread_id?: string | null; list_id?: string | null; reason?: string }): Promise<void> {
  await sql.query(
    `UPDATE agents.seed_statuses SET status = $4, thread_id = CASE WHEN $5 THEN $6::uuid ELSE thread_id END, list_id = CASE WHEN $7 THEN $8::uuid ELSE list_id END,
            reason = $9, updated_at = now()
      WHERE tenant_id = $1 AND seed_type = $2 AND prompt_id = $3`,
    [tenantId, seedType, promptId, patch.status, patch.thread_id !== undefined, patch.thread_id ?? null, patch.list_id !== undefined, patch.list_id ?? null, patch.reason ?? ''],
  );
}

export async function getSeedItem(sql: Sql, tenantId: string, seedType: string, promptId: string): Promise<SeedStatusRow | null> {
  const r = await sql.query<SeedStatusRow>(`SELECT ${COLS} FROM agents.seed_statuses WHERE tenant_id = $1 AND seed_type = $2 AND prompt_id = $3`, [tenantId, seedType, promptId]);
  return r.rows[0] ?? null;
}

/** The tenant's seed statuses (of one type, or all), by type and prompt. */
export async function listSeedItems(sql: Sql, tenantId: string, seedType: string | null, limit: number): Promise<SeedStatusRow[]> {
  const r = await sql.query<SeedStatusRow>(
    `SELECT ${COLS} FROM agents.seed_statuses WHERE tenant_id = $1 AND ($2::text IS NULL OR seed_type = $2) ORDER BY seed_type, created_at, prompt_id LIMIT $3`,
    [tenantId, seedType, limit],
  );
  return r.rows;
}

/** Deletes the tenant's seed statuses (of one type, or all; only completed ones unless `all`); answers what went. */
export async function deleteSeedItems(sql: Sql, tenantId: string, seedType: string | null, all: boolean): Promise<Array<{ seed_type: string; prompt_id: string }>> {
  const r = await sql.query<{ seed_type: string; prompt_id: string }>(
    `DELETE FROM agents.seed_statuses WHERE tenant_id = $1 AND ($2::text IS NULL OR seed_type = $2) AND ($3 OR status = 'completed')
      RETURNING seed_type, prompt_id`,
    [tenantId, seedType, all],
  );
  return r.rows.sort((a, b) => (a.seed_type + a.prompt_id).localeCompare(b.seed_type + b.prompt_id));
}
