import { graphPost, GraphCallError, type GraphHttpOptions } from './graph-http';
import { z } from 'zod';

/** A chunk retrieval found, as the memory API's `POST /api/v1/memory/retrieve` answers it. */
const chunkSchema = z.object({
  index: z.number().int(),
  document_id: z.string(),
  chunk_id: z.string(),
  chunk_ind: z.number().int(),
  title: z.string(),
  vault_id: z.string(),
  heading: z.string().nullable(),
  content: z.string(),
  snippet: z.string(),
  score: z.number(),
  source: z.string(),
  updated_at: z.string(),
  // A connector's documents carry where they came from (absent from an older memory API: treated as none).
  source_type: z.string().nullable().default(null),
  link: z.string().nullable().default(null),
  primary_owners: z.array(z.string()).nullable().default(null),
  secondary_owners: z.array(z.string()).nullable().default(null),
  metadata: z.record(z.string(), z.string()).default({}),
});
const retrievalSchema = z.object({ retrieval: z.enum(['hybrid', 'lexical']), chunks: z.array(chunkSchema) });

export type RetrievedChunk = z.infer<typeof chunkSchema>;

/**
 * The one retrieval engine (the graph service's hybrid index), asked with a signed identity so it sees exactly what
 * that identity may see and nothing else: core's chat (`internal_search`, the caller's identity) and the agents'
 * list building (the tenant's knowledge, an identity the worker signs as the workflow's starter) read through it.
 */
export interface KnowledgeSearch {
  /**
   * `topK` undefined: the memory API's own default, the same as its search answers from. `sourceTypes`: only
   * documents connectors of these kinds wrote (the filter runs in the retrieval).
   */
  retrieve(identityToken: string, query: string, topK: number | undefined, signal?: AbortSignal, sourceTypes?: string[]): Promise<RetrievedChunk[]>;
}

/** The memory API could not answer (a `GraphCallError`, or an answer it should not give). */
export class KnowledgeSearchError extends GraphCallError {}

export type GraphKnowledgeSearchOptions = GraphHttpOptions;

/** The memory API over HTTP (a cluster's graph Service, or the embedded process's unix socket). */
export class GraphKnowledgeSearch implements KnowledgeSearch {
  constructor(private readonly options: GraphKnowledgeSearchOptions) {}

  async retrieve(identityToken: string, query: string, topK: number | undefined, signal?: AbortSignal, sourceTypes?: string[]): Promise<RetrievedChunk[]> {
    const body = JSON.stringify({
      query: query.slice(0, 2_000),
      ...(topK === undefined ? {} : { top_k: Math.max(1, Math.min(topK, 20)) }),
      ...(sourceTypes === undefined ? {} : { source_types: sourceTypes.slice(0, 20) }),
    });
    const { status, text } = await graphPost(this.options, '/api/v1/memory/retrieve', body, identityToken, signal);
    // No memory selected for this credential (its workspace has none): nothing to search, not a failure.
    if (status === 404) return [];
    if (status !== 200) throw new KnowledgeSearchError(`the memory API answered ${status}`);
    const parsed = retrievalSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new KnowledgeSearchError('the memory API answered an unexpected body');
    return parsed.data.chunks;
  }
}
