import type { KubeClient } from '../kube/client';
import type { ResourceType } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import { deepEqual } from './equality';
import { markFresh } from './freshness';

/**
 * Writes `status` through the status subresource only when it differs from what the object already has. The PUT
 * carries the object's resourceVersion, so a status computed from a stale read is refused (409) instead of
 * overwriting newer state; the reconcile is then retried from the fresh object the watch delivers.
 * Returns the object as it is now (the server's answer after a write, the input otherwise).
 */
export async function writeStatusIfChanged<T extends KubeObject & { status?: unknown }>(
  kube: KubeClient,
  rt: ResourceType,
  obj: T,
  status: unknown,
): Promise<{ obj: T; written: boolean }> {
  if (deepEqual(stripUndefined(obj.status ?? {}), stripUndefined(status))) return { obj, written: false };
  const updated = markFresh(await kube.replaceStatus<T>(rt, { ...obj, status: stripUndefined(status) }));
  return { obj: updated, written: true };
}

/** Drops `undefined` fields (JSON would drop them anyway) so comparisons and bodies agree. */
export function stripUndefined<T>(value: T): T {
  return JSON.parse(JSON.stringify(value ?? {})) as T;
}
