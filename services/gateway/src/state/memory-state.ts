import { randomUUID } from 'node:crypto';
import { bucketTtlMs, emissionIntervalUs, gcra } from '@lore/runtime';
import { monthKey, rateOutcome, type AdmitInput, type AdmitResult, type GatewayState, type RateOutcome, type RateSpec } from './gateway-state';

const MAX_ENTRIES = 100_000;

/**
 * In-process state for embedded mode (one process, so process memory is shared by definition) and unit tests.
 * Same semantics as the Redis script, with the runtime's one GCRA (`gcra`, which the script runs as Lua); maps are
 * bounded by evicting the oldest entries.
 */
export class MemoryGatewayState implements GatewayState {
  readonly kind = 'memory' as const;
  private readonly revocations = new Map<string, { notAfterMs: number; expiresAtMs: number }>();
  private readonly buckets = new Map<string, { tat: number; expiresAtMs: number }>();
  private readonly quotas = new Map<string, number>();
  private readonly epoch = randomUUID();
  private trips = 0;

  constructor(private readonly clock: () => number = () => Date.now()) {}

  async admit(input: AdmitInput): Promise<AdmitResult> {
    this.trips++;
    const nowMs = this.clock();
    const rec = this.revocations.get(input.subject);
    if (rec && rec.expiresAtMs <= nowMs) this.revocations.delete(input.subject);
    else if (rec && nowMs >= rec.notAfterMs) return { revoked: true, epoch: this.epoch, rate: null, quotaExceeded: false, quotaUsed: 0 };
    if (!input.consume) return { revoked: false, epoch: this.epoch, rate: null, quotaExceeded: false, quotaUsed: 0 };

    const bucketKey = `rl:${input.subject}`;
    const outcome = this.gcraAt(bucketKey, input.rate, nowMs, false);
    if (!outcome.allowed) return { revoked: false, epoch: this.epoch, rate: outcome.rate, quotaExceeded: false, quotaUsed: 0 };
    let used = 0;
    if (input.quota && input.quota.limit > 0) {
      const qk = `${input.quota.tenantId}:${monthKey(new Date(nowMs))}`;
      used = this.quotas.get(qk) ?? 0;
      if (used >= input.quota.limit) return { revoked: false, epoch: this.epoch, rate: outcome.rate, quotaExceeded: true, quotaUsed: used };
      used += 1;
      this.quotas.set(qk, used);
      this.bound(this.quotas);
    }
    this.commit(bucketKey, outcome.tat, nowMs);
    return { revoked: false, epoch: this.epoch, rate: outcome.rate, quotaExceeded: false, quotaUsed: used };
  }

  async revoke(subjects: readonly string[], notAfterMs: number, ttlMs: number): Promise<void> {
    this.trips++;
    const nowMs = this.clock();
    for (const s of subjects) {
      const existing = this.revocations.get(s);
      const value = existing ? Math.min(existing.notAfterMs, notAfterMs) : notAfterMs;
      this.revocations.set(s, { notAfterMs: value, expiresAtMs: nowMs + ttlMs });
    }
    this.bound(this.revocations);
  }

  async hit(key: string, rate: RateSpec): Promise<RateOutcome> {
    this.trips++;
    const nowMs = this.clock();
    const outcome = this.gcraAt(`hit:${key}`, rate, nowMs, true);
    return outcome.rate;
  }

  roundTrips(): number {
    return this.trips;
  }

  async ping(): Promise<void> {}
  async close(): Promise<void> {}

  private gcraAt(key: string, rate: RateSpec, nowMs: number, commit: boolean): { allowed: boolean; tat: number; rate: RateOutcome } {
    const nowUs = nowMs * 1000;
    const stored = this.buckets.get(key);
    const tat = stored && stored.expiresAtMs > nowMs ? stored.tat : null;
    const r = gcra(tat, nowUs, emissionIntervalUs(rate.perSecond), rate.burst);
    if (r.allowed && commit) this.commit(key, r.tat, nowMs);
    return { allowed: r.allowed, tat: r.tat, rate: rateOutcome(r, rate.burst) };
  }

  private commit(key: string, tat: number, nowMs: number): void {
    this.buckets.set(key, { tat, expiresAtMs: nowMs + bucketTtlMs(tat, nowMs * 1000) });
    this.bound(this.buckets);
  }

  private bound(map: Map<string, unknown>): void {
    while (map.size > MAX_ENTRIES) {
      const first = map.keys().next().value as string;
      map.delete(first);
    }
  }
}
