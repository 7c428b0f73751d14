import type { MemoryScope } from '../../application/context';
import type { HealthAssessment } from '../../domain/health';
import { KEY, MEMORY_PREFIX, READ_ONLY, route, type MemoryGuard } from '../route';
import { HealthSchema, presentHealth } from './schema';

export interface HealthRouteDeps {
  guard: MemoryGuard;
  /** The memory's health; with `publish` also records `memory.health.assessed`. */
  health: (scope: MemoryScope, publish: boolean) => Promise<HealthAssessment & { assessed_at: string }>;
}

/** Memory health: GET computes it; POST /health/assess also publishes `memory.health.assessed`. */
export function healthRoutes(deps: HealthRouteDeps) {
  const tags = ['health'];
  return [
    route({
      method: 'get', path: `${MEMORY_PREFIX}/health`, operationId: 'getMemoryHealth', summary: 'Memory health score with diagnostics', tags,
      security: KEY, guards: [deps.guard('read')],
      ok: { status: 200, description: 'the assessment', schema: HealthSchema },
      handler: async (ctx) => presentHealth(await deps.health(ctx.state.scope, false)),
    }),
    route({
      method: 'post', path: `${MEMORY_PREFIX}/health/assess`, operationId: 'assessMemoryHealth', summary: 'Assess and publish memory.health.assessed', tags,
      security: KEY, guards: [deps.guard('write')],
      ok: { status: 200, description: 'the assessment, also published as `memory.health.assessed`', schema: HealthSchema },
      responses: READ_ONLY,
      handler: async (ctx) => presentHealth(await deps.health(ctx.state.scope, true)),
    }),
  ];
}
