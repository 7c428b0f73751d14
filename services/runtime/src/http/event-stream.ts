import { PassThrough } from 'node:stream';
import type Koa from 'koa';

export interface OpenedStream {
  /** The response body: what is written here goes to the client as it is written. */
  out: PassThrough;
  /** Aborted when the client goes away before the answer ended (the work behind it may stop). */
  gone: AbortSignal;
}

/**
 * Starts a streamed answer: status 200, the media type (server-sent events unless told otherwise), no caching and no
 * proxy buffering (`x-accel-buffering: no`), and a body the caller writes to and ends. Every streamed route of every
 * service opens its answer here.
 */
export function openStream(ctx: Koa.Context, contentType = 'text/event-stream; charset=utf-8', headers: Record<string, string> = {}): OpenedStream {
  const out = new PassThrough();
  const gone = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) gone.abort();
  });
  ctx.status = 200;
  ctx.set({ 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', ...headers });
  ctx.set('content-type', contentType);
  ctx.body = out;
  return { out, gone: gone.signal };
}
