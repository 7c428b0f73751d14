import type { Sql } from '@lore/runtime';
import { failUploadsOfDeletedDocuments } from './uploads';

export type DocumentStatus = 'queued' | 'indexed' | 'failed';

export interface NewDocument {
  doc_id: string;
  memory_id: string;
  workspace_id: string;
  vault_id: string;
  title: string;
  content_type: string;
  content: string;
  content_sha256: string;
  source: 'ingest' | 'upload' | 'connector';
  upload_id: string | null;
  routing_mode: string;
  routing_confidence: number;
  routing_scores: Array<{ vault_id: string; score: number }>;
  needs_review: boolean;
  dlp_matches: number;
  dlp_kinds: Record<string, number>;
  /** Where a connector's document comes from; absent for ingested and uploaded documents. */
  connector?: ConnectorColumns;
}

/** The columns of a document a connector pushed (migration 0007). */
export interface ConnectorColumns {
  cc_pair_id: number;
  external_id: string;
  source_type: string;
  link: string;
  primary_owners: string[] | null;
  secondary_owners: string[] | null;
  metadata: Record<string, string>;
  source_updated_at: string | null;
  connector_hash: string;
  access_public: boolean;
  access_groups: number[];
}

export interface DocumentView {
  doc_id: string;
  vault_id: string;
  title: string;
  content_type: string;
  source: string;
  upload_id: string | null;
  status: DocumentStatus;
  routing_mode: string;
  routing_confidence: number;
  needs_review: boolean;
  dlp_matches: number;
  dlp_kinds: Record<string, number>;
  chunk_count: number;
  entity_count: number;
  error: string | null;
  created_at: string;
  indexed_at: string | null;
}

const VIEW = `doc_id, vault_id, title, content_type, source, upload_id, status, routing_mode, routing_confidence,
  needs_review, dlp_matches, dlp_kinds, chunk_count, entity_count, error, created_at, indexed_at`;

interface Raw extends Omit<DocumentView, 'created_at' | 'indexed_at' | 'routing_confidence'> {
  created_at: Date | string;
  indexed_at: Date | string | null;
  routing_confidence: number | string;
}

function toView(r: Raw): DocumentView {
  return {
    ...r,
    routing_confidence: Number(r.routing_confidence),
    created_at: new Date(r.created_at).toISOString(),
    indexed_at: r.indexed_at ? new Date(r.indexed_at).toISOString() : null,
  };
}

/** The columns `insertDocuments` writes, and the cast of each value, in the same order. */
const INSERT_COLUMNS = `tenant_id, memory_id, workspace_id, doc_id, vault_id, title, content_type, content, content_sha256,
  source, upload_id, routing_mode, routing_confidence, routing_scores, needs_review, dlp_matches, dlp_kinds,
  cc_pair_id, external_id, source_type, link, primary_owners, secondary_owners, doc_metadata, source_updated_at, connector_hash,
  access_public, access_groups`;
const INSERT_CASTS = [
  '', '', '', '', '', '', '', '', '', '', '', '', '', '::jsonb', '', '', '::jsonb',
  '', '', '', '', '::jsonb', '::jsonb', '::jsonb', '::timestamptz', '', '', '::integer[]',
];

function insertValues(tenantId: string, d: NewDocument): unknown[] {
  const c = d.connector;
  return [
    tenantId,
    d.memory_id,
    d.workspace_id,
    d.doc_id,
    d.vault_id,
    d.title,
    d.content_type,
    d.content,
    d.content_sha256,
    d.source,
    d.upload_id,
    d.routing_mode,
    d.routing_confidence,
    JSON.stringify(d.routing_scores),
    d.needs_review,
    d.dlp_matches,
    JSON.stringify(d.dlp_kinds),
    c?.cc_pair_id ?? null,
    c?.external_id ?? null,
    c?.source_type ?? null,
    c?.link ?? null,
    c?.primary_owners ? JSON.stringify(c.primary_owners) : null,
    c?.secondary_owners ? JSON.stringify(c.secondary_owners) : null,
    c ? JSON.stringify(c.metadata) : null,
    c?.source_updated_at ?? null,
    c?.connector_hash ?? null,
    c?.access_public ?? true,
    c?.access_groups ?? [],
  ];
}

export async function insertDocument(sql: Sql, tenantId: string, d: NewDocument): Promise<void> {
  await insertDocuments(sql, tenantId, [d]);
}

/**
 * Inserts documents with one statement (a multi-row INSERT), in the order given: what `insertDocument` for each
 * does, all or none. An empty list writes nothing. A second row for the same connector document (tenant, memory,
 * pair, source id) fails the statement on `documents_connector_idx`, as a second insert would.
 */
