import type { Logger } from '@lore/runtime/kit';
import type { KubeClient } from '../kube/client';
import { KubeApiError, isGone } from '../kube/errors';
import type { ResourceType } from '../kube/resources';
import { objectKey, type KubeObject, type KubeStatus, type WatchEvent } from '../kube/types';

export interface InformerHandlers<T extends KubeObject> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, obj: T): void;
  onDelete?(obj: T): void;
  /** Periodic resync: every cached object is offered again so level-based controllers re-check it. */
  onResync?(obj: T): void;
}

export interface InformerOptions {
  kube: KubeClient;
  resource: ResourceType;
  logger: Logger;
  namespace?: string;
  labelSelector?: string;
  /** Interval of the periodic resync; 0 disables it. */
  resyncMs?: number;
  /** Server-side watch timeout; each watch picks a random value between it and twice it. */
  watchTimeoutSeconds?: number;
  pageSize?: number;
}

class WatchExpired extends Error {}

/**
 * A list-then-watch cache of one resource type. The cache is the operator's view of the cluster: reconcilers
 * read it instead of the API server, so a resync with nothing changed costs no requests at all.
 *
 * - lists in pages, then watches from the list's resourceVersion with bookmarks, resuming from the newest
 *   version seen when a watch ends;
 * - on `410 Gone` (the version was compacted) relists and turns the difference into add/update/delete events,
 *   so a delete that happened while disconnected is never missed;
 * - a watch that stays silent longer than its timeout (a half-open connection) is dropped and restarted.
 */
export class Informer<T extends KubeObject> {
  private readonly cache = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private resourceVersion: string | undefined;
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  private stopped = false;
  private running?: Promise<void>;
  private currentWatch?: AbortController;
  private resyncTimer?: NodeJS.Timeout;
  private readonly stopping = new AbortController();
  private readonly log: Logger;

  constructor(private readonly opts: InformerOptions) {
    this.log = opts.logger.child({ informer: opts.resource.plural });
  }

  addHandlers(h: InformerHandlers<T>): void {
    this.handlers.push(h);
  }

  start(): void {
    if (this.running) return;
    this.running = this.run();
    if (this.opts.resyncMs && this.opts.resyncMs > 0) {
      this.resyncTimer = setInterval(() => this.resync(), this.opts.resyncMs);
      this.resyncTimer.unref?.();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.currentWatch?.abort();
    for (const w of this.syncWaiters.splice(0)) w();
    await this.running;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(): Promise<void> {
    if (this.synced || this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(namespace ? `${namespace}/${name}` : name);
  }

  list(filter?: (obj: T) => boolean): T[] {
    const all = [...this.cache.values()];
    return filter ? all.filter(filter) : all;
  }

  /** Offers every cached object to the resync handlers now (also used by the periodic timer). */
  resync(): void {
    for (const obj of this.cache.values()) for (const h of this.handlers) h.onResync?.(obj);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        if (this.resourceVersion === undefined) await this.relist();
        await this.watchOnce();
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof WatchExpired || isGone(err)) {
          this.log.info('watch version expired: relisting');
          this.resourceVersion = undefined;
          continue;
        }
        failures += 1;
        const delay = Math.min(30_000, 250 * 2 ** Math.min(failures, 7));
        this.log.warn({ err: describe(err), retry_in_ms: delay }, 'list/watch failed');
        await sleep(delay, this.stopping.signal);
      }
    }
  }

  private async relist(): Promise<void> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.opts.kube.list<T>(this.opts.resource, {
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
        limit: this.opts.pageSize ?? 500,
        continue: cont,
      });
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion ?? rv;
    } while (cont);

    const seen = new Set<string>();
    for (const item of items) {
      // List items carry no apiVersion/kind; restore them so cached objects are complete.
      const obj = this.complete(item);
      const key = objectKey(obj);
      seen.add(key);
      this.upsert(key, obj);
    }
    for (const [key, old] of [...this.cache]) {
      if (seen.has(key)) continue;
      this.cache.delete(key);
      for (const h of this.handlers) h.onDelete?.(old);
    }
    this.resourceVersion = rv;
    if (!this.synced) {
      this.synced = true;
      this.log.debug({ objects: this.cache.size }, 'cache synced');
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  private async watchOnce(): Promise<void> {
    const base = this.opts.watchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.round(base + Math.random() * base);
    if (this.stopped) return;
    const ac = new AbortController();
    this.currentWatch = ac;
    // stop() may come between the list and this watch: it must end this watch too.
    const onStop = () => ac.abort();
    this.stopping.signal.addEventListener('abort', onStop, { once: true });
    let idle: NodeJS.Timeout | undefined;
    const armIdle = () => {
      if (idle) clearTimeout(idle);
      idle = setTimeout(() => ac.abort(), (timeoutSeconds + 30) * 1000);
      idle.unref?.();
    };
    armIdle();
    let expired = false;
    try {
      await this.opts.kube.watch(
        this.opts.resource,
        {
          namespace: this.opts.namespace,
          labelSelector: this.opts.labelSelector,
          resourceVersion: this.resourceVersion ?? '',
          timeoutSeconds,
        },
        (event) => {
          armIdle();
          if (!this.apply(event)) {
            expired = true;
            ac.abort();
          }
        },
        ac.signal,
      );
    } catch (err) {
      if (!ac.signal.aborted) throw err;
    } finally {
      if (idle) clearTimeout(idle);
      this.stopping.signal.removeEventListener('abort', onStop);
      this.currentWatch = undefined;
    }
    if (expired) throw new WatchExpired('resource version expired');
  }

  /** Applies one watch event; returns false when the watch must be restarted from a fresh list. */
  private apply(event: WatchEvent): boolean {
    if (event.type === 'ERROR') {
      const status = event.object as unknown as KubeStatus;
      if (status.code === 410) return false;
      throw new KubeApiError(status.code ?? 500, 'WATCH', this.opts.resource.plural, status);
    }
    const obj = this.complete(event.object as T);
    if (obj.metadata.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return true;
    const key = objectKey(obj);
    if (event.type === 'DELETED') {
      // The event carries the object's final state (its finalizers as the API server last had them).
      this.cache.delete(key);
      for (const h of this.handlers) h.onDelete?.(obj);
      return true;
    }
    this.upsert(key, obj);
    return true;
  }

  private upsert(key: string, obj: T): void {
    const old = this.cache.get(key);
    this.cache.set(key, obj);
    if (!old) {
      for (const h of this.handlers) h.onAdd?.(obj);
    } else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
      for (const h of this.handlers) h.onUpdate?.(old, obj);
    }
  }

  private complete(obj: T): T {
    const rt = this.opts.resource;
    if (obj.apiVersion && obj.kind) return obj;
    return { ...obj, apiVersion: rt.group ? `${rt.group}/${rt.version}` : rt.version, kind: rt.kind };
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
