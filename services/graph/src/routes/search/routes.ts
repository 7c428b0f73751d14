import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { validate } from '@lore/runtime';
import { answerStream, retrieve, search } from '../../application/search';
import { bodyOf, type GraphState, type RouteDeps } from '../context';
import { SearchBodySchema } from './schema';

/** One server-sent event frame: `event: <name>\ndata: <json>\n\n` (data is single-line JSON). */
export function sseFrame(event: string, data: unknown, id?: number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function searchRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();

  router.post('/search', async (ctx) => {
    const body = validate(SearchBodySchema, bodyOf(ctx));
    const r = await search(deps.memory, ctx.state.scope, body.query, { vaultIds: body.vault_ids, topK: body.top_k });
    ctx.body = {
      answer: r.answer,
      citations: r.citations,
      chunk_count: r.chunk_count,
      suggested_followups: r.suggested_followups,
      retrieval: r.mode,
    };
  });

  /**
   * Streamed search. Frames, in order: one `sources` (every chunk the answer may cite, with its index), then
   * `token` frames (`{"text": …}`, already citation-checked), then one `done` (the complete answer object, as
   * the non-streamed route returns it). A failure after the first frame is reported as an `error` frame.
   */
  router.post('/search/stream', async (ctx) => {
    const body = validate(SearchBodySchema, bodyOf(ctx));
    const retrieval = await retrieve(deps.memory, ctx.state.scope, body.query, { vaultIds: body.vault_ids, topK: body.top_k });
    const abort = new AbortController();
    const stream = new PassThrough();
    // The request body was consumed already; the response closing before it finished means the client left.
    ctx.res.on('close', () => {
      if (!ctx.res.writableFinished) abort.abort();
    });
    ctx.status = 200;
    ctx.set('content-type', 'text/event-stream; charset=utf-8');
    ctx.set('cache-control', 'no-cache, no-transform');
    ctx.set('x-accel-buffering', 'no');
    ctx.body = stream;
    const log = ctx.state.log;
    const started = process.hrtime.bigint();
    void (async () => {
      let id = 0;
      try {
        stream.write(
          sseFrame(
            'sources',
            {
              retrieval: retrieval.mode,
              chunk_count: retrieval.sources.length,
              sources: retrieval.sources.map((s) => ({
                index: s.index,
                title: s.title,
                document_id: s.document_id,
                vault_id: s.vault_id,
                snippet: s.snippet,
              })),
            },
            id++,
          ),
        );
        for await (const piece of answerStream(deps.memory, body.query, retrieval.sources, abort.signal)) {
          if (abort.signal.aborted) break;
          if (piece.type === 'token') stream.write(sseFrame('token', { text: piece.text }, id++));
          else stream.write(sseFrame('done', { ...piece.result, retrieval: retrieval.mode }, id++));
        }
      } catch (err) {
        log.warn({ err }, 'streamed search failed');
        if (!abort.signal.aborted) stream.write(sseFrame('error', { code: 'INTERNAL', message: 'the answer could not be completed' }, id++));
      } finally {
        deps.memory.metrics.searchDuration.observe({ mode: retrieval.mode, stream: 'true' }, Number(process.hrtime.bigint() - started) / 1e9);
        stream.end();
      }
    })();
  });
  return router;
}
