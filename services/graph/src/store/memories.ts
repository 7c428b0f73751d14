import type { Sql } from '@lore/runtime';
import { UNASSIGNED_VAULT } from '../domain/routing';

/** The memory's row; idempotent and race-free (ON CONFLICT), so two first requests at once both succeed. */
export async function insertMemoryRow(sql: Sql, tenantId: string, memoryId: string): Promise<void> {
  await sql.query(`INSERT INTO graph.memories (tenant_id, memory_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [tenantId, memoryId]);
}

/** The vault every memory has: where documents wait for review. */
export async function ensureUnassignedVault(sql: Sql, tenantId: string, memoryId: string): Promise<void> {
  await sql.query(
    `INSERT INTO graph.vaults (tenant_id, memory_id, vault_id, name, description, examples)
     VALUES ($1, $2, $3, 'Unassigned', 'Content the classifier was not confident about; waiting for review.', '[]'::jsonb)
     ON CONFLICT DO NOTHING`,
    [tenantId, memoryId, UNASSIGNED_VAULT],
  );
}

/** Per-memory state is created lazily on first use: the memory row and its `v_unassigned` vault. */
export async function ensureMemory(sql: Sql, tenantId: string, memoryId: string): Promise<void> {
  await insertMemoryRow(sql, tenantId, memoryId);
  await ensureUnassignedVault(sql, tenantId, memoryId);
}

/**
 * True when the memory is being (or was) erased, so nothing may be written to it. Takes a KEY SHARE lock on the
 * memory's row until the transaction ends: an erasure starting meanwhile (it locks the row FOR UPDATE) waits until
 * this transaction committed, and so sees and erases what it wrote; a transaction checking after the erasure
 * started waits for it and reads the tombstone. A memory without a row has never been written to: false.
 */
export async function memoryErasing(sql: Sql, tenantId: string, memoryId: string): Promise<boolean> {
  const r = await sql.query<{ erasing: boolean }>(
    `SELECT erase_requested_at IS NOT NULL AS erasing FROM graph.memories WHERE tenant_id = $1 AND memory_id = $2 FOR KEY SHARE`,
    [tenantId, memoryId],
  );
  return r.rows[0]?.erasing ?? false;
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
