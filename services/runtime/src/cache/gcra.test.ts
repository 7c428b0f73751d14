import { bucketTtlMs, checkRateSpec, emissionIntervalUs, gcra, toRateLimitDecision } from './gcra';

/** Runs attempts at the given instants against one bucket, storing the TAT only when admitted (as the adapters do). */
function run(instantsUs: number[], intervalUs: number, burst: number) {
  let tat: number | null = null;
  return instantsUs.map((now) => {
    const r = gcra(tat, now, intervalUs, burst);
    if (r.allowed) tat = r.tat;
    return r;
  });
}

describe('the GCRA burst rule: burst is the bucket\'s capacity', () => {
  const T = emissionIntervalUs(10); // 100 ms

  it('admits exactly `burst` at once from a full bucket, then one per interval', () => {
    const at = 1_000_000_000;
    const out = run(Array.from({ length: 8 }, () => at), T, 5);
    expect(out.map((r) => r.allowed)).toEqual([true, true, true, true, true, false, false, false]);
    expect(out.map((r) => r.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0, 0]);
    // The refused ones are told to come back in exactly one interval, and nothing was spent by them.
    expect(out[5]).toMatchObject({ retryAfterUs: T, resetAfterUs: 5 * T });
    const later = run([...Array.from({ length: 5 }, () => at), at + T - 1, at + T, at + T], T, 5);
    expect(later.slice(5).map((r) => r.allowed)).toEqual([false, true, false]);
  });

  it('admits exactly burst + rate * t under sustained overload', () => {
    // One attempt every millisecond for 10 seconds at 10 per second with a burst of 5.
    const instants = Array.from({ length: 10_001 }, (_, i) => 5_000_000_000 + i * 1000);
    expect(run(instants, T, 5).filter((r) => r.allowed)).toHaveLength(5 + 100);
  });

  it('admits one request at a time with a burst of 1', () => {
    const out = run([0, 0, T - 1, T], T, 1);
    expect(out.map((r) => r.allowed)).toEqual([true, false, false, true]);
    expect(out[0]!.remaining).toBe(0);
    expect(out[1]!.retryAfterUs).toBe(T);
  });

  it('refills while idle but never above the burst', () => {
    const out = run([0, 0, 0, 10 * T, 10 * T, 10 * T, 10 * T], T, 3);
    expect(out.map((r) => r.allowed)).toEqual([true, true, true, true, true, true, false]);
  });

  it('reports remaining capacity and the time to a full bucket', () => {
    const first = gcra(null, 0, T, 3);
    expect(first).toEqual({ allowed: true, tat: T, remaining: 2, retryAfterUs: 0, resetAfterUs: T });
    const second = gcra(first.tat, 0, T, 3);
    expect(second).toEqual({ allowed: true, tat: 2 * T, remaining: 1, retryAfterUs: 0, resetAfterUs: 2 * T });
    // A third request half an interval later takes the last place (half a request back rounds down to none)...
    expect(gcra(second.tat, T / 2, T, 3)).toMatchObject({ allowed: true, remaining: 0, resetAfterUs: 2.5 * T });
    // ...one interval later, one request has come back.
    expect(gcra(second.tat, T, T, 3)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('converts to the port\'s milliseconds rounding up, so a client never comes back too early', () => {
    expect(toRateLimitDecision({ allowed: false, remaining: 0, retryAfterUs: 1001, resetAfterUs: 2000 })).toEqual({ allowed: false, remaining: 0, retryAfterMs: 2, resetAfterMs: 2 });
    expect(emissionIntervalUs(3)).toBe(333_333);
    expect(emissionIntervalUs(10_000_000)).toBe(1);
    expect(bucketTtlMs(5_500_000, 1_000_000)).toBe(4500 + 1000);
  });

  it('refuses a rate that is not positive and a burst below 1 or fractional', () => {
    expect(() => checkRateSpec(0, 1)).toThrow();
    expect(() => checkRateSpec(-1, 1)).toThrow();
    expect(() => checkRateSpec(Number.NaN, 1)).toThrow();
    expect(() => checkRateSpec(1, 0)).toThrow();
    expect(() => checkRateSpec(1, 1.5)).toThrow();
    expect(() => checkRateSpec(0.5, 1)).not.toThrow();
  });
});
