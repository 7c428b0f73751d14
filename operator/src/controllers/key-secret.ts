import { createHash } from 'node:crypto';
import type { KubeClient } from '../kube/client';
import { SECRET, type ResourceType } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import type { KeyView } from '@lore/contracts';
import type { PlatformAdmin } from '../platform/admin-client';
import { controllerReference, isControlledBy } from '../runtime/apply';
import { isFresh } from '../runtime/freshness';
import { KEY_ID_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE, OWNER_KIND_LABEL } from './names';
import type { SecretObject } from './types';

/** The Secret data key holding the plaintext. */
export const API_KEY_DATA = 'api-key';

/**
 * The desired Secret holding a key: plaintext and public facts (key id, hostname...) as data, the key id also
 * as an annotation (what crash recovery reads), a controller reference to its owner.
 */
export function keySecret(owner: KubeObject, name: string, plaintext: string, keyId: string, extra: Record<string, string>): SecretObject {
  const data: Record<string, string> = { [API_KEY_DATA]: b64(plaintext), 'key-id': b64(keyId) };
  for (const [k, v] of Object.entries(extra)) data[k] = b64(v);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: owner.metadata.namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [OWNER_KIND_LABEL]: String(owner.kind) },
      annotations: { [KEY_ID_ANNOTATION]: keyId },
      ownerReferences: [controllerReference(owner)],
    },
    type: 'Opaque',
    data,
  };
}

export function secretKeyId(secret: SecretObject | undefined): string | undefined {
  return secret?.metadata.annotations?.[KEY_ID_ANNOTATION];
}

/** The plaintext the operator wrote earlier (to re-apply a Secret's metadata without changing its key). */
export function secretPlaintext(secret: SecretObject | undefined): string | undefined {
  const v = secret?.data?.[API_KEY_DATA];
  return v ? Buffer.from(v, 'base64').toString('utf8') : undefined;
}

/** What keeps the Secret from holding key `keyId` as written, if anything (whether the key still works is asked apart). */
export function secretProblem(keyId: string | undefined, secret: SecretObject | undefined): 'NotIssued' | 'SecretMissing' | 'SecretMismatch' | undefined {
  if (!keyId) return 'NotIssued';
  if (!secret) return 'SecretMissing';
  if (secretKeyId(secret) !== keyId || !secretPlaintext(secret)) return 'SecretMismatch';
  return undefined;
}

export type SecretOwnership = 'absent' | 'ours' | 'foreign';

export function secretOwnership(secret: SecretObject | undefined, owner: KubeObject): SecretOwnership {
  if (!secret) return 'absent';
  return isControlledBy(secret, owner) ? 'ours' : 'foreign';
}

/** Whether a platform key still authenticates: known, not revoked, not expired. */
export function keyState(rec: KeyView | undefined, now: Date): 'usable' | 'missing' | 'revoked' | 'expired' {
  if (!rec) return 'missing';
  if (rec.revoked_at) return 'revoked';
  if (rec.expires_at && Date.parse(rec.expires_at) <= now.getTime()) return 'expired';
  return 'usable';
}

/** Raised when the cache is behind the API server; the key is simply retried once the watch catches up. */
export class StaleCacheError extends Error {
  readonly kind = 'stale';
  constructor(what: string) {
    super(`cache is behind the API server for ${what}; retrying`);
    this.name = 'StaleCacheError';
  }
}

/**
 * Before any irreversible action (issuing or revoking a key) the cached owner must be the newest version: a
 * reconcile that ran on a stale copy could otherwise revoke a key that was confirmed a moment ago. One GET,
 * only on that path, and none when the object is the server's answer to a write of this reconcile.
 */
export async function assertCurrent(kube: KubeClient, rt: ResourceType, obj: KubeObject): Promise<void> {
  if (isFresh(obj)) return;
  const live = await kube.get(rt, obj.metadata.namespace, String(obj.metadata.name));
  if (!live || live.metadata.resourceVersion !== obj.metadata.resourceVersion) throw new StaleCacheError(`${rt.kind} ${obj.metadata.namespace}/${obj.metadata.name}`);
}

export interface PendingOutcome {
  /** The pending key was found in the Secret and is now the current key. */
  confirmed?: string;
  /** The pending key never reached the Secret and was revoked. */
  revoked?: string;
}

/**
 * The client token of one issuance attempt, derived from what status already records: the owner's uid, the key
 * the issuance replaces (none for a first key) and the attempt number. A process that dies after the platform
 * made a key, before anything in Kubernetes names it, computes the same token on its next reconcile, and the
 * repeated call answers 409 with that key's id (`replayedKeyId`); an attempt whose key was revoked as an orphan
 * is followed by the next number. Nothing has to be written before the platform call.
 */
export function issuanceToken(ownerUid: string, baseKeyId: string | undefined, attempt: number): string {
  const digest = createHash('sha256').update(`${ownerUid}\n${baseKeyId ?? ''}\n${attempt}`).digest('base64url');
  return `iss1-${digest}`;
}

/**
 * Settles an issuance an operator of the earlier design interrupted, known by the id of the key it made
 * (`pendingKeyId`, recorded after the platform answered) or only by the random client token it recorded before
 * the call (`pendingKeyToken`). Today's issuances write neither (key-issuance.ts); this is for upgrades.
 * A token is looked up in the platform first: no key means the call never made one, and there is nothing to
 * settle. The Secret is read live, not from the cache: if it carries the pending key, the issuance completed
 * and only its confirmation was lost; otherwise the key never reached anyone and is revoked, so it cannot
 * linger as a working orphan.
 */
export async function settlePendingKey(
  kube: KubeClient,
  admin: PlatformAdmin,
  args: { tenantId: string; pendingKeyId?: string; pendingKeyToken?: string; namespace: string; secretName: string },
): Promise<PendingOutcome> {
  let keyId = args.pendingKeyId;
  if (!keyId && args.pendingKeyToken) keyId = (await admin.findKeyByClientToken(args.tenantId, args.pendingKeyToken))?.key_id;
  if (!keyId) return {};
  const live = await kube.get<SecretObject>(SECRET, args.namespace, args.secretName);
  if (secretKeyId(live) === keyId) return { confirmed: keyId };
  await admin.revokeKey(args.tenantId, keyId);
  return { revoked: keyId };
}

function b64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}
