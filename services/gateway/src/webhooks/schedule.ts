import { TOPICS } from '@lore/contracts';

/**
 * The retry row of spec 1: after a failed attempt, retry after exactly 1 s, 2 s, 4 s, 8 s and 30 s; after the
 * last retry fails the delivery is dead-lettered. Not configurable: the delays are part of the public contract.
 */
export const RETRY_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 30_000] as const;

/** One Kafka topic per delay, so every message of a topic waits the same time and a topic is a FIFO delay line. */
export const RETRY_TOPICS = [
  TOPICS.webhookRetry1s,
  TOPICS.webhookRetry2s,
  TOPICS.webhookRetry4s,
  TOPICS.webhookRetry8s,
  TOPICS.webhookRetry30s,
] as const;

/** Step 0 is the first attempt of a cycle; step k (1..5) is the retry that waited `RETRY_DELAYS_MS[k-1]`. */
export const LAST_STEP = RETRY_DELAYS_MS.length;

export type NextMove =
  | { kind: 'retry'; step: number; topic: string; delayMs: number; dueAt: Date }
  | { kind: 'dead' };

/** What follows a failed attempt at `step` that ended at `failedAt`. */
export function afterFailure(step: number, failedAt: Date): NextMove {
  if (!Number.isInteger(step) || step < 0 || step > LAST_STEP) throw new RangeError(`invalid delivery step ${step}`);
  if (step === LAST_STEP) return { kind: 'dead' };
  const delayMs = RETRY_DELAYS_MS[step]!;
  return { kind: 'retry', step: step + 1, topic: RETRY_TOPICS[step]!, delayMs, dueAt: new Date(failedAt.getTime() + delayMs) };
}

/** The topic a message for `step` travels on. */
export function topicForStep(step: number): string {
  if (step === 0) return TOPICS.webhookDeliveries;
  const topic = RETRY_TOPICS[step - 1];
  if (!topic) throw new RangeError(`invalid delivery step ${step}`);
  return topic;
}

/**
 * The topic for a message of `step` that must wait `waitMs` from now before its attempt: its step's own topic when the
 * wait is no longer than that topic's delay, else the shortest retry topic whose delay covers the wait (the longest
 * one beyond 30 s). A retry topic is a delay line: a message that waits longer than its topic's delay would hold up
 * the messages published after it, which come due sooner; a shorter wait delays nothing.
 */
export function topicForWait(step: number, waitMs: number): string {
  const own = step === 0 ? 0 : RETRY_DELAYS_MS[step - 1];
  if (own === undefined) throw new RangeError(`invalid delivery step ${step}`);
  if (waitMs <= own) return topicForStep(step);
  const i = RETRY_DELAYS_MS.findIndex((d) => d >= waitMs);
  return RETRY_TOPICS[i === -1 ? RETRY_TOPICS.length - 1 : i]!;
}
