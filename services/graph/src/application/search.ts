import { groundedAnswerStream, truncate, type Citation, type SourceChunk } from '@lore/ai';
import { extractEntities } from '../domain/entities';
import { suggestFollowups } from '../domain/followups';
import { reciprocalRankFusion } from '../domain/ranking';
import { holdsPrivateDocuments, lexicalSearch, loadChunks, vectorSearch, type ChunkRow } from '../store/search-store';
import { visibleGroups, type MemoryDeps, type MemoryScope } from './context';

export interface SearchOptions {
  vaultIds?: string[];
  /** Only chunks of documents a connector of these kinds pushed. */
  sourceTypes?: string[];
  topK?: number;
}

/**
 * A chunk a retrieval found, with its document's provenance as the store reads it (`source`, `updated_at`,
 * `source_type`, `link`, the owners, `metadata`: see `ChunkRow`).
 */
export interface RetrievedSource
  extends SourceChunk,
    Pick<ChunkRow, 'chunk_id' | 'vault_id' | 'heading' | 'source' | 'updated_at' | 'source_type' | 'link' | 'primary_owners' | 'secondary_owners' | 'metadata'> {
  snippet: string;
  /** Rank in each retriever that found it (1-based). */
  ranks: Record<string, number>;
  /** The chunk's position in its document (0-based). */
  chunk_ind: number;
  /** Reciprocal-rank-fusion score (higher is better; comparable within one retrieval only). */
  score: number;
}

export interface Retrieval {
  mode: 'hybrid' | 'lexical';
  sources: RetrievedSource[];
}

/**
 * Hybrid retrieval: BM25 over the postings and nearest neighbours over the embeddings (where pgvector exists),
 * both inside one tenant transaction, fused with reciprocal rank fusion. The query is embedded before the
 * transaction opens (a provider call must not hold a database backend).
 *
 * Who sees what: an administrator every document; anyone else the public ones and those a connector shared with one
 * of their user groups (the identity's `groups`), never another document that is not public. Both searches filter
 * in their SQL, but only in a memory that holds a document that is not public (one probe of a partial index
 * decides): other memories search with exactly the unfiltered queries.
 */
export async function retrieve(deps: MemoryDeps, scope: MemoryScope, query: string, options: SearchOptions = {}): Promise<Retrieval> {
  const topK = Math.max(1, Math.min(options.topK ?? deps.config.searchTopK, 20));
  const pool = Math.max(topK, deps.config.candidatePool);
  const embedding = deps.vectors ? (await deps.embedder.embed([query]))[0] ?? null : null;
  const groups = visibleGroups(scope);
  const rows = await deps.db.withTenant(scope.tenantId, async (sql) => {
    const restricted = groups !== null && (await holdsPrivateDocuments(sql, scope.tenantId, scope.memoryId));
    const s = { tenantId: scope.tenantId, memoryId: scope.memoryId, vaultIds: options.vaultIds, sourceTypes: options.sourceTypes, ...(restricted ? { visibleGroups: groups } : {}) };
    const lexical = await lexicalSearch(sql, s, query, pool);
    const vector = embedding ? await vectorSearch(sql, s, embedding, deps.embedder.model, pool) : [];
    const fused = reciprocalRankFusion(
      [
        { name: 'full_text', ids: lexical.map((h) => h.chunk_id) },
        { name: 'vector', ids: vector.map((h) => h.chunk_id) },
      ],
      60,
      topK,
    );
    const rows = await loadChunks(sql, s, fused.map((f) => f.id), groups);
    const byId = new Map(rows.map((r) => [r.chunk_id, r]));
    return fused.map((f) => ({ f, row: byId.get(f.id) }));
  });
  const sources = rows
    .filter((x): x is { f: (typeof x)['f']; row: ChunkRow } => x.row !== undefined)
    .map(({ f, row }, i) => ({
      index: i + 1,
      title: row.title,
      document_id: row.doc_id,
      content: row.content,
      chunk_id: row.chunk_id,
      vault_id: row.vault_id,
      heading: row.heading,
      snippet: truncate(row.content, 280),
      ranks: f.ranks,
      chunk_ind: row.ord,
      score: f.score,
      source: row.source,
      updated_at: row.updated_at,
      source_type: row.source_type,
      link: row.link,
      primary_owners: row.primary_owners,
      secondary_owners: row.secondary_owners,
      metadata: row.metadata,
    }));
  return { mode: embedding ? 'hybrid' : 'lexical', sources };
}

export interface SearchAnswer {
  answer: string;
  citations: Citation[];
  chunk_count: number;
  suggested_followups: string[];
}

export type AnswerPiece = { type: 'token'; text: string } | { type: 'done'; result: SearchAnswer };

/**
 * Streams an answer whose every marker was checked (`groundedAnswerStream`, shared with chat), then one final piece
 * with the whole answer (exactly the concatenation of the tokens sent), the citations actually used, and follow-ups.
 */
export async function* answerStream(deps: MemoryDeps, question: string, sources: RetrievedSource[], signal?: AbortSignal): AsyncGenerator<AnswerPiece> {
  const fallback = { noSources: 'The memory holds nothing that matches this question.', unanswered: 'The sources found do not answer this question.' };
  for await (const piece of groundedAnswerStream(deps.languageModel, { question, sources, maxTokens: deps.config.answerMaxTokens, signal, fallback })) {
    if (piece.type === 'token') {
      yield piece;
      continue;
    }
    if (piece.removedMarkers > 0) deps.metrics.citationsRemoved.inc(piece.removedMarkers);
    const entityNames = extractEntities(sources.map((s) => s.content).join('\n\n'), 20)
      .sort((a, b) => b.mentions - a.mentions)
      .map((e) => e.name);
    yield {
      type: 'done',
      result: { answer: piece.answer, citations: piece.citations, chunk_count: sources.length, suggested_followups: suggestFollowups(question, sources, entityNames, 3, piece.citations.length > 0) },
    };
  }
}

export async function search(deps: MemoryDeps, scope: MemoryScope, query: string, options: SearchOptions = {}): Promise<SearchAnswer & { mode: Retrieval['mode'] }> {
  const started = process.hrtime.bigint();
  const retrieval = await retrieve(deps, scope, query, options);
  let result: SearchAnswer | undefined;
  for await (const piece of answerStream(deps, query, retrieval.sources)) if (piece.type === 'done') result = piece.result;
  deps.metrics.searchDuration.observe({ mode: retrieval.mode, stream: 'false' }, Number(process.hrtime.bigint() - started) / 1e9);
  return { ...(result as SearchAnswer), mode: retrieval.mode };
}
