import { beforeIndexingStart, endStatus, idsToPrune, inRepeatedErrorState, nextRunAt, runPlan } from './indexing';

describe('indexing rules', () => {
  const now = new Date('2026-11-25T12:00:00Z');
  const hoursAgo = (h: number) => new Date(now.getTime() - h * 3600_000);

  it('loads everything first and when asked from the beginning, polls otherwise', () => {
    expect(runPlan({ lastSuccess: null, lastPruned: null, pruneFreq: 3600 }, now)).toEqual({ kind: 'load', prune: false });
    expect(runPlan({ lastSuccess: hoursAgo(1), lastPruned: null, pruneFreq: null }, now)).toEqual({ kind: 'poll', prune: false });
    expect(runPlan({ lastSuccess: hoursAgo(1), lastPruned: null, pruneFreq: null }, now, true)).toEqual({ kind: 'load', prune: false });
  });

  it('prunes once its interval passed since the last prune (never before a first success)', () => {
    expect(runPlan({ lastSuccess: hoursAgo(1), lastPruned: null, pruneFreq: 7200 }, now).prune).toBe(true);
    expect(runPlan({ lastSuccess: hoursAgo(1), lastPruned: hoursAgo(1), pruneFreq: 7200 }, now).prune).toBe(false);
    expect(runPlan({ lastSuccess: hoursAgo(1), lastPruned: hoursAgo(2), pruneFreq: 7200 }, now).prune).toBe(true);
  });

  it('is due again after its refresh interval (at least a second)', () => {
    expect(nextRunAt(now, 600).toISOString()).toBe('2026-11-25T12:10:00.000Z');
    expect(nextRunAt(now, 0).getTime() - now.getTime()).toBe(1000);
  });

  it('is in repeated error state after three failed attempts in a row only', () => {
    expect(inRepeatedErrorState(['failed', 'failed', 'failed'])).toBe(true);
    expect(inRepeatedErrorState(['failed', 'failed'])).toBe(false);
    expect(inRepeatedErrorState(['failed', 'success', 'failed', 'failed'])).toBe(false);
    expect(inRepeatedErrorState(['failed', 'failed', 'failed', 'success'])).toBe(true);
  });

  it('skips documents older than indexing_start, never undated ones', () => {
    const start = hoursAgo(24);
    expect(beforeIndexingStart(hoursAgo(48), start)).toBe(true);
    expect(beforeIndexingStart(hoursAgo(1), start)).toBe(false);
    expect(beforeIndexingStart(null, start)).toBe(false);
    expect(beforeIndexingStart(hoursAgo(48), null)).toBe(false);
  });

  it('ends by how the source stopped and whether every write went through', () => {
    expect(endStatus('completed', 0)).toBe('success');
    expect(endStatus('completed', 2)).toBe('completed_with_errors');
    expect(endStatus('max_documents', 0)).toBe('completed_with_errors');
    expect(endStatus('failed', 0)).toBe('failed');
    expect(endStatus('aborted', 0)).toBe('canceled');
  });

  it('prunes what a complete listing no longer has', () => {
    expect(idsToPrune(['a', 'b', 'c'], new Set(['a', 'c', 'd']))).toEqual(['b']);
    expect(idsToPrune([], new Set(['a']))).toEqual([]);
  });
});
