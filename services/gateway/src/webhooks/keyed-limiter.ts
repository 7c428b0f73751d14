/**
 * Bounds how many attempts run at once against one endpoint (per worker process). Callers beyond the bound wait in
 * arrival order; waiting is itself bounded because each waiting caller is a consumer handler holding its partition.
 */
export class KeyedLimiter {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(private readonly maxPerKey: number) {
    if (!Number.isInteger(maxPerKey) || maxPerKey < 1) throw new RangeError('maxPerKey must be a positive integer');
  }

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    await this.acquire(key);
    try {
      return await fn();
    } finally {
      this.release(key);
    }
  }

  /** Attempts in progress for `key` (metrics, tests). */
  active(key: string): number {
    return this.running.get(key) ?? 0;
  }

  private acquire(key: string): Promise<void> {
    const n = this.running.get(key) ?? 0;
    if (n < this.maxPerKey) {
      this.running.set(key, n + 1);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(key) ?? [];
      queue.push(resolve);
      this.waiting.set(key, queue);
    });
  }

  private release(key: string): void {
    const queue = this.waiting.get(key);
    const next = queue?.shift();
    if (next) {
      // The slot passes straight to the next waiter; the running count is unchanged.
      if (queue!.length === 0) this.waiting.delete(key);
      next();
      return;
    }
    const n = (this.running.get(key) ?? 1) - 1;
    if (n <= 0) this.running.delete(key);
    else this.running.set(key, n);
  }
}
