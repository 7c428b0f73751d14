import type { Sql } from '@lore/runtime';
import { ensureUnassignedVault, insertMemoryRow } from './memories';

/**
 * Storage side of erasing a memory. Every statement is tenant- and memory-scoped and deletes at most `limit` rows
 * (or the rows of a given batch of ids), so each runs in a short transaction whatever the memory's size.
 */

/**
 * Starts (or restarts) the erasure: the memory's row becomes the tombstone. The row is created when the memory was
 * never written to, then locked FOR UPDATE, which waits for every transaction holding it KEY SHARE (a write that
 * checked `memoryErasing`, or inserted a row referencing the memory) to finish.
 */
export async function beginErasure(sql: Sql, tenantId: string, memoryId: string, eventId: string): Promise<void> {
  await insertMemoryRow(sql, tenantId, memoryId);
  await sql.query(`SELECT 1 FROM graph.memories WHERE tenant_id = $1 AND memory_id = $2 FOR UPDATE`, [tenantId, memoryId]);
  await sql.query(
    `UPDATE graph.memories SET erase_requested_at = now(), erase_event_id = $3, erased_at = NULL, last_health_at = NULL
      WHERE tenant_id = $1 AND memory_id = $2`,
    [tenantId, memoryId, eventId],
  );
}

export interface ErasureState {
  erase_event_id: string | null;
  erased_at: Date | null;
}

export async function erasureState(sql: Sql, tenantId: string, memoryId: string): Promise<ErasureState | null> {
  const r = await sql.query<ErasureState>(`SELECT erase_event_id, erased_at FROM graph.memories WHERE tenant_id = $1 AND memory_id = $2`, [
    tenantId,
    memoryId,
  ]);
  return r.rows[0] ?? null;
}

/** Marks the erasure of `eventId` complete; the tombstone stays. */
export async function finishErasure(sql: Sql, tenantId: string, memoryId: string, eventId: string): Promise<boolean> {
  const r = await sql.query(
    `UPDATE graph.memories SET erased_at = now() WHERE tenant_id = $1 AND memory_id = $2 AND erase_event_id = $3 AND erased_at IS NULL`,
    [tenantId, memoryId, eventId],
  );
  return r.rowCount === 1;
}

/**
 * The memory id was created again: writes are allowed again and the memory starts empty, with its `v_unassigned`
 * vault (processes that saw the memory before skip the lazy creation). False when there was no tombstone.
 */
export async function liftErasure(sql: Sql, tenantId: string, memoryId: string): Promise<boolean> {
  const r = await sql.query(
    `UPDATE graph.memories SET erase_requested_at = NULL, erase_event_id = NULL, erased_at = NULL
      WHERE tenant_id = $1 AND memory_id = $2 AND erase_requested_at IS NOT NULL`,
    [tenantId, memoryId],
  );
  if (r.rowCount === 0) return false;
  await ensureUnassignedVault(sql, tenantId, memoryId);
  return true;
}

export async function uploadBatch(sql: Sql, tenantId: string, memoryId: string, limit: number): Promise<Array<{ upload_id: string; blob_key: string }>> {
  const r = await sql.query<{ upload_id: string; blob_key: string }>(
    `SELECT upload_id, blob_key FROM graph.uploads WHERE tenant_id = $1 AND memory_id = $2 LIMIT $3`,
    [tenantId, memoryId, limit],
  );
  return r.rows;
}

export async function deleteUploads(sql: Sql, tenantId: string, memoryId: string, uploadIds: string[]): Promise<number> {
  const r = await sql.query(`DELETE FROM graph.uploads WHERE tenant_id = $1 AND memory_id = $2 AND upload_id = ANY($3::text[])`, [
    tenantId,
    memoryId,
    uploadIds,
  ]);
  return r.rowCount;
}

export async function documentBatch(sql: Sql, tenantId: string, memoryId: string, limit: number): Promise<string[]> {
  const r = await sql.query<{ doc_id: string }>(`SELECT doc_id FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 LIMIT $3`, [
    tenantId,
    memoryId,
    limit,
  ]);
  return r.rows.map((x) => x.doc_id);
}

/** Up to `limit` chunks of the given documents; their postings go with them (foreign key cascade). */
export async function deleteChunksOf(sql: Sql, tenantId: string, docIds: string[], limit: number): Promise<number> {
  const r = await sql.query(
    `DELETE FROM graph.chunks
      WHERE tenant_id = $1
        AND chunk_id = ANY(ARRAY(SELECT chunk_id FROM graph.chunks WHERE tenant_id = $1 AND doc_id = ANY($2::text[]) LIMIT $3))`,
    [tenantId, docIds, limit],
  );
  return r.rowCount;
}

/** Documents whose chunks, facts and mentions are already gone (the cascade then has nothing left to do). */
export async function deleteDocuments(sql: Sql, tenantId: string, memoryId: string, docIds: string[]): Promise<number> {
  const r = await sql.query(`DELETE FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = ANY($3::text[])`, [
    tenantId,
    memoryId,
    docIds,
  ]);
  return r.rowCount;
}

/**
 * Tables holding rows per memory (besides documents with their chunks and postings, and uploads with their blobs,
 * which have their own steps; `graph.memories` keeps the tombstone).
 */
export const MEMORY_TABLES = ['facts', 'entity_mentions', 'contradictions', 'entities', 'term_stats', 'corpus_stats', 'vaults'] as const;

export type MemoryTable = (typeof MEMORY_TABLES)[number];

/**
 * Deletes up to `limit` rows of the memory from one of the tables above (the name comes from the constant, never
 * from input). Rows are addressed by ctid: a TID scan (equality on tids is leakproof, so row-level security keeps
 * it) costs the batch, not the memory's size, for tables with composite keys too.
 */
export async function deleteMemoryRows(sql: Sql, table: MemoryTable, tenantId: string, memoryId: string, limit: number): Promise<number> {
  const r = await sql.query(
    `DELETE FROM graph.${table}
      WHERE tenant_id = $1 AND memory_id = $2
        AND ctid = ANY(ARRAY(SELECT ctid FROM graph.${table} WHERE tenant_id = $1 AND memory_id = $2 LIMIT $3))`,
    [tenantId, memoryId, limit],
  );
  return r.rowCount;
}
