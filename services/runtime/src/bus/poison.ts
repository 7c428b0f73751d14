import type { BusMessage, OutgoingMessage, SubscribeOptions } from '../ports/event-bus';
import { backoffMs, type HandlerRetry } from './retry';

/**
 * Poison messages: a message whose handler keeps failing must not hold its partition (and every tenant behind it)
 * for ever. Each subscription retries a failing message with backoff up to `maxAttempts` counted failures, then
 * publishes it to `lore.dead` with the reason and goes on with the next one. Failures that are transient (a
 * `TransientError`, or a recognised dependency outage) are not counted: an outage is waited out, never dead-lettered.
 */
export const DEFAULT_MAX_ATTEMPTS = 10;

/** Throw this (or anything with `transient: true`) from a handler to have the message retried without bound. */
export class TransientError extends Error {
  readonly transient = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientError';
  }
}

/**
 * Throw this from a handler when the message itself can never be processed (it does not parse, it names something
 * that cannot exist): it is dead-lettered at once, without the retries, so an operator sees it in `lore.dead`.
 */
export class PoisonError extends Error {
  readonly poison = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PoisonError';
  }
}

/** Socket errors: the dependency (database, cache, broker) is unreachable, not the message at fault. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);

/**
 * PostgreSQL SQLSTATEs of an unavailable or busy server: class 08 (connection), class 53 (insufficient resources),
 * 57P01–57P03 (shutting down, cannot connect now), and the two a retry resolves (serialization failure, deadlock).
 */
const PG_TRANSIENT = /^(08...|53...|57P0[123]|40001|40P01)$/;

/** Client messages that carry no code: pg's pool and connection, ioredis. */
const TRANSIENT_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Connection is closed|Client has encountered a connection error)/;

/**
 * The default rule: transient when the error (or its `cause`, or one of an AggregateError's `errors`) is marked
 * `transient: true`, is a socket error, a PostgreSQL unavailability SQLSTATE, a kafkajs error marked retriable or a
 * connection/timeout failure, or ioredis giving up on a request.
 */
export function isTransientError(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== 'object' || depth > 5) return false;
  const e = err as { transient?: unknown; code?: unknown; retriable?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (e.transient === true) return true;
  if (typeof e.code === 'string' && (CONNECTION_CODES.has(e.code) || PG_TRANSIENT.test(e.code))) return true;
  const name = typeof e.name === 'string' ? e.name : '';
  if (name.startsWith('KafkaJS') && (e.retriable === true || /Connection|Timeout|NumberOfRetriesExceeded/.test(name))) return true;
  if (name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.message === 'string' && TRANSIENT_MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isTransientError(x, depth + 1))) return true;
  return isTransientError(e.cause, depth + 1);
}

export interface PoisonPolicy {
  maxAttempts: number;
  retry: HandlerRetry;
  isTransient: (err: unknown) => boolean;
  onDeadLetter?: SubscribeOptions['onDeadLetter'];
}

export function poisonPolicy(options: SubscribeOptions, defaults: { maxAttempts: number; retry: HandlerRetry }): PoisonPolicy {
  const maxAttempts = options.maxAttempts ?? defaults.maxAttempts;
  if (!(maxAttempts >= 1)) throw new Error(`maxAttempts must be at least 1 (got ${maxAttempts})`);
  const extra = options.isTransient;
  return {
    maxAttempts,
    retry: options.retry ?? defaults.retry,
    isTransient: extra ? (err) => isTransientError(err) || extra(err) : (err) => isTransientError(err),
    ...(options.onDeadLetter ? { onDeadLetter: options.onDeadLetter } : {}),
  };
}

/** Runs the subscription's `onDeadLetter` for a message now in `lore.dead`: once, its error logged, never thrown. */
export async function afterDeadLetter(
  policy: PoisonPolicy,
  message: BusMessage,
  group: string,
  failure: FailureRecord,
  logger: { warn(obj: object, msg: string): void } | undefined,
): Promise<void> {
  if (!policy.onDeadLetter) return;
  try {
    await policy.onDeadLetter(message, { error: failure.error, attempts: failure.attempts });
  } catch (err) {
    logger?.warn({ err, topic: message.topic, partition: message.partition, offset: message.offset, group }, 'the subscription\'s dead-letter hook failed');
  }
}

/** Why a message was dead-lettered. */
export interface FailureRecord {
  /** The last error's message (at most 2 000 characters). */
  error: string;
  /** Every attempt, transient ones included. */
  attempts: number;
  firstFailureAt: Date;
  lastFailureAt: Date;
}

export type AttemptResult = { ok: true } | { ok: false; failure: FailureRecord };

export interface AttemptHooks {
  policy: PoisonPolicy;
  /** True once the subscription is stopping: a failure is then thrown, leaving the message for the next owner. */
  stopping: () => boolean;
  sleep: (ms: number) => Promise<void>;
  /** After each backoff (Kafka heartbeats here). */
  between?: () => Promise<void>;
  onFailure: (info: { err: unknown; attempt: number; transient: boolean; delayMs: number; final: boolean }) => void;
}

