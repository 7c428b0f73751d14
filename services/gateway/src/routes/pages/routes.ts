import type Koa from 'koa';
import type { GatewayKoaContext } from '../../http/state';
import { KEY, route, type KeyGuard } from '../../http/route';
import { pingView, presentPing } from './schema';

export interface PageRouteDeps {
  guard: KeyGuard;
}

/** The ping body as plain middleware; the benchmark mounts it without the credential step to compare both sides. */
export function pingHandler(ctx: GatewayKoaContext, _next?: Koa.Next): void {
  ctx.body = presentPing(ctx.state.principal);
}

export function pageRoutes(deps: PageRouteDeps) {
  return [
    route({
      method: 'get', path: '/api/v1/pages/ping', operationId: 'ping', summary: 'The tenant and role the credential resolves to',
      security: KEY, guards: [deps.guard({ module: 'pages', access: 'read', operation: 'ping' })],
      ok: { status: 200, description: 'the tenant resolved from the credential', schema: pingView },
      handler: (ctx) => presentPing(ctx.state.principal),
    }),
  ];
}
