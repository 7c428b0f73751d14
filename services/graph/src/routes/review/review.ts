import Router from '@koa/router';
import { validate } from '@lore/runtime';
import { z } from 'zod';
import { documentsOf, fileIntoVault } from '../../application/governance';
import { bodyOf, requireWrite, type GraphState, type RouteDeps } from '../context';
import { decodeCursor, encodeCursor } from '../documents/documents';

const QuerySchema = z.object({ limit: z.coerce.number().int().min(1).max(200).default(50), cursor: z.string().max(200).optional() });
const FileSchema = z.object({ vault_id: z.string().min(1).max(64) });

/** The review queue: documents waiting in `v_unassigned`, newest first, and the action that files one. */
export function reviewRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();
  router.get('/review', async (ctx) => {
    const q = validate(QuerySchema, ctx.query, 'query');
    const docs = await documentsOf(deps.memory, ctx.state.scope, {
      needs_review: true,
      limit: q.limit,
      before: q.cursor ? decodeCursor(q.cursor) : undefined,
    });
    const last = docs[docs.length - 1];
    ctx.body = { documents: docs, count: docs.length, next_cursor: docs.length === q.limit && last ? encodeCursor(last.created_at, last.doc_id) : null };
  });
  router.post('/review/:doc_id/file', requireWrite(), async (ctx) => {
    const body = validate(FileSchema, bodyOf(ctx));
    ctx.body = await fileIntoVault(deps.memory, ctx.state.scope, ctx.params.doc_id ?? '', body.vault_id);
  });
  return router;
}
