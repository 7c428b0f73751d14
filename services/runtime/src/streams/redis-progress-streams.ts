import Redis from 'ioredis';
import {
  PROGRESS_MAX_WAIT_MS,
  clampCount,
  parseEntryId,
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

/**
 * Blocking connections kept for reuse by default; more waiters at once get a connection of their own, closed after.
 * A server-sent stream follower waits again right after each entry, so fewer kept than followers means a connect
 * per wake-up (docs/agents.md, "Benchmarks").
 */
export const DEFAULT_IDLE_BLOCKING = 128;

/**
 * Progress streams on Redis Streams (ioredis): XADD with MAXLEN ~, XREAD, XREAD BLOCK on a connection of its own
 * (a blocked connection answers nothing else), XLEN/XRANGE/XREVRANGE for `describe`, SCAN … TYPE stream for `list`.
 * `keyPrefix` is added here to every key (not by ioredis, whose prefix SCAN's pattern would not see) and taken off
 * the keys `list` answers.
 */
export class RedisProgressStreams implements ProgressStreams {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly idle: Redis[] = [];
  private readonly busy = new Set<Redis>();
  private closed = false;

  private readonly maxIdle: number;

  constructor(url: string, opts: { keyPrefix?: string; maxIdleBlocking?: number } = {}) {
    this.prefix = opts.keyPrefix ?? '';
    this.maxIdle = Math.max(0, Math.floor(opts.maxIdleBlocking ?? DEFAULT_IDLE_BLOCKING));
    this.redis = new Redis(url, { maxRetriesPerRequest: 3, connectTimeout: 5_000, enableAutoPipelining: true });
    this.redis.on('error', () => undefined);
  }

  /** A connection for one blocking read at a time; its errors surface on the read. */
  private blockingConnection(): Redis {
    const conn = this.redis.duplicate();
    conn.on('error', () => undefined);
    return conn;
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
    const conn = this.idle.pop() ?? this.blockingConnection();
    this.busy.add(conn);
    try {
      return fromXread(await conn.call('XREAD', 'COUNT', String(clampCount(count)), 'BLOCK', String(wait), 'STREAMS', this.k(key), afterId));
    } finally {
      this.busy.delete(conn);
      if (!this.closed && this.idle.length < this.maxIdle && conn.status === 'ready') this.idle.push(conn);
      else conn.disconnect();
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
    for (const c of [...this.idle, ...this.busy]) c.disconnect();
    this.idle.length = 0;
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
