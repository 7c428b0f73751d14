import {
  PROGRESS_MAX_WAIT_MS,
  clampCount,
  compareEntryIds,
  parseEntryId,
  type ProgressEntry,
  type ProgressStreamInfo,
  type ProgressStreams,
} from '../ports/progress-streams';

interface MemoryStream {
  entries: ProgressEntry[];
  lastMs: number;
  lastSeq: number;
  appendedAt: number;
  expiresAt: number | null;
  waiters: Set<() => void>;
}

const expired = (s: MemoryStream, now: number): boolean => s.expiresAt !== null && s.expiresAt <= now;

/** Progress streams in this process (embedded mode, unit tests): the Redis adapter's behaviour without Redis. */
export class MemoryProgressStreams implements ProgressStreams {
  readonly kind = 'memory' as const;
  private readonly streams = new Map<string, MemoryStream>();
  private closed = false;

  /** Expired streams are swept at most this often, on an append (only appends make new streams). */
  static readonly SWEEP_EVERY_MS = 60_000;
  private lastSweep = Date.now();

  private live(key: string): MemoryStream | undefined {
    const s = this.streams.get(key);
    if (s && expired(s, Date.now())) return this.expire(key, s);
    return s;
  }

  /**
   * An expired stream goes, as Redis drops an expired key. One with waiters stays as their empty placeholder, so a
   * new append still wakes them (it is not listed or described until then).
   */
  private expire(key: string, s: MemoryStream): MemoryStream | undefined {
    if (s.waiters.size === 0) {
      this.streams.delete(key);
      return undefined;
    }
    Object.assign(s, { entries: [], lastMs: 0, lastSeq: 0, appendedAt: 0, expiresAt: null });
    return s;
  }

  /** Streams nobody reads again expire too: until 2026-11-30 they were dropped only when read, and held memory. */
  private sweep(now: number): void {
    if (now - this.lastSweep < MemoryProgressStreams.SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [key, s] of this.streams) if (expired(s, now)) this.expire(key, s);
  }

  /** Streams held, expired ones not yet swept included (for tests and metrics). */
  get size(): number {
    return this.streams.size;
  }

  async append(key: string, fields: Record<string, string>, options: { maxLen?: number; ttlMs?: number } = {}): Promise<string> {
    if (this.closed) throw new Error('progress streams closed');
    this.sweep(Date.now());
    let s = this.live(key);
    if (!s) {
      s = { entries: [], lastMs: 0, lastSeq: 0, appendedAt: 0, expiresAt: null, waiters: new Set() };
      this.streams.set(key, s);
    }
    const now = Date.now();
    if (now > s.lastMs) {
      s.lastMs = now;
      s.lastSeq = 0;
    } else {
      s.lastSeq++;
    }
    const id = `${s.lastMs}-${s.lastSeq}`;
    s.entries.push({ id, fields: { ...fields } });
    s.appendedAt = now;
    if (options.maxLen !== undefined && s.entries.length > options.maxLen) s.entries.splice(0, s.entries.length - Math.max(0, options.maxLen));
    s.expiresAt = options.ttlMs && options.ttlMs > 0 ? now + options.ttlMs : null;
    const waiters = [...s.waiters];
    s.waiters.clear();
    for (const w of waiters) w();
    return id;
  }

  async read(key: string, afterId: string, count?: number): Promise<ProgressEntry[]> {
    parseEntryId(afterId);
    const s = this.live(key);
    if (!s) return [];
    const n = clampCount(count);
    return s.entries.filter((e) => compareEntryIds(e.id, afterId) > 0).slice(0, n).map((e) => ({ id: e.id, fields: { ...e.fields } }));
  }

  async waitFor(key: string, afterId: string, timeoutMs: number, count?: number): Promise<ProgressEntry[]> {
    const now = await this.read(key, afterId, count);
    if (now.length > 0 || this.closed) return now;
    const wait = Math.max(1, Math.min(PROGRESS_MAX_WAIT_MS, timeoutMs));
    await new Promise<void>((resolve) => {
      let s = this.live(key);
      if (!s) {
        // A waiter on a stream that does not exist yet: hold an empty, expiring placeholder (not listed).
        s = { entries: [], lastMs: 0, lastSeq: 0, appendedAt: 0, expiresAt: null, waiters: new Set() };
        this.streams.set(key, s);
      }
      const stream = s;
      const done = () => {
        clearTimeout(timer);
        stream.waiters.delete(done);
        if (stream.lastMs === 0 && stream.waiters.size === 0 && this.streams.get(key) === stream) this.streams.delete(key);
        resolve();
      };
      const timer = setTimeout(done, wait);
      stream.waiters.add(done);
    });
    return this.read(key, afterId, count);
  }

  async describe(key: string): Promise<ProgressStreamInfo | null> {
    const s = this.live(key);
    if (!s || s.lastMs === 0) return null;
    return {
      key,
      length: s.entries.length,
      firstEntryId: s.entries[0]?.id ?? null,
      lastEntryId: s.entries[s.entries.length - 1]?.id ?? null,
      ageSeconds: s.entries.length === 0 ? 0 : Math.max(0, Math.floor((Date.now() - s.appendedAt) / 1000)),
    };
  }

  async list(prefix: string, limit?: number): Promise<string[]> {
    const n = clampCount(limit);
    const keys: string[] = [];
    for (const key of this.streams.keys()) {
      const s = this.live(key);
      if (s && s.lastMs !== 0 && key.startsWith(prefix)) keys.push(key);
    }
    return keys.sort().slice(0, n);
  }

  async trim(key: string, maxLen: number): Promise<number> {
    const s = this.live(key);
    if (!s) return 0;
    const drop = Math.max(0, s.entries.length - Math.max(0, Math.floor(maxLen)));
    s.entries.splice(0, drop);
    return drop;
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error('progress streams closed');
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.streams.values()) for (const w of [...s.waiters]) w();
  }
}
