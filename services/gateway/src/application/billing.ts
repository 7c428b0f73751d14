import { AppError } from '@lore/runtime';
import type { GatewayContext } from '../context';
import { getTenant, updateBillingIn, type Tenant } from '../store/tenants';
import { invalidateTenant } from './cache-invalidation';
import { announceBalance } from './credits';

/**
 * The two 402s. Both carry `error.details.reason`, the field that tells them apart: `plan_limit` (the tenant's plan
 * does not allow more: requests this month, projects, keys) or `credit_balance` (the tenant's prepaid credits
 * are used up). The codes differ too: PLAN_LIMIT_EXCEEDED and INSUFFICIENT_CREDITS.
 */
export function planLimitError(message: string, details: { limit: string; value: number }): AppError {
  return new AppError('PLAN_LIMIT_EXCEEDED', message, { details: { reason: 'plan_limit', ...details } });
}

export function creditError(balance: number): AppError {
  return new AppError('INSUFFICIENT_CREDITS', 'the tenant has no credits left', { details: { reason: 'credit_balance', balance } });
}

/**
 * The billing system sets a tenant's plan or credit balance (admin API). A balance given (null included) is
 * announced on `lore.credits.balance` in the same transaction, so running workflows learn that a tenant's credits
 * were used up or topped up (docs/gateway.md, "Credits"). This replica reads the tenant again at once; others within
 * two tenant-cache lifetimes (docs/gateway.md).
 */
export async function setBilling(ctx: GatewayContext, tenantId: string, input: { plan?: string; credit_balance?: number | null }): Promise<Tenant> {
  if (input.plan !== undefined && !(input.plan in ctx.config.plans)) throw AppError.badRequest(`unknown plan "${input.plan}"`);
  const tenant = await ctx.db.withTenant(tenantId, async (sql) => {
    const t = await updateBillingIn(sql, tenantId, input);
    if (t && input.credit_balance !== undefined) await announceBalance(sql, t.tenant_id, t.credit_balance, t.credit_version);
    return t;
  });
  if (!tenant) throw AppError.notFound('tenant');
  invalidateTenant(ctx, tenantId);
  return tenant;
}

/** A tenant's plan and credit balance as the database has them now (admin API). */
export async function getBilling(ctx: GatewayContext, tenantId: string): Promise<Tenant> {
  const tenant = await getTenant(ctx.db, tenantId);
  if (!tenant) throw AppError.notFound('tenant');
  return tenant;
}
