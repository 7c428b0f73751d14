import Router from '@koa/router';
import { health } from '../../application/governance';
import { requireWrite, type GraphState, type RouteDeps } from '../context';

/** Memory health: GET computes it; POST /health/assess also publishes `memory.health.assessed`. */
export function healthRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();
  router.get('/health', async (ctx) => {
    ctx.body = await health(deps.memory, ctx.state.scope, false);
  });
  router.post('/health/assess', requireWrite(), async (ctx) => {
    ctx.body = await health(deps.memory, ctx.state.scope, true);
  });
  return router;
}
