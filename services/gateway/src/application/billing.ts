import { AppError } from '@lore/runtime';

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
