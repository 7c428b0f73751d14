/**
 * Where the attempts of one worker process run: at most `perKey` at once against one endpoint (the key) and
 * `maxRunning` in all; the others wait here, in arrival order, without anyone waiting for them. A bus handler hands
 * an attempt over and returns, so no partition waits for an endpoint's slot or for a receiver's answer
 * (docs/webhooks.md, "Concurrency and ordering"). Waiting is bounded per key (`maxWaitingPerKey`: the caller hands
 * the attempt back to the bus instead) and in all (`maxWaiting`: `room()` makes callers wait).
 */
export interface EndpointQueueOptions {
  perKey: number;
  maxRunning: number;
  maxWaitingPerKey: number;
  maxWaiting: number;
}

export type Offer = 'started' | 'queued' | 'key_full';

interface Waiting<T> {
  seq: number;
  item: T;
}

interface KeyState<T> {
  running: number;
  waiting: Waiting<T>[];
}

export class EndpointQueue<T> {
  private readonly keys = new Map<string, KeyState<T>>();
  /** Keys with waiting items: the only ones a freed slot looks at. */
  private readonly withWaiting = new Set<string>();
  private runningTotal = 0;
  private waitingTotal = 0;
  private seq = 0;
  private readonly runs = new Set<Promise<void>>();
  private roomWaiters: Array<() => void> = [];

  constructor(
    private readonly opts: EndpointQueueOptions,
    /** Runs one item; never expected to throw (a throw is swallowed: the item is done either way). */
    private readonly run: (item: T) => Promise<void>,
  ) {
    for (const [name, v] of Object.entries(opts)) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer`);
    }
  }

  /** True when an item offered for `key` now would start at once. */
  canStart(key: string): boolean {
    const k = this.keys.get(key);
    return this.runningTotal < this.opts.maxRunning && (k?.running ?? 0) < this.opts.perKey && (k?.waiting.length ?? 0) === 0;
  }

  /** True when `key` can take one more waiting item. */
  hasRoom(key: string): boolean {
    return this.canStart(key) || (this.keys.get(key)?.waiting.length ?? 0) < this.opts.maxWaitingPerKey;
  }

  /** Starts `item` now, queues it behind the key's earlier ones, or refuses it when the key's queue is full. */
  offer(key: string, item: T): Offer {
    if (this.canStart(key)) {
      this.start(key, this.state(key), item);
      return 'started';
    }
    const k = this.state(key);
    if (k.waiting.length >= this.opts.maxWaitingPerKey) {
      if (k.running === 0 && k.waiting.length === 0) this.keys.delete(key);
      return 'key_full';
    }
    k.waiting.push({ seq: this.seq++, item });
    this.withWaiting.add(key);
    this.waitingTotal += 1;
    return 'queued';
  }

  /** Resolves once fewer than `maxWaiting` items wait (at once when they do). */
  room(signal?: AbortSignal): Promise<void> {
    if (this.waitingTotal < this.opts.maxWaiting) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.roomWaiters = this.roomWaiters.filter((w) => w !== done);
        reject(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.roomWaiters.push(done);
    });
  }

  /** Removes every waiting item and returns them, oldest first (a stopping worker hands them back). */
  takeWaiting(): T[] {
    const all: Waiting<T>[] = [];
    for (const key of this.withWaiting) {
      const k = this.keys.get(key)!;
      all.push(...k.waiting);
      k.waiting = [];
      if (k.running === 0) this.keys.delete(key);
    }
    this.withWaiting.clear();
    this.waitingTotal = 0;
    this.wakeRoom();
    return all.sort((a, b) => a.seq - b.seq).map((w) => w.item);
  }

  /** Resolves when nothing runs (items started meanwhile included). */
  async settled(): Promise<void> {
    while (this.runs.size > 0) await Promise.allSettled([...this.runs]);
  }

  /** Items running for `key` (tests, metrics). */
  running(key?: string): number {
    return key === undefined ? this.runningTotal : (this.keys.get(key)?.running ?? 0);
  }

  /** Items waiting for `key`, or in all. */
  waiting(key?: string): number {
    return key === undefined ? this.waitingTotal : (this.keys.get(key)?.waiting.length ?? 0);
  }

  private state(key: string): KeyState<T> {
    let k = this.keys.get(key);
    if (!k) {
      k = { running: 0, waiting: [] };
      this.keys.set(key, k);
    }
    return k;
  }

  private start(key: string, k: KeyState<T>, item: T): void {
    k.running += 1;
    this.runningTotal += 1;
    // An async wrapper: a run that throws before its first await still ends here, as a rejection.
    const p: Promise<void> = (async () => this.run(item))()
      .catch(() => undefined)
      .finally(() => {
        this.runs.delete(p);
        k.running -= 1;
        this.runningTotal -= 1;
        if (k.running === 0 && k.waiting.length === 0) this.keys.delete(key);
        this.startNext();
      });
    this.runs.add(p);
  }

  /** Fills free slots with the oldest waiting items whose key has a free slot. */
  private startNext(): void {
    while (this.runningTotal < this.opts.maxRunning) {
      let best: string | null = null;
      let bestSeq = Infinity;
      for (const key of this.withWaiting) {
        const k = this.keys.get(key)!;
        if (k.running < this.opts.perKey && k.waiting[0]!.seq < bestSeq) {
          best = key;
          bestSeq = k.waiting[0]!.seq;
        }
      }
      if (best === null) return;
      const k = this.keys.get(best)!;
      const next = k.waiting.shift()!;
      if (k.waiting.length === 0) this.withWaiting.delete(best);
      this.waitingTotal -= 1;
      this.wakeRoom();
      this.start(best, k, next.item);
    }
  }

  private wakeRoom(): void {
    if (this.waitingTotal >= this.opts.maxWaiting || this.roomWaiters.length === 0) return;
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    waiters.forEach((w) => w());
  }
}
