import Router from '@koa/router';
import { AppError, validate } from '@lore/runtime';
import { z } from 'zod';
import { documentOf, documentsOf, removeDocument } from '../../application/governance';
import { requireWrite, type GraphState, type RouteDeps } from '../context';

const ListQuerySchema = z.object({
  vault_id: z.string().max(64).optional(),
  status: z.enum(['queued', 'indexed', 'failed']).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
});

/** Opaque keyset cursor: base64url of "<created_at>|<doc_id>". */
export function encodeCursor(createdAt: string, docId: string): string {
  return Buffer.from(`${createdAt}|${docId}`).toString('base64url');
}

export function decodeCursor(cursor: string): { created_at: string; doc_id: string } {
  const [createdAt, docId] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !docId || Number.isNaN(Date.parse(createdAt))) throw AppError.badRequest('cursor is invalid');
  return { created_at: createdAt, doc_id: docId };
}

/** Document status (the ingest's `doc_id`), listing and removal. */
export function documentRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();
  router.get('/documents', async (ctx) => {
    const q = validate(ListQuerySchema, ctx.query, 'query');
    const docs = await documentsOf(deps.memory, ctx.state.scope, {
      vault_id: q.vault_id,
      status: q.status,
      limit: q.limit,
      before: q.cursor ? decodeCursor(q.cursor) : undefined,
    });
    const last = docs[docs.length - 1];
    ctx.body = { documents: docs, count: docs.length, next_cursor: docs.length === q.limit && last ? encodeCursor(last.created_at, last.doc_id) : null };
  });
  router.get('/documents/:doc_id', async (ctx) => {
    ctx.body = await documentOf(deps.memory, ctx.state.scope, ctx.params.doc_id ?? '');
  });
  router.delete('/documents/:doc_id', requireWrite(), async (ctx) => {
    await removeDocument(deps.memory, ctx.state.scope, ctx.params.doc_id ?? '');
    ctx.status = 204;
  });
  return router;
}
