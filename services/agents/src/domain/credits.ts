/**
 * The price of what a workflow consumes (docs/agents.md, "Credits"). Pure: no SQL, no HTTP.
 *
 * A workflow's usage is counted in the units its budgets count: model tokens, fetches (web search result pages and
 * pages read, and a search run's one knowledge retrieval) and rows (entities added to its list). Its price is
 *
 *     fetches × per_fetch + rows × per_row + ⌈model_tokens / 1,000⌉ × per_1000_tokens
 *
 * computed on the workflow's totals (every run of it, continues included). Each charge is the price of the totals
 * less what the workflow was charged before, so a workflow is charged the price of its total usage however its
 * checkpoints split it (the tokens are rounded up once, on the total, not at every checkpoint).
 */

export interface CreditPrices {
  perFetch: number;
  perRow: number;
  /** Per started thousand model tokens. */
  perThousandTokens: number;
}

export const DEFAULT_CREDIT_PRICES: CreditPrices = { perFetch: 1, perRow: 1, perThousandTokens: 1 };

export interface Usage {
  model_tokens: number;
  fetches: number;
  rows: number;
}

export const NO_USAGE: Usage = { model_tokens: 0, fetches: 0, rows: 0 };

const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);

/** A stored usage document, whatever it lacks or holds besides. */
export const readUsage = (raw: unknown): Usage => {
  const u = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  return { model_tokens: count(u.model_tokens), fetches: count(u.fetches), rows: count(u.rows) };
};

export const addUsage = (a: Usage, b: Usage): Usage => ({ model_tokens: a.model_tokens + b.model_tokens, fetches: a.fetches + b.fetches, rows: a.rows + b.rows });

/** `a - b`, never below zero in any unit. */
export const usageSince = (a: Usage, b: Usage): Usage => ({
  model_tokens: Math.max(0, a.model_tokens - b.model_tokens),
  fetches: Math.max(0, a.fetches - b.fetches),
  rows: Math.max(0, a.rows - b.rows),
});

export const isNoUsage = (u: Usage): boolean => u.model_tokens === 0 && u.fetches === 0 && u.rows === 0;

/** The price of a usage (a workflow's totals), in whole credits. */
export function priceOf(usage: Usage, prices: CreditPrices): number {
  return usage.fetches * prices.perFetch + usage.rows * prices.perRow + Math.ceil(usage.model_tokens / 1000) * prices.perThousandTokens;
}

/**
 * What a workflow owes now: the price of its totals less what it was charged before (never negative: a price
 * lowered since is not refunded; the usage catches up first).
 */
export function creditsDue(total: Usage, charged: number, prices: CreditPrices): number {
  return Math.max(0, priceOf(total, prices) - charged);
}
