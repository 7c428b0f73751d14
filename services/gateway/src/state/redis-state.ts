import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError, GCRA_LUA, GCRA_LUA_FUNCTION, emissionIntervalUs, toRateLimitDecision } from '@lore/runtime';
import { monthKey, secondsToMonthEnd, type AdmitInput, type AdmitResult, type GatewayState, type RateOutcome, type RateSpec } from './gateway-state';

/**
 * One script answers the whole hot path: is the subject revoked, may it spend a rate-limit token, and is the
 * tenant's monthly quota left. Time comes from the Redis server (TIME) so every replica judges with one clock. The
 * rate decision is the runtime's one GCRA (`GCRA_LUA_FUNCTION`, mirrored by `gcra` in TypeScript); the bucket is
 * written only when the request is admitted, quota included.
 *
 * KEYS: 1 revocation record, 2 rate bucket (TAT in microseconds), 3 monthly quota counter, 4 epoch
 * ARGV: 1 consume (0/1), 2 emission interval us, 3 burst, 4 quota limit (0 = none), 5 quota ttl s, 6 fresh epoch
 * Returns: { revoked, epoch, allowed, remaining, retry_after_us, reset_after_us, quota_exceeded, quota_used }
 */
const ADMIT_LUA = `${GCRA_LUA_FUNCTION}
local now_us = gcra_now()
local now_ms = math.floor(now_us / 1000)
local epoch = redis.call('GET', KEYS[4])
if not epoch then
  redis.call('SET', KEYS[4], ARGV[6])
  epoch = ARGV[6]
end
local not_after = redis.call('GET', KEYS[1])
if not_after and now_ms >= tonumber(not_after) then
  return {1, epoch, 0, 0, 0, 0, 0, 0}
end
if ARGV[1] ~= '1' then
  return {0, epoch, -1, 0, 0, 0, 0, 0}
end
local allowed, tat, remaining, retry, reset = gcra(tonumber(redis.call('GET', KEYS[2])), now_us, tonumber(ARGV[2]), tonumber(ARGV[3]))
if allowed == 0 then
  return {0, epoch, 0, 0, retry, reset, 0, 0}
end
local used = 0
local limit = tonumber(ARGV[4])
if limit > 0 then
  used = tonumber(redis.call('GET', KEYS[3]) or '0')
  if used >= limit then
    return {0, epoch, 1, remaining, 0, reset, 1, used}
  end
  used = redis.call('INCR', KEYS[3])
  if used == 1 then redis.call('EXPIRE', KEYS[3], tonumber(ARGV[5])) end
end
gcra_store(KEYS[2], tat, now_us)
return {0, epoch, 1, remaining, 0, reset, 0, used}
`;

/** Writes a revocation record unless an earlier one exists. KEYS: records; ARGV: 1 not-after ms, 2 ttl ms. */
const REVOKE_LUA = `
for i, key in ipairs(KEYS) do
  local existing = redis.call('GET', key)
  local value = tonumber(ARGV[1])
  if existing and tonumber(existing) < value then value = tonumber(existing) end
  redis.call('SET', key, string.format('%d', value), 'PX', tonumber(ARGV[2]))
end
return #KEYS
`;

type AdmitReply = [number, string, number, number, number, number, number, number];

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const ADMIT_SHA = sha1(ADMIT_LUA);
const HIT_SHA = sha1(GCRA_LUA);

/**
 * Without the shared state the gateway cannot tell whether a credential was revoked: it fails closed with 503
 * (and a revoke call fails too, so its caller retries; the database already holds the revocation).
 */
function unavailable(err: unknown): AppError {
  return new AppError('UNAVAILABLE', 'the gateway cannot reach its shared state; retry shortly', { cause: err, headers: { 'Retry-After': '1' } });
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

export interface RedisStateOptions {
  /** Namespace of every key, so several deployments can share one Redis. */
  prefix?: string;
}

export class RedisGatewayState implements GatewayState {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;
  private readonly prefix: string;
  private trips = 0;

  constructor(redis: Redis, options: RedisStateOptions = {}) {
    this.prefix = options.prefix ?? 'lore:gw:';
    this.redis = redis;
  }

  /**
   * EVALSHA, and EVAL only when the server does not know the script (first use, restart, SCRIPT FLUSH). The
   * NOSCRIPT fallback costs a second round trip once per script per Redis start; every other call makes one.
   */
  private async script<T>(sha: string, lua: string, keys: string[], argv: string[]): Promise<T> {
    try {
      return (await this.redis.evalsha(sha, keys.length, ...keys, ...argv)) as T;
    } catch (err) {
      if (!isNoScript(err)) throw unavailable(err);
      this.trips++;
      return (await this.redis.eval(lua, keys.length, ...keys, ...argv).catch((e: unknown) => Promise.reject(unavailable(e)))) as T;
    }
  }

  async admit(input: AdmitInput): Promise<AdmitResult> {
    this.trips++;
    const p = this.prefix;
    const reply = await this.script<AdmitReply>(
      ADMIT_SHA,
      ADMIT_LUA,
      [`${p}rv:${input.subject}`, `${p}rl:${input.subject}`, input.quota ? `${p}q:${input.quota.tenantId}:${monthKey()}` : `${p}q:none`, `${p}epoch`],
      [
        input.consume ? '1' : '0',
        String(emissionIntervalUs(input.rate.perSecond)),
        String(input.rate.burst),
        String(input.quota?.limit ?? 0),
        String(secondsToMonthEnd()),
        // A new value each call: if the store was emptied, the epoch written now differs from every earlier one.
        randomUUID(),
      ],
    );
    const [revoked, epoch, allowed, remaining, retryUs, resetUs, quotaExceeded, quotaUsed] = reply;
    const rate: RateOutcome | null =
      revoked === 1 || allowed === -1
        ? null
        : { ...toRateLimitDecision({ allowed: allowed === 1, remaining: Number(remaining), retryAfterUs: Number(retryUs), resetAfterUs: Number(resetUs) }), limit: input.rate.burst };
    return { revoked: revoked === 1, epoch: String(epoch), rate, quotaExceeded: quotaExceeded === 1, quotaUsed: Number(quotaUsed) };
  }

  async revoke(subjects: readonly string[], notAfterMs: number, ttlMs: number): Promise<void> {
    if (subjects.length === 0) return;
    // Bounded batches: a memory with many keys is revoked in several scripts rather than one huge one.
    for (let i = 0; i < subjects.length; i += 500) {
      const batch = subjects.slice(i, i + 500).map((s) => `${this.prefix}rv:${s}`);
      this.trips++;
      await this.redis
        .eval(REVOKE_LUA, batch.length, ...batch, String(Math.max(0, Math.floor(notAfterMs))), String(Math.ceil(ttlMs)))
        .catch((e: unknown) => Promise.reject(unavailable(e)));
    }
  }

  async hit(key: string, rate: RateSpec): Promise<RateOutcome> {
    this.trips++;
    const [allowed, remaining, retryUs, resetUs] = await this.script<[number, number, number, number]>(HIT_SHA, GCRA_LUA, [`${this.prefix}hit:${key}`], [
      String(emissionIntervalUs(rate.perSecond)),
      String(rate.burst),
    ]);
    return { ...toRateLimitDecision({ allowed: allowed === 1, remaining: Number(remaining), retryAfterUs: Number(retryUs), resetAfterUs: Number(resetUs) }), limit: rate.burst };
  }

  roundTrips(): number {
    return this.trips;
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