/** Runs `work` until it resolves, or until it failed `maxAttempts` counted times (then says why). */
export async function attemptUntilDone(work: () => Promise<void>, hooks: AttemptHooks): Promise<AttemptResult> {
  let counted = 0;
  let first: Date | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      await work();
      return { ok: true };
    } catch (err) {
      const now = new Date();
      first ??= now;
      const poison = (err as { poison?: unknown } | null)?.poison === true;
      const transient = !poison && hooks.policy.isTransient(err);
      if (poison) counted = hooks.policy.maxAttempts;
      else if (!transient) counted += 1;
      if (hooks.stopping()) throw err;
      if (!transient && counted >= hooks.policy.maxAttempts) {
        hooks.onFailure({ err, attempt, transient, delayMs: 0, final: true });
        return { ok: false, failure: { error: errorText(err), attempts: attempt, firstFailureAt: first, lastFailureAt: now } };
      }
      const delayMs = backoffMs(hooks.policy.retry, attempt);
      hooks.onFailure({ err, attempt, transient, delayMs, final: false });
      await hooks.sleep(delayMs);
      // A stop ends the sleep early: leave the message to the next owner rather than try once more.
      if (hooks.stopping()) throw err;
      await hooks.between?.();
    }
  }
}

export interface ChunkSteps extends AttemptHooks {
  /** Publishes the dead letter (retrying until the broker has it) and counts and logs it. */
  deadLetter: (message: BusMessage, failure: FailureRecord) => Promise<void>;
  /** The messages up to and including this one are done: their offsets may be committed. */
  done: (last: BusMessage, handled: number) => void;
}

/**
 * Handles consecutive messages of one partition with one handler call. If the call keeps failing, each message is
 * then tried alone (with its own attempts), so only the poison ones are dead-lettered and the rest are handled.
 */
export async function handleChunk(messages: BusMessage[], run: (messages: BusMessage[]) => Promise<void>, steps: ChunkSteps): Promise<void> {
  const whole = await attemptUntilDone(() => run(messages), steps);
  if (whole.ok) return steps.done(messages[messages.length - 1]!, messages.length);
  if (messages.length === 1) {
    await steps.deadLetter(messages[0]!, whole.failure);
    return steps.done(messages[0]!, 0);
  }
  for (const message of messages) {
    const alone = await attemptUntilDone(() => run([message]), steps);
    if (alone.ok) {
      steps.done(message, 1);
    } else {
      await steps.deadLetter(message, alone.failure);
      steps.done(message, 0);
    }
  }
}

/** Headers a dead letter carries besides the original message's own. */
export const DEAD_HEADERS = {
  topic: 'lore-dead-topic',
  partition: 'lore-dead-partition',
  offset: 'lore-dead-offset',
  group: 'lore-dead-group',
  error: 'lore-dead-error',
  attempts: 'lore-dead-attempts',
  firstFailureAt: 'lore-dead-first-failure-at',
  lastFailureAt: 'lore-dead-last-failure-at',
} as const;

/** The header a re-driven message carries: which dead letter it came from (`partition:offset` of `lore.dead`). */
export const REDRIVEN_FROM_HEADER = 'lore-redriven-from';

/**
 * The dead letter of `message`: the same key, value and headers (so a re-drive is the original message), plus the
 * reason. Topic and group are logical names (without the install's prefix).
 */
export function deadLetterOf(message: BusMessage, group: string, failure: FailureRecord): OutgoingMessage {
  return {
    key: message.key,
    value: message.value,
    headers: {
      ...message.headers,
      [DEAD_HEADERS.topic]: message.topic,
      [DEAD_HEADERS.partition]: String(message.partition),
      [DEAD_HEADERS.offset]: message.offset,
      [DEAD_HEADERS.group]: group,
      [DEAD_HEADERS.error]: failure.error,
      [DEAD_HEADERS.attempts]: String(failure.attempts),
      [DEAD_HEADERS.firstFailureAt]: failure.firstFailureAt.toISOString(),
      [DEAD_HEADERS.lastFailureAt]: failure.lastFailureAt.toISOString(),
    },
  };
}

export interface DeadLetter {
  /** `partition:offset` in the dead-letter topic: what the re-drive command takes. */
  id: string;
  topic: string;
  partition: number;
  offset: string;
  key: string;
  group: string;
  error: string;
  attempts: number;
  firstFailureAt: string;
  lastFailureAt: string;
  /** The original message's headers. */
  headers: Record<string, string>;
  value: Buffer;
}

/** Reads a message of `lore.dead`; null when it lacks the reason headers. */
export function readDeadLetter(message: BusMessage): DeadLetter | null {
  const h = message.headers;
  const topic = h[DEAD_HEADERS.topic];
  const group = h[DEAD_HEADERS.group];
  if (topic === undefined || group === undefined) return null;
  const headers = Object.fromEntries(Object.entries(h).filter(([k]) => !Object.values<string>(DEAD_HEADERS).includes(k)));
  return {
    id: `${message.partition}:${message.offset}`,
    topic,
    partition: Number(h[DEAD_HEADERS.partition]),
    offset: h[DEAD_HEADERS.offset] ?? '',
    key: message.key,
    group,
    error: h[DEAD_HEADERS.error] ?? '',
    attempts: Number(h[DEAD_HEADERS.attempts]),
    firstFailureAt: h[DEAD_HEADERS.firstFailureAt] ?? '',
    lastFailureAt: h[DEAD_HEADERS.lastFailureAt] ?? '',
    headers,
    value: message.value,
  };
}

/**
 * The message that re-drives a dead letter: the original key, value and headers, back on its original topic. Every
 * group of that topic sees it again; those that already handled it dedupe on `event-id`.
 */
export function redriveOf(dead: DeadLetter): { topic: string; message: OutgoingMessage } {
  return { topic: dead.topic, message: { key: dead.key, value: dead.value, headers: { ...dead.headers, [REDRIVEN_FROM_HEADER]: dead.id } } };
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > 2_000 ? `${text.slice(0, 2_000)}…` : text;
}
