import { Redis } from 'ioredis';
import { GCRA_LUA_FUNCTION, MemoryCache, RedisCache, gcra, emissionIntervalUs, type Cache } from '@lore/runtime';
import { MemoryGatewayState, RedisGatewayState, type GatewayState, type RateOutcome } from '@lore/gateway';
import { requireEnv } from '../support/infra';
import { uid } from './harness';

jest.setTimeout(60_000);

/**
 * One rate limiter: the runtime's GCRA in TypeScript (`gcra`) and in Lua (`GCRA_LUA_FUNCTION`, which the cache's
 * rate-limit script and the gateway's admission script both include) decide every sequence identically, and so do
 * the in-memory and Redis adapters of the cache port and of the gateway's state.
 */
describe('the one GCRA: Lua on Redis and its TypeScript mirror', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'));
  });
  afterAll(async () => {
    await redis.quit();
  });

  // The Lua function on explicit instants (no TIME, no key): exactly the arithmetic the scripts run.
  const PROBE = `${GCRA_LUA_FUNCTION}
return {gcra(tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))}`;

  /** A deterministic sequence of instants: bursts at one instant, short and long gaps (a seeded LCG). */
  function instants(seed: number, count: number, startUs: number, intervalUs: number): number[] {
    let x = seed;
    let now = startUs;
    const out: number[] = [];
    for (let i = 0; i < count; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      const pick = x % 10;
      // 60%: the same instant; 30%: a fraction of an interval; 10%: several intervals of idleness. More requests
      // than the rate, so even a burst of 200 runs dry and refills.
      now += pick < 6 ? 0 : pick < 9 ? (x % intervalUs) + 1 : (x % (8 * intervalUs)) + intervalUs;
      out.push(now);
    }
    return out;
  }

  const cases = [
    { perSecond: 10, burst: 5 },
    { perSecond: 3, burst: 1 },
    { perSecond: 100, burst: 200 },
    { perSecond: 0.5, burst: 2 },
    { perSecond: 2_000_000, burst: 3 },
  ];

  it.each(cases)('decides the same for every request at $perSecond per second, burst $burst', async ({ perSecond, burst }) => {
    const interval = emissionIntervalUs(perSecond);
    // Real instants (microseconds since 1970): the magnitudes the scripts see from Redis TIME.
    const sequence = instants(perSecond * 1000 + burst, 1000, Date.now() * 1000, interval);
    let tsTat: number | null = null;
    let luaTat: number | null = null;
    let admitted = 0;
    for (const now of sequence) {
      const ts = gcra(tsTat, now, interval, burst);
      const [allowed, tat, remaining, retry, reset] = (await redis.eval(PROBE, 0, luaTat === null ? '' : String(luaTat), String(now), String(interval), String(burst))) as number[];
      expect({ now, allowed: allowed === 1, tat, remaining, retryAfterUs: retry, resetAfterUs: reset }).toEqual({ now, ...ts });
      if (ts.allowed) {
        tsTat = ts.tat;
        admitted++;
      }
      if (allowed === 1) luaTat = tat!;
    }
    // The sequence exercised both answers.
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThan(sequence.length);
  });
});

describe('the in-memory and Redis adapters decide the same sequence identically', () => {
  let redis: Redis;
  const prefix = `gwparity:${uid()}:`;
  beforeAll(() => {
    redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'));
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  // A slow rate (one request back every 100 s) so the few milliseconds the calls take change no decision; the
  // retry and reset times may differ by that much and are compared to the second.
  const rate = { perSecond: 0.01, burst: 4 };
  const seconds = (ms: number) => Math.round(ms / 1000);
  const shape = (r: RateOutcome | null) => (r ? { allowed: r.allowed, limit: r.limit, remaining: r.remaining, retry: seconds(r.retryAfterMs), reset: seconds(r.resetAfterMs) } : null);

  async function admitSequence(state: GatewayState, subject: string) {
    const out = [];
    for (let i = 0; i < 7; i++) out.push(shape((await state.admit({ subject, consume: true, rate, quota: null })).rate));
    return out;
  }

  it('gateway state: admit and hit', async () => {
    const memory = new MemoryGatewayState();
    const onRedis = new RedisGatewayState(new Redis(requireEnv('LORE_TEST_REDIS_URL')), { prefix });
    try {
      const fromMemory = await admitSequence(memory, 'k');
      const fromRedis = await admitSequence(onRedis, 'k');
      expect(fromRedis).toEqual(fromMemory);
      expect(fromMemory.map((r) => r?.allowed)).toEqual([true, true, true, true, false, false, false]);
      expect(fromMemory.map((r) => r?.remaining)).toEqual([3, 2, 1, 0, 0, 0, 0]);
      expect(fromMemory[4]).toEqual({ allowed: false, limit: 4, remaining: 0, retry: 100, reset: 400 });

      const hits = async (state: GatewayState) => {
        const out = [];
        for (let i = 0; i < 6; i++) out.push(shape(await state.hit('login:a', rate)));
        return out;
      };
      const hitsMemory = await hits(memory);
      expect(await hits(onRedis)).toEqual(hitsMemory);
      expect(hitsMemory.map((r) => r?.allowed)).toEqual([true, true, true, true, false, false]);
    } finally {
      await onRedis.close();
      await memory.close();
    }
  });

  it('gateway state: a request stopped by the monthly quota spends no rate token, in both', async () => {
    const memory = new MemoryGatewayState();
    const onRedis = new RedisGatewayState(new Redis(requireEnv('LORE_TEST_REDIS_URL')), { prefix });
    try {
      const run = async (state: GatewayState) => {
        const quota = { tenantId: `t-${uid()}`, limit: 2 };
        const out = [];
        for (let i = 0; i < 4; i++) {
          const r = await state.admit({ subject: `s-${quota.tenantId}`, consume: true, rate, quota });
          out.push({ quotaExceeded: r.quotaExceeded, used: r.quotaUsed, rate: shape(r.rate) });
        }
        return out;
      };
      const fromMemory = await run(memory);
      expect(await run(onRedis)).toEqual(fromMemory);
      expect(fromMemory.map((r) => r.quotaExceeded)).toEqual([false, false, true, true]);
      // The third and fourth were refused by the quota: the bucket still shows two spent, not four.
      expect(fromMemory[3]!.rate).toMatchObject({ allowed: true, remaining: 1 });
    } finally {
      await onRedis.close();
      await memory.close();
    }
  });

  it('cache port: MemoryCache and RedisCache', async () => {
    const memory = new MemoryCache();
    const onRedis = new RedisCache(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: prefix });
    const run = async (cache: Cache) => {
      const out = [];
      for (let i = 0; i < 7; i++) {
        const d = await cache.rateLimit('bucket', rate.perSecond, rate.burst);
        out.push({ allowed: d.allowed, remaining: d.remaining, retry: seconds(d.retryAfterMs), reset: seconds(d.resetAfterMs) });
      }
      return out;
    };
    try {
      const fromMemory = await run(memory);
      expect(await run(onRedis)).toEqual(fromMemory);
      expect(fromMemory.map((d) => d.allowed)).toEqual([true, true, true, true, false, false, false]);
    } finally {
      await onRedis.close();
      await memory.close();
    }
  });
});
