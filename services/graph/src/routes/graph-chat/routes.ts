import { detailError, detailValidationError, type AppError } from '@lore/runtime';
import type { GraphChatAnswer } from '../../application/graph-chat';
import type { GraphViewer } from '../../application/knowledge-graphs';
import { viewerOf } from '../knowledge-graphs/routes';
import { detailStringView, validationView } from '../knowledge-graphs/schema';
import { BEARER_OR_KEY, route, type MemoryGuard } from '../route';
import { GraphChatAnswerSchema, GraphChatBody, presentGraphChat } from './schema';

export interface GraphChatRouteDeps {
  guard: MemoryGuard;
  chat: (viewer: GraphViewer, input: { listId: string; question: string }, signal: AbortSignal) => Promise<GraphChatAnswer>;
}

/**
 * `POST /memory/chat` (spec 2): a question to one of the tenant's graphs. Asking only reads, so a read-only key may
 * ask (the gateway lists it among the read POSTs). Errors in spec 2's shapes, as the other knowledge-graph routes.
 */
export function graphChatRoutes(deps: GraphChatRouteDeps) {
  return [
    route({
      method: 'post', path: '/memory/chat', operationId: 'graphChat', summary: 'Ask a knowledge graph: the answer and the subgraph it comes from',
      tags: ['knowledge graphs'], security: BEARER_OR_KEY, invalid: detailValidationError, unreadable: (e: AppError) => detailError(e),
      guards: [deps.guard('read')],
      body: GraphChatBody,
      ok: { status: 200, description: 'the answer, with the nodes and edges of the graph it was read from', schema: GraphChatAnswerSchema },
      responses: {
        400: { description: 'the body is not clean JSON (malformed, not UTF-8, a NUL character, nested too deep)', schema: detailStringView },
        404: { description: 'no graph `listId` in the tenant (or one only administrators may see, to anyone else)', schema: detailStringView },
        422: { description: 'validation failure: `detail` lists every issue (loc, msg, type)', schema: validationView },
      },
      handler: async (ctx, { body }) => {
        const abort = new AbortController();
        ctx.req.once('close', () => {
          if (!ctx.res.writableEnded) abort.abort();
        });
        return presentGraphChat(await deps.chat(viewerOf(ctx), body, abort.signal));
      },
    }),
  ];
}
