import Redis from 'ioredis';
import {
  PROGRESS_MAX_WAIT_MS,
  clampCount,
  compareEntryIds,
  parseEntryId,
  PROGRESS_MAX_COUNT,
  type ProgressEntry,
  type ProgressStreamInfo,
  type ProgressStreams,
} from '../ports/progress-streams';

type RawEntry = [id: string, fields: string[]];

const toEntries = (raw: RawEntry[] | null | undefined): ProgressEntry[] =>
  (raw ?? []).map(([id, flat]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    return { id, fields };
  });

/** XREAD's answer for one stream: [[key, entries]] or null. */
const fromXread = (raw: unknown): ProgressEntry[] => {
  const streams = raw as Array<[string, RawEntry[]]> | null;
  return toEntries(streams?.[0]?.[1]);
};

/** Glob characters of SCAN's MATCH, escaped so a prefix matches itself only. */
const escapeGlob = (s: string): string => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** How long one multiplexed XREAD blocks before it is asked again (a new waiter interrupts it sooner). */
const BLOCK_MS = 5_000;

interface Waiter {
  /** The prefixed key. */
  key: string;
  afterId: string;
  count: number;
  resolve(entries: ProgressEntry[]): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * Progress streams on Redis Streams (ioredis): XADD with MAXLEN ~, XREAD, XLEN/XRANGE/XREVRANGE for `describe`,
 * SCAN … TYPE stream for `list`. `keyPrefix` is added here to every key (not by ioredis, whose prefix SCAN's pattern
 * would not see) and taken off the keys `list` answers.
 *
 * Waiting (docs/runtime.md, "Progress streams"): every `waitFor` of one instance shares ONE blocking connection. It
 * runs `XREAD BLOCK … STREAMS <every waited key> <the lowest id waited after on it>` and hands each waiter the entries
 * after its own id; a waiter whose key the blocked read does not cover (or covers from a later id) interrupts it with
 * `CLIENT UNBLOCK` from the command connection, and the read is asked again with it. Hundreds of followers (server-sent
 * streams, session sockets) thus cost one connection and one round trip per wake-up, not one connection each.
 */
export class RedisProgressStreams implements ProgressStreams {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;
  private readonly prefix: string;
  private closed = false;
  private readonly waiters = new Set<Waiter>();
  /** The blocking connection and its CLIENT ID (refreshed on every (re)connect). */
  private reader: Redis | null = null;
  private readerId: Promise<number> | null = null;
  /** The keys and ids the XREAD in flight asks for; null when none is in flight. */
  private asked: Map<string, string> | null = null;
  private looping = false;

  constructor(url: string, opts: { keyPrefix?: string } = {}) {
    this.prefix = opts.keyPrefix ?? '';
    this.redis = new Redis(url, { maxRetriesPerRequest: 3, connectTimeout: 5_000, enableAutoPipelining: true });
    this.redis.on('error', () => undefined);
  }

  private k(key: string): string {
    return this.prefix + key;
  }

  async append(key: string, fields: Record<string, string>, options: { maxLen?: number; ttlMs?: number } = {}): Promise<string> {
    const flat = Object.entries(fields).flat();
    if (flat.length === 0) flat.push('_', '');
    const trim = options.maxLen !== undefined ? ['MAXLEN', '~', String(Math.max(0, Math.floor(options.maxLen)))] : [];
    const multi = this.redis.multi();
    multi.call('XADD', this.k(key), ...trim, '*', ...flat);
    if (options.ttlMs && options.ttlMs > 0) multi.pexpire(this.k(key), Math.ceil(options.ttlMs));
    else multi.persist(this.k(key));
    const results = await multi.exec();
    const [err, id] = results?.[0] ?? [new Error('XADD answered nothing'), null];
    if (err) throw err;
    return String(id);
  }

  async read(key: string, afterId: string, count?: number): Promise<ProgressEntry[]> {
    parseEntryId(afterId);
    return fromXread(await this.redis.call('XREAD', 'COUNT', String(clampCount(count)), 'STREAMS', this.k(key), afterId));
  }

