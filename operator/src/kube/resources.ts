/** Where a kind lives in the API: enough to build every URL the operator calls. */
export interface ResourceType {
  group: string; // '' for the core group
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export function apiVersionOf(rt: ResourceType): string {
  return rt.group ? `${rt.group}/${rt.version}` : rt.version;
}

/** Collection path, optionally in one namespace (omit the namespace to span all namespaces). */
export function collectionPath(rt: ResourceType, namespace?: string): string {
  const base = rt.group ? `/apis/${rt.group}/${rt.version}` : `/api/${rt.version}`;
  if (rt.namespaced && namespace) return `${base}/namespaces/${encodeURIComponent(namespace)}/${rt.plural}`;
  return `${base}/${rt.plural}`;
}

export function objectPath(rt: ResourceType, namespace: string | undefined, name: string, subresource?: string): string {
  if (rt.namespaced && !namespace) throw new Error(`${rt.kind} is namespaced: a namespace is required to address ${name}`);
  const path = `${collectionPath(rt, namespace)}/${encodeURIComponent(name)}`;
  return subresource ? `${path}/${subresource}` : path;
}

export const LORE_GROUP = 'lore.dev';
export const LORE_VERSION = 'v1alpha1';

export const MEMORY: ResourceType = { group: LORE_GROUP, version: LORE_VERSION, kind: 'Memory', plural: 'memories', namespaced: true };
export const API_KEY: ResourceType = { group: LORE_GROUP, version: LORE_VERSION, kind: 'ApiKey', plural: 'apikeys', namespaced: true };
export const SECRET: ResourceType = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
export const NAMESPACE: ResourceType = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
export const INGRESS: ResourceType = { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress', plural: 'ingresses', namespaced: true };
export const LEASE: ResourceType = { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true };
export const EVENT: ResourceType = { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true };
