import { createHash } from 'node:crypto';

/** Labels and annotations the operator puts on what it creates, and reads from namespaces. */
export const TENANT_KEY = 'lore.dev/tenant';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'lore-operator';
export const KEY_ID_ANNOTATION = 'lore.dev/key-id';
export const MEMORY_NAMESPACE_LABEL = 'lore.dev/memory-namespace';
export const MEMORY_NAME_LABEL = 'lore.dev/memory-name';
export const MEMORY_UID_LABEL = 'lore.dev/memory-uid';
export const OWNER_KIND_LABEL = 'lore.dev/owner-kind';

export const MEMORY_FINALIZER = 'lore.dev/memory-deprovision';
export const API_KEY_FINALIZER = 'lore.dev/apikey-revoke';

const DNS_LABEL_MAX = 63;

/** A short, stable hash (hex) used to keep generated names unique after truncation. */
export function shortHash(input: string, length = 8): string {
  return createHash('sha256').update(input).digest('hex').slice(0, length);
}

/**
 * Fits `base` into a DNS label (at most 63 characters, lowercase alphanumerics and '-', alphanumeric at both
 * ends). When it has to be shortened, a hash of the full value is appended so two long names never collide.
 */
export function dnsLabel(base: string): string {
  const clean = base.toLowerCase().replace(/[^a-z0-9-]/g, '-').replace(/^-+|-+$/g, '');
  if (clean === base && clean.length > 0 && clean.length <= DNS_LABEL_MAX) return clean;
  const head = clean.slice(0, DNS_LABEL_MAX - 9).replace(/-+$/, '');
  return head ? `${head}-${shortHash(base)}` : shortHash(base);
}

/** `spec.hostname`, or `<name>-<namespace>.<baseDomain>` with the first label fitted into 63 characters. */
export function memoryHostname(spec: { hostname?: string } | undefined, name: string, namespace: string, baseDomain: string): string {
  if (spec?.hostname) return spec.hostname;
  return `${dnsLabel(`${name}-${namespace}`)}.${baseDomain}`;
}

/**
 * Why a Memory may not be served on `spec.hostname`, or null when it may (docs/operator.md, "Hostnames"). A tenant's
 * user who may create Memory objects must not take a host that is not theirs: the gateway's own (a memory's hostname
 * serves that memory and nothing else, for every tenant), another namespace's default hostname, or any host of
 * another domain. Under the base domain only the Memory's own default name may be named (a label merely ending in
 * `-<namespace>` is no proof: `wiki-team-prod` is `wiki` of `team-prod` as well as `wiki-team` of `prod`); any
 * other custom hostname must be under a domain the platform's administrator listed.
 */
export function hostnameProblem(hostname: string, name: string, namespace: string, baseDomain: string, customDomains: readonly string[]): string | null {
  if (customDomains.some((d) => hostname.endsWith(`.${d}`))) return null;
  if (hostname === memoryHostname(undefined, name, namespace, baseDomain)) return null;
  const custom = customDomains.length > 0 ? `a host under ${customDomains.join(', ')}, or ` : '';
  return `spec.hostname ${hostname} is not one this Memory may claim: name ${custom}none (the default ${memoryHostname(undefined, name, namespace, baseDomain)})`;
}

/** The platform id of a Memory: derived from its uid, so a retried create always names the same memory. */
export function memoryIdFor(uid: string): string {
  return `mem_${uid.replace(/-/g, '').toLowerCase()}`;
}

/** Name of the Ingress serving a memory, in the gateway's namespace: readable, unique, at most 63 characters. */
export function ingressNameFor(namespace: string, name: string, uid: string): string {
  const base = `mem-${namespace}-${name}`.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  const head = base.slice(0, DNS_LABEL_MAX - 9).replace(/-+$/, '');
  return `${head}-${shortHash(uid)}`;
}

export function defaultKeySecretName(memoryName: string): string {
  return `${memoryName}-memory-key`;
}

/** Tenant ids accepted from a namespace label or annotation. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** The most characters the platform takes in a memory's or a key's name. */
export const PLATFORM_NAME_MAX = 200;

/** A name derived from an object's namespace and name, fitted into the platform's limit (a hash keeps it unique). */
export function platformName(prefix: string, namespace: string, name: string): string {
  const full = `${prefix}${namespace}/${name}`;
  if (full.length <= PLATFORM_NAME_MAX) return full;
  return `${full.slice(0, PLATFORM_NAME_MAX - 9)}~${shortHash(full)}`;
}
