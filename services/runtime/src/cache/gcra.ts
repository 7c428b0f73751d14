import type { RateLimitDecision } from '../ports/cache';

/**
 * Generic cell rate algorithm. State is one number per key: the theoretical arrival time (TAT) of the next
 * request, in milliseconds. A request is admitted while `TAT - now <= burst * T` (T = 1000 / rate), so a full bucket
 * admits `burst + 1` requests at once and then one every T. The Redis adapter runs the same arithmetic in Lua.
 */
export function gcra(storedTat: number | null, nowMs: number, ratePerSecond: number, burst: number): { decision: RateLimitDecision; tat: number | null } {
  if (!(ratePerSecond > 0) || !(burst >= 0)) throw new Error('rateLimit needs ratePerSecond > 0 and burst >= 0');
  const interval = 1000 / ratePerSecond;
  const tolerance = interval * burst;
  const tat = Math.max(storedTat ?? nowMs, nowMs);
  if (tat - nowMs > tolerance) {
    return {
      tat: null,
      decision: { allowed: false, remaining: 0, retryAfterMs: Math.ceil(tat - tolerance - nowMs), resetAfterMs: Math.ceil(tat - nowMs) },
    };
  }
  const next = tat + interval;
  return {
    tat: next,
    decision: {
      allowed: true,
      remaining: Math.floor((tolerance + interval - (next - nowMs)) / interval + 1e-9),
      retryAfterMs: 0,
      resetAfterMs: Math.ceil(next - nowMs),
    },
  };
}

/** The same arithmetic as `gcra`, atomically in Redis, on the server's clock. Returns allowed, remaining, retry, reset. */
export const GCRA_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = 1000 / rate
local tolerance = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
if tat - now > tolerance then
  return {0, 0, math.ceil(tat - tolerance - now), math.ceil(tat - now)}
end
local nxt = tat + interval
redis.call('SET', KEYS[1], string.format('%.3f', nxt), 'PX', math.max(1, math.ceil(nxt - now)))
return {1, math.floor((tolerance + interval - (nxt - now)) / interval + 1e-9), 0, math.ceil(nxt - now)}
`;
