import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError, GCRA_LUA, GCRA_LUA_FUNCTION, emissionIntervalUs } from '@lore/runtime';
import { monthKey, rateOutcome, secondsToMonthEnd, type AdmitInput, type AdmitResult, type GatewayState, type RateOutcome, type RateSpec } from './gateway-state';

/**
 * One script answers the whole hot path of one or more requests: is the subject revoked, may it spend a rate-limit
 * token, and is the tenant's monthly quota left. Time comes from the Redis server (TIME, read once per call) so
 * every replica judges with one clock. The rate decision is the runtime's one GCRA (`GCRA_LUA_FUNCTION`, mirrored
 * by `gcra` in TypeScript); the bucket is written only when the request is admitted, quota included. Admissions
 * are judged in the order given, each seeing what the earlier ones wrote, exactly as separate calls would: the
 * script reads each record once per call, keeps it as the admissions change it, and writes each changed record once
 * at the end (a bucket's last TAT, a counter's increments in one INCRBY), so a batch of one key's requests costs one
 * MGET, one SET and one INCRBY (and an EXPIRE for a new counter) instead of up to five commands per request
 * (docs/gateway.md, 2026-11-29).
 *
 * KEYS: 1 epoch. The per-admission records are named inside the script from the prefix and each admission's
 *   subject and tenant (a batch mixes subjects, so it is single-slot only on a standalone Redis anyway, which is
 *   what the gateway's shared state is; ARCHITECTURE.md). Naming them here instead of passing three keys per
 *   admission cut the client library's work per admission again (docs/gateway.md, 2026-11-25).
 * ARGV: 1 fresh epoch, 2 quota ttl s, 3 key prefix, 4 month (yyyymm), then per admission 5+i one argument
 *   `consume:interval:burst:limit:tenant:subject` (consume 0/1, emission interval us, burst, quota limit with 0 =
 *   none, the tenant whose monthly counter is spent, empty when there is no quota, and the subject last, so it may
 *   hold any character)
 * Records: `<prefix>rv:<subject>` revocation, `<prefix>rl:<subject>` rate bucket (TAT in microseconds),
 *   `<prefix>q:<tenant>:<month>` monthly quota counter (`<prefix>q:none` when there is no quota)
 * Returns: { epoch, then per admission: revoked, allowed, remaining, retry_after_us, reset_after_us,
 *   quota_exceeded, quota_used }
 */
const ADMIT_LUA = `${GCRA_LUA_FUNCTION}
local now_us = gcra_now()
local now_ms = math.floor(now_us / 1000)
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  redis.call('SET', KEYS[1], ARGV[1])
  epoch = ARGV[1]
end
local out = {epoch}
-- The records as this call has them: read once (false when missing), then as the admissions before changed them.
local seen = {}
-- Writes, made once at the end of the call: rate buckets' latest TAT, quota counters' increments.
local tats, tat_order = {}, {}
local spent, spent_order, absent = {}, {}, {}
local function load(rv, rl, q)
  if seen[rv] == nil or seen[rl] == nil or seen[q] == nil then
    local got = redis.call('MGET', rv, rl, q)
    if seen[rv] == nil then seen[rv] = got[1] end
    if seen[rl] == nil then seen[rl] = got[2] end
    if seen[q] == nil then
      seen[q] = got[3]
      absent[q] = not got[3]
    end
  end
end
local function admit(rv, rl, q, consume, interval, burst, limit)
  load(rv, rl, q)
  local not_after = seen[rv]
  if not_after and now_ms >= tonumber(not_after) then
    return 1, 0, 0, 0, 0, 0, 0
  end
  if consume ~= '1' then
    return 0, -1, 0, 0, 0, 0, 0
  end
  local allowed, tat, remaining, retry, reset = gcra(tonumber(seen[rl]), now_us, interval, burst)
  if allowed == 0 then
    return 0, 0, 0, retry, reset, 0, 0
  end
  local used = 0
  if limit > 0 then
    used = tonumber(seen[q] or '0')
    if used >= limit then
      return 0, 1, remaining, 0, reset, 1, used
    end
    used = used + 1
    seen[q] = used
    if not spent[q] then spent_order[#spent_order + 1] = q end
    spent[q] = (spent[q] or 0) + 1
  end
  seen[rl] = tat
  if not tats[rl] then tat_order[#tat_order + 1] = rl end
  tats[rl] = tat
  return 0, 1, remaining, 0, reset, 0, used
end
local ttl = tonumber(ARGV[2])
local prefix = ARGV[3]
local month = ARGV[4]
for i = 5, #ARGV do
  local consume, interval, burst, limit, tenant, subject = string.match(ARGV[i], '^([01]):([^:]+):([^:]+):([^:]+):([^:]*):(.+)$')
  interval, burst, limit = tonumber(interval), tonumber(burst), tonumber(limit)
  if not (consume and interval and burst and limit) then return redis.error_reply('ERR malformed admission ' .. (i - 5)) end
  local q = prefix .. 'q:none'
  if tenant ~= '' then q = prefix .. 'q:' .. tenant .. ':' .. month end
  local r1, r2, r3, r4, r5, r6, r7 = admit(prefix .. 'rv:' .. subject, prefix .. 'rl:' .. subject, q, consume, interval, burst, limit)
  local n = #out
  out[n + 1] = r1
  out[n + 2] = r2
  out[n + 3] = r3
  out[n + 4] = r4
  out[n + 5] = r5
  out[n + 6] = r6
  out[n + 7] = r7
end
for _, rl in ipairs(tat_order) do gcra_store(rl, tats[rl], now_us) end
for _, q in ipairs(spent_order) do
  redis.call('INCRBY', q, spent[q])
  if absent[q] then redis.call('EXPIRE', q, ttl) end
end
return out
`;

