import { request } from 'node:http';
import { IDENTITY_HEADER } from '@lore/runtime';
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
});
const retrievalSchema = z.object({ retrieval: z.enum(['hybrid', 'lexical']), chunks: z.array(chunkSchema) });

export type RetrievedChunk = z.infer<typeof chunkSchema>;

/**
 * Where chat's `internal_search` finds documents: the one retrieval engine (the graph service's hybrid index), asked
 * with the caller's own signed identity, so it sees exactly what the caller may see and nothing else.
 */
export interface KnowledgeSearch {
  /** `topK` undefined: the memory API's own default, the same as its search answers from. */
  retrieve(identityToken: string, query: string, topK: number | undefined, signal?: AbortSignal): Promise<RetrievedChunk[]>;
}

export class KnowledgeSearchError extends Error {}

export interface GraphKnowledgeSearchOptions {
  /** `http://host:port` or `unix:/path/to.sock`. */
  url: string;
  timeoutMs: number;
  /** Largest answer read (bytes). */
  maxBytes?: number;
}

/** The memory API over HTTP (a cluster's graph Service, or the embedded process's unix socket). */
export class GraphKnowledgeSearch implements KnowledgeSearch {
  constructor(private readonly options: GraphKnowledgeSearchOptions) {}

  async retrieve(identityToken: string, query: string, topK: number | undefined, signal?: AbortSignal): Promise<RetrievedChunk[]> {
    const body = JSON.stringify({ query: query.slice(0, 2_000), ...(topK === undefined ? {} : { top_k: Math.max(1, Math.min(topK, 20)) }) });
    const { status, text } = await this.post('/api/v1/memory/retrieve', body, identityToken, signal);
    // No memory selected for this credential (its workspace has none): nothing to search, not a failure.
    if (status === 404) return [];
    if (status !== 200) throw new KnowledgeSearchError(`the memory API answered ${status}`);
    const parsed = retrievalSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new KnowledgeSearchError('the memory API answered an unexpected body');
    return parsed.data.chunks;
  }

  private post(path: string, body: string, identityToken: string, signal?: AbortSignal): Promise<{ status: number; text: string }> {
    const url = this.options.url;
    const target = url.startsWith('unix:') ? { socketPath: url.slice('unix:'.length) } : (() => {
      const u = new URL(url);
      return { host: u.hostname, port: u.port || 80 };
    })();
    const maxBytes = this.options.maxBytes ?? 8 * 1024 * 1024;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          ...target,
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [IDENTITY_HEADER]: identityToken },
          timeout: this.options.timeoutMs,
          signal,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > maxBytes) {
              req.destroy(new KnowledgeSearchError('the memory API answer is larger than the limit'));
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new KnowledgeSearchError('the memory API did not answer in time')));
      req.on('error', (err) => reject(err instanceof KnowledgeSearchError ? err : new KnowledgeSearchError(`the memory API cannot be reached: ${err.message}`)));
      req.end(body);
    });
  }
}