export async function insertDocuments(sql: Sql, tenantId: string, docs: readonly NewDocument[]): Promise<void> {
  if (docs.length === 0) return;
  const params: unknown[] = [];
  const rows = docs.map((d) => {
    const base = params.length;
    const values = insertValues(tenantId, d);
    params.push(...values);
    return `(${values.map((_, i) => `$${base + i + 1}${INSERT_CASTS[i]}`).join(', ')})`;
  });
  await sql.query(`INSERT INTO graph.documents (${INSERT_COLUMNS}) VALUES ${rows.join(',\n')}`, params);
}

/**
 * SQL: the document (`alias`, e.g. `d.`, or '' for the table itself) may be seen by a caller whose visible groups
 * are the `integer[]` parameter `param`: NULL sees every document (an administrator); an array sees the public ones
 * and those a connector shared with one of its groups (`access_groups && groups`; an empty array: public only).
 */
export function visibleTo(alias: string, param: string): string {
  return `(${param}::integer[] IS NULL OR ${alias}access_public OR ${alias}access_groups && ${param}::integer[])`;
}

/**
 * One document; with `groups` (a caller who is not an administrator: the groups whose private documents it sees) a
 * document it may not see is as absent as another tenant's. Null or absent: every document.
 */
export async function getDocument(sql: Sql, tenantId: string, memoryId: string, docId: string, groups: readonly number[] | null = null): Promise<DocumentView | null> {
  const r = await sql.query<Raw>(
    `SELECT ${VIEW} FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = $3 AND ${visibleTo('', '$4')}`,
    [tenantId, memoryId, docId, groups],
  );
  return r.rows[0] ? toView(r.rows[0]) : null;
}

export interface ListFilter {
  vault_id?: string;
  status?: DocumentStatus;
  needs_review?: boolean;
  limit: number;
  /** Keyset cursor: documents created strictly before this (created_at, doc_id). */
  before?: { created_at: string; doc_id: string };
  /** Leave out documents this caller may not see: a non-administrator's groups (`visibleTo`); null or absent: none. */
  groups?: readonly number[] | null;
}

export async function listDocuments(sql: Sql, tenantId: string, memoryId: string, f: ListFilter): Promise<DocumentView[]> {
  const r = await sql.query<Raw>(
    `SELECT ${VIEW} FROM graph.documents
      WHERE tenant_id = $1 AND memory_id = $2
        AND ($3::text IS NULL OR vault_id = $3)
        AND ($4::text IS NULL OR status = $4)
        AND ($5::boolean IS NULL OR needs_review = $5)
        AND ($6::timestamptz IS NULL OR (created_at, doc_id) < ($6::timestamptz, $7::text))
        AND ${visibleTo('', '$9')}
      ORDER BY created_at DESC, doc_id DESC
      LIMIT $8`,
    [tenantId, memoryId, f.vault_id ?? null, f.status ?? null, f.needs_review ?? null, f.before?.created_at ?? null, f.before?.doc_id ?? null, f.limit, f.groups ?? null],
  );
  return r.rows.map(toView);
}

/**
 * Files a document into a vault (review action): the chunks follow, and it leaves the review queue. The caller
 * locked the vault (`lockVault`). A worker indexing the document holds its row until its chunks committed
 * (`loadDocumentToIndex` with a lock): the UPDATE of the document waits for it, and the UPDATE of the chunks, a
 * later statement, then sees and moves them; a worker starting later reads the new vault.
 */
export async function fileDocument(sql: Sql, tenantId: string, memoryId: string, docId: string, vaultId: string): Promise<boolean> {
  const r = await sql.query(
    `UPDATE graph.documents SET vault_id = $4, needs_review = false, routing_mode = 'review', updated_at = now()
      WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = $3`,
    [tenantId, memoryId, docId, vaultId],
  );
  if (r.rowCount !== 1) return false;
  await sql.query(`UPDATE graph.chunks SET vault_id = $4 WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = $3`, [tenantId, memoryId, docId, vaultId]);
  return true;
}

/** Locks these documents FOR UPDATE until the transaction ends, in `doc_id` order (no two deleters wait in a circle). */
async function lockDocuments(sql: Sql, tenantId: string, memoryId: string, docIds: readonly string[]): Promise<void> {
  await sql.query(`SELECT doc_id FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = ANY($3::text[]) ORDER BY doc_id FOR UPDATE`, [
    tenantId,
    memoryId,
    [...docIds],
  ]);
}