/** Values the admission script returns per admission, after the epoch. */
const ADMIT_FIELDS = 7;
/**
 * Most admissions one script call judges. Admissions waiting beyond it go in the next call; the bound keeps one
 * call's time inside Redis (which serves nobody else meanwhile) to a fraction of a millisecond.
 */
export const ADMIT_BATCH_MAX = 128;

interface PendingAdmission {
  input: AdmitInput;
  resolve: (result: AdmitResult) => void;
  reject: (err: unknown) => void;
}

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
  /** Admissions that arrived while a script call was out, in arrival order. */
  private waiting: PendingAdmission[] = [];
  private calling = false;
  private readonly epochKey: string[];

  constructor(redis: Redis, options: RedisStateOptions = {}) {
    this.prefix = options.prefix ?? 'lore:gw:';
    this.redis = redis;
    this.epochKey = [`${this.prefix}epoch`];
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

  /**
   * One admission per authenticated request, and at most one script call in flight. A call leaves at the end of
   * the event-loop turn in which its first admission arrived (`setImmediate`), so the admissions of requests read
   * in that same turn go with it; those that arrive while a call is out wait for its reply and go together in the
   * next call, again at the end of a turn (up to `ADMIT_BATCH_MAX` per call). An idle gateway waits one turn, a
   * few microseconds; a busy one wakes once per reply for many requests instead of once per request (that second
   * wake-up per request was most of the authenticated path's cost, docs/gateway.md). Each admission's result is
   * the one a call of its own would give.
   */
  admit(input: AdmitInput): Promise<AdmitResult> {
    return new Promise<AdmitResult>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      if (!this.calling) {
        this.calling = true;
        setImmediate(this.nextCall);
      }
    });
  }

  private readonly nextCall = (): void => {
    if (this.waiting.length === 0) {
      this.calling = false;
      return;
    }
    this.calling = true;
    const batch = this.waiting.length <= ADMIT_BATCH_MAX ? this.waiting.splice(0) : this.waiting.splice(0, ADMIT_BATCH_MAX);
    this.admitAll(batch.map((b) => b.input)).then(
      (results) => {
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!);
        setImmediate(this.nextCall);
      },
      (err: unknown) => {
        for (const b of batch) b.reject(err);
        setImmediate(this.nextCall);
      },
    );
  };

  /** One script call for `inputs`, in order. */
  private async admitAll(inputs: readonly AdmitInput[]): Promise<AdmitResult[]> {
    this.trips++;
    const p = this.prefix;
    const month = monthKey();
    const ttl = String(secondsToMonthEnd());
    // A new epoch value each call: if the store was emptied, the epoch written now differs from every earlier one.
    const argv: string[] = [randomUUID(), ttl, p, month];
    for (const input of inputs) {
      const q = input.quota;
      argv.push(`${input.consume ? 1 : 0}:${emissionIntervalUs(input.rate.perSecond)}:${input.rate.burst}:${q ? `${q.limit}:${q.tenantId}` : '0:'}:${input.subject}`);
    }
    const reply = await this.script<Array<string | number>>(ADMIT_SHA, ADMIT_LUA, this.epochKey, argv);
    const epoch = String(reply[0]);
    return inputs.map((input, i) => {
      const o = 1 + i * ADMIT_FIELDS;
      const revoked = Number(reply[o]);
      const allowed = Number(reply[o + 1]);
      const remaining = Number(reply[o + 2]);
      const retryUs = Number(reply[o + 3]);
      const resetUs = Number(reply[o + 4]);
      const quotaExceeded = Number(reply[o + 5]);
      const quotaUsed = Number(reply[o + 6]);
      const rate: RateOutcome | null =
        revoked === 1 || allowed === -1 ? null : rateOutcome({ allowed: allowed === 1, remaining, retryAfterUs: retryUs, resetAfterUs: resetUs }, input.rate.burst);
      return { revoked: revoked === 1, epoch, rate, quotaExceeded: quotaExceeded === 1, quotaUsed };
    });
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
    return rateOutcome({ allowed: allowed === 1, remaining: Number(remaining), retryAfterUs: Number(retryUs), resetAfterUs: Number(resetUs) }, rate.burst);
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
