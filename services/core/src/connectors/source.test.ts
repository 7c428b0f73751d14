import { consume, DEFAULT_SOURCE_LIMITS, resolveLimits, timerDelay, type RunOutcome } from './source';

describe('the source interface helpers', () => {
  it('fills limits with the defaults, and ignores values that are no limits', () => {
    expect(resolveLimits(undefined)).toEqual(DEFAULT_SOURCE_LIMITS);
    expect(resolveLimits({ maxDocuments: 5, maxDocumentBytes: 1024.7, maxTotalMs: 0 })).toEqual({ maxDocuments: 5, maxDocumentBytes: 1024, maxTotalMs: 0 });
    expect(resolveLimits({ maxDocuments: -1, maxDocumentBytes: Number.NaN, maxTotalMs: Number.POSITIVE_INFINITY })).toEqual(DEFAULT_SOURCE_LIMITS);
  });

  it('keeps timer delays inside what a timer can hold', () => {
    expect(timerDelay(-5)).toBe(0);
    expect(timerDelay(1500)).toBe(1500);
    expect(timerDelay(40 * 24 * 3600_000)).toBe(2 ** 31 - 1);
  });

  it('drives a run to its end, one item at a time, and answers its outcome', async () => {
    const outcome: RunOutcome = { stop: 'max_documents', detail: 'd', yielded: 2, unchanged: 0, skipped: 0, requests: 2, elapsedMs: 1 };
    async function* run(): AsyncGenerator<number, RunOutcome, undefined> {
      yield 1;
      yield 2;
      return outcome;
    }
    const seen: number[] = [];
    expect(await consume(run(), async (n) => void seen.push(n))).toBe(outcome);
    expect(seen).toEqual([1, 2]);
  });
});
