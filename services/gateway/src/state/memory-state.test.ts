import { rateOutcome } from './gateway-state';
import { MemoryGatewayState } from './memory-state';

describe('in-memory gateway state', () => {
  let now = 1_700_000_000_000;
  const state = new MemoryGatewayState(() => now);
  const rate = { perSecond: 1, burst: 2 };

  it('revokes at the given instant and keeps the earliest revocation', async () => {
    expect((await state.admit({ subject: 'k1', consume: true, rate, quota: null })).revoked).toBe(false);
    await state.revoke(['k1'], now + 1000, 60_000);
    expect((await state.admit({ subject: 'k1', consume: false, rate, quota: null })).revoked).toBe(false);
    await state.revoke(['k1'], now + 5000, 60_000);
    now += 1000;
    expect((await state.admit({ subject: 'k1', consume: false, rate, quota: null })).revoked).toBe(true);
  });

  it('spends nothing when asked only about revocation', async () => {
    for (let i = 0; i < 5; i++) expect((await state.admit({ subject: 'k2', consume: false, rate, quota: null })).rate).toBeNull();
    expect((await state.admit({ subject: 'k2', consume: true, rate, quota: null })).rate?.allowed).toBe(true);
  });

  it('rate-limits per subject and counts one round trip per call', async () => {
    const before = state.roundTrips();
    const a = await state.admit({ subject: 'k3', consume: true, rate, quota: null });
    const b = await state.admit({ subject: 'k3', consume: true, rate, quota: null });
    const c = await state.admit({ subject: 'k3', consume: true, rate, quota: null });
    expect([a.rate?.allowed, b.rate?.allowed, c.rate?.allowed]).toEqual([true, true, false]);
    expect(c.rate?.retryAfterMs).toBe(1000);
    expect((await state.admit({ subject: 'k4', consume: true, rate, quota: null })).rate?.allowed).toBe(true);
    expect(state.roundTrips() - before).toBe(4);
  });

  it('stops a tenant at its monthly quota without spending rate tokens', async () => {
    const big = { perSecond: 1000, burst: 1000 };
    const quota = { tenantId: 't1', limit: 3 };
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await state.admit({ subject: `q${i}`, consume: true, rate: big, quota }));
    expect(results.map((r) => r.quotaExceeded)).toEqual([false, false, false, true]);
    expect(results[2]!.quotaUsed).toBe(3);
  });
});

describe('rateOutcome', () => {
  it('answers whole milliseconds rounded up and the bucket size, and exactly the outcome\'s fields', () => {
    expect(rateOutcome({ allowed: false, remaining: 0, retryAfterUs: 1_001, resetAfterUs: 1 }, 10)).toStrictEqual({ allowed: false, limit: 10, remaining: 0, retryAfterMs: 2, resetAfterMs: 1 });
    expect(rateOutcome({ allowed: true, remaining: 9, retryAfterUs: 0, resetAfterUs: 100_000 }, 10)).toStrictEqual({ allowed: true, limit: 10, remaining: 9, retryAfterMs: 0, resetAfterMs: 100 });
  });
});
