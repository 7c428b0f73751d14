import Router from '@koa/router';
import { validate } from '@lore/runtime';
import { acceptDocument } from '../../application/ingest';
import { bodyOf, requireWrite, type GraphState, type RouteDeps } from '../context';
import { IngestBodySchema } from './schema';

/** POST /ingest: DLP + routing in the request, indexing in the worker; answers at once (spec 1 ingest result). */
export function ingestRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();
  router.post('/ingest', requireWrite(), async (ctx) => {
    const body = validate(IngestBodySchema, bodyOf(ctx));
    const result = await acceptDocument(deps.memory, ctx.state.scope, body, { source: 'ingest' });
    ctx.status = 200;
    ctx.body = result;
  });
  return router;
}
