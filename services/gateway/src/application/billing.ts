import { AppError } from '@lore/runtime';
import type { GatewayContext } from '../context';
import { updateBilling, type Tenant } from '../store/tenants';
import { invalidateTenant } from './cache-invalidation';

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
 * The billing system sets a tenant's plan or credit balance (admin API). This replica reads the tenant again at
 * once; others within two tenant-cache lifetimes (docs/gateway.md).
 */
export async function setBilling(ctx: GatewayContext, tenantId: string, input: { plan?: string; credit_balance?: number | null }): Promise<Tenant> {
  if (input.plan !== undefined && !(input.plan in ctx.config.plans)) throw AppError.badRequest(`unknown plan "${input.plan}"`);
  const tenant = await updateBilling(ctx.db, tenantId, input);
  if (!tenant) throw AppError.notFound('tenant');
  invalidateTenant(ctx, tenantId);
  return tenant;
}
