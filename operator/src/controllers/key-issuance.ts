import type { AdminCreateKeyBody } from '@lore/contracts';
import { isAlreadyExists, isConflict, isNotFound } from '../kube/errors';
import { SECRET } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import { isPlatformStatus, replayedKeyId } from '../platform/admin-client';
import { FIELD_MANAGER, applyIfChanged } from '../runtime/apply';
import type { ControllerContext } from './context';
import { issuanceToken, keySecret, secretKeyId, secretPlaintext } from './key-secret';
import type { SecretObject } from './types';

/**
 * The one key issuance protocol of the operator, for Memory (its mk_ key) and ApiKey alike.
 *
 * Nothing is written before the platform call. The client token of each attempt derives from what status already
 * records (`issuanceToken`: the owner's uid, the key the issuance replaces, the attempt number), so a process that
 * dies after the platform made a key, before the Secret or status names it, computes the same token on its next
 * reconcile; the repeated call answers 409 with that key's id (`replayedKeyId`). If the live Secret holds that
 * key, only the confirmation was lost and the key is the result; otherwise its plaintext is lost, so it is revoked
 * and the next attempt's token is used. Order of a successful issuance: platform call, Secret, then the caller's
 * one status write naming the key.
 */

/** Keys of one base an issuance walks through at most: each step past the first is a key a crash left behind. */
export const MAX_ISSUANCE_ATTEMPTS = 20;

export interface IssueKeyArgs {
  tenantId: string;
  /** The Memory or ApiKey the key belongs to: its uid seeds the tokens, its Secret gets a controller reference. */
  owner: KubeObject;
  /** The key being replaced, as status records it (undefined for a first key). */
  base: string | undefined;
  /** Whether `base` still authenticates: then the issuance rotates it, so holders keep working for the overlap. */
  baseUsable: boolean;
  overlapSeconds: number;
  /** The options of a fresh key; the client token is added per attempt. */
  options: Omit<AdminCreateKeyBody, 'client_token'>;
  secretName: string;
  /** The Secret as read live just before issuing (the cache may be behind). */
  live: SecretObject | undefined;
  /** Public data written beside the plaintext (key type, memory id, hostname...). */
  extra: Record<string, string>;
}

export interface IssuedKey {
  key_id: string;
  /** Set when the platform rotated `base`: the old key works until `expiresAt`. */
  replaced?: { id: string; expiresAt: string | null };
  /** The key an interrupted issuance had already written to the Secret: nothing new was made. */
  recovered: boolean;
}

/** Issues a key by the protocol above and writes it to the Secret. The caller records `key_id` in status. */
export async function issueKeyIntoSecret(ctx: ControllerContext, args: IssueKeyArgs): Promise<IssuedKey> {
  const { tenantId, owner, base, secretName, live, extra } = args;
  const who = `${owner.kind} ${owner.metadata.namespace}/${owner.metadata.name}`;
  const uid = String(owner.metadata.uid);

  const createFresh = async (token: string): Promise<{ key_id: string; key: string }> => {
    const c = await ctx.admin.createKey(tenantId, { ...args.options, client_token: token });
    return { key_id: c.key_id, key: c.key };
  };
  const rotateOrCreate = async (token: string): Promise<{ key_id: string; key: string; replaced?: IssuedKey['replaced'] }> => {
    if (!args.baseUsable || !base) return createFresh(token);
    try {
      const r = await ctx.admin.rotateKey(tenantId, base, args.overlapSeconds, token);
      return { key_id: r.key_id, key: r.key, replaced: { id: r.replaced_key_id, expiresAt: r.replaced_key_expires_at } };
    } catch (err) {
      // A replay is answered before anything else: the key this token made is the answer.
      if (replayedKeyId(err)) throw err;
      // Gone, or already rotated by an interrupted attempt: a fresh key does it (the refused rotation made no key,
      // so the token is still unused).
      if (!isPlatformStatus(err, 404) && !isPlatformStatus(err, 409)) throw err;
      return createFresh(token);
    }
  };

  for (let attempt = 0; attempt < MAX_ISSUANCE_ATTEMPTS; attempt++) {
    let made: { key_id: string; key: string; replaced?: IssuedKey['replaced'] };
    try {
      made = await rotateOrCreate(issuanceToken(uid, base, attempt));
    } catch (err) {
      const earlier = replayedKeyId(err);
      if (!earlier) throw err;
      if (secretKeyId(live) === earlier && secretPlaintext(live)) {
        ctx.logger.info({ owner: who, key_id: earlier }, 'confirmed the key an interrupted issuance wrote to the Secret');
        await applyIfChanged(ctx.kube, SECRET, keySecret(owner, secretName, secretPlaintext(live)!, earlier, extra), live);
        return { key_id: earlier, recovered: true };
      }
      await ctx.admin.revokeKey(tenantId, earlier);
      ctx.logger.warn({ owner: who, key_id: earlier }, 'revoked a key whose Secret was never written (interrupted issuance)');
      await ctx.events.record(owner, 'Warning', 'KeyRevoked', 'RecoverKey', `revoked key ${earlier}: an interrupted issuance never wrote it to Secret ${secretName}`);
      continue;
    }
    ctx.hooks?.afterKeyCreated?.();
    const secret = keySecret(owner, secretName, made.key, made.key_id, extra);
    try {
      // A Secret that was not there when read is created, never applied: another owner's that appeared meanwhile
      // (two ApiKeys naming one Secret, applied together) must not be taken over. One that was there is written only
      // if it is still that one (its resourceVersion as a precondition): deleted and made again by someone else
      // while the platform call ran, it is theirs.
      if (live) await ctx.kube.apply(SECRET, { ...secret, metadata: { ...secret.metadata, resourceVersion: live.metadata.resourceVersion } }, FIELD_MANAGER);
      else await ctx.kube.create(SECRET, secret);
    } catch (err) {
      if (live ? !(isConflict(err) || isNotFound(err)) : !isAlreadyExists(err)) throw err;
      // The key just made has no Secret to live in: revoked, and the next reconcile finds the Secret another's
      // (SecretConflict).
      await ctx.admin.revokeKey(tenantId, made.key_id);
      ctx.logger.warn({ owner: who, key_id: made.key_id, secret_name: secretName }, 'revoked a new key: its Secret was replaced or created by another owner meanwhile');
      throw new Error(`Secret ${secretName} was replaced or created by another owner while ${who} issued its key; key ${made.key_id} was revoked`);
    }
    ctx.hooks?.afterSecretWritten?.();
    return { key_id: made.key_id, recovered: false, ...(made.replaced ? { replaced: made.replaced } : {}) };
  }
  throw new Error(`${MAX_ISSUANCE_ATTEMPTS} issuance attempts for ${who} all found keys of interrupted issuances; retrying`);
}

/**
 * Keys that issuances from `base` made and nothing in Kubernetes names (a crash after the platform call): the
 * attempts' tokens are walked in order until one made no key. Used on delete, so no such key outlives its owner.
 */
export async function keysOfInterruptedIssuances(ctx: ControllerContext, tenantId: string, owner: KubeObject, base: string | undefined): Promise<string[]> {
  const found: string[] = [];
  for (let attempt = 0; attempt < MAX_ISSUANCE_ATTEMPTS; attempt++) {
    const key = await ctx.admin.findKeyByClientToken(tenantId, issuanceToken(String(owner.metadata.uid), base, attempt));
    if (!key) break;
    found.push(key.key_id);
  }
  return found;
}
