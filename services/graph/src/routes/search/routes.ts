import { openStream } from '@lore/runtime';
import type { z } from 'zod';
import type { AnswerPiece, Retrieval, SearchAnswer, SearchOptions } from '../../application/search';
import type { MemoryScope } from '../../application/context';
import { KEY, MEMORY_PREFIX, route, type MemoryGuard } from '../route';
import { RetrievalSchema, SearchAnswerSchema, SearchBodySchema, presentRetrieval, presentSearchAnswer, presentSources, streamContent } from './schema';

export interface SearchRouteDeps {
  guard: MemoryGuard;
  search: {
    /** Retrieval and the checked answer in one call. */
    answer: (scope: MemoryScope, query: string, options: SearchOptions) => Promise<SearchAnswer & { mode: 'hybrid' | 'lexical' }>;
    retrieve: (scope: MemoryScope, query: string, options: SearchOptions) => Promise<Retrieval>;
    /** The checked answer over retrieved sources, sentence by sentence. */
    stream: (query: string, retrieval: Retrieval, signal: AbortSignal) => AsyncIterable<AnswerPiece>;
    /** Records how long a streamed answer took. */
    observe: (mode: 'hybrid' | 'lexical', seconds: number) => void;
  };
}

/** What the three routes' common body asks of retrieval. */
function searchOptions(body: z.output<typeof SearchBodySchema>): SearchOptions {
  return { vaultIds: body.vault_ids, sourceTypes: body.source_types, topK: body.top_k };
}

/** One server-sent event frame: `event: <name>\ndata: <json>\n\n` (data is single-line JSON). */
export function sseFrame(event: string, data: unknown, id?: number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Cited search over the caller's memory: one answer, or the same answer streamed. Read-only keys may search. */
export function searchRoutes(deps: SearchRouteDeps) {
  const tags = ['search'];
  return [
    route({
      method: 'post', path: `${MEMORY_PREFIX}/search`, operationId: 'searchMemory', tags,
      summary: 'Cited answer from hybrid retrieval',
      security: KEY, guards: [deps.guard('search')],
      body: SearchBodySchema,
      ok: { status: 200, description: 'the answer; every `[n]` marker points at a citation that supports it', schema: SearchAnswerSchema },
      handler: async (ctx, { body }) => {
        const r = await deps.search.answer(ctx.state.scope, body.query, searchOptions(body));
        return presentSearchAnswer(r, r.mode);
      },
    }),
    route({
      method: 'post', path: `${MEMORY_PREFIX}/retrieve`, operationId: 'retrieveMemory', tags,
      summary: 'Hybrid retrieval only: the chunks a cited answer would draw on, whole',
      description: 'The same retrieval as search, without an answer: for clients that answer themselves, and for chat\'s internal_search.',
      security: KEY, guards: [deps.guard('search')],
      body: SearchBodySchema,
      ok: { status: 200, description: 'the chunks, best first, numbered from 1', schema: RetrievalSchema },
      handler: async (ctx, { body }) => presentRetrieval(await deps.search.retrieve(ctx.state.scope, body.query, searchOptions(body))),
    }),
    /**
     * Streamed search. Frames, in order: one `sources` (every chunk the answer may cite, with its index), then
     * `token` frames (`{"text": …}`, already citation-checked), then one `done` (the complete answer object, as
     * the non-streamed route returns it). A failure after the first frame is reported as an `error` frame.
     */
    route({
      method: 'post', path: `${MEMORY_PREFIX}/search/stream`, operationId: 'streamSearchMemory', tags,
      summary: 'Streamed cited answer: sources, tokens, done (server-sent events)',
      security: KEY, guards: [deps.guard('search')],
      body: SearchBodySchema,
      ok: { status: 200, description: 'server-sent events: `sources`, `token`*, then `done` (or `error`)', content: streamContent() },
      handler: async (ctx, { body }) => {
        const retrieval = await deps.search.retrieve(ctx.state.scope, body.query, searchOptions(body));
        // The request body was consumed already; the response closing before it finished means the client left.
        const { out: stream, gone } = openStream(ctx);
        const log = ctx.state.log;
        const started = process.hrtime.bigint();
        void (async () => {
          let id = 0;
          try {
            stream.write(sseFrame('sources', presentSources(retrieval.mode, retrieval.sources), id++));
            for await (const piece of deps.search.stream(body.query, retrieval, gone)) {
              if (gone.aborted) break;
              if (piece.type === 'token') stream.write(sseFrame('token', { text: piece.text }, id++));
              else stream.write(sseFrame('done', presentSearchAnswer(piece.result, retrieval.mode), id++));
            }
          } catch (err) {
            log.warn({ err }, 'streamed search failed');
            if (!gone.aborted) stream.write(sseFrame('error', { code: 'INTERNAL', message: 'the answer could not be completed' }, id++));
          } finally {
            deps.search.observe(retrieval.mode, Number(process.hrtime.bigint() - started) / 1e9);
            stream.end();
          }
        })();
      },
    }),
  ];
}
