import { AppError, validate } from '@lore/runtime';
import type { GatewayContext } from '../../context';
import { requireSession } from '../../http/guards';
import { readJson } from '../../http/body';
import type { GatewayRouter } from '../../http/state';
import { createKey, getKey, listKeys, presentKey, revokeKey, rotateKey } from '../../application/keys';
import { createKeyBody, rotateKeyBody } from './schema';

const LIST_LIMIT = 1000;

/** Key management for signed-in administrators (spec 1: portal session only; an API key gets 404 here). */
export function registerApiKeyRoutes(router: GatewayRouter, context: GatewayContext): void {
  const admin = requireSession(context, { admin: true });

  router.post('/api/v1/api-keys', admin, async (ctx) => {
    const user = ctx.state.user!;
    const body = validate(createKeyBody, await readJson(ctx.req, context.config.bodyLimitBytes));
    const { record, plaintext } = await createKey(context, user.tenant_id, body, `user:${user.user_id}`);
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = { ...presentKey(record), key: plaintext };
  });

  router.get('/api/v1/api-keys', admin, async (ctx) => {
    const keys = await listKeys(context.db, ctx.state.user!.tenant_id, LIST_LIMIT);
    ctx.body = { api_keys: keys.map((k) => presentKey(k)), count: keys.length };
  });

  router.get('/api/v1/api-keys/:key_id', admin, async (ctx) => {
    const key = await getKey(context.db, ctx.state.user!.tenant_id, ctx.params.key_id!);
    if (!key) throw AppError.notFound('key');
    ctx.body = presentKey(key);
  });

  router.post('/api/v1/api-keys/:key_id/rotate', admin, async (ctx) => {
    const user = ctx.state.user!;
    const body = validate(rotateKeyBody, await readJson(ctx.req, context.config.bodyLimitBytes));
    const r = await rotateKey(context, user.tenant_id, ctx.params.key_id!, body.overlap_seconds, `user:${user.user_id}`);
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = { ...presentKey(r.record), key: r.plaintext, replaced_key_id: r.replaced.key_id, replaced_key_expires_at: r.replaced.expires_at };
  });

  router.delete('/api/v1/api-keys/:key_id', admin, async (ctx) => {
    const key = await revokeKey(context, ctx.state.user!.tenant_id, ctx.params.key_id!);
    if (!key) throw AppError.notFound('key');
    ctx.body = presentKey(key);
  });
}
