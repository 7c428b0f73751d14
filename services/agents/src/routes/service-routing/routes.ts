import type { RoutedPrompt, Router } from '../../application/service-routing';
import { AGENTS_SECURITY, FAMILY, NONE, route, type AgentsGuard } from '../route';
import { presentRoute, presentRoutingHealth, routeBody, routeView, routingHealthView } from './schema';

export interface ServiceRoutingRouteDeps {
  guard: AgentsGuard;
  route(prompt: string): Promise<RoutedPrompt>;
  router(): Router;
}

/** Spec 3's service routing: which agent service a prompt belongs to, and its health. Detail family. */
export function serviceRoutingRoutes(deps: ServiceRoutingRouteDeps) {
  const family = FAMILY.detail;
  return [
    route({
      method: 'post',
      path: '/api/service-routing/route',
      operationId: 'routeService',
      summary: 'Choose the agent service for a prompt',
      description:
        'A deterministic rule, or the configured language model with the rule as its fallback (docs/agents.md, "Service routing"). ' +
        'A blank prompt answers 422 body (c). Nothing is started: the answer names the route to call next.',
      tags: ['utility'],
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'detail'),
      body: routeBody,
      invalid: family.invalid,
      unreadable: family.unreadable,
      ok: { status: 200, description: 'the chosen service', schema: routeView },
      handler: async (_ctx, { body }) => presentRoute(await deps.route(body.prompt)),
    }),
    route({
      method: 'get',
      path: '/api/service-routing/health',
      operationId: 'serviceRoutingHealth',
      summary: 'Health of service routing',
      description: 'Open to anyone. The rule needs nothing to answer, so routing is always healthy; `router` says who decides.',
      tags: ['utility'],
      security: NONE,
      ok: { status: 200, description: 'routing health', schema: routingHealthView },
      handler: () => presentRoutingHealth(deps.router()),
    }),
  ];
}
