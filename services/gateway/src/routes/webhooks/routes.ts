import { AppError } from '@lore/runtime';
import type Koa from 'koa';
import type { GatewayRequestState } from '../../http/state';
import { KEY, err, route, type KeyGuard } from '../../http/route';
import type { Viewer, WebhookService } from '../../webhooks/subscriptions';
import {
  WebhookViewSchema,
  WebhookWithSecretSchema,
  createWebhookBody,
  deadLetterListView,
  deliveryDetailView,
  deliveryListView,
  listDeadLettersQuery,
  listDeliveriesQuery,
  listWebhooksQuery,
  presentAttempt,
  presentDelivery,
  presentWebhook,
  presentWebhookWithSecret,
  replayBody,
  replayView,
  rotateSecretBody,
  updateWebhookBody,
  webhookListView,
} from './schema';

export interface WebhookRouteDeps {
  guard: KeyGuard;
  webhooks: Pick<WebhookService, 'create' | 'list' | 'get' | 'update' | 'remove' | 'rotateSecret' | 'deliveries' | 'delivery' | 'deadLetters' | 'replay'>;
}

const ATTEMPTS_SHOWN = 100;
const ID_MAX = 64;

/**
 * Webhooks are a tenant-level resource: a key pinned to a workspace manages that workspace's subscriptions only,
 * and a key narrowed to one project or to some memories cannot manage them at all (a subscription would receive
 * events beyond what the key may read).
 */
function viewerOf(ctx: Koa.ParameterizedContext<GatewayRequestState>): Viewer {
  const p = ctx.state.principal!;
  if (p.credential === 'mk') throw AppError.forbidden('a memory key cannot manage webhooks');
  if (p.projectId) throw AppError.forbidden('a key scoped to one project cannot manage webhooks');
  if (p.keyScope?.memories && p.keyScope.memories.length > 0) throw AppError.forbidden('a key scoped to some memories cannot manage webhooks');
  if (!p.readsMemory) throw AppError.forbidden("a credential that may not read the memory cannot manage webhooks: every event carries documents' ids");
  return { tenantId: p.tenantId, workspaceId: p.pinnedWorkspaceId };
}

/** Ids longer than any we issue cannot exist; they are answered like any other unknown id. */
function idOf(params: Record<string, string>, name: string, what: string): string {
  const v = params[name] ?? '';
  if (v.length === 0 || v.length > ID_MAX) throw AppError.notFound(what);
  return v;
}

const nextCursor = <T extends { id: string }>(rows: T[], limit: number) => (rows.length === limit ? rows[rows.length - 1]!.id : null);

