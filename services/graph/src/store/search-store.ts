import { LEXICAL_TEXT } from './lexical-text';
import type { Db, Sql } from '@lore/runtime';
import { vectorLiteral } from './index-store';
import { visibleTo } from './documents';

export interface ScoredChunk {
  chunk_id: string;
  score: number;
}

export interface SearchScope {
  tenantId: string;
  memoryId: string;
  /** Restrict to these vaults (all when undefined). */
  vaultIds?: string[];
  /** Restrict to documents a connector of these kinds pushed (all documents when undefined). */
  sourceTypes?: string[];
  /**
   * Leave out documents this caller may not see: set for a caller who is not an administrator, in a memory holding
   * documents that are not public, to the caller's user groups. Public documents stay, and private ones whose
   * `access_groups` name one of these groups (none: public documents only). Absent: every document.
   */
  visibleGroups?: readonly number[];
}

/**
 * The condition on a chunk's document that the scope asks for (`d` is the document) with its parameters, numbered
 * from `$first`, or null when it asks for none: then the queries are exactly those of a memory without connector
 * documents, and cost the same.
 */
function documentCondition(scope: SearchScope, first: number): { sql: string; params: unknown[] } | null {
  const parts: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown) => `$${first + params.push(value) - 1}`;
  if (scope.visibleGroups) {
    // Without groups the filter is the one it always was: the groups' overlap is asked only of a member of some.
    parts.push(scope.visibleGroups.length === 0 ? 'd.access_public' : `(d.access_public OR d.access_groups && ${param(scope.visibleGroups)}::integer[])`);
  }
  if (scope.sourceTypes) parts.push(`d.source_type = ANY(${param(scope.sourceTypes)}::text[])`);
  return parts.length > 0 ? { sql: parts.join(' AND '), params } : null;
}

/**
 * Whether the memory holds a document that is not public: one probe of the partial index `documents_private_idx`
 * (migration 0007), which holds only such documents.
 */
