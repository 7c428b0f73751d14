/**
 * A small bounded map whose entries expire. Used for credential records, tenant contexts and hostnames; the
 * hot path reads it on every request, so it is a plain Map with insertion-order eviction.
 *
 * `getOrLoad` adds two things a busy gateway needs: concurrent misses of one key share a single load, and an
 * entry that expired less than `staleMs` ago is still answered while one background load refreshes it, so a
 * refresh never stalls the requests that arrive during it. (Nothing that must be instant relies on this cache:
 * revocation is checked in the shared state on every request.)
 */
export class TtlCache<V> {
  private readonly map = new Map<string, { value: V; expiresAt: number }>();
  private readonly loading = new Map<string, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly clock: () => number = Date.now,
    private readonly staleMs = 0,
  ) {}

  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    if (hit.expiresAt <= this.clock()) {
      if (hit.expiresAt + this.staleMs <= this.clock()) this.map.delete(key);
      return undefined;
    }
    return hit.value;
  }

  set(key: string, value: V, ttlMs = this.ttlMs): void {
    if (this.ttlMs <= 0 || ttlMs <= 0) return;
    this.map.delete(key);
    this.map.set(key, { value, expiresAt: this.clock() + ttlMs });
    while (this.map.size > this.maxEntries) {
      const oldest = this.map.keys().next().value as string;
      this.map.delete(oldest);
    }
  }

  async getOrLoad(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.map.get(key);
    const now = this.clock();
    if (hit && hit.expiresAt > now) return hit.value;
    if (hit && hit.expiresAt + this.staleMs > now) {
      // Stale but usable: answer now, refresh once in the background.
      if (!this.loading.has(key)) void this.loadOnce(key, load).catch(() => undefined);
      return hit.value;
    }
    return this.loadOnce(key, load);
  }

  private loadOnce(key: string, load: () => Promise<V>): Promise<V> {
    const pending = this.loading.get(key);
    if (pending) return pending;
    const p = load()
      .then((value) => {
        this.set(key, value);
        return value;
      })
      .finally(() => this.loading.delete(key));
    this.loading.set(key, p);
    return p;
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}
