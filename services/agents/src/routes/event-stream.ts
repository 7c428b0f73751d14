import { openStream } from '@lore/runtime';
import type { ParameterizedContext } from 'koa';
import { writeWithDrain, type StreamSink } from '../application/generic-workflows';
import type { AgentsState } from './route';

/**
 * Answers a server-sent stream (docs/agents.md, "Generic workflow API"): `follow` writes its frames to the sink, with
 * the client's back-pressure, until it ends or the client goes away. The run itself keeps going either way; the stream
 * slot is given back (`leave`, which must tolerate a second call) as soon as the client leaves, and the answer ends
 * when `follow` does. A failed follow is logged; the client resumes with Last-Event-ID.
 */
export function serveEventStream(
  ctx: ParameterizedContext<AgentsState>,
  follow: (sink: StreamSink) => Promise<void>,
  leave: () => void,
  log: { what: string; threadId: string },
  headers: Record<string, string> = {},
): void {
  const { out, gone } = openStream(ctx, undefined, headers);
  ctx.res.once('close', leave);
  const logger = ctx.state.log;
  void follow({ signal: gone, write: (chunk) => writeWithDrain(out, chunk, gone) })
    .catch((err: unknown) => logger.error({ err, thread_id: log.threadId }, `${log.what} stream failed; the client resumes it with Last-Event-ID`))
    .finally(() => {
      leave();
      out.end();
    });
}
