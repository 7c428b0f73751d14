/**
 * Rules of connectors, credentials and connector-credential pairs (cc pairs) with no HTTP and no SQL.
 */

export const ACCESS_TYPES = ['public', 'private'] as const;
export type AccessType = (typeof ACCESS_TYPES)[number];

export const CC_PAIR_STATUSES = ['ACTIVE', 'PAUSED', 'DELETING'] as const;
export type CcPairStatus = (typeof CC_PAIR_STATUSES)[number];
/** The statuses an administrator sets; `DELETING` is the platform's own, while a pair's documents are removed. */
export type SettableStatus = Exclude<CcPairStatus, 'DELETING'>;

/** What every read shows in place of each value of a credential's `credential_json`. */
export const CREDENTIAL_MASK = '********';

/** A credential as read: the same keys, every value replaced by the mask (values are never sent back). */
export function redactCredentialJson(json: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.keys(json).map((k) => [k, CREDENTIAL_MASK]));
}

/**
 * Groups limit who sees a private pair's documents; a public pair is seen by the whole tenant, so groups on it
 * would say nothing. Returns the problem, or null.
 */
export function accessProblem(accessType: AccessType, groups: readonly number[]): string | null {
  return accessType === 'public' && groups.length > 0 ? 'groups apply to private access only (access_type "private")' : null;
}

/**
 * The outcome of asking a pair to become `wanted`: nothing to do, a change, or a refusal while it is being
 * deleted (its status is no longer the administrator's to set).
 */
export function statusChange(current: CcPairStatus, wanted: SettableStatus): 'unchanged' | 'change' | 'deleting' {
  if (current === 'DELETING') return 'deleting';
  return current === wanted ? 'unchanged' : 'change';
}

/** The subject of an owner string `<credential kind>:<subject>` (a user id, an API key id, an OAuth client id). */
export function ownerSubject(owner: string): string {
  const colon = owner.indexOf(':');
  return colon < 0 ? owner : owner.slice(colon + 1);
}

/** Ids in ascending order, each once (a pair's groups, a connector's credential ids). */
export function distinctIds(ids: readonly number[]): number[] {
  return [...new Set(ids)].sort((a, b) => a - b);
}
