import { isNotFound, isUidPreconditionFailed } from '../kube/errors';
import type { ResourceType } from '../kube/resources';
import { objectKey, splitKey, type Condition, type KubeObject } from '../kube/types';
import type { Reconcile, ReconcileResult } from '../runtime/controller';
import { withFinalizer } from '../runtime/finalizer';
import type { ControllerContext } from './context';
import { StatusSession } from './status-session';
import { resolveTenant } from './tenant';
import type { ObjectCache } from './types';

interface ReconciledStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  tenantId?: string;
}

export interface TenantReconcilerSpec<S extends ReconciledStatus, T extends KubeObject & { status?: S }> {
  rt: ResourceType;
  finalizer: string;
  cache: (ctx: ControllerContext) => ObjectCache<T>;
  /** Final copies of objects of this kind that vanished before their cleanup ran (see `Tombstones`). */
  tombstones: (ctx: ControllerContext) => Tombstones<T>;
  /** Brings the platform and the cluster in line with the object, editing its status through the session. */
  apply: (ctx: ControllerContext, s: StatusSession<S, T>, now: Date) => Promise<ReconcileResult | void>;
  /** Undoes what apply did, once the object is being deleted; `done: false` retries. */
  cleanup: (ctx: ControllerContext, obj: T) => Promise<{ done: boolean; requeueAfterMs?: number }>;
}

/**
 * Final copies of objects that vanished without their finalizer's cleanup having run. The API server can finish a
 * DELETE that read the object just before the operator added its finalizer (the finalizer is then ignored): the
 * watch's DELETED event still carries the finalizer, and a write of the reconcile that added it is refused with a
 * UID precondition. The object's cleanup then runs on that last copy (platform ids derive from its uid), so
 * nothing it made outlives it.
 */
export class Tombstones<T extends KubeObject> {
  private readonly byKey = new Map<string, Map<string, T>>();
  /** Uids already cleaned up, so a cache copy of a vanished object is not provisioned again (bounded, oldest out). */
  private readonly buried = new Set<string>();

  constructor(private readonly maxBuried = 10_000) {}

  add(obj: T): void {
    const uid = String(obj.metadata.uid ?? '');
    if (!uid || this.buried.has(uid)) return;
    const key = objectKey(obj);
    const graves = this.byKey.get(key) ?? new Map<string, T>();
    graves.set(uid, obj);
    this.byKey.set(key, graves);
  }

  pending(key: string): T[] {
    return [...(this.byKey.get(key)?.values() ?? [])];
  }

  bury(obj: T): void {
    const key = objectKey(obj);
    const uid = String(obj.metadata.uid);
    const graves = this.byKey.get(key);
    graves?.delete(uid);
    if (graves && graves.size === 0) this.byKey.delete(key);
    this.buried.add(uid);
    if (this.buried.size > this.maxBuried) this.buried.delete(this.buried.values().next().value!);
  }

  isBuried(uid: string | undefined): boolean {
    return !!uid && this.buried.has(uid);
  }

  get size(): number {
    return this.byKey.size;
  }
}

/**
 * The reconcile every tenant-scoped Lore resource shares: clean up after objects of the key that vanished without
 * their cleanup (`Tombstones`), read the object from the cache, serve it only in a namespace the operator selects
 * (its own finalizer's cleanup aside), keep the finalizer, and run `apply` with a status session whose failure is
 * recorded on the object (status and event) before the error goes to backoff.
 */
export function tenantReconciler<S extends ReconciledStatus, T extends KubeObject & { status?: S }>(
  ctx: ControllerContext,
  spec: TenantReconcilerSpec<S, T>,
): Reconcile {
  const graves = spec.tombstones(ctx);
  const reconcile = withFinalizer<T>(ctx.kube, spec.rt, spec.finalizer, {
    apply: async (obj) => {
      const now = ctx.now?.() ?? new Date();
      const s = new StatusSession<S, T>(ctx.kube, spec.rt, obj, ctx.events, now);
      try {
        return await spec.apply(ctx, s, now);
      } catch (err) {
        if (await vanished(err, s.obj)) {
          // Deleted under the reconcile (its finalizer ignored): what the reconcile made is cleaned up next.
          graves.add(s.obj);
          return { requeueAfterMs: 0 };
        }
        await s.reportFailure(err);
        throw err;
      }
    },
    cleanup: (obj) => spec.cleanup(ctx, obj),
  });
  const vanished = async (err: unknown, obj: T): Promise<boolean> => {
    if (!isUidPreconditionFailed(err) && !isNotFound(err)) return false;
    const live = await ctx.kube.get<T>(spec.rt, obj.metadata.namespace, String(obj.metadata.name));
    return !live || live.metadata.uid !== obj.metadata.uid;
  };
  return async (key) => {
    for (const dead of graves.pending(key)) {
      const r = await spec.cleanup(ctx, dead);
      if (!r.done) return { requeueAfterMs: r.requeueAfterMs ?? 5_000 };
      graves.bury(dead);
      ctx.logger.warn(
        { object: key, kind: spec.rt.kind, uid: dead.metadata.uid },
        'cleaned up after an object the API server deleted before its finalizer could act',
      );
    }
    const { namespace, name } = splitKey(key);
    const obj = spec.cache(ctx).get(namespace, name);
    if (!obj) return;
    // A copy of an object already known to be gone and cleaned up: the watch's DELETED event is on its way.
    if (graves.isBuried(obj.metadata.uid)) return;
    // A namespace outside the operator's selection is not ours to serve (cleanup of our own finalizer aside).
    if (!ctx.caches.namespaces.get(undefined, String(namespace)) && !obj.metadata.deletionTimestamp) return;
    return reconcile(obj);
  };
}

/**
 * The tenant an object is served in: its namespace's, as long as it is the one the object was provisioned in;
 * otherwise the reconcile ends stalled (`changed` tells the user what to do about a namespace that now names
 * another tenant). The tenant exists in the platform before the caller creates anything in it.
 */
export async function servingTenant<S extends ReconciledStatus, T extends KubeObject & { status?: S }>(
  ctx: ControllerContext,
  s: StatusSession<S, T>,
  changed: (recorded: string, current: string) => string,
): Promise<{ ok: true; tenantId: string } | { ok: false; result: ReconcileResult | undefined }> {
  const tenant = resolveTenant(ctx.caches.namespaces.get(undefined, String(s.obj.metadata.namespace))!);
  if (!tenant.ok) return { ok: false, result: await s.stall(tenant.reason, tenant.message) };
  const recorded = s.status.tenantId;
  if (recorded && recorded !== tenant.tenantId) return { ok: false, result: await s.stall('TenantChanged', changed(recorded, tenant.tenantId)) };
  await ctx.tenants.ensure(tenant.tenantId);
  return { ok: true, tenantId: tenant.tenantId };
}

/** The tenant an object being deleted was served in: the one its status records, else its namespace's if valid. */
export function tenantOfDeleted(ctx: ControllerContext, obj: KubeObject & { status?: { tenantId?: string } }): string | undefined {
  if (obj.status?.tenantId) return obj.status.tenantId;
  const ns = ctx.caches.namespaces.get(undefined, String(obj.metadata.namespace));
  const r = ns ? resolveTenant(ns) : undefined;
  return r?.ok ? r.tenantId : undefined;
}
