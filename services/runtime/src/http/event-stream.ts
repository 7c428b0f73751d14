import { PassThrough } from 'node:stream';
import type Koa from 'koa';

export interface OpenedStream {
  /** The response body: what is written here goes to the client as it is written. */
  out: PassThrough;
  /** Aborted when the client goes away before the answer ended (the work behind it may stop): `clientGone`'s signal. */
  gone: AbortSignal;
}

const goneSignals = new WeakMap<Koa.Context['res'], AbortSignal>();

/**
 * Aborted when the client goes away before the response ended, from the moment of the first call, and at once when
 * it had already gone. A route that works before its stream opens (a chat turn prepared in a transaction) asks for
 * it first, so that a client leaving during that work cancels what follows as one leaving during the stream does:
 * until 2026-11-30 only `openStream` listened, from when it was called, and a client gone before then was never
 * seen to leave. Every call for one response answers the same signal.
 */
export function clientGone(ctx: Koa.Context): AbortSignal {
  const known = goneSignals.get(ctx.res);
  if (known) return known;
  const gone = new AbortController();
  const left = () => {
    if (!ctx.res.writableFinished) gone.abort();
  };
  // Its `close` already came: the response (or the socket under it) is destroyed, and no listener would hear it.
  if (ctx.res.destroyed || ctx.req.socket?.destroyed) left();
  else ctx.res.once('close', left);
  goneSignals.set(ctx.res, gone.signal);
  return gone.signal;
}

/**
 * Starts a streamed answer: status 200, the media type (server-sent events unless told otherwise), no caching and no
 * proxy buffering (`x-accel-buffering: no`), and a body the caller writes to and ends. Every streamed route of every
 * service opens its answer here.
 */
export function openStream(ctx: Koa.Context, contentType = 'text/event-stream; charset=utf-8', headers: Record<string, string> = {}): OpenedStream {
  const out = new PassThrough();
  const gone = clientGone(ctx);
  ctx.status = 200;
  ctx.set({ 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', ...headers });
  ctx.set('content-type', contentType);
  ctx.body = out;
  return { out, gone };
}
