import Redis from 'ioredis';
import type { Cache, RateLimitDecision } from '../ports/cache';
import { GCRA_LUA, checkRateSpec, emissionIntervalUs, toRateLimitDecision } from './gcra';

/** Sets the TTL only when INCRBY created the key, atomically, so a counter window does not slide. */
const INCR_LUA = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v
`;

type LoreRedis = Redis & {
  loreGcra(key: string, intervalUs: number, burst: number): Promise<[number, number, number, number]>;
  loreIncr(key: string, by: number, ttlMs: number): Promise<number>;
};

/**
 * The cache on Redis (ioredis). Scripts are registered once and called by SHA (ioredis falls back to EVAL after a
 * Redis restart); `keyPrefix` applies to every key, scripts included.
 */
export class RedisCache implements Cache {
  readonly kind = 'redis' as const;
  private readonly redis: LoreRedis;

  constructor(url: string, opts: { keyPrefix?: string } = {}) {
    const redis = new Redis(url, {
      keyPrefix: opts.keyPrefix,
      // Fail a command after a few reconnect attempts instead of queueing it for ever: a request waiting on the
      // cache should get an error it can answer with, not hang.
      maxRetriesPerRequest: 3,
      connectTimeout: 5_000,
      enableAutoPipelining: true,
    });
    // Connection errors are retried by ioredis and surface on the commands; the event must not crash the process.
    redis.on('error', () => undefined);
    redis.defineCommand('loreGcra', { numberOfKeys: 1, lua: GCRA_LUA });
    redis.defineCommand('loreIncr', { numberOfKeys: 1, lua: INCR_LUA });
    this.redis = redis as LoreRedis;
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    if (ttlMs && ttlMs > 0) await this.redis.set(key, value, 'PX', Math.ceil(ttlMs));
    else await this.redis.set(key, value);
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    const r = ttlMs && ttlMs > 0 ? await this.redis.set(key, value, 'PX', Math.ceil(ttlMs), 'NX') : await this.redis.set(key, value, 'NX');
    return r === 'OK';
  }

  async del(key: string): Promise<void> {
    await this.redis.del(key);
  }

  incrBy(key: string, by: number, ttlMs?: number): Promise<number> {
    return this.redis.loreIncr(key, by, ttlMs && ttlMs > 0 ? Math.ceil(ttlMs) : 0);
  }

  async rateLimit(key: string, ratePerSecond: number, burst: number): Promise<RateLimitDecision> {
    checkRateSpec(ratePerSecond, burst);
    const [allowed, remaining, retryAfterUs, resetAfterUs] = await this.redis.loreGcra(key, emissionIntervalUs(ratePerSecond), burst);
    return toRateLimitDecision({ allowed: allowed === 1, remaining, retryAfterUs, resetAfterUs });
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
