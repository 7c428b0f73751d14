import { SECRET, type ResourceType } from '../kube/resources';
import type { Condition, KubeObject } from '../kube/types';
import { FIELD_MANAGER, isControlledBy } from '../runtime/apply';
import type { ReconcileResult } from '../runtime/controller';
import type { ControllerContext } from './context';
import { StaleCacheError, assertCurrent, secretKeyId, secretPlaintext, settlePendingKey } from './key-secret';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from './names';
import type { StatusSession } from './status-session';
import type { SecretObject } from './types';

/** The status fields of an object that keeps a platform key in a Secret of its own (Memory, ApiKey). */
interface KeyOwnerStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  keyId?: string;
  pendingKeyId?: string;
  pendingKeyToken?: string;
}

/**
 * Settles an issuance an operator of the earlier design interrupted (see `settlePendingKey`): `confirm` records a
 * key found in the Secret as the owner's current key, a key that never reached the Secret is revoked and reported,
 * and the status is written without the pending fields. The reconcile then starts over from the cache, which the
 * watch brings up to date with the live Secret.
 */
export async function settleInterruptedIssuance<S extends KeyOwnerStatus, T extends KubeObject & { status?: S }>(
  ctx: ControllerContext,
  s: StatusSession<S, T>,
  args: { rt: ResourceType; tenantId: string; secretName: string; confirm: (keyId: string) => Promise<void> | void },
): Promise<ReconcileResult> {
  const { status } = s;
  const namespace = String(s.obj.metadata.namespace);
  await assertCurrent(ctx.kube, args.rt, s.obj);
  const outcome = await settlePendingKey(ctx.kube, ctx.admin, {
    tenantId: args.tenantId,
    pendingKeyId: status.pendingKeyId,
    pendingKeyToken: status.pendingKeyToken,
    namespace,
    secretName: args.secretName,
  });
  if (outcome.confirmed) await args.confirm(outcome.confirmed);
  if (outcome.revoked) {
    ctx.logger.warn(
      { [args.rt.kind.toLowerCase()]: `${namespace}/${s.obj.metadata.name}`, key_id: outcome.revoked },
      'revoked a key whose Secret was never written (interrupted issuance)',
    );
    await ctx.events.record(s.obj, 'Warning', 'KeyRevoked', 'RecoverKey', `revoked key ${outcome.revoked}: an interrupted issuance never wrote it to Secret ${args.secretName}`);
  }
  status.pendingKeyId = undefined;
  status.pendingKeyToken = undefined;
  s.summarize({ state: 'progressing', reason: 'KeySettled', message: 'settled an interrupted key issuance' });
  await s.write();
  return { requeueAfterMs: 0 };
}

/**
 * The Secret as the API server has it, read just before issuing a key into it. Issuing is irreversible: only on
 * the newest state of the owner and of its Secret. The Secret is read live because the cache holds only Secrets
 * this operator manages: a user's Secret of the same name must be seen, and never overwritten (the reconcile ends
 * stalled with `conflict`). `started` is the live read when the caller began it early.
 */
export async function secretBeforeIssuing<S extends KeyOwnerStatus, T extends KubeObject & { status?: S }>(
  ctx: ControllerContext,
  s: StatusSession<S, T>,
  args: { rt: ResourceType; secretName: string; conflict: string; started?: Promise<SecretObject | undefined> },
): Promise<{ ok: true; live: SecretObject | undefined } | { ok: false; result: ReconcileResult }> {
  await assertCurrent(ctx.kube, args.rt, s.obj);
  const live = await (args.started ?? ctx.kube.get<SecretObject>(SECRET, String(s.obj.metadata.namespace), args.secretName));
  if (live && !isControlledBy(live, s.obj)) return { ok: false, result: (await s.stall('SecretConflict', args.conflict, 60_000))! };
  return { ok: true, live };
}

/**
 * The owner's Secret, read live, holds its current key while the cache lacks it (or holds an older copy). Either
 * the cache is a moment behind (StaleCacheError: retried once the watch catches up), or the Secret lost the label
 * the Secret informer selects on (someone removed or changed `app.kubernetes.io/managed-by`): then the cache will
 * never see it, so the desired Secret (the live plaintext, labels included) is applied again, which brings it back
 * into the cache, and a Warning event says so. A failed repair throws with what is wrong, for status to show.
 */
export async function repairUncachedSecret(
  ctx: ControllerContext,
  owner: KubeObject,
  live: SecretObject,
  desired: (plaintext: string) => SecretObject,
): Promise<SecretObject> {
  const name = `${live.metadata.namespace}/${live.metadata.name}`;
  if (live.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE) throw new StaleCacheError(`Secret ${name}`);
  const want = desired(secretPlaintext(live)!);
  let repaired: SecretObject;
  try {
    // Only that very Secret (its resourceVersion as a precondition): one replaced meanwhile is looked at again.
    repaired = await ctx.kube.apply(SECRET, { ...want, metadata: { ...want.metadata, resourceVersion: live.metadata.resourceVersion } }, FIELD_MANAGER);
  } catch (err) {
    throw new Error(
      `Secret ${name} holds key ${secretKeyId(live)} but lost its label ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}, so the operator no longer watches it; restoring the label failed: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  ctx.logger.warn({ owner: `${owner.kind} ${owner.metadata.namespace}/${owner.metadata.name}`, secret_name: name }, 'restored the label of an owned Secret');
  await ctx.events.record(
    owner,
    'Warning',
    'SecretRelabelled',
    'RepairSecret',
    `Secret ${live.metadata.name} had lost its label ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}; restored (the key in it is unchanged)`,
  );
  return repaired;
}
