import type { RouterContext } from '@koa/router';
import { AppError, assertCleanStrings, createHttpApp, validate, type LoreApp, type LoreState, createRouter } from '@lore/runtime';
import type { GatewayContext } from '../context';
import { secretsEqual } from '../domain/credentials';
import { createKey, findKeyByClientToken, getKey, presentKey, revokeKey, rotateKey } from '../application/keys';
import { createTenant, deleteMemory, upsertMemory } from '../application/tenancy';
import { createUser } from '../application/identity';
import { getBilling, setBilling } from '../application/billing';
import {
  AdminBillingBodySchema,
  AdminBillingSchema,
  AdminCreateKeyBodySchema,
  AdminCreatedKeySchema,
  AdminCreateTenantBodySchema,
  AdminCreateUserBodySchema,
  AdminDeleteMemoryQuerySchema,
  AdminIdSchema,
  AdminKeyLookupQuerySchema,
  AdminKeyLookupSchema,
  AdminMemorySchema,
  AdminPutMemoryBodySchema,
  AdminRotatedKeySchema,
  AdminRotateKeyBodySchema,
  AdminTenantSchema,
  AdminUserSchema,
  KeyViewSchema,
} from '@lore/contracts';
import type { z } from 'zod';

/** The JSON body the runtime's body parser put on the request. */
function bodyOf(ctx: RouterContext<LoreState>): unknown {
  return (ctx.request as unknown as { body?: unknown }).body;
}

/**
 * The answer of an admin operation, checked against its contract schema: the operator parses it with the same
 * schema, so a drift fails here (a 500 the tests see) rather than in a reconcile loop.
 */
function present<S extends z.ZodType>(schema: S, value: z.input<S>): z.output<S> {
  return schema.parse(value);
}

/**
 * The internal admin API (operator, CLI-like automation). It listens on its own port, never on the public
 * router, and every call needs `Authorization: Bearer <GATEWAY_ADMIN_TOKEN>`, compared in constant time.
 */
