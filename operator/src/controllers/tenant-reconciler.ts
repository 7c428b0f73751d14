import type { ResourceType } from '../kube/resources';
import { splitKey, type Condition, type KubeObject } from '../kube/types';
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
  /** Brings the platform and the cluster in line with the object, editing its status through the session. */
  apply: (ctx: ControllerContext, s: StatusSession<S, T>, now: Date) => Promise<ReconcileResult | void>;
  /** Undoes what apply did, once the object is being deleted; `done: false` retries. */
  cleanup: (ctx: ControllerContext, obj: T) => Promise<{ done: boolean; requeueAfterMs?: number }>;
}

/**
 * The reconcile every tenant-scoped Lore resource shares: read the object from the cache, serve it only in a
 * namespace the operator selects (its own finalizer's cleanup aside), keep the finalizer, and run `apply` with a
 * status session whose failure is recorded on the object (status and event) before the error goes to backoff.
 */
export function tenantReconciler<S extends ReconciledStatus, T extends KubeObject & { status?: S }>(
  ctx: ControllerContext,
  spec: TenantReconcilerSpec<S, T>,
): Reconcile {
  const reconcile = withFinalizer<T>(ctx.kube, spec.rt, spec.finalizer, {
    apply: async (obj) => {
      const now = ctx.now?.() ?? new Date();
      const s = new StatusSession<S, T>(ctx.kube, spec.rt, obj, ctx.events, now);
      try {
        return await spec.apply(ctx, s, now);
      } catch (err) {
        await s.reportFailure(err);
        throw err;
      }
    },
    cleanup: (obj) => spec.cleanup(ctx, obj),
  });
  return async (key) => {
    const { namespace, name } = splitKey(key);
    const obj = spec.cache(ctx).get(namespace, name);
    if (!obj) return;
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
