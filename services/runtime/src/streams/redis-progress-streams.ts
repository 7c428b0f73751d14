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

/** How long a stream's channel stays subscribed after its last waiter left (a follower waits again at once). */
const LINGER_MS = 10_000;
/** The channel an append announces itself on; a separate namespace from keys, so the prefixed key names it. */
const CHANNEL_PREFIX = 'progress-appended:';

interface Waiter {
  afterId: string;
  count: number;
  resolve(entries: ProgressEntry[]): void;
  timer: NodeJS.Timeout;
}

/** One waited stream: its channel's subscription, its waiters, and whether a read for them is running. */
interface Watched {
  /** The prefixed key. */
  key: string;
  waiters: Set<Waiter>;
  /** Callers of `waitFor` on this key right now (a subscription is dropped only when none is left). */
  users: number;
  /** Resolves once the channel is subscribed. */
  subscribed: Promise<unknown>;
  linger: NodeJS.Timeout | null;
  reading: boolean;
  /** An announcement came while a read was running: read once more after it. */
  again: boolean;
  /** Announcements heard (and reconnects), counted: a waiter whose first read crossed one reads again. */
  announced: number;
}

/**
 * Progress streams on Redis Streams (ioredis): XADD with MAXLEN ~, XREAD, XLEN/XRANGE/XREVRANGE for `describe`,
 * SCAN … TYPE stream for `list`. `keyPrefix` is added here to every key (not by ioredis, whose prefix SCAN's pattern
 * would not see) and taken off the keys `list` answers.
 *
 * Waiting (docs/runtime.md, "ProgressStreams"): an append also PUBLISHes on its stream's channel, in the same MULTI.
 * Every `waitFor` of one instance shares ONE subscriber connection, subscribed to the channels of the streams waited
 * on (and for a while after, as a follower waits again right after each wake-up). A waiter subscribes, then reads
 * what is there (so an append after that read is announced to it), then waits; an announcement reads that stream
 * after its waiters' ids and hands each the entries after its own. A wake-up costs one small read of the stream that
 * changed, whatever the number of followers; a reconnected subscriber reads every waited stream again (what was
 * appended while it was away was announced to nobody).
 */