export function createAdminApp(context: GatewayContext): LoreApp {
  const app = createHttpApp({ service: 'gateway-admin', logger: context.logger, metrics: context.metrics, bodyLimitBytes: 256 * 1024 });
  const token = context.config.adminToken;

  app.use(async (ctx, next) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
    if (!token || !m || !secretsEqual(m[1]!, token)) throw AppError.unauthorized('the admin credential is missing or wrong');
    await next();
  });

  app.use(async (ctx, next) => {
    assertCleanStrings(bodyOf(ctx as unknown as RouterContext<LoreState>));
    await next();
  });

  const router = createRouter<LoreState>({ prefix: '/internal/v1' });
  const param = (ctx: RouterContext<LoreState>, name: string): string => {
    const v = ctx.params[name] ?? '';
    if (!AdminIdSchema.safeParse(v).success) throw AppError.notFound(name.replace('_id', ''));
    return v;
  };

  router.post('/tenants', async (ctx) => {
    const body = validate(AdminCreateTenantBodySchema, bodyOf(ctx));
    const { tenant, created } = await createTenant(context, body);
    ctx.status = created ? 201 : 200;
    ctx.body = present(AdminTenantSchema, { tenant_id: tenant.tenant_id, name: tenant.name, plan: tenant.plan, default_workspace_id: tenant.default_workspace_id });
  });

  // The tenant's plan and balance now: the balance the billing system set, less every charge applied since.
  router.get('/tenants/:tenant_id/billing', async (ctx) => {
    const tenant = await getBilling(context, param(ctx, 'tenant_id'));
    ctx.body = present(AdminBillingSchema, { tenant_id: tenant.tenant_id, plan: tenant.plan, credit_balance: tenant.credit_balance });
  });

  router.put('/tenants/:tenant_id/billing', async (ctx) => {
    const body = validate(AdminBillingBodySchema, bodyOf(ctx));
    const tenant = await setBilling(context, param(ctx, 'tenant_id'), body);
    ctx.body = present(AdminBillingSchema, { tenant_id: tenant.tenant_id, plan: tenant.plan, credit_balance: tenant.credit_balance });
  });

  router.post('/tenants/:tenant_id/users', async (ctx) => {
    const body = validate(AdminCreateUserBodySchema, bodyOf(ctx));
    const user = await createUser(context, param(ctx, 'tenant_id'), body).catch((err: unknown) => {
      // A tenant that does not exist fails the foreign key: answer as the resource that is missing.
      if ((err as { code?: string }).code === '23503') throw AppError.notFound('tenant');
      throw err;
    });
    ctx.status = 201;
    ctx.body = present(AdminUserSchema, { user_id: user.user_id, tenant_id: user.tenant_id, email: user.email, role: user.role });
  });

  router.put('/tenants/:tenant_id/memories/:memory_id', async (ctx) => {
    const body = validate(AdminPutMemoryBodySchema, bodyOf(ctx));
    const memory = await upsertMemory(context, param(ctx, 'tenant_id'), param(ctx, 'memory_id'), body);
    ctx.body = present(AdminMemorySchema, { memory_id: memory.memory_id, hostname: memory.hostname, workspace_id: memory.workspace_id });
  });

  router.delete('/tenants/:tenant_id/memories/:memory_id', async (ctx) => {
    // Required: erasing a memory's data cannot be undone, so it is never what a call that forgot to say means.
    const retain = AdminDeleteMemoryQuerySchema.safeParse(ctx.query);
    if (!retain.success) throw AppError.badRequest('retain_data is required and must be true (keep the data) or false (erase it)');
    await deleteMemory(context, param(ctx, 'tenant_id'), param(ctx, 'memory_id'), retain.data.retain_data === 'true');
    ctx.status = 204;
  });

  router.post('/tenants/:tenant_id/keys', async (ctx) => {
    const { client_token: clientToken, ...options } = validate(AdminCreateKeyBodySchema, bodyOf(ctx));
    const { record, plaintext } = await createKey(context, param(ctx, 'tenant_id'), options, 'admin-api', { clientToken });
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = present(AdminCreatedKeySchema, { key_id: record.key_id, key: plaintext, prefix: record.prefix, type: record.type, memory_id: record.memory_id, expires_at: record.expires_at });
  });

  router.post('/tenants/:tenant_id/keys/:key_id/rotate', async (ctx) => {
    const body = validate(AdminRotateKeyBodySchema, bodyOf(ctx) ?? {});
    const r = await rotateKey(context, param(ctx, 'tenant_id'), param(ctx, 'key_id'), body.overlap_seconds, 'admin-api', { clientToken: body.client_token });
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = present(AdminRotatedKeySchema, { key_id: r.record.key_id, key: r.plaintext, prefix: r.record.prefix, replaced_key_id: r.replaced.key_id, replaced_key_expires_at: r.replaced.expires_at });
  });

  // Finds the key a create or rotate call made, by the client token sent with it: 0 or 1 records.
  router.get('/tenants/:tenant_id/keys', async (ctx) => {
    const tenantId = param(ctx, 'tenant_id');
    const query = validate(AdminKeyLookupQuerySchema, ctx.query, 'query');
    const key = await findKeyByClientToken(context, tenantId, query.client_token);
    ctx.body = present(AdminKeyLookupSchema, { api_keys: key ? [presentKey(key)] : [] });
  });

  router.get('/tenants/:tenant_id/keys/:key_id', async (ctx) => {
    const key = await getKey(context.db, param(ctx, 'tenant_id'), param(ctx, 'key_id'));
    if (!key) throw AppError.notFound('key');
    ctx.body = present(KeyViewSchema, presentKey(key));
  });

  router.delete('/tenants/:tenant_id/keys/:key_id', async (ctx) => {
    await revokeKey(context, param(ctx, 'tenant_id'), param(ctx, 'key_id'));
    ctx.status = 204;
  });

  app.use(router.routes());
  return app;
}
