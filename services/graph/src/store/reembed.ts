import type { Db, Sql } from '@lore/runtime';
import { vectorLiteral } from './index-store';

/** A chunk whose vectors come from another model, with what the indexer embedded for it. */
export interface ChunkToReembed {
  chunk_id: string;
  title: string;
  heading: string | null;
  content: string;
}

/**
 * Tenants holding chunks with vectors of another model than `model` (or none). Read as the schema owner, since the
 * re-embed visits every tenant: in embedded mode (PGlite) that is the superuser; a cluster's owner role is subject
 * to the forced row-level security and sees no tenant, which is why only embedded mode re-embeds (docs/ai.md).
 */
export async function tenantsToReembed(db: Db, model: string): Promise<string[]> {
  return db.asOwner(async (sql) => {
    const r = await sql.query<{ tenant_id: string }>(
      `SELECT DISTINCT tenant_id FROM graph.chunks WHERE embedding_model IS DISTINCT FROM $1`,
      [model],
    );
    return r.rows.map((row) => row.tenant_id);
  });
}

/** Up to `limit` chunks of one tenant whose vectors do not come from `model`, oldest first. */
export async function chunksToReembed(sql: Sql, tenantId: string, model: string, limit: number): Promise<ChunkToReembed[]> {
  const r = await sql.query<ChunkToReembed>(
    `SELECT c.chunk_id::text AS chunk_id, d.title, c.heading, c.content
       FROM graph.chunks c
       JOIN graph.documents d ON d.tenant_id = c.tenant_id AND d.doc_id = c.doc_id
      WHERE c.tenant_id = $1 AND c.embedding_model IS DISTINCT FROM $2
      ORDER BY c.chunk_id
      LIMIT $3`,
    [tenantId, model, limit],
  );
  return r.rows;
}

/**
 * Gives chunks the vectors of `model`. A chunk deleted meanwhile (its document or memory erased) is skipped; one
 * that already carries `model` is left alone. Returns the number of chunks written.
 */
export async function writeReembedded(sql: Sql, tenantId: string, model: string, chunkIds: string[], vectors: number[][]): Promise<number> {
  if (chunkIds.length === 0) return 0;
  const r = await sql.query(
    `UPDATE graph.chunks c
        SET embedding = u.emb::vector, embedding_dims = $4, embedding_model = $2
       FROM unnest($3::bigint[], $5::text[]) AS u(chunk_id, emb)
      WHERE c.tenant_id = $1 AND c.chunk_id = u.chunk_id AND c.embedding_model IS DISTINCT FROM $2`,
    [tenantId, model, chunkIds, vectors[0]?.length ?? 0, vectors.map(vectorLiteral)],
  );
  return r.rowCount ?? 0;
}

/** Chunks, over every tenant, whose vectors do not come from `model` (read as the schema owner, as above). */
export async function countChunksToReembed(db: Db, model: string): Promise<number> {
  return db.asOwner(async (sql) => {
    const r = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM graph.chunks WHERE embedding_model IS DISTINCT FROM $1`, [model]);
    return Number(r.rows[0]?.n ?? 0);
  });
}
