import type { Sql } from '@lore/runtime';
import { UNASSIGNED_VAULT } from '../domain/routing';

/**
 * Per-memory state is created lazily on first use: the memory row and its `v_unassigned` vault. Idempotent and
 * race-free (ON CONFLICT), so two first requests at once both succeed.
 */
export async function ensureMemory(sql: Sql, tenantId: string, memoryId: string): Promise<void> {
  await sql.query(`INSERT INTO graph.memories (tenant_id, memory_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [tenantId, memoryId]);
  await sql.query(
    `INSERT INTO graph.vaults (tenant_id, memory_id, vault_id, name, description, examples)
     VALUES ($1, $2, $3, 'Unassigned', 'Content the classifier was not confident about; waiting for review.', '[]'::jsonb)
     ON CONFLICT DO NOTHING`,
    [tenantId, memoryId, UNASSIGNED_VAULT],
  );
}

/** Claims the right to publish a health assessment: true at most once per `intervalMs` per memory. */
export async function claimHealthSlot(sql: Sql, tenantId: string, memoryId: string, intervalMs: number): Promise<boolean> {
  const r = await sql.query(
    `UPDATE graph.memories SET last_health_at = now()
      WHERE tenant_id = $1 AND memory_id = $2
        AND (last_health_at IS NULL OR last_health_at < now() - make_interval(secs => $3))`,
    [tenantId, memoryId, intervalMs / 1000],
  );
  return r.rowCount === 1;
}
