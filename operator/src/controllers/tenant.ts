import type { PlatformAdmin } from '../platform/admin-client';
import { TENANT_ID_PATTERN, TENANT_KEY } from './names';
import type { NamespaceObject } from './types';

export type TenantResolution =
  | { ok: true; tenantId: string }
  | { ok: false; reason: 'TenantNotAssigned' | 'InvalidTenant'; message: string };

/**
 * The tenant of every Lore object in a namespace is what an administrator wrote on the namespace: the label
 * `lore.dev/tenant` (or, for ids that are not valid label values, the annotation of the same name). Nothing in
 * a Memory or ApiKey can name a tenant, so a user who may only edit objects in a namespace cannot reach another
 * tenant.
 */
export function resolveTenant(ns: NamespaceObject): TenantResolution {
  const label = ns.metadata.labels?.[TENANT_KEY];
  const annotation = ns.metadata.annotations?.[TENANT_KEY];
  const name = ns.metadata.name;
  if (label && annotation && label !== annotation) {
    return { ok: false, reason: 'InvalidTenant', message: `namespace ${name} has label ${TENANT_KEY}=${label} and a different annotation; set only one` };
  }
  const tenantId = label || annotation;
  if (!tenantId) {
    return { ok: false, reason: 'TenantNotAssigned', message: `namespace ${name} has no ${TENANT_KEY} label or annotation; an administrator must assign it to a tenant` };
  }
  if (!TENANT_ID_PATTERN.test(tenantId)) {
    return { ok: false, reason: 'InvalidTenant', message: `namespace ${name}: ${TENANT_KEY} "${tenantId}" is not a valid tenant id` };
  }
  return { ok: true, tenantId };
}

/** Makes sure a tenant exists in the platform once per process (the admin call is idempotent; this saves calls). */
export class TenantRegistry {
  private readonly known = new Set<string>();
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly admin: PlatformAdmin) {}

  async ensure(tenantId: string): Promise<void> {
    if (this.known.has(tenantId)) return;
    // Workers provisioning a new tenant's first objects at once share one call.
    let call = this.inFlight.get(tenantId);
    if (!call) {
      call = this.admin
        .ensureTenant(tenantId, tenantId)
        .then(() => void this.known.add(tenantId))
        .finally(() => this.inFlight.delete(tenantId));
      this.inFlight.set(tenantId, call);
    }
    await call;
  }
}
