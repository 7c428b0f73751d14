import type { Cache, RateLimitDecision } from '../ports/cache';
import { bucketTtlMs, checkRateSpec, emissionIntervalUs, gcra, toRateLimitDecision } from './gcra';

interface Entry {
  value: string;
  expiresAt: number;
}

/**
 * The in-process cache (embedded mode, unit tests): Redis semantics for the operations the port has. Expired keys
 * are dropped when read and by a periodic sweep, so an idle process does not keep them.
 */
export class MemoryCache implements Cache {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(opts: { sweepIntervalMs?: number } = {}) {
    this.sweeper = setInterval(() => this.sweep(), opts.sweepIntervalMs ?? 30_000);
    this.sweeper.unref();
  }

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    this.entries.set(key, { value, expiresAt: expiry(ttlMs) });
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    if (this.live(key)) return false;
    this.entries.set(key, { value, expiresAt: expiry(ttlMs) });
    return true;
  }

  async del(key: string): Promise<void> {
    this.entries.delete(key);
  }

  /** Like INCRBY; `ttlMs` is set only when the key is created, so a counter window does not slide. */
  async incrBy(key: string, by: number, ttlMs?: number): Promise<number> {
    const entry = this.live(key);
    const current = entry ? Number(entry.value) : 0;
    if (!Number.isSafeInteger(current)) throw new Error(`value of ${key} is not an integer`);
    const next = current + by;
    this.entries.set(key, { value: String(next), expiresAt: entry ? entry.expiresAt : expiry(ttlMs) });
    return next;
  }

  async rateLimit(key: string, ratePerSecond: number, burst: number): Promise<RateLimitDecision> {
    checkRateSpec(ratePerSecond, burst);
    const nowMs = Date.now();
    const nowUs = nowMs * 1000;
    const stored = this.live(key);
    const r = gcra(stored ? Number(stored.value) : null, nowUs, emissionIntervalUs(ratePerSecond), burst);
    if (r.allowed) this.entries.set(key, { value: String(r.tat), expiresAt: nowMs + bucketTtlMs(r.tat, nowUs) });
    return toRateLimitDecision(r);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.entries.clear();
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}

function expiry(ttlMs: number | undefined): number {
  return ttlMs && ttlMs > 0 ? Date.now() + ttlMs : Number.POSITIVE_INFINITY;
}
