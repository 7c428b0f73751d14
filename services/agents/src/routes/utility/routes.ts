import type { HealthReport } from '../../application/health';
import type { ServiceFacts } from '../../application/context';
import { NONE, route } from '../route';
import { healthView, presentHealth, rootView } from './schema';

export interface UtilityRouteDeps {
  facts: ServiceFacts;
  health(): Promise<HealthReport>;
  /** Where this service's OpenAPI document is served (through the gateway). */
  docsPath: string;
}

/** Spec 3's `GET /api/health` and `GET /`: open to anyone, through the gateway as well. */
export function utilityRoutes(deps: UtilityRouteDeps) {
  return [
    route({
      method: 'get',
      path: '/api/health',
      operationId: 'health',
      summary: 'Health of the agents service',
      description: '`healthy` when its database answers; always 200, so a caller reads the status from the body.',
      security: NONE,
      ok: { status: 200, description: 'the health report', schema: healthView },
      handler: async () => presentHealth(await deps.health()),
    }),
    route({
      method: 'get',
      path: '/',
      operationId: 'root',
      summary: 'What this service is and where its documents are',
      security: NONE,
      ok: { status: 200, description: 'the service description', schema: rootView },
      handler: () => ({ name: 'Lore agents API', version: deps.facts.version, environment: deps.facts.environment, docs_url: deps.docsPath, health_url: '/api/health' }),
    }),
  ];
}