  async waitFor(key: string, afterId: string, timeoutMs: number, count?: number): Promise<ProgressEntry[]> {
    parseEntryId(afterId);
    if (this.closed) throw new Error('progress streams closed');
    const wait = Math.max(1, Math.min(PROGRESS_MAX_WAIT_MS, Math.floor(timeoutMs)));
    const n = clampCount(count);
    // What is there already is answered at once (a follower catching up never waits).
    const ready = await this.read(key, afterId, n);
    if (ready.length > 0) return ready;
    if (this.closed) throw new Error('progress streams closed');
    return new Promise<ProgressEntry[]>((resolve, reject) => {
      const waiter: Waiter = {
        key: this.k(key),
        afterId,
        count: n,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          resolve([]);
        }, wait),
      };
      this.waiters.add(waiter);
      if (!this.looping) void this.loop();
      else {
        // An entry appended since the read above has an id after `afterId`: the blocked read must ask from there.
        const asked = this.asked?.get(waiter.key);
        if (asked === undefined || compareEntryIds(afterId, asked) < 0) void this.interrupt();
      }
    });
  }

  /** The blocking connection, connected, with its client id known. */
  private async readerConnection(): Promise<Redis> {
    if (!this.reader) {
      const conn = this.redis.duplicate();
      conn.on('error', () => undefined);
      // A reconnect gets a new client id.
      conn.on('ready', () => {
        this.readerId = conn.client('ID') as Promise<number>;
        this.readerId.catch(() => undefined);
      });
      this.reader = conn;
    }
    if (!this.readerId) {
      this.readerId = this.reader.client('ID') as Promise<number>;
      this.readerId.catch(() => undefined);
    }
    await this.readerId;
    return this.reader;
  }

  /** Ends the XREAD in flight now (it answers as if timed out) so the loop asks again with every waiter. */
  private async interrupt(): Promise<void> {
    const asked = this.asked;
    for (let attempt = 0; attempt < 20 && asked && this.asked === asked && !this.closed; attempt++) {
      const id = await this.readerId?.catch(() => null);
      if (id === null || id === undefined) return;
      const unblocked = Number(await this.redis.client('UNBLOCK', id).catch(() => 0));
      if (unblocked === 1) return;
      // Not blocked yet (the XREAD is still on its way to the server): try again shortly.
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  private async loop(): Promise<void> {
    this.looping = true;
    try {
      while (!this.closed && this.waiters.size > 0) {
        let conn: Redis;
        try {
          conn = await this.readerConnection();
        } catch (err) {
          this.failWaiters(err);
          break;
        }
        if (this.closed || this.waiters.size === 0) break;
        const ids = new Map<string, string>();
        for (const w of this.waiters) {
          const cur = ids.get(w.key);
          if (cur === undefined || compareEntryIds(w.afterId, cur) < 0) ids.set(w.key, w.afterId);
        }
        this.asked = ids;
        let raw: unknown;
        try {
          raw = await conn.call('XREAD', 'COUNT', String(PROGRESS_MAX_COUNT), 'BLOCK', String(BLOCK_MS), 'STREAMS', ...ids.keys(), ...ids.values());
        } catch (err) {
          this.asked = null;
          if (this.closed) break;
          this.failWaiters(err);
          break;
        }
        this.asked = null;
        this.dispatch(raw);
      }
    } finally {
      this.looping = false;
    }
  }

  /** Hands each waiter the entries after its own id, at most its count; the others keep waiting. */
  private dispatch(raw: unknown): void {
    const byKey = new Map<string, ProgressEntry[]>();
    for (const [key, entries] of (raw as Array<[string, RawEntry[]]> | null) ?? []) byKey.set(key, toEntries(entries));
    if (byKey.size === 0) return;
    for (const w of [...this.waiters]) {
      const entries = byKey.get(w.key);
      if (!entries) continue;
      const after = entries.filter((e) => compareEntryIds(e.id, w.afterId) > 0).slice(0, w.count);
      if (after.length === 0) continue;
      this.waiters.delete(w);
      clearTimeout(w.timer);
      w.resolve(after);
    }
  }

  private failWaiters(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    for (const w of [...this.waiters]) {
      this.waiters.delete(w);
      clearTimeout(w.timer);
      w.reject(error);
    }
  }

  async describe(key: string): Promise<ProgressStreamInfo | null> {
    const k = this.k(key);
    const results = await this.redis
      .multi()
      .type(k)
      .call('XLEN', k)
      .call('XRANGE', k, '-', '+', 'COUNT', '1')
      .call('XREVRANGE', k, '+', '-', 'COUNT', '1')
      .time()
      .exec();
    if (!results) throw new Error('describe answered nothing');
    for (const [err] of results) if (err && !/WRONGTYPE/.test(err.message)) throw err;
    if (results[0]![1] !== 'stream') return null;
    const length = Number(results[1]![1]);
    const first = toEntries(results[2]![1] as RawEntry[])[0]?.id ?? null;
    const last = toEntries(results[3]![1] as RawEntry[])[0]?.id ?? null;
    const [sec, micro] = results[4]![1] as [string, string];
    const nowMs = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
    const ageSeconds = last === null ? 0 : Math.max(0, Math.floor((nowMs - parseEntryId(last)[0]) / 1000));
    return { key, length, firstEntryId: first, lastEntryId: last, ageSeconds };
  }

  async list(prefix: string, limit?: number): Promise<string[]> {
    const n = clampCount(limit);
    const found = new Set<string>();
    let cursor = '0';
    // SCAN visits every key once per full pass; a bounded number of rounds keeps one call from walking for ever.
    for (let round = 0; round < 10_000; round++) {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${escapeGlob(this.k(prefix))}*`, 'COUNT', 500, 'TYPE', 'stream');
      for (const key of keys) found.add(key.slice(this.prefix.length));
      cursor = next;
      if (cursor === '0') break;
    }
    return [...found].sort().slice(0, n);
  }

  async trim(key: string, maxLen: number): Promise<number> {
    return Number(await this.redis.call('XTRIM', this.k(key), 'MAXLEN', '~', String(Math.max(0, Math.floor(maxLen)))));
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    this.closed = true;
    // Like the in-memory adapter: a close ends every wait with nothing.
    for (const w of [...this.waiters]) {
      this.waiters.delete(w);
      clearTimeout(w.timer);
      w.resolve([]);
    }
    this.reader?.disconnect();
    this.reader = null;
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
