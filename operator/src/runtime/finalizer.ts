import type { KubeClient, JsonPatchOp } from '../kube/client';
import { isNotFound } from '../kube/errors';
import type { ResourceType } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import type { ReconcileResult } from './controller';
import { markFresh } from './freshness';

export interface FinalizedHandlers<T extends KubeObject> {
  /** Brings the world in line with a live object. Never sees finalizers. */
  apply(obj: T): Promise<ReconcileResult | void>;
  /**
   * Removes state outside Kubernetes for an object being deleted. Resolves `{ done: true }` once nothing is left;
   * `{ done: false, requeueAfterMs }` to be called again later. Throwing keeps the finalizer and retries with
   * backoff.
   */
  cleanup(obj: T): Promise<{ done: boolean; requeueAfterMs?: number }>;
}

/**
 * Wraps a reconciler so that reconcile code never edits finalizers (the kube-rs `finalizer` pattern):
 * - a live object without the finalizer gets it first (one JSON patch, guarded by a `test` of the current list);
 * - a deleted object with the finalizer runs `cleanup`, and the finalizer is removed only after cleanup
 *   succeeded, so a failed deprovisioning is retried forever rather than forgotten;
 * - a deleted object without our finalizer is left alone.
 */
export function withFinalizer<T extends KubeObject>(
  kube: KubeClient,
  rt: ResourceType,
  finalizer: string,
  handlers: FinalizedHandlers<T>,
): (obj: T) => Promise<ReconcileResult | void> {
  return async (obj) => {
    const finalizers = obj.metadata.finalizers ?? [];
    const has = finalizers.includes(finalizer);
    if (obj.metadata.deletionTimestamp) {
      if (!has) return;
      const result = await handlers.cleanup(obj);
      if (!result.done) return { requeueAfterMs: result.requeueAfterMs ?? 5_000 };
      try {
        await kube.jsonPatch(rt, obj.metadata.namespace, String(obj.metadata.name), [
          { op: 'test', path: '/metadata/finalizers', value: finalizers },
          { op: 'replace', path: '/metadata/finalizers', value: finalizers.filter((f) => f !== finalizer) },
        ]);
      } catch (err) {
        // Already gone: an earlier pass removed the finalizer and the API server finished the deletion.
        if (!isNotFound(err)) throw err;
      }
      return;
    }
    let current = obj;
    if (!has) {
      const ops: JsonPatchOp[] = obj.metadata.finalizers
        ? [
            { op: 'test', path: '/metadata/finalizers', value: finalizers },
            { op: 'add', path: '/metadata/finalizers/-', value: finalizer },
          ]
        : [
            { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
            { op: 'add', path: '/metadata/finalizers', value: [finalizer] },
          ];
      current = markFresh(await kube.jsonPatch<T>(rt, obj.metadata.namespace, String(obj.metadata.name), ops));
    }
    return handlers.apply(current);
  };
}
