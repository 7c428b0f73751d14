import type { RateLimitDecision } from '../ports/cache';

/**
 * Lore's one rate-limit rule: the generic cell rate algorithm. A bucket is one number, the theoretical arrival time
 * (TAT) of the next request, in integer microseconds. With emission interval T = 1/rate and `burst` the bucket's
 * capacity, a request at `now` is admitted when max(TAT, now) + T - burst*T <= now.
 *
 * The burst rule: `burst` is how many requests a full bucket admits at once (at least 1); after that one request
 * passes every T, and under sustained overload exactly `burst + rate * t` requests pass in t seconds. This is the
 * limit the gateway announces as `RateLimit-Limit`.
 *
 * `gcra` below and `GCRA_LUA_FUNCTION` are the same arithmetic, line for line, on integers that doubles hold
 * exactly (times in microseconds stay far below 2^53), so the in-memory and the Redis adapters decide every
 * sequence identically; test/gateway/rate-limit-parity.int.test.ts runs both on one sequence of instants.
 */
export interface GcraResult {
  allowed: boolean;
  /** The TAT to store when allowed (the unchanged TAT otherwise). */
  tat: number;
  /** Requests still admissible at `now` after this one. */
  remaining: number;
  /** Microseconds until a request would be admitted (0 when allowed). */
  retryAfterUs: number;
  /** Microseconds until the bucket is full again. */
  resetAfterUs: number;
}

/** The emission interval of a rate, whole microseconds (at least 1). */
export function emissionIntervalUs(perSecond: number): number {
  return Math.max(1, Math.round(1_000_000 / perSecond));
}

/** Throws unless the rate is positive and the burst a whole number of at least 1. */
export function checkRateSpec(perSecond: number, burst: number): void {
  if (!(perSecond > 0) || !Number.isFinite(perSecond) || !Number.isInteger(burst) || burst < 1) {
    throw new Error('a rate limit needs a positive rate and a whole burst of at least 1');
  }
}

/** One decision; `storedTat` null means a full bucket (never used, or expired). */
export function gcra(storedTat: number | null, nowUs: number, intervalUs: number, burst: number): GcraResult {
  const tat = storedTat === null || storedTat < nowUs ? nowUs : storedTat;
  const newTat = tat + intervalUs;
  const allowAt = newTat - intervalUs * burst;
  if (nowUs < allowAt) {
    return { allowed: false, tat, remaining: 0, retryAfterUs: allowAt - nowUs, resetAfterUs: tat - nowUs };
  }
  return { allowed: true, tat: newTat, remaining: Math.floor((nowUs - allowAt) / intervalUs), retryAfterUs: 0, resetAfterUs: newTat - nowUs };
}

/** How long a stored TAT must live: until the bucket is full again, plus a second of slack (milliseconds). */
export function bucketTtlMs(tatUs: number, nowUs: number): number {
  return Math.floor((tatUs - nowUs) / 1000) + 1000;
}

/** A decision in the port's milliseconds (rounded up: never tell a client to come back too early). */
export function toRateLimitDecision(r: Pick<GcraResult, 'allowed' | 'remaining' | 'retryAfterUs' | 'resetAfterUs'>): RateLimitDecision {
  return { allowed: r.allowed, remaining: r.remaining, retryAfterMs: Math.ceil(r.retryAfterUs / 1000), resetAfterMs: Math.ceil(r.resetAfterUs / 1000) };
}

/**
 * `gcra` in Lua, for scripts that decide atomically on the Redis server: the cache port's `rateLimit` (below) and
 * the gateway's one-round-trip admission script include it. `stored` is nil for a full bucket. Returns allowed
 * (0/1), the TAT to store when allowed, remaining, retry-after and reset-after (microseconds).
 */
export const GCRA_LUA_FUNCTION = `
local function gcra(stored, now, interval, burst)
  local tat = stored
  if tat == nil or tat < now then tat = now end
  local new_tat = tat + interval
  local allow_at = new_tat - interval * burst
  if now < allow_at then
    return 0, tat, 0, allow_at - now, tat - now
  end
  return 1, new_tat, math.floor((now - allow_at) / interval), 0, new_tat - now
end
local function gcra_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function gcra_store(key, tat, now)
  redis.call('SET', key, string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
end
`;

/**
 * One rate-limit hit on the server's clock (so every replica judges with one clock).
 * KEYS: 1 bucket. ARGV: 1 emission interval (us), 2 burst. Returns { allowed, remaining, retry_after_us, reset_after_us }.
 */
export const GCRA_LUA = `${GCRA_LUA_FUNCTION}
local now = gcra_now()
local allowed, tat, remaining, retry, reset = gcra(tonumber(redis.call('GET', KEYS[1])), now, tonumber(ARGV[1]), tonumber(ARGV[2]))
if allowed == 1 then gcra_store(KEYS[1], tat, now) end
return {allowed, remaining, retry, reset}
`;
