import { gcra } from './gcra';

describe('gcra', () => {
  it('admits burst + 1 at once from a full bucket, then one per interval', () => {
    let tat: number | null = null;
    const allowed: boolean[] = [];
    for (let i = 0; i < 5; i++) {
      const r = gcra(tat, 1_000, 2, 2);
      allowed.push(r.decision.allowed);
      if (r.tat !== null) tat = r.tat;
    }
    expect(allowed).toEqual([true, true, true, false, false]);
    expect(gcra(tat, 1_499, 2, 2).decision.allowed).toBe(false);
    expect(gcra(tat, 1_500, 2, 2).decision.allowed).toBe(true);
  });

  it('tells when the next request would pass and when the bucket is full again', () => {
    const full = gcra(null, 0, 4, 1);
    expect(full.decision).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0, resetAfterMs: 250 });
    const second = gcra(full.tat, 0, 4, 1);
    expect(second.decision).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0, resetAfterMs: 500 });
    const third = gcra(second.tat, 100, 4, 1);
    expect(third.decision).toEqual({ allowed: false, remaining: 0, retryAfterMs: 150, resetAfterMs: 400 });
  });
});
