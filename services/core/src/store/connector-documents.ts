import type { Sql } from '@lore/runtime';
import type { Validators } from '../connectors/source';

/** What the indexer keeps of one document of a pair. */
export interface KeptDocument {
  doc_key: string;
  doc_id: string | null;
  validators: Validators;
}

/** The validators of every document of the pair, by the source's id (what the next poll and listing start from). */
export async function keptValidators(sql: Sql, tenantId: string, ccPairId: number): Promise<Map<string, Validators>> {
  const r = await sql.query<{ doc_key: string; content_hash: string; etag: string | null; last_modified: string | null }>(
    `SELECT doc_key, content_hash, etag, last_modified FROM core.connector_documents WHERE tenant_id = $1 AND cc_pair_id = $2`,
    [tenantId, ccPairId],
  );
  return new Map(
    r.rows.map((x) => [x.doc_key, { hash: x.content_hash, ...(x.etag ? { etag: x.etag } : {}), ...(x.last_modified ? { lastModified: x.last_modified } : {}) }]),
  );
}

/**
 * Records documents the memory now holds (a new one, or a new version of a known one); returns how many of them the
 * pair did not have before (what its document count grows by).
 */
export async function keepDocuments(sql: Sql, tenantId: string, ccPairId: number, docs: KeptDocument[]): Promise<number> {
  if (docs.length === 0) return 0;
  // A row the statement inserted has no deleting transaction (xmax 0); one it updated on conflict has this one.
  const r = await sql.query<{ added: number }>(
    `WITH kept AS (
       INSERT INTO core.connector_documents (tenant_id, cc_pair_id, doc_key, doc_id, content_hash, etag, last_modified)
       SELECT $1, $2, x.doc_key, x.doc_id, x.content_hash, x.etag, x.last_modified
         FROM jsonb_to_recordset($3::jsonb) AS x(doc_key text, doc_id text, content_hash text, etag text, last_modified text)
       ON CONFLICT (tenant_id, cc_pair_id, doc_key) DO UPDATE
         SET doc_id = excluded.doc_id, content_hash = excluded.content_hash, etag = excluded.etag,
             last_modified = excluded.last_modified, time_indexed = now()
       RETURNING xmax = 0 AS inserted
     )
     SELECT count(*) FILTER (WHERE inserted)::int AS added FROM kept`,
    [
      tenantId,
      ccPairId,
      JSON.stringify(docs.map((d) => ({ doc_key: d.doc_key, doc_id: d.doc_id, content_hash: d.validators.hash, etag: d.validators.etag ?? null, last_modified: d.validators.lastModified ?? null }))),
    ],
  );
  return r.rows[0]?.added ?? 0;
}

export async function forgetDocuments(sql: Sql, tenantId: string, ccPairId: number, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const r = await sql.query(`DELETE FROM core.connector_documents WHERE tenant_id = $1 AND cc_pair_id = $2 AND doc_key = ANY($3::text[])`, [tenantId, ccPairId, keys]);
  return r.rowCount;
}

export async function forgetPairDocuments(sql: Sql, tenantId: string, ccPairId: number): Promise<void> {
  await sql.query(`DELETE FROM core.connector_documents WHERE tenant_id = $1 AND cc_pair_id = $2`, [tenantId, ccPairId]);
}

export async function countDocuments(sql: Sql, tenantId: string, ccPairId: number): Promise<number> {
  const r = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.connector_documents WHERE tenant_id = $1 AND cc_pair_id = $2`, [tenantId, ccPairId]);
  return r.rows[0]?.n ?? 0;
}