/** `/api/v1/webhooks...`: subscriptions, secret rotation, delivery history, dead letters and replay. */
export function webhookRoutes(deps: WebhookRouteDeps) {
  const read = (operation: string) => [deps.guard({ module: 'webhooks', access: 'read', operation })];
  const write = (operation: string) => [deps.guard({ module: 'webhooks', access: 'write', operation })];
  const service = deps.webhooks;
  const tags = ['webhooks'];
  const forbidden = { 403: err('key scope, IP allowlist, a key narrowed to a memory, a project or some memories, or a credential that may not read the memory') };
  return [
    route({
      method: 'post', path: '/api/v1/webhooks', operationId: 'createWebhook', summary: 'Subscribe an HTTPS endpoint to events', tags,
      security: KEY, guards: write('create'),
      body: createWebhookBody,
      ok: { status: 201, description: 'the subscription; `secret` is shown only here and on rotation', schema: WebhookWithSecretSchema },
      responses: { ...forbidden, 422: err('the tenant has as many subscriptions as it may have') },
      handler: async (ctx, { body }) => {
        const { subscription, secret } = await service.create(viewerOf(ctx), body);
        ctx.set('cache-control', 'no-store');
        return presentWebhookWithSecret(subscription, secret);
      },
    }),
    route({
      method: 'get', path: '/api/v1/webhooks', operationId: 'listWebhooks', summary: 'The subscriptions the credential can see', tags,
      security: KEY, guards: read('list'), query: listWebhooksQuery,
      ok: { status: 200, description: 'a page of subscriptions', schema: webhookListView },
      responses: forbidden,
      handler: async (ctx, { query }) => {
        const rows = await service.list(viewerOf(ctx), { limit: query.limit, after: query.cursor ?? null });
        return { webhooks: rows.map((r) => presentWebhook(r)), count: rows.length, next_cursor: nextCursor(rows, query.limit) };
      },
    }),
    route({
      method: 'get', path: '/api/v1/webhooks/:webhook_id', operationId: 'getWebhook', summary: 'One subscription', tags,
      security: KEY, guards: read('get'),
      ok: { status: 200, description: 'the subscription', schema: WebhookViewSchema },
      responses: forbidden,
      handler: async (ctx, { params }) => presentWebhook(await service.get(viewerOf(ctx), idOf(params, 'webhook_id', 'webhook'))),
    }),
    route({
      method: 'patch', path: '/api/v1/webhooks/:webhook_id', operationId: 'updateWebhook', summary: 'Change url, events, description or enabled', tags,
      security: KEY, guards: write('update'),
      body: updateWebhookBody,
      ok: { status: 200, description: 'the subscription', schema: WebhookViewSchema },
      responses: forbidden,
      handler: async (ctx, { params, body }) => {
        const viewer = viewerOf(ctx);
        return presentWebhook(await service.update(viewer, idOf(params, 'webhook_id', 'webhook'), body));
      },
    }),
    route({
      method: 'delete', path: '/api/v1/webhooks/:webhook_id', operationId: 'deleteWebhook', summary: 'Delete a subscription', tags,
      security: KEY, guards: write('delete'),
      ok: { status: 204, description: 'deleted' },
      responses: forbidden,
      handler: async (ctx, { params }) => {
        await service.remove(viewerOf(ctx), idOf(params, 'webhook_id', 'webhook'));
        ctx.status = 204;
      },
    }),
    route({
      method: 'post', path: '/api/v1/webhooks/:webhook_id/rotate-secret', operationId: 'rotateWebhookSecret', summary: 'New signing secret; the old one signs too for the overlap', tags,
      security: KEY, guards: write('rotate-secret'),
      body: rotateSecretBody,
      ok: { status: 200, description: 'the subscription with its new `secret`, shown only here', schema: WebhookWithSecretSchema },
      responses: forbidden,
      handler: async (ctx, { params, body }) => {
        const viewer = viewerOf(ctx);
        const { subscription, secret } = await service.rotateSecret(viewer, idOf(params, 'webhook_id', 'webhook'), body.overlap_seconds);
        ctx.set('cache-control', 'no-store');
        return presentWebhookWithSecret(subscription, secret);
      },
    }),
    route({
      method: 'get', path: '/api/v1/webhooks/:webhook_id/deliveries', operationId: 'listWebhookDeliveries', summary: 'Delivery history, newest first', tags,
      security: KEY, guards: read('deliveries'), query: listDeliveriesQuery,
      ok: { status: 200, description: 'a page of deliveries; settled ones are kept `LORE_WEBHOOKS_RETENTION_DAYS` days (30 by default) after their last change', schema: deliveryListView },
      responses: forbidden,
      handler: async (ctx, { params, query }) => {
        const viewer = viewerOf(ctx);
        const rows = await service.deliveries(viewer, idOf(params, 'webhook_id', 'webhook'), { status: query.status ?? null, limit: query.limit, before: query.cursor ?? null });
        return { deliveries: rows.map(presentDelivery), count: rows.length, next_cursor: nextCursor(rows, query.limit) };
      },
    }),
    route({
      method: 'get', path: '/api/v1/webhooks/:webhook_id/deliveries/:delivery_id', operationId: 'getWebhookDelivery', summary: 'One delivery with its attempts', tags,
      security: KEY, guards: read('deliveries'),
      ok: { status: 200, description: 'the delivery and up to 100 attempts', schema: deliveryDetailView },
      responses: forbidden,
      handler: async (ctx, { params }) => {
        const viewer = viewerOf(ctx);
        const { delivery, attempts } = await service.delivery(viewer, idOf(params, 'webhook_id', 'webhook'), idOf(params, 'delivery_id', 'delivery'), ATTEMPTS_SHOWN);
        return { ...presentDelivery(delivery), attempts: attempts.map(presentAttempt) };
      },
    }),
    route({
      method: 'get', path: '/api/v1/webhooks/:webhook_id/dead-letters', operationId: 'listWebhookDeadLetters', summary: 'Deliveries that ran out of attempts', tags,
      security: KEY, guards: read('dead-letters'), query: listDeadLettersQuery,
      ok: { status: 200, description: 'a page of dead letters, kept `LORE_WEBHOOKS_RETENTION_DAYS` days (30 by default) after their last change', schema: deadLetterListView },
      responses: forbidden,
      handler: async (ctx, { params, query }) => {
        const viewer = viewerOf(ctx);
        const rows = await service.deadLetters(viewer, idOf(params, 'webhook_id', 'webhook'), { from: query.from ?? null, to: query.to ?? null, limit: query.limit, after: query.cursor ?? null });
        return { dead_letters: rows.map(presentDelivery), count: rows.length, next_cursor: nextCursor(rows, query.limit) };
      },
    }),
    route({
      method: 'post', path: '/api/v1/webhooks/:webhook_id/dead-letters/replay', operationId: 'replayWebhookDeadLetters', summary: 'Deliver dead letters again (by id or time range)', tags,
      security: KEY, guards: write('replay'),
      body: replayBody,
      ok: { status: 202, description: 'the deliveries queued again', schema: replayView },
      responses: { ...forbidden, 409: err('the webhook is disabled; enable it first') },
      handler: async (ctx, { params, body }) => {
        const viewer = viewerOf(ctx);
        const selection = body.delivery_ids !== undefined ? { deliveryIds: body.delivery_ids } : { from: body.from ?? null, to: body.to ?? null };
        const revived = await service.replay(viewer, idOf(params, 'webhook_id', 'webhook'), selection);
        return { replayed: revived.length, delivery_ids: revived.map((d) => d.id) };
      },
    }),
  ];
}
