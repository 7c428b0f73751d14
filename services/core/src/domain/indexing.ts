/**
 * Rules of connector indexing with no I/O: which kind of run a pair gets, when it is due again, when its errors
 * are repeated, and which documents a run keeps. See "Indexing" in docs/core.md.
 */

export const ATTEMPT_KINDS = ['load', 'poll', 'delete'] as const;
export type AttemptKind = (typeof ATTEMPT_KINDS)[number];

export const ATTEMPT_TRIGGERS = ['schedule', 'manual', 'deletion'] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

/** `not_started` and `in_progress` are live; the others are ended. */
export const ATTEMPT_STATUSES = ['not_started', 'in_progress', 'success', 'completed_with_errors', 'failed', 'canceled'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** Ended attempts that failed in a row before a pair is `in_repeated_error_state`. */
export const REPEATED_ERRORS = 3;

/** What the last run of a pair tells the next one. */
export interface PairHistory {
  /** When the last successful run started (null: never). */
  lastSuccess: Date | null;
  /** When the pair was last pruned (null: never). */
  lastPruned: Date | null;
  /** Seconds between prunes; null: never pruned. */
  pruneFreq: number | null;
}

/**
 * The kind of a run: everything the first time (or when asked `fromBeginning`), otherwise what changed since the
 * last success; and whether it also prunes (its prune interval passed since the last prune, or never pruned after a
 * first load).
 */
export function runPlan(history: PairHistory, now: Date, fromBeginning = false): { kind: 'load' | 'poll'; prune: boolean } {
  const kind = fromBeginning || history.lastSuccess === null ? 'load' : 'poll';
  const prune =
    history.pruneFreq !== null &&
    history.lastSuccess !== null &&
    (history.lastPruned === null || now.getTime() - history.lastPruned.getTime() >= history.pruneFreq * 1000);
  return { kind, prune };
}

/** When a pair whose run ended at `ended` is due again. */
export function nextRunAt(ended: Date, refreshFreqSeconds: number): Date {
  return new Date(ended.getTime() + Math.max(1, refreshFreqSeconds) * 1000);
}

/** True when the newest `REPEATED_ERRORS` ended attempts (newest first) all failed. */
export function inRepeatedErrorState(statuses: readonly AttemptStatus[]): boolean {
  return statuses.length >= REPEATED_ERRORS && statuses.slice(0, REPEATED_ERRORS).every((s) => s === 'failed');
}

/** A document older than the connector's `indexing_start` is not indexed (one whose source gives no time is). */
export function beforeIndexingStart(updatedAt: Date | null, indexingStart: Date | null): boolean {
  return indexingStart !== null && updatedAt !== null && updatedAt.getTime() < indexingStart.getTime();
}

/**
 * The status a run ends with, from how its source stopped and what it met: read to the end → `success` (or
 * `completed_with_errors` when documents failed to be written); stopped by a limit → `completed_with_errors`
 * (what was read is kept); the source unreadable → `failed`.
 */
export function endStatus(stop: 'completed' | 'max_documents' | 'max_time' | 'max_pages' | 'aborted' | 'failed', writeErrors: number): AttemptStatus {
  if (stop === 'failed') return 'failed';
  if (stop === 'aborted') return 'canceled';
  if (stop === 'completed' && writeErrors === 0) return 'success';
  return 'completed_with_errors';
}

/** Ids the memory holds for the pair that a complete listing no longer has: the documents to prune. */
export function idsToPrune(known: Iterable<string>, listed: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const id of known) if (!listed.has(id)) out.push(id);
  return out;
}
