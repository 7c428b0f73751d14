import type Koa from 'koa';
import type { GatewayContext } from '../../context';
import { requireApiKey } from '../../http/guards';
import type { GatewayKoaContext, GatewayRouter } from '../../http/state';
import type { PingView } from './schema';

/** The ping body; also used unauthenticated by the benchmark's baseline so both sides run the same handler. */
export function pingHandler(ctx: GatewayKoaContext, _next?: Koa.Next): void {
  const p = ctx.state.principal;
  const body: PingView = { status: 'ok', service: 'gateway', tenant_id: p?.tenantId ?? '', role: p?.role ?? '' };
  ctx.body = body;
}

export function registerPageRoutes(router: GatewayRouter, context: GatewayContext): void {
  router.get('/api/v1/pages/ping', requireApiKey(context, { module: 'pages', access: 'read', operation: 'ping' }), pingHandler);
}
