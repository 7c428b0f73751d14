import type { Sql } from '@lore/runtime';

/** What the upsert needs to know of the memory's current copy of a connector's document. */
export interface ConnectorDocumentRow {
  doc_id: string;
  connector_hash: string | null;
  access_public: boolean;
  access_groups: number[];
}

/** The unique index that keeps one document per (memory, pair, source id): migration 0007. */
export const CONNECTOR_DOCUMENT_INDEX = 'documents_connector_idx';

/** True when `err` is the unique violation of two pushes of the same document racing to insert it. */
export function isConnectorDuplicate(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return !!e && e.code === '23505' && e.constraint === CONNECTOR_DOCUMENT_INDEX;
}

/**
 * The memory's document for a pair's source id, if it holds one. With `lock`, the row stays locked until the
 * transaction ends: a concurrent push of the same document waits, and the worker cannot add chunks to it meanwhile
 * (its foreign-key check needs a lock this one excludes), so statistics computed from its chunks stay true.
 */
export async function findConnectorDocument(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  ccPairId: number,
  externalId: string,
  lock: boolean,
): Promise<ConnectorDocumentRow | null> {
  const r = await sql.query<ConnectorDocumentRow>(
    `SELECT doc_id, connector_hash, access_public, access_groups FROM graph.documents
      WHERE tenant_id = $1 AND memory_id = $2 AND cc_pair_id = $3 AND external_id = $4${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, memoryId, ccPairId, externalId],
  );
  const row = r.rows[0];
  return row ? { ...row, access_groups: (row.access_groups ?? []).map(Number) } : null;
}

/** Changes who may see a document (its content is unchanged, so nothing is re-indexed). */
export async function setConnectorAccess(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  docId: string,
  access: { public: boolean; groups: number[] },
): Promise<void> {
  await sql.query(
    `UPDATE graph.documents SET access_public = $4, access_groups = $5::integer[] WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = $3`,
    [tenantId, memoryId, docId, access.public, access.groups],
  );
}

/**
 * Up to `limit` of the pair's documents in the memory (those with the given source ids, or all), locked until the
 * transaction ends, for deletion in bounded batches.
 */
export async function lockConnectorDocuments(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  ccPairId: number,
  externalIds: string[] | null,
  limit: number,
): Promise<string[]> {
  const r = await sql.query<{ doc_id: string }>(
    `SELECT doc_id FROM graph.documents
      WHERE tenant_id = $1 AND memory_id = $2 AND cc_pair_id = $3 AND ($4::text[] IS NULL OR external_id = ANY($4::text[]))
      ORDER BY doc_id
      LIMIT $5
        FOR UPDATE`,
    [tenantId, memoryId, ccPairId, externalIds, limit],
  );
  return r.rows.map((x) => x.doc_id);
}
