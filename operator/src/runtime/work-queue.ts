import { PerKeyBackoff, type BackoffOptions, DEFAULT_BACKOFF } from './backoff';

export interface WorkQueueHooks {
  /** Depth changed (queued keys, not counting the ones in flight or waiting for a timer). */
  onDepth?(depth: number): void;
  onAdd?(): void;
  onRetry?(): void;
}

/**
 * A queue of object keys (`namespace/name`) with the semantics of client-go's work queue:
 * - a key is queued at most once: adding it again while it waits merges with the waiting entry;
 * - a key is handed to at most one worker at a time: adding it while in flight marks it dirty, and it is queued
 *   again when the worker calls `done` (so the newest state is always reconciled, never two at once);
 * - `addAfter` delays a key (requeue-after), keeping the earliest of several pending delays;
 * - `addRateLimited` delays it by its own exponential backoff, reset by `forget` after a success.
 */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly backoff: PerKeyBackoff;
  private shuttingDown = false;

  constructor(
    backoff: BackoffOptions = DEFAULT_BACKOFF,
    private readonly hooks: WorkQueueHooks = {},
  ) {
    this.backoff = new PerKeyBackoff(backoff);
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    this.hooks.onAdd?.();
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref?.();
    this.timers.set(key, { at, timer });
  }

  /** Requeues `key` after its backoff delay; returns that delay. */
  addRateLimited(key: string): number {
    const delay = this.backoff.next(key);
    this.hooks.onRetry?.();
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets the backoff of `key` (after a successful reconcile). */
  forget(key: string): void {
    this.backoff.forget(key);
  }

  failuresOf(key: string): number {
    return this.backoff.failuresOf(key);
  }

  /** Waits for the next key; `undefined` once the queue is shut down. The caller must call `done(key)`. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) return Promise.resolve(this.take(key));
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) this.push(key);
  }

  get depth(): number {
    return this.queue.length;
  }

  get inFlight(): number {
    return this.processing.size;
  }

  isInFlight(key: string): boolean {
    return this.processing.has(key);
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  private push(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter(this.take(key));
      return;
    }
    this.queue.push(key);
    this.hooks.onDepth?.(this.queue.length);
  }

  private take(key: string): string {
    this.dirty.delete(key);
    this.processing.add(key);
    this.hooks.onDepth?.(this.queue.length);
    return key;
  }
}
