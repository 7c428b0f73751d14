import { DEFAULT_CREDIT_PRICES, addUsage, creditsDue, isNoUsage, priceOf, readUsage, usageSince, type CreditPrices, type Usage } from './credits';

const u = (fetches: number, rows: number, model_tokens: number): Usage => ({ fetches, rows, model_tokens });

describe('the price of a workflow\'s usage', () => {
  it('is fetches × per_fetch + rows × per_row + started thousands of tokens × per_1000_tokens', () => {
    const prices: CreditPrices = { perFetch: 2, perRow: 3, perThousandTokens: 5 };
    expect(priceOf(u(0, 0, 0), prices)).toBe(0);
    expect(priceOf(u(4, 0, 0), prices)).toBe(8);
    expect(priceOf(u(0, 7, 0), prices)).toBe(21);
    expect(priceOf(u(0, 0, 1), prices)).toBe(5);
    expect(priceOf(u(0, 0, 1000), prices)).toBe(5);
    expect(priceOf(u(0, 0, 1001), prices)).toBe(10);
    expect(priceOf(u(4, 7, 2500), prices)).toBe(8 + 21 + 15);
  });

  it('defaults to one credit a fetch, a row and a started thousand tokens', () => {
    expect(DEFAULT_CREDIT_PRICES).toEqual({ perFetch: 1, perRow: 1, perThousandTokens: 1 });
    expect(priceOf(u(10, 25, 1_700), DEFAULT_CREDIT_PRICES)).toBe(37);
  });

  it('makes a unit free at a price of 0', () => {
    expect(priceOf(u(10, 25, 1_700), { perFetch: 0, perRow: 1, perThousandTokens: 0 })).toBe(25);
  });

  it('charges the price of the totals however checkpoints split the usage: tokens are rounded once, on the total', () => {
    // Ten checkpoints of 150 tokens and one fetch each: rounding each would charge 10 × 1 for the tokens.
    let total = u(0, 0, 0);
    let charged = 0;
    for (let i = 0; i < 10; i++) {
      total = addUsage(total, u(1, i % 3 === 0 ? 2 : 0, 150));
      charged += creditsDue(total, charged, DEFAULT_CREDIT_PRICES);
    }
    expect(total).toEqual(u(10, 8, 1_500));
    expect(charged).toBe(priceOf(total, DEFAULT_CREDIT_PRICES));
    expect(charged).toBe(10 + 8 + 2);
  });

  it('owes nothing when nothing priced was added, and never a negative amount', () => {
    expect(creditsDue(u(3, 0, 0), 3, DEFAULT_CREDIT_PRICES)).toBe(0);
    // A checkpoint with tokens that do not start a new thousand owes nothing yet.
    expect(creditsDue(u(0, 0, 900), 1, DEFAULT_CREDIT_PRICES)).toBe(0);
    // A price lowered since the last charge is not refunded.
    expect(creditsDue(u(3, 0, 0), 10, DEFAULT_CREDIT_PRICES)).toBe(0);
  });

  it('reads stored usage documents, whatever they lack or hold', () => {
    expect(readUsage({})).toEqual(u(0, 0, 0));
    expect(readUsage(null)).toEqual(u(0, 0, 0));
    expect(readUsage({ fetches: 3, rows: '7', model_tokens: -4, other: 1 })).toEqual(u(3, 0, 0));
    expect(readUsage({ fetches: 3.7, rows: 2, model_tokens: 10 })).toEqual(u(3, 2, 10));
    expect(isNoUsage(u(0, 0, 0))).toBe(true);
    expect(isNoUsage(u(0, 1, 0))).toBe(false);
    expect(usageSince(u(5, 2, 100), u(3, 2, 150))).toEqual(u(2, 0, 0));
  });
});
