import { LEXICAL_TEXT } from './lexical-text';
import type { Sql } from '@lore/runtime';
import type { Chunk } from '../domain/chunking';
import type { ContradictionPair, ExtractedEntity, Fact, StoredFact } from '../domain/entities';

/** BM25 parameters (the defaults Lucene uses). */
export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

export interface DocumentToIndex {
  doc_id: string;
  memory_id: string;
  workspace_id: string;
  vault_id: string;
  title: string;
  content: string;
  status: string;
  upload_id: string | null;
  /** Seconds since the document was accepted (for the ingest-to-searchable metric). */
  age_seconds?: number;
}

/**
 * The document to index. With `lock` (the indexing transaction) its row stays locked FOR NO KEY UPDATE until the
 * transaction ends, and the row read is the latest committed one: filing it into a vault, deleting its vault and
 * deleting it wait until its chunks and statistics are committed (and then move or count them), or committed
 * before and are seen here. A plain read let a filing commit between this read and the chunks' insert, which then
 * carried the old vault, and a deletion that counted none of the chunks being written. NO KEY UPDATE leaves alone
 * the KEY SHARE locks that foreign-key checks take.
 */
export async function loadDocumentToIndex(sql: Sql, tenantId: string, docId: string, lock = false): Promise<DocumentToIndex | null> {
  const r = await sql.query<DocumentToIndex>(
    `SELECT doc_id, memory_id, workspace_id, vault_id, title, content, status, upload_id,
            extract(epoch FROM (clock_timestamp() - created_at))::float8 AS age_seconds
       FROM graph.documents WHERE tenant_id = $1 AND doc_id = $2${lock ? ' FOR NO KEY UPDATE' : ''}`,
    [tenantId, docId],
  );
  return r.rows[0] ?? null;
}

/** pgvector's text form; the values come from our embedders (finite numbers), never from user input. */
export function vectorLiteral(v: number[]): string {
  return `[${v.map((x) => (Number.isFinite(x) ? x.toFixed(6) : '0')).join(',')}]`;
}

/**
 * Writes the chunks of one document with their full-text vectors (PostgreSQL's English analysis of title,
 * heading and text), their postings and, when given, their embeddings with the model that made them; then folds
 * them into the BM25 statistics.
 * Runs inside the indexing transaction. Returns the number of chunks.
 */
