import { Redis } from 'ioredis';
import { RedisGatewayState } from '@lore/gateway';
import { requireEnv } from '../support/infra';
import { uid } from './harness';

jest.setTimeout(60_000);

/** The Lua scripts against a real Redis: the same semantics the in-memory state has. */
describe('Redis gateway state', () => {
  let redis: Redis;
  let state: RedisGatewayState;
  const prefix = `gwstate:${uid()}:`;
  const rate = { perSecond: 1, burst: 2 };

  beforeAll(() => {
    redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'));
    state = new RedisGatewayState(redis, { prefix });
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await state.close();
  });

  it('revokes from the given instant, keeps the earliest record, and expires the record', async () => {
    const s = `k-${uid()}`;
    expect((await state.admit({ subject: s, consume: false, rate, quota: null })).revoked).toBe(false);
    await state.revoke([s], Date.now() + 60_000, 10_000);
    expect((await state.admit({ subject: s, consume: false, rate, quota: null })).revoked).toBe(false);
    await state.revoke([s], 0, 10_000);
    await state.revoke([s], Date.now() + 60_000, 10_000);
    expect((await state.admit({ subject: s, consume: true, rate, quota: null })).revoked).toBe(true);
    expect(await redis.pttl(`${prefix}rv:${s}`)).toBeGreaterThan(5_000);
  });

  it('spends nothing when only asked about revocation, then limits per subject', async () => {
    const s = `k-${uid()}`;
    for (let i = 0; i < 5; i++) expect((await state.admit({ subject: s, consume: false, rate, quota: null })).rate).toBeNull();
    const r = [];
    for (let i = 0; i < 3; i++) r.push((await state.admit({ subject: s, consume: true, rate, quota: null })).rate);
    expect(r.map((x) => x?.allowed)).toEqual([true, true, false]);
    expect(r[0]).toMatchObject({ limit: 2, remaining: 1 });
    expect(r[2]!.retryAfterMs).toBeGreaterThan(900);
    expect(r[2]!.retryAfterMs).toBeLessThanOrEqual(1000);
  });

  it('counts a tenant\'s monthly quota and stops at the limit', async () => {
    const quota = { tenantId: `t-${uid()}`, limit: 3 };
    const big = { perSecond: 1000, burst: 1000 };
    const out = [];
    for (let i = 0; i < 4; i++) out.push(await state.admit({ subject: `q-${uid()}`, consume: true, rate: big, quota }));
    expect(out.map((o) => o.quotaExceeded)).toEqual([false, false, false, true]);
    expect(out.map((o) => o.quotaUsed)).toEqual([1, 2, 3, 3]);
  });

  it('returns a stable epoch until the store loses it, then a new one', async () => {
    const a = await state.admit({ subject: 'e', consume: false, rate, quota: null });
    const b = await state.admit({ subject: 'e', consume: false, rate, quota: null });
    expect(a.epoch).toBe(b.epoch);
    await redis.del(`${prefix}epoch`);
    const c = await state.admit({ subject: 'e', consume: false, rate, quota: null });
    expect(c.epoch).not.toBe(a.epoch);
  });

  it('throttles plain hits and counts one round trip per call', async () => {
    const before = state.roundTrips();
    const key = `login-${uid()}`;
    const hits = [];
    for (let i = 0; i < 3; i++) hits.push(await state.hit(key, rate));
    expect(hits.map((h) => h.allowed)).toEqual([true, true, false]);
    expect(state.roundTrips() - before).toBe(3);
  });
});