/** Deletes a document and keeps the BM25 statistics true (they count what is indexed): `deleteDocuments` of one. */
export async function deleteDocument(sql: Sql, tenantId: string, memoryId: string, docId: string): Promise<boolean> {
  return (await deleteDocuments(sql, tenantId, memoryId, [docId])) === 1;
}

/**
 * Deletes documents and keeps the BM25 statistics true, with seven statements whatever their number; returns how
 * many were deleted. It locks the documents first (`FOR UPDATE`, in `doc_id` order, as callers that locked them
 * already did: taking a lock one holds costs nothing). A worker indexing one of them holds its row
 * (`loadDocumentToIndex` with a lock) until its chunks and their statistics committed, so this waits and then
 * counts them; a worker starting later waits for this deletion and finds the document gone. Without the lock
 * (the document route had none until 2026-11-30) the statements below saw none of the chunks being written, and
 * the statistics kept counting them after the document went. Each statistic loses what the documents' chunks
 * counted, as deleting them one by one would:
 * - `term_stats.df` counts chunks holding the term, and a chunk belongs to one document, so a term's chunks among
 *   all the documents are the sum of its chunks in each (one group per term over all their chunks);
 * - `corpus_stats` loses the count and the summed length of all their chunks;
 * - an entity's `mention_count` loses the sum of its mentions in them (a mention row per document and entity),
 *   floored at 0 — one by one it was `greatest(0, greatest(0, c - a) - b)`, which equals `greatest(0, c - (a + b))`
 *   for mentions ≥ 0;
 * - an upload of one of them still waiting for indexing ends `failed` (`failUploadsOfDeletedDocuments`): nothing
 *   else would ever settle it;
 * - contradictions naming any of them go, then the documents (chunks, postings, mentions and facts cascade).
 * Term and entity rows are locked in key order, as the worker's indexing locks them, so two transactions that
 * touch the same terms never wait on each other in a circle.
 */
export async function deleteDocuments(sql: Sql, tenantId: string, memoryId: string, docIds: readonly string[]): Promise<number> {
  const ids = [...new Set(docIds)];
  if (ids.length === 0) return 0;
  await lockDocuments(sql, tenantId, memoryId, ids);
  await sql.query(
    `WITH x AS (
       SELECT l.lexeme AS term, count(*)::int AS n FROM graph.chunks c, unnest(c.tsv) l
        WHERE c.tenant_id = $1 AND c.memory_id = $2 AND c.doc_id = ANY($3::text[]) GROUP BY l.lexeme
     ), locked AS MATERIALIZED (
       SELECT ts.term, x.n FROM graph.term_stats ts JOIN x ON x.term = ts.term
        WHERE ts.tenant_id = $1 AND ts.memory_id = $2
        ORDER BY ts.term
          FOR UPDATE OF ts
     )
     UPDATE graph.term_stats ts SET df = ts.df - locked.n
       FROM locked
      WHERE ts.tenant_id = $1 AND ts.memory_id = $2 AND ts.term = locked.term`,
    [tenantId, memoryId, ids],
  );
  await sql.query(
    `UPDATE graph.corpus_stats cs SET chunk_count = cs.chunk_count - x.n, total_dl = cs.total_dl - x.dl
       FROM (SELECT count(*) AS n, coalesce(sum(dl), 0) AS dl FROM graph.chunks WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = ANY($3::text[])) x
      WHERE cs.tenant_id = $1 AND cs.memory_id = $2`,
    [tenantId, memoryId, ids],
  );
  await sql.query(
    `WITH m AS (
       SELECT entity_key, sum(mentions)::int AS mentions FROM graph.entity_mentions
        WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = ANY($3::text[]) GROUP BY entity_key
     ), locked AS MATERIALIZED (
       SELECT e.entity_key, m.mentions FROM graph.entities e JOIN m ON m.entity_key = e.entity_key
        WHERE e.tenant_id = $1 AND e.memory_id = $2
        ORDER BY e.entity_key
          FOR UPDATE OF e
     )
     UPDATE graph.entities e SET mention_count = greatest(0, e.mention_count - locked.mentions)
       FROM locked
      WHERE e.tenant_id = $1 AND e.memory_id = $2 AND e.entity_key = locked.entity_key`,
    [tenantId, memoryId, ids],
  );
  await failUploadsOfDeletedDocuments(sql, tenantId, memoryId, ids);
  await sql.query(`DELETE FROM graph.contradictions WHERE tenant_id = $1 AND memory_id = $2 AND (doc_a = ANY($3::text[]) OR doc_b = ANY($3::text[]))`, [
    tenantId,
    memoryId,
    ids,
  ]);
  const r = await sql.query(`DELETE FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND doc_id = ANY($3::text[])`, [tenantId, memoryId, ids]);
  return r.rowCount;
}
