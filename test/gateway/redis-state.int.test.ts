import { Redis } from 'ioredis';
import { ADMIT_BATCH_MAX, RedisGatewayState } from '@lore/gateway';
import { isAppError } from '@lore/runtime';
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
    // A first hit loads the script if this Redis does not know it (another suite may have flushed scripts): that
    // second round trip is counted too, and is not what this test is about.
    await state.hit(`warm-${uid()}`, rate);
    const before = state.roundTrips();
    const key = `login-${uid()}`;
    const hits = [];
    for (let i = 0; i < 3; i++) hits.push(await state.hit(key, rate));
    expect(hits.map((h) => h.allowed)).toEqual([true, true, false]);
    expect(state.roundTrips() - before).toBe(3);
  });

  it('judges concurrent admissions together, in arrival order, as separate calls would', async () => {
    const hot = `k-${uid()}`;
    const quota = { tenantId: `t-${uid()}`, limit: 5 };
    const big = { perSecond: 1000, burst: 1000 };
    const before = state.roundTrips();
    const n = 2 * ADMIT_BATCH_MAX + 10;
    // One subject with burst 2 among many others, and one tenant's quota of 5 spread over other subjects.
    const calls = Array.from({ length: n }, (_, i) =>
      i % 10 === 0
        ? state.admit({ subject: hot, consume: true, rate, quota: null })
        : state.admit({ subject: `many-${i}-${uid()}`, consume: true, rate: big, quota: i % 10 === 1 ? quota : null }),
    );
    const out = await Promise.all(calls);
    const hotOut = out.filter((_, i) => i % 10 === 0).map((o) => o.rate?.allowed);
    expect(hotOut.slice(0, 2)).toEqual([true, true]);
    expect(hotOut.slice(2).every((a) => a === false)).toBe(true);
    const quotaOut = out.filter((_, i) => i % 10 === 1);
    expect(quotaOut.map((o) => o.quotaUsed)).toEqual(quotaOut.map((_, j) => Math.min(j + 1, 5)));
    expect(quotaOut.map((o) => o.quotaExceeded)).toEqual(quotaOut.map((_, j) => j >= 5));
    expect(new Set(out.map((o) => o.epoch)).size).toBe(1);
    // All arrived in one event-loop turn: the first call carries a full batch, the rest waited for it and went in
    // full batches too.
    expect(state.roundTrips() - before).toBe(Math.ceil(n / ADMIT_BATCH_MAX));
  });

  it('reads each record once per call and writes each changed one once, leaving what separate calls would', async () => {
    const subject = `once-${uid()}`;
    const tenantId = `t-${uid()}`;
    const slow = { perSecond: 1, burst: 10 };
    // The script calls on this test's records and the commands they run inside Redis (MONITOR's source `lua`).
    const monitor = await redis.monitor();
    const commands: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const name = args[0]!.toUpperCase();
      if ((source === 'lua' || name.startsWith('EVAL')) && args.some((a) => a.includes(subject) || a.includes(tenantId))) commands.push(name);
    });
    try {
      const out = await Promise.all(Array.from({ length: 8 }, () => state.admit({ subject, consume: true, rate: slow, quota: { tenantId, limit: 5 } })));
      expect(out.map((o) => o.quotaUsed)).toEqual([1, 2, 3, 4, 5, 5, 5, 5]);
      expect(out.map((o) => o.quotaExceeded)).toEqual([false, false, false, false, false, true, true, true]);
      expect(out.slice(0, 5).map((o) => o.rate?.remaining)).toEqual([9, 8, 7, 6, 5]);
      // The counter and the bucket are as five admitted requests leave them, with their lifetimes.
      const [counter] = await redis.keys(`${prefix}q:${tenantId}:*`);
      expect(await redis.get(counter!)).toBe('5');
      expect(await redis.ttl(counter!)).toBeGreaterThan(0);
      expect(await redis.pttl(`${prefix}rl:${subject}`)).toBeGreaterThan(0);
      const next = await state.admit({ subject, consume: true, rate: slow, quota: null });
      expect(next.rate).toMatchObject({ allowed: true, remaining: 4 });
      await new Promise((r) => setTimeout(r, 50));
      // The batch (one call: the eight arrived in one turn) read the three records once and wrote each once.
      // MONITOR shows a script call (an EVALSHA, and an EVAL after it if the server had lost the script), then the
      // commands it ran; the next call is the single admission after the batch.
      const first = commands.findIndex((c) => !c.startsWith('EVAL'));
      const after = commands.findIndex((c, i) => i > first && c.startsWith('EVAL'));
      expect(first).toBeGreaterThan(0);
      expect(after).toBeGreaterThan(first);
      expect(commands.slice(first, after).sort()).toEqual(['EXPIRE', 'INCRBY', 'MGET', 'SET']);
    } finally {
      monitor.disconnect();
    }
  });

  it('reloads the script for a whole batch after SCRIPT FLUSH', async () => {
    await redis.script('FLUSH');
    const out = await Promise.all(Array.from({ length: 20 }, () => state.admit({ subject: `f-${uid()}`, consume: true, rate, quota: null })));
    expect(out.every((o) => o.rate?.allowed === true)).toBe(true);
  });

  it('fails every admission of a failed call with 503 and keeps serving the next ones', async () => {
    const dead = new Redis({ port: 1, host: '127.0.0.1', lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    const broken = new RedisGatewayState(dead, { prefix });
    try {
      const first = await Promise.allSettled(Array.from({ length: 5 }, () => broken.admit({ subject: 'x', consume: true, rate, quota: null })));
      const later = await Promise.allSettled([broken.admit({ subject: 'x', consume: true, rate, quota: null })]);
      for (const r of [...first, ...later]) {
        expect(r.status).toBe('rejected');
        const reason = (r as PromiseRejectedResult).reason as unknown;
        expect(isAppError(reason) && reason.status).toBe(503);
      }
    } finally {
      dead.disconnect();
    }
  });
});
