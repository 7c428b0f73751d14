import Router from '@koa/router';
import { validate } from '@lore/runtime';
import { z } from 'zod';
import { contradictionsOf, resolve } from '../../application/governance';
import { bodyOf, requireWrite, type GraphState, type RouteDeps } from '../context';

const QuerySchema = z.object({ status: z.enum(['open', 'resolved']).optional(), limit: z.coerce.number().int().min(1).max(200).default(50) });
const ResolveSchema = z.object({
  resolution: z.enum(['keep_first', 'keep_second', 'both_valid', 'dismissed']),
  note: z.string().max(2_000).optional(),
});

/** Disagreements between sources, each with both sides, and the resolve action. */
export function contradictionRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();
  router.get('/contradictions', async (ctx) => {
    const q = validate(QuerySchema, ctx.query, 'query');
    const items = await contradictionsOf(deps.memory, ctx.state.scope, q.status, q.limit);
    ctx.body = { contradictions: items, count: items.length };
  });
  router.post('/contradictions/:contradiction_id/resolve', requireWrite(), async (ctx) => {
    const body = validate(ResolveSchema, bodyOf(ctx));
    ctx.body = await resolve(deps.memory, ctx.state.scope, ctx.params.contradiction_id ?? '', body.resolution, body.note ?? null);
  });
  return router;
}
