/**
 * Live progress of long operations (agents workflows): append-only streams of small entries that a viewer reads from
 * an id and waits on. Redis Streams in a cluster, an in-memory adapter in embedded mode. A fan-out, never the only
 * copy: what must not be lost is written to PostgreSQL first (the workflow's event log).
 *
 * Entry ids are `<milliseconds>-<sequence>` and grow strictly within a stream (Redis's rule), so a reader resumes
 * after the last id it saw. `0-0` reads from the start.
 */
export interface ProgressEntry {
  id: string;
  fields: Record<string, string>;
}

export interface ProgressStreamInfo {
  key: string;
  length: number;
  /** Ids of the oldest and newest entries held, null when the stream is empty. */
  firstEntryId: string | null;
  lastEntryId: string | null;
  /** Seconds since the newest entry was appended (0 for an empty stream). */
  ageSeconds: number;
}

export interface ProgressStreams {
  readonly kind: 'redis' | 'memory';
  /**
   * Appends one entry and answers its id. `maxLen` trims the stream to about that many entries (MAXLEN ~: the
   * stream may keep somewhat more); `ttlMs` lets an idle stream expire that long after its last entry.
   */
  append(key: string, fields: Record<string, string>, options?: { maxLen?: number; ttlMs?: number }): Promise<string>;
  /** Entries with an id greater than `afterId` (`0-0`: from the start), oldest first, at most `count` (≤ 1,000). */
  read(key: string, afterId: string, count?: number): Promise<ProgressEntry[]>;
  /** Like `read`, but waits up to `timeoutMs` (≤ 60 s) for a new entry when there is none yet; [] on time-out. */
  waitFor(key: string, afterId: string, timeoutMs: number, count?: number): Promise<ProgressEntry[]>;
  /** Length, first and last ids and age of a stream; null when it does not exist. */
  describe(key: string): Promise<ProgressStreamInfo | null>;
  /** Keys of the existing streams that start with `prefix`, sorted, at most `limit` (≤ 1,000). */
  list(prefix: string, limit?: number): Promise<string[]>;
  /** Trims the stream to about `maxLen` entries (oldest go first); answers how many were removed. */
  trim(key: string, maxLen: number): Promise<number>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The largest `count` and `limit` a caller may ask for, and the longest wait. */
export const PROGRESS_MAX_COUNT = 1000;
export const PROGRESS_MAX_WAIT_MS = 60_000;

const ID = /^(\d{1,15})-(\d{1,15})$/;

/** Parses a stream entry id (`<ms>-<seq>`, or `0` / `$`-free forms are refused); throws on anything else. */
export function parseEntryId(id: string): [number, number] {
  const m = ID.exec(id);
  if (!m) throw new Error(`not a stream entry id: ${JSON.stringify(id)}`);
  return [Number(m[1]), Number(m[2])];
}

export function compareEntryIds(a: string, b: string): number {
  const [am, as] = parseEntryId(a);
  const [bm, bs] = parseEntryId(b);
  return am !== bm ? am - bm : as - bs;
}

export const clampCount = (count: number | undefined, fallback = 100): number =>
  Math.max(1, Math.min(PROGRESS_MAX_COUNT, Math.floor(count ?? fallback)));
