/**
 * Work waiting for a slot of a worker, each tenant's in arrival order and the tenants in turn (round robin), so one
 * tenant's backlog never makes another tenant's work wait behind it. The agents worker (workflows) and core's
 * indexer (connector runs) hold their waiting work in one; each decides what a free slot is and how many one tenant
 * may hold (`take`'s `mayRun`).
 */
export class TenantTurns<T> {
  /** Tenant → its waiting items by key, in arrival order; the Map's own order is the tenants' turn. */
  private readonly waiting = new Map<string, Map<string, T>>();

  /**
   * Adds an item (a key already waiting is left where it is). The tenant adding it takes its turn after those already
   * in the line (a tenant that keeps adding work does not keep its place ahead of the others); `first` puts the item
   * ahead of its tenant's others (work that must go on where it was).
   */
  add(tenantId: string, key: string, item: T, first = false): void {
    const mine = this.waiting.get(tenantId) ?? new Map<string, T>();
    if (mine.has(key)) return;
    if (first) {
      const rest = [...mine];
      mine.clear();
      mine.set(key, item);
      for (const [k, v] of rest) mine.set(k, v);
    } else mine.set(key, item);
    this.waiting.delete(tenantId);
    this.waiting.set(tenantId, mine);
  }

  has(tenantId: string, key: string): boolean {
    return this.waiting.get(tenantId)?.has(key) ?? false;
  }

  delete(tenantId: string, key: string): void {
    const mine = this.waiting.get(tenantId);
    if (!mine) return;
    mine.delete(key);
    if (mine.size === 0) this.waiting.delete(tenantId);
  }

  /** The next item: the first waiting of the first tenant in turn that `mayRun`; its tenant goes to the back. */
  take(mayRun: (tenantId: string) => boolean): { tenantId: string; key: string; item: T } | null {
    for (const [tenantId, mine] of this.waiting) {
      if (!mayRun(tenantId)) continue;
      const [key, item] = mine.entries().next().value as [string, T];
      mine.delete(key);
      this.waiting.delete(tenantId);
      if (mine.size > 0) this.waiting.set(tenantId, mine);
      return { tenantId, key, item };
    }
    return null;
  }

  /** Every waiting item, tenant by tenant (a copy: deleting while walking it is safe). */
  entries(): Array<{ tenantId: string; key: string; item: T }> {
    const out: Array<{ tenantId: string; key: string; item: T }> = [];
    for (const [tenantId, mine] of this.waiting) for (const [key, item] of mine) out.push({ tenantId, key, item });
    return out;
  }

  get size(): number {
    let n = 0;
    for (const mine of this.waiting.values()) n += mine.size;
    return n;
  }

  clear(): void {
    this.waiting.clear();
  }
}