export async function writeChunks(
  sql: Sql,
  tenantId: string,
  doc: DocumentToIndex,
  chunks: Chunk[],
  embeddings: { model: string; vectors: number[][] } | null,
): Promise<number> {
  if (chunks.length === 0) return 0;
  const withVectors = embeddings !== null;
  const params: unknown[] = [
    tenantId,
    doc.memory_id,
    doc.doc_id,
    doc.vault_id,
    doc.title,
    chunks.map((c) => c.ord),
    chunks.map((c) => c.heading),
    chunks.map((c) => c.content),
  ];
  if (withVectors) params.push(embeddings.vectors.map(vectorLiteral), embeddings.vectors[0]?.length ?? 0, embeddings.model);
  await sql.query(
    `INSERT INTO graph.chunks (tenant_id, memory_id, doc_id, vault_id, ord, heading, content, tsv, dl${withVectors ? ', embedding, embedding_dims, embedding_model' : ''})
     SELECT $1, $2, $3, $4, x.ord, x.heading, x.content, x.tsv,
            (SELECT coalesce(sum(coalesce(array_length(l.positions, 1), 1)), 0) FROM unnest(x.tsv) l)::int
            ${withVectors ? ', x.emb::vector, $10, $11' : ''}
       FROM (SELECT u.ord, u.heading, u.content,
                    to_tsvector('english', ${LEXICAL_TEXT("$5 || ' ' || coalesce(u.heading, '') || ' ' || u.content")}) AS tsv
                    ${withVectors ? ', u.emb' : ''}
               FROM unnest($6::int[], $7::text[], $8::text[]${withVectors ? ', $9::text[]' : ''}) AS u(ord, heading, content${withVectors ? ', emb' : ''})) x`,
    params,
  );
  // Impact = the BM25 term weight without idf, with the memory's average chunk length as of now.
  await sql.query(
    `INSERT INTO graph.postings (tenant_id, memory_id, term, chunk_id, tf, dl, impact)
     SELECT c.tenant_id, c.memory_id, l.lexeme, c.chunk_id, x.tf, c.dl,
            x.tf * ${BM25_K1 + 1} / (x.tf + ${BM25_K1} * (${1 - BM25_B} + ${BM25_B} * c.dl / a.avgdl))
       FROM graph.chunks c
       CROSS JOIN LATERAL unnest(c.tsv) l
       CROSS JOIN LATERAL (SELECT least(coalesce(array_length(l.positions, 1), 1), 32767) AS tf) x
       CROSS JOIN (
         SELECT coalesce((SELECT total_dl::float8 / nullif(chunk_count, 0) FROM graph.corpus_stats WHERE tenant_id = $1 AND memory_id = $3),
                         (SELECT avg(dl)::float8 FROM graph.chunks WHERE tenant_id = $1 AND doc_id = $2), 1) AS avgdl) a
      WHERE c.tenant_id = $1 AND c.doc_id = $2`,
    [tenantId, doc.doc_id, doc.memory_id],
  );
  // Document frequencies straight from the new chunks' vectors (never a join over all postings of the tenant).
  // Sorted by term: two transactions touching the same terms lock them in the same order (no deadlock).
  await sql.query(
    `INSERT INTO graph.term_stats (tenant_id, memory_id, term, df)
     SELECT $1, $2, l.lexeme, count(*)::int FROM graph.chunks c, unnest(c.tsv) l
      WHERE c.tenant_id = $1 AND c.doc_id = $3
      GROUP BY l.lexeme ORDER BY l.lexeme
     ON CONFLICT (tenant_id, memory_id, term) DO UPDATE SET df = graph.term_stats.df + excluded.df`,
    [tenantId, doc.memory_id, doc.doc_id],
  );
  await sql.query(
    `INSERT INTO graph.corpus_stats (tenant_id, memory_id, chunk_count, total_dl)
     SELECT $1, $2, count(*), coalesce(sum(dl), 0) FROM graph.chunks WHERE tenant_id = $1 AND doc_id = $3
     ON CONFLICT (tenant_id, memory_id) DO UPDATE
       SET chunk_count = graph.corpus_stats.chunk_count + excluded.chunk_count, total_dl = graph.corpus_stats.total_dl + excluded.total_dl`,
    [tenantId, doc.memory_id, doc.doc_id],
  );
  return chunks.length;
}

export interface CreatedEntity {
  entity_id: string;
  entity_key: string;
  name: string;
  kind: string;
}

/** Upserts the document's entities; returns those this document introduced to the memory. */
export async function writeEntities(
  sql: Sql,
  tenantId: string,
  doc: DocumentToIndex,
  entities: ExtractedEntity[],
  newId: () => string,
): Promise<CreatedEntity[]> {
  if (entities.length === 0) return [];
  const r = await sql.query<CreatedEntity & { inserted: boolean }>(
    `INSERT INTO graph.entities (tenant_id, memory_id, entity_key, entity_id, name, kind, mention_count, first_doc_id)
     SELECT $1, $2, u.k, u.id, u.n, u.kind, u.m, $3 FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::int[]) AS u(k, id, n, kind, m)
     ORDER BY u.k
     ON CONFLICT (tenant_id, memory_id, entity_key) DO UPDATE SET mention_count = graph.entities.mention_count + excluded.mention_count
     RETURNING entity_id, entity_key, name, kind, (xmax = 0) AS inserted`,
    [
      tenantId,
      doc.memory_id,
      doc.doc_id,
      entities.map((e) => e.key),
      entities.map(() => newId()),
      entities.map((e) => e.name),
      entities.map((e) => e.kind),
      entities.map((e) => e.mentions),
    ],
  );
  await sql.query(
    `INSERT INTO graph.entity_mentions (tenant_id, memory_id, entity_key, doc_id, mentions)
     SELECT $1, $2, u.k, $3, u.m FROM unnest($4::text[], $5::int[]) AS u(k, m)
     ON CONFLICT DO NOTHING`,
    [tenantId, doc.memory_id, doc.doc_id, entities.map((e) => e.key), entities.map((e) => e.mentions)],
  );
  return r.rows.filter((x) => x.inserted).map(({ inserted: _inserted, ...rest }) => rest);
}