export class RedisProgressStreams implements ProgressStreams {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;
  private readonly prefix: string;
  private closed = false;
  private readonly watched = new Map<string, Watched>();
  /** The subscriber connection, made on the first wait. */
  private subscriber: Redis | null = null;

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
    const k = this.k(key);
    const multi = this.redis.multi();
    multi.call('XADD', k, ...trim, '*', ...flat);
    if (options.ttlMs && options.ttlMs > 0) multi.pexpire(k, Math.ceil(options.ttlMs));
    else multi.persist(k);
    multi.publish(CHANNEL_PREFIX + k, '1');
    const results = await multi.exec();
    const [err, id] = results?.[0] ?? [new Error('XADD answered nothing'), null];
    if (err) throw err;
    return String(id);
  }

  async read(key: string, afterId: string, count?: number): Promise<ProgressEntry[]> {
    parseEntryId(afterId);
    return this.readPrefixed(this.k(key), afterId, clampCount(count));
  }

  private async readPrefixed(k: string, afterId: string, count: number): Promise<ProgressEntry[]> {
    return fromXread(await this.redis.call('XREAD', 'COUNT', String(count), 'STREAMS', k, afterId));
  }

  async waitFor(key: string, afterId: string, timeoutMs: number, count?: number): Promise<ProgressEntry[]> {
    parseEntryId(afterId);
    if (this.closed) throw new Error('progress streams closed');
    const wait = Math.max(1, Math.min(PROGRESS_MAX_WAIT_MS, Math.floor(timeoutMs)));
    const n = clampCount(count);
    const w = this.watch(this.k(key));
    try {
      await w.subscribed;
      if (this.closed) return [];
      // Subscribed first, then read: an entry appended after this read is announced to this waiter.
      const heard = w.announced;
      const ready = await this.readPrefixed(w.key, afterId, n).catch((err: unknown) => {
        // Like the in-memory adapter, a wait that a close overtakes ends with nothing.
        if (this.closed) return [];
        throw err;
      });
      if (ready.length > 0 || this.closed) return ready;
      return await new Promise<ProgressEntry[]>((resolve) => {
        const waiter: Waiter = {
          afterId,
          count: n,
          resolve,
          timer: setTimeout(() => {
            w.waiters.delete(waiter);
            resolve([]);
          }, wait),
        };
        w.waiters.add(waiter);
        // The announcement of an entry appended just after the read above may have arrived before its answer.
        if (w.announced !== heard) this.wake(w);
      });
    } finally {
      this.unwatch(w);
    }
  }

  /** The subscriber connection; a reconnect (ioredis subscribes its channels again) reads every waited stream. */
  private subscriberConnection(): Redis {
    if (!this.subscriber) {
      const conn = this.redis.duplicate({ enableAutoPipelining: false });
      conn.on('error', () => undefined);
      let connectedBefore = false;
      conn.on('ready', () => {
        if (connectedBefore) {
          // ioredis subscribes the channels again after this event; subscribing them here too orders the reads
          // after the subscriptions, so an append between the two cannot go unheard.
          const channels = [...this.watched.keys()].map((k) => CHANNEL_PREFIX + k);
          const again = channels.length > 0 ? conn.subscribe(...channels) : Promise.resolve();
          const readAll = () => {
            for (const w of this.watched.values()) this.announce(w);
          };
          again.then(readAll, readAll);
        }
        connectedBefore = true;
      });
      conn.on('message', (channel: string) => {
        const w = channel.startsWith(CHANNEL_PREFIX) ? this.watched.get(channel.slice(CHANNEL_PREFIX.length)) : undefined;
        if (w) this.announce(w);
      });
      this.subscriber = conn;
    }
    return this.subscriber;
  }

  private watch(k: string): Watched {
    let w = this.watched.get(k);
    if (!w) {
      const subscribed = this.subscriberConnection().subscribe(CHANNEL_PREFIX + k);
      subscribed.catch(() => undefined);
      w = { key: k, waiters: new Set(), users: 0, subscribed, linger: null, reading: false, again: false, announced: 0 };
      this.watched.set(k, w);
    }
    if (w.linger) {
      clearTimeout(w.linger);
      w.linger = null;
    }
    w.users++;
    return w;
  }

  /** A caller is done with a stream; its channel is dropped once no caller has waited on it for `LINGER_MS`. */
  private unwatch(w: Watched): void {
    w.users--;
    if (w.users > 0 || this.closed) return;
    // A failed subscription is not kept: the next wait subscribes again.
    const drop = () => {
      if (w.users > 0 || this.watched.get(w.key) !== w) return;
      this.watched.delete(w.key);
      this.subscriber?.unsubscribe(CHANNEL_PREFIX + w.key).catch(() => undefined);
    };
    w.subscribed.then(
      () => {
        if (w.users === 0 && !w.linger && this.watched.get(w.key) === w) {
          w.linger = setTimeout(drop, LINGER_MS);
          w.linger.unref();
        }
      },
      drop,
    );
  }

  private announce(w: Watched): void {
    w.announced++;
    this.wake(w);
  }

  /** Reads the stream after its waiters' ids (one read per distinct id) and hands each waiter what is after its own. */
  private wake(w: Watched): void {
    if (w.waiters.size === 0) return;
    if (w.reading) {
      w.again = true;
      return;
    }
    w.reading = true;
    void (async () => {
      try {
        do {
          w.again = false;
          const byId = new Map<string, Waiter[]>();
          for (const waiter of w.waiters) {
            const same = byId.get(waiter.afterId);
            if (same) same.push(waiter);
            else byId.set(waiter.afterId, [waiter]);
          }
          await Promise.all(
            [...byId].map(async ([afterId, waiters]) => {
              const entries = await this.readPrefixed(w.key, afterId, Math.max(...waiters.map((x) => x.count))).catch(() => []);
              if (entries.length === 0) return;
              for (const waiter of waiters) {
                if (!w.waiters.delete(waiter)) continue;
                clearTimeout(waiter.timer);
                waiter.resolve(entries.slice(0, waiter.count));
              }
            }),
          );
        } while (w.again && w.waiters.size > 0 && !this.closed);
      } finally {
        w.reading = false;
      }
    })();
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
    for (const w of this.watched.values()) {
      if (w.linger) clearTimeout(w.linger);
      for (const waiter of w.waiters) {
        clearTimeout(waiter.timer);
        waiter.resolve([]);
      }
      w.waiters.clear();
    }
    this.watched.clear();
    this.subscriber?.disconnect();
    this.subscriber = null;
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
