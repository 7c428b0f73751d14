import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { BlobInfo, BlobStore } from '../ports/blob-store';
import type { Db } from '../ports/db';
import { MAX_BLOB_BYTES, readBody } from './read-body';

export { MAX_BLOB_BYTES } from './read-body';

interface BlobRow {
  key: string;
  size: string;
  content_type: string;
  sha256: string;
  created_at: Date;
  data?: Buffer;
}

/**
 * Blobs in PostgreSQL (`runtime.blobs`, row-level security by tenant), the default store. The same code runs on
 * PGlite in embedded mode. Putting an existing key replaces it.
 */
export class PostgresBlobStore implements BlobStore {
  readonly kind = 'postgres' as const;

  constructor(private readonly db: Db) {}

  async put(tenantId: string, key: string, data: Buffer | Readable, contentType: string, maxBytes = MAX_BLOB_BYTES): Promise<BlobInfo> {
    if (!key) throw new Error('a blob needs a key');
    const bytes = await readBody(data, Math.min(maxBytes, MAX_BLOB_BYTES));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const r = await this.db.withTenant(tenantId, (sql) =>
      sql.query<BlobRow>(
        `INSERT INTO runtime.blobs (tenant_id, key, content_type, size, sha256, data) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tenant_id, key) DO UPDATE
           SET content_type = excluded.content_type, size = excluded.size, sha256 = excluded.sha256,
               data = excluded.data, created_at = now()
         RETURNING key, size, content_type, sha256, created_at`,
        [tenantId, key, contentType, bytes.length, sha256, bytes],
      ),
    );
    return toInfo(r.rows[0]!);
  }

  async get(tenantId: string, key: string): Promise<{ info: BlobInfo; data: Buffer } | null> {
    const r = await this.db.withTenant(tenantId, (sql) =>
      sql.query<BlobRow>(`SELECT key, size, content_type, sha256, created_at, data FROM runtime.blobs WHERE tenant_id = $1 AND key = $2`, [
        tenantId,
        key,
      ]),
    );
    const row = r.rows[0];
    return row ? { info: toInfo(row), data: row.data! } : null;
  }

  async stat(tenantId: string, keys: readonly string[]): Promise<BlobInfo[]> {
    if (keys.length === 0) return [];
    const r = await this.db.withTenant(tenantId, (sql) =>
      sql.query<BlobRow>(`SELECT key, size, content_type, sha256, created_at FROM runtime.blobs WHERE tenant_id = $1 AND key = ANY($2::text[])`, [tenantId, [...new Set(keys)]]),
    );
    return r.rows.map(toInfo);
  }

  async delete(tenantId: string, key: string): Promise<void> {
    await this.db.withTenant(tenantId, (sql) => sql.query(`DELETE FROM runtime.blobs WHERE tenant_id = $1 AND key = $2`, [tenantId, key]));
  }
}

function toInfo(row: BlobRow): BlobInfo {
  return { key: row.key, size: Number(row.size), contentType: row.content_type, sha256: row.sha256, createdAt: row.created_at };
}
