import type { Db, Sql } from '../ports/db';
import type { BlobStore } from '../ports/blob-store';

/**
 * Blobs written before the record that owns them (migration 0005): the writer announces the key (`announceBlob`, its
 * own statement, committed before the bytes are written), settles it in the transaction that records the owner
 * (`settleBlob`), and its service sweeps what was announced long ago and never settled (`sweepAbandonedBlobs`): a
 * process killed between the bytes and the record, whose bytes no record names. Each service sweeps only what it
 * announced (`owner`).
 */
export async function announceBlob(db: Db, owner: string, tenantId: string, key: string): Promise<void> {
  await db.query(`INSERT INTO runtime.blob_intents (owner, tenant_id, blob_key) VALUES ($1, $2, $3) ON CONFLICT (tenant_id, blob_key) DO NOTHING`, [owner, tenantId, key]);
}

/** The owner of `key` is recorded in `sql`'s transaction: the key is no longer abandoned once that commits. */
export async function settleBlob(sql: Sql, tenantId: string, key: string): Promise<void> {
  await sql.query(`DELETE FROM runtime.blob_intents WHERE tenant_id = $1 AND blob_key = $2`, [tenantId, key]);
}

/**
 * Deletes the bytes of keys `owner` announced more than `olderThanMs` ago and never settled, then their rows; at most
 * `batch` a call. A key whose bytes cannot be deleted now keeps its row for the next sweep. Returns the keys swept.
 */
export async function sweepAbandonedBlobs(db: Db, blobs: BlobStore, owner: string, olderThanMs: number, batch = 200): Promise<number> {
  const due = await db.query<{ tenant_id: string; blob_key: string }>(
    `SELECT tenant_id, blob_key FROM runtime.blob_intents
      WHERE owner = $1 AND created_at < now() - make_interval(secs => $2::double precision / 1000)
      ORDER BY created_at LIMIT $3`,
    [owner, olderThanMs, batch],
  );
  let swept = 0;
  for (const row of due.rows) {
    await blobs.delete(row.tenant_id, row.blob_key);
    await db.query(`DELETE FROM runtime.blob_intents WHERE tenant_id = $1 AND blob_key = $2`, [row.tenant_id, row.blob_key]);
    swept += 1;
  }
  return swept;
}
