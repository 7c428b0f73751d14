import type { KubeObject } from '../kube/types';

/**
 * Objects that came back from the API server as the answer to one of this reconcile's own writes: they are
 * the newest version there is, so checking them against the server again would only cost a request.
 */
const fresh = new WeakSet<KubeObject>();

export function markFresh<T extends KubeObject>(obj: T): T {
  fresh.add(obj);
  return obj;
}

export function isFresh(obj: KubeObject): boolean {
  return fresh.has(obj);
}