export async function holdsPrivateDocuments(sql: Sql, tenantId: string, memoryId: string): Promise<boolean> {
  const r = await sql.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND NOT access_public) AS held`,
    [tenantId, memoryId],
  );
  return r.rows[0]?.held === true;
}

/** Postings read per query term, strongest first: bounds the cost of a common word. */
export const POSTINGS_PER_TERM = 1000;

/**
 * BM25 over impact-ordered postings. Query lexemes come from the same `to_tsvector('english', …)` that indexed
 * the chunks, so stemming and stop words agree exactly. For each term only its POSTINGS_PER_TERM strongest
 * postings are read (index order), then idf × impact is summed per chunk: exact for every term rarer than
 * the cut-off, and for common words it keeps the chunks where they weigh most. Every predicate on the
 * RLS-protected tables is an equality on text or bigint (leakproof), so the index stays usable under the tenant
 * policy; the explicit tenant condition duplicates the policy on purpose, making the plan identical with and
 * without RLS.
 */
export async function lexicalSearch(sql: Sql, scope: SearchScope, query: string, limit: number): Promise<ScoredChunk[]> {
  // Documents' conditions are checked per posting, before the strongest postings are cut, so a filtered search
  // still reads up to POSTINGS_PER_TERM postings it may return.
  const onDocument = documentCondition(scope, 6);
  const documentFilter = onDocument
    ? `
                 AND EXISTS (
                       SELECT 1 FROM graph.chunks c JOIN graph.documents d ON d.tenant_id = c.tenant_id AND d.doc_id = c.doc_id
                        WHERE c.chunk_id = p.chunk_id AND c.tenant_id = $1 AND d.tenant_id = $1 AND ${onDocument.sql})`
    : '';
  const r = await sql.query<{ chunk_id: string; score: number }>(
    `WITH q AS (
       SELECT DISTINCT l.lexeme AS term FROM unnest(to_tsvector('english', ${LEXICAL_TEXT('$3')})) l LIMIT 32
     ), w AS (
       SELECT q.term, ln(1 + (greatest(s.chunk_count, 1) - ts.df + 0.5) / (ts.df + 0.5)) AS idf
         FROM q
         JOIN graph.term_stats ts ON ts.tenant_id = $1 AND ts.memory_id = $2 AND ts.term = q.term
         JOIN graph.corpus_stats s ON s.tenant_id = $1 AND s.memory_id = $2
        WHERE ts.df > 0
     )
     SELECT x.chunk_id::text AS chunk_id, sum(w.idf * x.impact)::float8 AS score
       FROM w CROSS JOIN LATERAL (
              SELECT p.chunk_id, p.impact FROM graph.postings p
               WHERE p.tenant_id = $1 AND p.memory_id = $2 AND p.term = w.term
                 AND ($5::text[] IS NULL OR EXISTS (
                       SELECT 1 FROM graph.chunks c WHERE c.chunk_id = p.chunk_id AND c.tenant_id = $1 AND c.vault_id = ANY($5::text[])))${documentFilter}
               ORDER BY p.impact DESC
               LIMIT ${POSTINGS_PER_TERM}) x
      GROUP BY x.chunk_id
      ORDER BY score DESC, x.chunk_id
      LIMIT $4`,
    [scope.tenantId, scope.memoryId, query, limit, scope.vaultIds ?? null, ...(onDocument?.params ?? [])],
  );
  return r.rows.map((x) => ({ chunk_id: x.chunk_id, score: Number(x.score) }));
}

/** Dimensions the migration built an HNSW expression index for. */
export const INDEXED_DIMS = 384;

/**
 * Nearest chunks by cosine distance, among those embedded by `model` (vectors of different models are not
 * comparable). For the indexed dimension the query repeats the index expression and its partial predicate
 * literally so the planner can use HNSW; other dimensions scan exactly.
 */
export async function vectorSearch(sql: Sql, scope: SearchScope, embedding: number[], model: string, limit: number): Promise<ScoredChunk[]> {
  const dims = embedding.length;
  if (!Number.isInteger(dims) || dims <= 0) return [];
  const expr = dims === INDEXED_DIMS ? `c.embedding::vector(${INDEXED_DIMS})` : 'c.embedding';
  const cast = dims === INDEXED_DIMS ? `::vector(${INDEXED_DIMS})` : '::vector';
  const onDocument = documentCondition(scope, 7);
  const documentFilter = onDocument
    ? `
        AND EXISTS (SELECT 1 FROM graph.documents d WHERE d.tenant_id = $1 AND d.doc_id = c.doc_id AND ${onDocument.sql})`
    : '';
  const r = await sql.query<{ chunk_id: string; distance: number }>(
    `SELECT c.chunk_id::text AS chunk_id, (${expr} <=> $3${cast})::float8 AS distance
       FROM graph.chunks c
      WHERE c.tenant_id = $1 AND c.memory_id = $2 AND c.embedding_dims = ${dims} AND c.embedding_model = $6
        AND ($5::text[] IS NULL OR c.vault_id = ANY($5::text[]))${documentFilter}
      ORDER BY ${expr} <=> $3${cast}
      LIMIT $4`,
    [scope.tenantId, scope.memoryId, vectorLiteral(embedding), limit, scope.vaultIds ?? null, model, ...(onDocument?.params ?? [])],
  );
  return r.rows.map((x) => ({ chunk_id: x.chunk_id, score: 1 - Number(x.distance) }));
}

export interface ChunkRow {
  chunk_id: string;
  doc_id: string;
  vault_id: string;
  ord: number;
  heading: string | null;
  content: string;
  title: string;
  /** How the document arrived (`ingest`, `upload`, `connector`). */
  source: string;
  /** The source's last change when a connector gave it, else the row's. */
  updated_at: Date;
  /** The connector's kind; null for ingested and uploaded documents. */
  source_type: string | null;
  link: string | null;
  primary_owners: string[] | null;
  secondary_owners: string[] | null;
  /** The source's attributes of the document; {} when it has none. */
  metadata: Record<string, string>;
}

/**
 * The chunks with their documents' fields. `groups` (a caller who is not an administrator; null: every document)
 * checks again, on the documents read, what the searches filtered: a document that stopped being public since the
 * memory was probed, or left the caller's groups, never reaches the caller.
 */
export async function loadChunks(sql: Sql, scope: SearchScope, chunkIds: string[], groups: readonly number[] | null): Promise<ChunkRow[]> {
  if (chunkIds.length === 0) return [];
  const r = await sql.query<ChunkRow>(
    `SELECT c.chunk_id::text AS chunk_id, c.doc_id, c.vault_id, c.ord, c.heading, c.content, d.title, d.source,
            coalesce(d.source_updated_at, d.updated_at) AS updated_at, d.source_type, d.link, d.primary_owners, d.secondary_owners,
            coalesce(d.doc_metadata, '{}'::jsonb) AS metadata
       FROM graph.chunks c JOIN graph.documents d ON d.tenant_id = c.tenant_id AND d.doc_id = c.doc_id
      WHERE c.tenant_id = $1 AND c.memory_id = $2 AND c.chunk_id = ANY($3::bigint[]) AND ${visibleTo('d.', '$4')}`,
    [scope.tenantId, scope.memoryId, chunkIds, groups],
  );
  return r.rows;
}

/** Whether `graph.chunks` has its embedding column (pgvector present when the migrations ran, or added since). */
export async function hasEmbeddingColumn(db: Pick<Db, 'query'>): Promise<boolean> {
  const r = await db.query(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = 'graph' AND table_name = 'chunks' AND column_name = 'embedding'`,
  );
  return r.rowCount > 0;
}
