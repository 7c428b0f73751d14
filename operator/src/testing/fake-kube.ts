import { randomUUID } from 'node:crypto';
import type { DeleteOptions, JsonPatchOp, KubeClient, ListOptions, WatchOptions } from '../kube/client';
import { KubeApiError } from '../kube/errors';
import type { ResourceType } from '../kube/resources';
import type { KubeList, KubeObject, WatchEvent } from '../kube/types';
import type { ObjectCache } from '../controllers/types';

/**
 * An in-memory API server for unit tests of controllers: resourceVersions, generations (spec changes only),
 * optimistic locking on PUT, finalizers delaying deletion, and a log of every write. Server-side apply is a
 * deep merge, enough for the operator's own fields. Watches are not served: unit tests read the store
 * through `cache()`, the integration suites run the real thing.
 */
export class FakeKube implements KubeClient {
  private readonly store = new Map<string, KubeObject>();
  private rv = 1;
  readonly writes: Array<{ verb: string; resource: string; name: string }> = [];

  cache<T extends KubeObject>(rt: ResourceType): ObjectCache<T> {
    return {
      get: (namespace, name) => this.peek<T>(rt, namespace, name),
      list: (filter) => this.all<T>(rt).filter((o) => !filter || filter(o)),
    };
  }

  peek<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const o = this.store.get(this.key(rt, namespace, name));
    return o ? (structuredClone(o) as T) : undefined;
  }

  all<T extends KubeObject>(rt: ResourceType): T[] {
    return [...this.store.entries()].filter(([k]) => k.startsWith(`${rt.plural}/`)).map(([, o]) => structuredClone(o) as T);
  }

  /** Puts an object as a user would (kubectl apply), bypassing the write log. */
  seed<T extends KubeObject>(rt: ResourceType, obj: T): T {
    return this.save(rt, structuredClone(obj), undefined);
  }

  async get<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
    return this.peek<T>(rt, namespace, name);
  }

  async list<T extends KubeObject>(rt: ResourceType, opts: ListOptions = {}): Promise<KubeList<T>> {
    const items = this.all<T>(rt).filter((o) => !opts.namespace || o.metadata.namespace === opts.namespace);
    return { metadata: { resourceVersion: String(this.rv) }, items };
  }

  async watch(_rt: ResourceType, _opts: WatchOptions, _onEvent: (e: WatchEvent) => void, _signal: AbortSignal): Promise<void> {
    throw new Error('FakeKube serves no watches');
  }

  async create<T extends KubeObject>(rt: ResourceType, obj: T): Promise<T> {
    this.log('create', rt, obj.metadata.name);
    if (this.store.has(this.key(rt, obj.metadata.namespace, String(obj.metadata.name)))) {
      throw new KubeApiError(409, 'POST', rt.plural, { reason: 'AlreadyExists', code: 409 });
    }
    return this.save(rt, structuredClone(obj), undefined);
  }

  async replace<T extends KubeObject>(rt: ResourceType, obj: T): Promise<T> {
    this.log('update', rt, obj.metadata.name);
    const current = this.require(rt, obj);
    this.checkVersion(current, obj);
    return this.save(rt, { ...structuredClone(obj), status: current.status } as T, current);
  }

  async replaceStatus<T extends KubeObject>(rt: ResourceType, obj: T): Promise<T> {
    this.log('update-status', rt, obj.metadata.name);
    const current = this.require(rt, obj);
    this.checkVersion(current, obj);
    return this.save(rt, { ...structuredClone(current), status: structuredClone(obj.status) } as unknown as T, current, true);
  }

  async apply<T extends KubeObject>(rt: ResourceType, obj: T, _fieldManager: string): Promise<T> {
    this.log('apply', rt, obj.metadata.name);
    const current = this.store.get(this.key(rt, obj.metadata.namespace, String(obj.metadata.name)));
    // As the API server does: a resourceVersion in the applied object is a precondition.
    const expected = obj.metadata.resourceVersion;
    if (expected !== undefined && current?.metadata.resourceVersion !== expected) {
      throw new KubeApiError(409, 'PATCH', rt.plural, { reason: 'Conflict', code: 409 });
    }
    const merged = current ? (merge(structuredClone(current), structuredClone(obj)) as T) : structuredClone(obj);
    return this.save(rt, merged, current);
  }

  async jsonPatch<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string, ops: JsonPatchOp[]): Promise<T> {
    this.log('patch', rt, name);
    const current = this.store.get(this.key(rt, namespace, name));
    if (!current) throw new KubeApiError(404, 'PATCH', rt.plural, { reason: 'NotFound', code: 404 });
    const next = structuredClone(current) as Record<string, any>;
    for (const op of ops) {
      const parts = op.path.split('/').slice(1);
      const last = parts.pop()!;
      let parent: any = next;
      for (const p of parts) parent = parent?.[p];
      if (op.op === 'test') {
        if (JSON.stringify(parent?.[last]) !== JSON.stringify(op.value)) throw new KubeApiError(422, 'PATCH', rt.plural, { reason: 'Invalid', code: 422 });
      } else if (op.op === 'remove') {
        delete parent[last];
      } else if (last === '-' && Array.isArray(parent)) {
        parent.push(op.value);
      } else {
        parent[last] = op.value;
      }
    }
    const saved = this.save(rt, next as KubeObject, current);
    if (saved.metadata.deletionTimestamp && !(saved.metadata.finalizers ?? []).length) this.store.delete(this.key(rt, namespace, name));
    return saved as T;
  }

  async delete(rt: ResourceType, namespace: string | undefined, name: string, _opts?: DeleteOptions): Promise<void> {
    this.log('delete', rt, name);
    const k = this.key(rt, namespace, name);
    const current = this.store.get(k);
    if (!current) throw new KubeApiError(404, 'DELETE', rt.plural, { reason: 'NotFound', code: 404 });
    if ((current.metadata.finalizers ?? []).length) {
      this.save(rt, { ...current, metadata: { ...current.metadata, deletionTimestamp: new Date().toISOString() } }, current);
    } else {
      this.store.delete(k);
    }
  }

  /**
   * The API server finishing a DELETE whatever finalizers the object carries (the race of a DELETE that read the
   * object just before a finalizer was added): the object is gone; its final copy is returned, as a watch's DELETED
   * event would carry it.
   */
  vanish<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string): T {
    const k = this.key(rt, namespace, name);
    const current = this.store.get(k);
    if (!current) throw new Error(`${k} does not exist`);
    this.store.delete(k);
    return structuredClone(current) as T;
  }

  /** A user deleting an object (kubectl delete), not logged as the operator's write. */
  userDelete(rt: ResourceType, namespace: string | undefined, name: string): void {
    void this.delete(rt, namespace, name);
    this.writes.pop();
  }

  writesSince(mark: number): Array<{ verb: string; resource: string; name: string }> {
    return this.writes.slice(mark);
  }

  private log(verb: string, rt: ResourceType, name: string | undefined): void {
    this.writes.push({ verb, resource: rt.plural, name: String(name) });
  }

  private key(rt: ResourceType, namespace: string | undefined, name: string): string {
    return `${rt.plural}/${rt.namespaced ? namespace : ''}/${name}`;
  }

  private require(rt: ResourceType, obj: KubeObject): KubeObject {
    const current = this.store.get(this.key(rt, obj.metadata.namespace, String(obj.metadata.name)));
    const uid = obj.metadata.uid;
    // As the API server does: a uid in the body is a precondition, failed when that object is gone (or was made again).
    if (uid && current?.metadata.uid !== uid) {
      const message = `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current?.metadata.uid ?? ''}`;
      throw new KubeApiError(409, 'PUT', rt.plural, { reason: 'Conflict', code: 409, message });
    }
    if (!current) throw new KubeApiError(404, 'PUT', rt.plural, { reason: 'NotFound', code: 404 });
    return current;
  }

  private checkVersion(current: KubeObject, obj: KubeObject): void {
    if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== current.metadata.resourceVersion) {
      throw new KubeApiError(409, 'PUT', String(current.kind), { reason: 'Conflict', code: 409 });
    }
  }

  private save<T extends KubeObject>(rt: ResourceType, obj: T, previous: KubeObject | undefined, statusOnly = false): T {
    const meta = obj.metadata;
    meta.uid = previous?.metadata.uid ?? meta.uid ?? randomUUID();
    meta.creationTimestamp = previous?.metadata.creationTimestamp ?? new Date().toISOString();
    const specChanged = !previous || JSON.stringify((previous as any).spec) !== JSON.stringify((obj as any).spec);
    meta.generation = statusOnly ? previous?.metadata.generation : (previous?.metadata.generation ?? 0) + (specChanged ? 1 : 0);
    meta.resourceVersion = String(++this.rv);
    obj.apiVersion ??= rt.group ? `${rt.group}/${rt.version}` : rt.version;
    obj.kind ??= rt.kind;
    this.store.set(this.key(rt, meta.namespace, String(meta.name)), obj);
    return structuredClone(obj);
  }
}

function merge(target: any, source: any): any {
  if (source === null || typeof source !== 'object' || Array.isArray(source)) return source;
  const out = target && typeof target === 'object' && !Array.isArray(target) ? target : {};
  for (const [k, v] of Object.entries(source)) out[k] = merge(out[k], v);
  return out;
}
