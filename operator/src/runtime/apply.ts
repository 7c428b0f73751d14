import type { KubeClient } from '../kube/client';
import { isNotFound } from '../kube/errors';
import type { ResourceType } from '../kube/resources';
import type { KubeObject, OwnerReference } from '../kube/types';
import { isSubset } from './equality';

export const FIELD_MANAGER = 'lore-operator';

/** The controller owner reference of a child: garbage-collected with its owner, and mapped back to it. */
export function controllerReference(owner: KubeObject): OwnerReference {
  return {
    apiVersion: String(owner.apiVersion),
    kind: String(owner.kind),
    name: String(owner.metadata.name),
    uid: String(owner.metadata.uid),
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** True when `obj` has a controller reference to `owner` (by uid, the only identity that survives renames). */
export function isControlledBy(obj: KubeObject | undefined, owner: KubeObject): boolean {
  return !!obj?.metadata.ownerReferences?.some((r) => r.controller && r.uid === owner.metadata.uid);
}

/**
 * Server-side applies `desired` unless the cached `actual` already carries every field of it. Desired children
 * are pure functions of their owner, so comparing them with the cache is enough to make a resync with nothing
 * changed cost zero writes, while any drift (a label edited, a rule removed, the object deleted) is repaired by
 * an apply that forces our field ownership back.
 */
export async function applyIfChanged<T extends KubeObject>(
  kube: KubeClient,
  rt: ResourceType,
  desired: T,
  actual: T | undefined,
): Promise<{ obj: T; written: boolean }> {
  if (actual && !actual.metadata.deletionTimestamp && isSubset(withoutTypeMeta(desired), actual)) {
    return { obj: actual, written: false };
  }
  const obj = await kube.apply<T>(rt, desired, FIELD_MANAGER);
  return { obj, written: true };
}

function withoutTypeMeta<T extends KubeObject>(obj: T): Omit<T, 'apiVersion' | 'kind'> {
  const { apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

/** Deletes an object, one already gone included; `uid` makes sure it is still the object meant. */
export async function deleteIfPresent(kube: KubeClient, rt: ResourceType, namespace: string, name: string, uid?: string): Promise<void> {
  try {
    await kube.delete(rt, namespace, name, uid ? { preconditions: { uid } } : {});
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
