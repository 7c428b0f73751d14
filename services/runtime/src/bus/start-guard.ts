import type { ConsumerStartJournal } from './start-journal';

/** Starts at one message, each ended by a stop that was not graceful, before it is dead-lettered unhandled. */
export const DEFAULT_MAX_STARTS = 3;

/** Messages of a partition handled one at a time (at least; see `PartitionStarts`) after a start at a crash point. */
export const SUSPECT_MESSAGES = 1_000;

/**
 * What the count of starts at one offset means: 1 is a normal start; 2 or more means a consumer stopped there before
 * without a graceful stop (a crash, an out-of-memory kill, a hang until killed), so the partition is handled one
 * message at a time to find the message at fault; beyond `maxStarts` that message is dead-lettered unhandled.
 */
export function startVerdict(starts: number, maxStarts: number): 'normal' | 'suspect' | 'dead-letter' {
  if (starts > maxStarts) return 'dead-letter';
  return starts >= 2 ? 'suspect' : 'normal';
}

/** What to do with the message about to be handled. */
export interface StartDecision {
  /** Handle it alone, and commit its offset as soon as it is done (so a crash on a later one restarts there). */
  oneAtATime: boolean;
  /** Dead-letter it without calling the handler: consumers stopped this many times while they were on it. */
  deadLetter?: { stops: number };
}

export interface PartitionStartsOptions {
  /** The consumer group as on the broker. */
  group: string;
  journal: ConsumerStartJournal;
  maxStarts: number;
  /** Default `SUSPECT_MESSAGES`. */
  suspectMessages?: number;
  /** A journal call failed: the consumer goes on as if the journal were not there (it never holds a partition). */
  onJournalError: (err: unknown, where: { topic: string; partition: number; offset?: string; call: 'record' | 'forget' }) => void;
  /** A start counted 2 or more: a consumer stopped at this offset before. */
  onUncleanStart?: (info: { topic: string; partition: number; offset: string; starts: number }) => void;
}

interface PartitionState {
  topic: string;
  partition: number;
  /** The offset after the last message this process handled (or dead-lettered) on the partition. */
  next?: bigint;
  /** The offset this process last recorded in the journal for the partition. */
  recorded?: string;
  /** One message at a time: for `left` more messages, and at least through offset `through` (the fetch's end). */
  suspect?: { left: number; through?: bigint };
}

/**
 * The start journal as one subscription uses it, per partition it consumes:
 *
 * - The first message after the process got the partition (any message that does not follow the last one it
 *   handled there) is recorded, unless this process already recorded that very offset: then a rebalance or a restart
 *   of the kafkajs consumer handed the partition back, which is no crash.
 * - A count of 2 or more makes the partition suspect: its messages are handled one at a time and committed one by
 *   one, for the rest of the fetch and at least `suspectMessages` messages, and each is recorded before it is
 *   handled. kafkajs commits at the end of a fetched batch only, so a crash on the tenth message of a batch would
 *   otherwise restart at the first, for ever; this way the crash point becomes the next start's first message, and
 *   its count grows on each crash there, while the messages before it keep their progress.
 * - Beyond `maxStarts` the message is dead-lettered without calling the handler.
 * - `forgetAll` (a graceful stop) removes what this process recorded, if the journal still holds the same offsets.
 */
export class PartitionStarts {
  private readonly parts = new Map<string, PartitionState>();
  private readonly suspectMessages: number;

  constructor(private readonly opts: PartitionStartsOptions) {
    if (!(opts.maxStarts >= 2)) throw new Error(`maxStarts must be at least 2 (got ${opts.maxStarts}): the first stop only says "somewhere in that batch"`);
    this.suspectMessages = opts.suspectMessages ?? SUSPECT_MESSAGES;
  }

  /** Before handling the message at `offset` (the first of a chunk); `fetchEnd` is the last offset of its fetch. */
  async before(topic: string, partition: number, offset: string, fetchEnd?: string): Promise<StartDecision> {
    const s = this.state(topic, partition);
    const start = s.next !== BigInt(offset);
    if (!start && !s.suspect) return { oneAtATime: false };
    // The same partition back at the offset this process recorded: a rebalance or a consumer restart, not a crash.
    if (s.recorded === offset) return { oneAtATime: s.suspect !== undefined };
    let starts: number;
    try {
      starts = await this.opts.journal.record(this.opts.group, topic, partition, offset);
    } catch (err) {
      this.opts.onJournalError(err, { topic, partition, offset, call: 'record' });
      return { oneAtATime: s.suspect !== undefined };
    }
    s.recorded = offset;
    const verdict = startVerdict(starts, this.opts.maxStarts);
    if (verdict !== 'normal') {
      this.opts.onUncleanStart?.({ topic, partition, offset, starts });
      if (start || !s.suspect) s.suspect = { left: this.suspectMessages, through: fetchEnd === undefined ? undefined : BigInt(fetchEnd) };
    }
    return { oneAtATime: s.suspect !== undefined, ...(verdict === 'dead-letter' ? { deadLetter: { stops: starts - 1 } } : {}) };
  }

  /** After `count` messages through `lastOffset` were handled or dead-lettered (and, one at a time, committed). */
  after(topic: string, partition: number, lastOffset: string, count: number): void {
    const s = this.state(topic, partition);
    const last = BigInt(lastOffset);
    s.next = last + 1n;
    if (s.suspect) {
      s.suspect.left -= count;
      if (s.suspect.left <= 0 && (s.suspect.through === undefined || last >= s.suspect.through)) s.suspect = undefined;
    }
  }

  /** A graceful stop: none of the starts this process recorded ended in a crash. */
  async forgetAll(): Promise<void> {
    const recorded = [...this.parts.values()].filter((s) => s.recorded !== undefined);
    this.parts.clear();
    await Promise.all(
      recorded.map(async ({ topic, partition, recorded: offset }) => {
        try {
          await this.opts.journal.forget(this.opts.group, topic, partition, offset);
        } catch (err) {
          this.opts.onJournalError(err, { topic, partition, offset, call: 'forget' });
        }
      }),
    );
  }

  private state(topic: string, partition: number): PartitionState {
    const key = `${topic}\u0000${partition}`;
    let s = this.parts.get(key);
    if (!s) {
      s = { topic, partition };
      this.parts.set(key, s);
    }
    return s;
  }
}
