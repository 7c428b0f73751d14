/**
 * Short-lived shared state (caches, counters, revocation markers). Never the only copy of anything that must not
 * be lost.
 */
export interface Cache {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /** Sets only when absent; true when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean>;
  del(key: string): Promise<void>;
  incrBy(key: string, by: number, ttlMs?: number): Promise<number>;
  /**
   * Generic cell rate algorithm, atomic: admits one request if the key's bucket allows it. `ratePerSecond` is the
   * steady rate, `burst` the bucket's capacity: a full bucket admits `burst` requests at once (the one burst rule,
   * cache/gcra.ts). Throws unless the rate is positive and `burst` a whole number of at least 1.
   */
  rateLimit(key: string, ratePerSecond: number, burst: number): Promise<RateLimitDecision>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** Requests still admissible right now. */
  remaining: number;
  /** Milliseconds until the next request would be admitted (0 when allowed). */
  retryAfterMs: number;
  /** Milliseconds until the bucket is full again. */
  resetAfterMs: number;
}
