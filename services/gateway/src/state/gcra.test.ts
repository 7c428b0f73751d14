import { emissionIntervalUs, gcra } from './gcra';

describe('GCRA', () => {
  const T = emissionIntervalUs(10); // 100 ms

  it('admits a full burst at once, then one request per interval', () => {
    let tat: number | null = null;
    const now = 1_000_000_000;
    let admitted = 0;
    for (let i = 0; i < 10; i++) {
      const r = gcra(tat, now, T, 5);
      if (r.allowed) {
        admitted++;
        tat = r.tat;
      }
    }
    expect(admitted).toBe(5);
    const denied = gcra(tat, now, T, 5);
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterUs).toBe(T);
    expect(gcra(tat, now + T, T, 5).allowed).toBe(true);
  });

  it('admits exactly burst + rate * t under sustained overload', () => {
    let tat: number | null = null;
    const start = 5_000_000_000;
    let admitted = 0;
    // One attempt every millisecond for 10 seconds at 10 per second with a burst of 5.
    for (let t = 0; t <= 10_000_000; t += 1000) {
      const r = gcra(tat, start + t, T, 5);
      if (r.allowed) {
        admitted++;
        tat = r.tat;
      }
    }
    expect(admitted).toBe(5 + 100);
  });

  it('reports remaining capacity and the time to a full bucket', () => {
    const first = gcra(null, 0, T, 3);
    expect(first).toMatchObject({ allowed: true, remaining: 2, resetAfterUs: T });
    const second = gcra(first.tat, 0, T, 3);
    expect(second).toMatchObject({ allowed: true, remaining: 1, resetAfterUs: 2 * T });
  });
});
