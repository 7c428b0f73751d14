import { AppError, validate } from '@lore/runtime';
import type Koa from 'koa';
import type { WebhookRouteDeps } from '../../http/extension';
import type { GatewayKoaContext, GatewayRouter } from '../../http/state';
import type { AttemptRow, DeliveryRow } from '../../webhooks/store/deliveries';
import type { SubscriptionRow } from '../../webhooks/store/subscriptions';
import { WebhookService, type Viewer, type WebhookServiceOptions } from '../../webhooks/subscriptions';
import {
  createWebhookBody,
  listDeadLettersQuery,
  listDeliveriesQuery,
  listWebhooksQuery,
  replayBody,
  rotateSecretBody,
  updateWebhookBody,
  type AttemptView,
  type DeliveryView,
  type WebhookView,
} from './schema';

export interface WebhookRoutesDeps extends WebhookRouteDeps {
  /** Subscription rules beyond the gateway's config (tests); loopback targets follow `config.webhooks.allowLoopback`. */
  webhooks?: WebhookServiceOptions;
}

const ATTEMPTS_SHOWN = 100;
const ID_MAX = 64;

export function presentWebhook(s: SubscriptionRow, now = new Date()): WebhookView {
  const overlap = s.storedPreviousSecret !== null && s.previousSecretExpiresAt !== null && s.previousSecretExpiresAt > now;
  return {
    webhook_id: s.id,
    url: s.url,
    events: s.events as WebhookView['events'],
    description: s.description,
    enabled: s.enabled,
    disabled_reason: s.disabledReason,
    disabled_at: s.disabledAt?.toISOString() ?? null,
    workspace_id: s.workspaceId,
    previous_secret_expires_at: overlap ? s.previousSecretExpiresAt!.toISOString() : null,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

export function presentDelivery(d: DeliveryRow): DeliveryView {
  return {
    delivery_id: d.id,
    event_id: d.eventId,
    event: d.event,
    status: d.status,
    attempt_count: d.attempts,
    cycle: d.cycle,
    next_attempt_at: d.status === 'pending' || d.status === 'retrying' ? (d.nextAttemptAt?.toISOString() ?? null) : null,
    last_status_code: d.lastStatusCode,
    last_outcome: d.lastOutcome,
    dead_reason: d.deadReason,
    created_at: d.createdAt.toISOString(),
    succeeded_at: d.succeededAt?.toISOString() ?? null,
    dead_at: d.deadAt?.toISOString() ?? null,
  };
}

function presentAttempt(a: AttemptRow): AttemptView {
  return {
    attempt: a.attempt,
    cycle: a.cycle,
    step: a.step,
    scheduled_for: a.scheduledFor.toISOString(),
    started_at: a.startedAt.toISOString(),
    latency_ms: a.latencyMs,
    status_code: a.statusCode,
    outcome: a.outcome,
    error: a.error,
    response_snippet: a.responseSnippet,
  };
}

/**
 * Webhooks are a tenant-level resource: a key pinned to a workspace manages that workspace's subscriptions only,
 * and a key narrowed to one project or to some memories cannot manage them at all (a subscription would receive
 * events beyond what the key may read).
 */
function viewerOf(ctx: GatewayKoaContext): Viewer {
  const p = ctx.state.principal!;
  if (p.credential === 'mk') throw AppError.forbidden('a memory key cannot manage webhooks');
  if (p.projectId) throw AppError.forbidden('a key scoped to one project cannot manage webhooks');
  if (p.keyScope?.memories && p.keyScope.memories.length > 0) throw AppError.forbidden('a key scoped to some memories cannot manage webhooks');
  return { tenantId: p.tenantId, workspaceId: p.pinnedWorkspaceId };
}

/** Ids longer than any we issue cannot exist; they are answered like any other unknown id. */
function param(ctx: GatewayKoaContext, name: string, what: string): string {
  const v = ctx.params[name] ?? '';
  if (v.length === 0 || v.length > ID_MAX) throw AppError.notFound(what);
  return v;
}

function query(ctx: Koa.Context | GatewayKoaContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(ctx.querystring)) out[k] = v;
  return out;
}

/** `/api/v1/webhooks...`: subscriptions, secret rotation, delivery history, dead letters and replay. */
export function registerWebhookRoutes(router: GatewayRouter, deps: WebhookRoutesDeps): void {
  const service = new WebhookService(deps.context.db, deps.context.secretBox, {
    logger: deps.context.logger,
    allowLoopbackTargets: deps.context.config.webhooks.allowLoopback,
    ...deps.webhooks,
  });
  const limit = deps.context.config.bodyLimitBytes;
  const read = (operation: string) => deps.requireApiKey({ module: 'webhooks', access: 'read', operation });
  const write = (operation: string) => deps.requireApiKey({ module: 'webhooks', access: 'write', operation });

  router.post('/api/v1/webhooks', write('create'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const body = validate(createWebhookBody, await deps.readJson(ctx.req, limit));
    const { subscription, secret } = await service.create(viewer, body);
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = { ...presentWebhook(subscription), secret };
  });

  router.get('/api/v1/webhooks', read('list'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const q = validate(listWebhooksQuery, query(ctx), 'query');
    const rows = await service.list(viewer, { limit: q.limit, after: q.cursor ?? null });
    ctx.body = { webhooks: rows.map((r) => presentWebhook(r)), count: rows.length, next_cursor: rows.length === q.limit ? rows[rows.length - 1]!.id : null };
  });

  router.get('/api/v1/webhooks/:webhook_id', read('get'), async (ctx) => {
    const viewer = viewerOf(ctx);
    ctx.body = presentWebhook(await service.get(viewer, param(ctx, 'webhook_id', 'webhook')));
  });

  router.patch('/api/v1/webhooks/:webhook_id', write('update'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const id = param(ctx, 'webhook_id', 'webhook');
    const body = validate(updateWebhookBody, await deps.readJson(ctx.req, limit));
    ctx.body = presentWebhook(await service.update(viewer, id, body));
  });

  router.delete('/api/v1/webhooks/:webhook_id', write('delete'), async (ctx) => {
    const viewer = viewerOf(ctx);
    await service.remove(viewer, param(ctx, 'webhook_id', 'webhook'));
    ctx.status = 204;
  });

  router.post('/api/v1/webhooks/:webhook_id/rotate-secret', write('rotate-secret'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const id = param(ctx, 'webhook_id', 'webhook');
    const body = validate(rotateSecretBody, await deps.readJson(ctx.req, limit));
    const { subscription, secret } = await service.rotateSecret(viewer, id, body.overlap_seconds);
    ctx.set('cache-control', 'no-store');
    ctx.body = { ...presentWebhook(subscription), secret };
  });

  router.get('/api/v1/webhooks/:webhook_id/deliveries', read('deliveries'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const id = param(ctx, 'webhook_id', 'webhook');
    const q = validate(listDeliveriesQuery, query(ctx), 'query');
    const rows = await service.deliveries(viewer, id, { status: q.status ?? null, limit: q.limit, before: q.cursor ?? null });
    ctx.body = { deliveries: rows.map(presentDelivery), count: rows.length, next_cursor: rows.length === q.limit ? rows[rows.length - 1]!.id : null };
  });

  router.get('/api/v1/webhooks/:webhook_id/deliveries/:delivery_id', read('deliveries'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const id = param(ctx, 'webhook_id', 'webhook');
    const deliveryId = param(ctx, 'delivery_id', 'delivery');
    const { delivery, attempts } = await service.delivery(viewer, id, deliveryId, ATTEMPTS_SHOWN);
    ctx.body = { ...presentDelivery(delivery), attempts: attempts.map(presentAttempt) };
  });

  router.get('/api/v1/webhooks/:webhook_id/dead-letters', read('dead-letters'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const id = param(ctx, 'webhook_id', 'webhook');
    const q = validate(listDeadLettersQuery, query(ctx), 'query');
    const rows = await service.deadLetters(viewer, id, { from: q.from ?? null, to: q.to ?? null, limit: q.limit, after: q.cursor ?? null });
    ctx.body = { dead_letters: rows.map(presentDelivery), count: rows.length, next_cursor: rows.length === q.limit ? rows[rows.length - 1]!.id : null };
  });

  router.post('/api/v1/webhooks/:webhook_id/dead-letters/replay', write('replay'), async (ctx) => {
    const viewer = viewerOf(ctx);
    const id = param(ctx, 'webhook_id', 'webhook');
    const body = validate(replayBody, await deps.readJson(ctx.req, limit));
    const selection = 'delivery_ids' in body ? { deliveryIds: body.delivery_ids } : { from: body.from ?? null, to: body.to ?? null };
    const revived = await service.replay(viewer, id, selection);
    ctx.status = 202;
    ctx.body = { replayed: revived.length, delivery_ids: revived.map((d) => d.id) };
  });
}