/** Facts already known about the given entities, from other documents (bounded). */
export async function existingFacts(sql: Sql, tenantId: string, memoryId: string, docId: string, entityKeys: string[]): Promise<StoredFact[]> {
  if (entityKeys.length === 0) return [];
  const r = await sql.query<StoredFact>(
    `SELECT entity_key, entity_name, attribute, value, value_norm, sentence, chunk_ord, doc_id FROM graph.facts
      WHERE tenant_id = $1 AND memory_id = $2 AND entity_key = ANY($3::text[]) AND doc_id <> $4
      ORDER BY fact_id LIMIT 5000`,
    [tenantId, memoryId, entityKeys, docId],
  );
  return r.rows;
}

export async function writeFacts(sql: Sql, tenantId: string, doc: DocumentToIndex, facts: Fact[]): Promise<void> {
  if (facts.length === 0) return;
  await sql.query(
    `INSERT INTO graph.facts (tenant_id, memory_id, entity_key, entity_name, attribute, value, value_norm, doc_id, chunk_ord, sentence)
     SELECT $1, $2, u.k, u.n, u.a, u.v, u.vn, $3, u.o, u.s
       FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::text[]) AS u(k, n, a, v, vn, o, s)`,
    [
      tenantId,
      doc.memory_id,
      doc.doc_id,
      facts.map((f) => f.entity_key),
      facts.map((f) => f.entity_name),
      facts.map((f) => f.attribute),
      facts.map((f) => f.value),
      facts.map((f) => f.value_norm),
      facts.map((f) => f.chunk_ord),
      facts.map((f) => f.sentence),
    ],
  );
}

export interface StoredContradiction {
  contradiction_id: string;
  entity_name: string;
  attribute: string;
  doc_a: string;
  value_a: string;
  doc_b: string;
  value_b: string;
}

/** Records contradictions (each pair once) and returns the ones that are new. */
export async function writeContradictions(
  sql: Sql,
  tenantId: string,
  doc: DocumentToIndex,
  pairs: ContradictionPair[],
  newId: () => string,
): Promise<StoredContradiction[]> {
  const out: StoredContradiction[] = [];
  for (const p of pairs) {
    const r = await sql.query<StoredContradiction>(
      `INSERT INTO graph.contradictions (tenant_id, memory_id, workspace_id, contradiction_id, entity_key, entity_name, attribute,
         doc_a, value_a, sentence_a, doc_b, value_b, sentence_b)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT DO NOTHING
       RETURNING contradiction_id, entity_name, attribute, doc_a, value_a, doc_b, value_b`,
      [
        tenantId,
        doc.memory_id,
        doc.workspace_id,
        newId(),
        p.entity_key,
        p.entity_name,
        p.attribute,
        p.a.doc_id,
        p.a.value,
        p.a.sentence,
        p.b.doc_id,
        p.b.value,
        p.b.sentence,
      ],
    );
    if (r.rows[0]) out.push(r.rows[0]);
  }
  return out;
}

export async function markIndexed(sql: Sql, tenantId: string, docId: string, chunkCount: number, entityCount: number): Promise<void> {
  await sql.query(
    `UPDATE graph.documents SET status = 'indexed', chunk_count = $3, entity_count = $4, indexed_at = now(), updated_at = now(), error = NULL
      WHERE tenant_id = $1 AND doc_id = $2`,
    [tenantId, docId, chunkCount, entityCount],
  );
}

export async function markFailed(sql: Sql, tenantId: string, docId: string, error: string): Promise<void> {
  await sql.query(`UPDATE graph.documents SET status = 'failed', error = $3, updated_at = now() WHERE tenant_id = $1 AND doc_id = $2`, [
    tenantId,
    docId,
    error.slice(0, 500),
  ]);
}
