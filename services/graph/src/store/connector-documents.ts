import type { Sql, SqlResult } from '@lore/runtime';

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

/** Runs one statement: `sql.query` in a transaction, or `db.statementAsTenant` on its own. */
export type RunStatement = <T>(text: string, params: unknown[]) => Promise<SqlResult<T>>;

/**
 * The memory's copies of a pair's documents with these source ids (those it holds), by source id. With `lock` the
 * rows stay locked until the transaction ends, taken in `doc_id` order (two pushes of overlapping batches lock in
 * the same order, so neither waits on the other in a circle): a concurrent push of the same documents waits, and
 * the worker cannot add chunks to them meanwhile (its foreign-key check needs a lock this one excludes), so
 * statistics computed from their chunks stay true.
 */
export async function findConnectorCopies(
  run: RunStatement,
  tenantId: string,
  memoryId: string,
  ccPairId: number,
  externalIds: readonly string[],
  lock: boolean,
): Promise<Map<string, ConnectorDocumentRow>> {
  const copies = new Map<string, ConnectorDocumentRow>();
  if (externalIds.length === 0) return copies;
  const r = await run<ConnectorDocumentRow & { external_id: string }>(
    `SELECT external_id, doc_id, connector_hash, access_public, access_groups FROM graph.documents
      WHERE tenant_id = $1 AND memory_id = $2 AND cc_pair_id = $3 AND external_id = ANY($4::text[])${lock ? '\n      ORDER BY doc_id\n        FOR UPDATE' : ''}`,
    [tenantId, memoryId, ccPairId, [...new Set(externalIds)]],
  );
  for (const row of r.rows) {
    copies.set(row.external_id, {
      doc_id: row.doc_id,
      connector_hash: row.connector_hash,
      access_public: row.access_public,
      access_groups: (row.access_groups ?? []).map(Number),
    });
  }
  return copies;
}

/** Changes who may see these documents (their content is unchanged, so nothing is re-indexed), with one statement. */
export async function setConnectorAccess(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  docIds: readonly string[],
  access: { public: boolean; groups: number[] },
): Promise<void> {
  if (docIds.length === 0) return;
  await sql.query(
    `UPDATE graph.documents SET access_public = $4, access_groups = $5::integer[] WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = ANY($3::text[])`,
    [tenantId, memoryId, [...docIds], access.public, access.groups],
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
