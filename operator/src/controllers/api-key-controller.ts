import { API_KEY, SECRET } from '../kube/resources';
import type { AdminCreateKeyBody, KeyView } from '@lore/contracts';
import { isPlatformStatus } from '../platform/admin-client';
import { applyIfChanged, deleteIfPresent, isControlledBy } from '../runtime/apply';
import { READY, isConditionTrue, setCondition } from '../runtime/conditions';
import type { Reconcile, ReconcileResult } from '../runtime/controller';
import { KEY_ISSUED } from './condition-types';
import type { ControllerContext } from './context';
import { keySecret, keyState, secretKeyId, secretOwnership, secretPlaintext, secretProblem } from './key-secret';
import { repairUncachedSecret, secretBeforeIssuing, settleInterruptedIssuance } from './key-owner';
import { issueKeyIntoSecret, keysOfInterruptedIssuances, type IssuedKey } from './key-issuance';
import { API_KEY_FINALIZER, platformName } from './names';
import type { StatusSession } from './status-session';
import { servingTenant, tenantOfDeleted, tenantReconciler } from './tenant-reconciler';
import type { ApiKeyObject, ApiKeyStatus, MemoryObject, SecretObject } from './types';

type Session = StatusSession<ApiKeyStatus, ApiKeyObject>;

/** Keys whose Memory is involved: used to requeue ApiKeys when a Memory changes. */
export function apiKeysReferencing(keys: ApiKeyObject[], memory: MemoryObject): string[] {
  const ns = memory.metadata.namespace;
  const name = memory.metadata.name;
  return keys
    .filter((k) => k.metadata.namespace === ns && (k.spec?.memoryRef?.name === name || (k.spec?.scopes?.memories ?? []).includes(String(name))))
    .map((k) => `${k.metadata.namespace}/${k.metadata.name}`);
}

/**
 * ApiKey → a platform key with the spec's options; its plaintext is written once per issued key into the named
 * Secret. Changing spec.rotationRequest rotates (the previous key keeps working for the overlap); deleting the
 * ApiKey revokes every key it issued at once.
 */
export function apiKeyReconciler(ctx: ControllerContext): Reconcile {
  return tenantReconciler<ApiKeyStatus, ApiKeyObject>(ctx, {
    rt: API_KEY,
    finalizer: API_KEY_FINALIZER,
    cache: (c) => c.caches.apiKeys,
    tombstones: (c) => c.tombstones.apiKeys,
    apply: issue,
    cleanup: cleanupApiKey,
  });
}

async function issue(ctx: ControllerContext, s: Session, now: Date): Promise<ReconcileResult | void> {
  const obj = s.obj;
  const spec = obj.spec!;
  const namespace = String(obj.metadata.namespace);
  const status = s.status;
  const wasReady = isConditionTrue(obj.status?.conditions, READY);

  const tenant = await servingTenant(
    ctx,
    s,
    (recorded, current) => `this key was issued in tenant ${recorded} but namespace ${namespace} now names tenant ${current}; delete and recreate the ApiKey`,
  );
  if (!tenant.ok) return tenant.result;
  const tenantId = tenant.tenantId;
  status.tenantId = tenantId;
  // The schema's pattern takes 2030-02-30; a date that is none is refused, not moved to the next month.
  if (spec.expiresAt !== undefined && !isCalendarDateTime(spec.expiresAt)) {
    return s.stall('Rejected', `spec.expiresAt ${spec.expiresAt} is not a date and time that exists`);
  }

  // Memories named by the spec must be provisioned first; their events requeue this key.
  let memoryId: string | undefined;
  if (spec.type === 'memory') {
    const memory = ctx.caches.memories.get(namespace, spec.memoryRef!.name);
    const waiting = memoryProblem(memory, spec.memoryRef!.name, tenantId);
    if (waiting) {
      // The platform revoked the keys of a deleted memory: the key in the Secret no longer works.
      if (waiting.reason === 'MemoryNotFound' && status.keyId && isConditionTrue(status.conditions, KEY_ISSUED)) {
        status.conditions = setCondition(
          status.conditions,
          { type: KEY_ISSUED, status: 'False', reason: 'MemoryNotFound', message: `key ${status.keyId} belonged to a memory that no longer exists; its keys are revoked` },
          s.generation,
          now,
        );
      }
      return waitFor(s, waiting);
    }
    memoryId = memory!.status!.memoryId;
    status.memoryId = memoryId;
    status.hostname = memory!.status!.hostname;
  }
  const scopedMemoryIds: string[] = [];
  for (const m of spec.scopes?.memories ?? []) {
    const memory = ctx.caches.memories.get(namespace, m);
    const waiting = memoryProblem(memory, m, tenantId);
    if (waiting) return waitFor(s, waiting);
    scopedMemoryIds.push(memory!.status!.memoryId!);
  }

  const secret = ctx.caches.secrets.get(namespace, spec.secretName);
  const conflict = `Secret ${spec.secretName} exists and is not managed by this ApiKey; delete it or choose another secretName`;
  if (secretOwnership(secret, obj) === 'foreign') return s.stall('SecretConflict', conflict);
  const extra: Record<string, string> = { type: spec.type };
  if (memoryId) extra['memory-id'] = memoryId;
  if (status.hostname && spec.type === 'memory') extra.hostname = status.hostname;

  // An interrupted issuance first (known by its key id, or only by the token sent with the call): confirm it if
  // its Secret was written, otherwise revoke it.
  if (status.pendingKeyId || status.pendingKeyToken) {
    return settleInterruptedIssuance(ctx, s, {
      rt: API_KEY,
      tenantId,
      secretName: spec.secretName,
      confirm: async (keyId) => {
        // Confirming completes whatever issuance it was, including a rotation.
        if (status.keyId && status.keyId !== keyId) {
          const previous = await ctx.admin.getKey(tenantId, status.keyId);
          status.previousKeyId = status.keyId;
          status.previousKeyExpiresAt = previous?.expires_at ?? undefined;
        }
        status.keyId = keyId;
        status.lastRotationRequest = spec.rotationRequest;
      },
    });
  }

  // What is wrong with the key in the Secret, if anything.
  let need: ReturnType<typeof secretProblem> | 'KeyMissing' | 'KeyRevoked' | 'Rotation' = secretProblem(status.keyId, secret);
  let current: KeyView | undefined;
  if (!need) {
    current = await ctx.admin.getKey(tenantId, status.keyId!);
    const state = keyState(current, now);
    if (state === 'missing') need = 'KeyMissing';
    else if (state === 'revoked') need = 'KeyRevoked';
    else if (state === 'expired') {
      // A spec.expiresAt in the past cannot be issued again (it cannot change either): only a new ApiKey helps.
      const pastExpiry = spec.expiresAt !== undefined && Date.parse(spec.expiresAt) <= now.getTime();
      if (pastExpiry) return s.stall('KeyExpired', `key ${status.keyId} expired at ${current?.expires_at}, its spec.expiresAt, which cannot change; delete the ApiKey and create it again with a later expiresAt`);
      if ((spec.rotationRequest ?? '') !== (status.lastRotationRequest ?? '')) need = 'KeyMissing';
      else return s.stall('KeyExpired', `key ${status.keyId} expired at ${current?.expires_at}; change spec.rotationRequest to issue a new one, or delete the ApiKey`);
    } else if (!sameMembers(current?.scopes.memories ?? [], scopedMemoryIds)) {
      // A Memory of its scope was deleted and made again (a new id), or the platform took a deleted one out of the
      // key's scope: the key no longer reaches what the spec names. Scopes are fixed at issue, so the key is
      // revoked and a fresh one issued with the memories' ids now.
      await ctx.admin.revokeKey(tenantId, status.keyId!);
      await ctx.events.record(obj, 'Normal', 'KeyReissued', 'Reissue', `key ${status.keyId} named memories that are gone; issuing a key for the Memories now named`);
      need = 'KeyRevoked';
    } else if ((spec.rotationRequest ?? '') !== (status.lastRotationRequest ?? '')) need = 'Rotation';
  }

  if (!need) {
    await applyIfChanged(ctx.kube, SECRET, keySecret(obj, spec.secretName, secretPlaintext(secret)!, status.keyId!, extra), secret);
    return finish(ctx, s, { wasReady, current, now });
  }

  const read = await secretBeforeIssuing(ctx, s, { rt: API_KEY, secretName: spec.secretName, conflict });
  if (!read.ok) return read.result;
  const live = read.live;
  let oldUsable = false;
  if (status.keyId && need !== 'NotIssued' && need !== 'KeyMissing' && need !== 'KeyRevoked') {
    if ((need === 'SecretMissing' || need === 'SecretMismatch') && secretKeyId(live) === status.keyId && secretPlaintext(live)) {
      await repairUncachedSecret(ctx, obj, live!, (plaintext) => keySecret(obj, spec.secretName, plaintext, status.keyId!, extra));
      // The watch brings the relabelled Secret into the cache; the next reconcile checks the key in it.
      return { requeueAfterMs: 1_000 };
    }
    oldUsable = keyState(current ?? (await ctx.admin.getKey(tenantId, status.keyId)), now) === 'usable';
  }

  // Nothing is written before the platform call: see key-issuance.ts for how a crash at any step is found.
  let issued: IssuedKey;
  try {
    issued = await issueKeyIntoSecret(ctx, {
      tenantId,
      owner: obj,
      base: status.keyId,
      baseUsable: oldUsable,
      overlapSeconds: spec.rotationOverlapSeconds ?? 3600,
      options: keyOptions(obj, memoryId, scopedMemoryIds),
      secretName: spec.secretName,
      live,
      extra,
    });
  } catch (err) {
    // A refusal of a fresh key's options made no key: the spec has to change.
    if (!oldUsable && (isPlatformStatus(err, 400) || isPlatformStatus(err, 422))) return s.stall('Rejected', `the platform refused the key options: ${(err as Error).message}`);
    throw err;
  }

  const previous = status.keyId;
  status.keyId = issued.key_id;
  status.lastRotationRequest = spec.rotationRequest;
  let replaced = issued.replaced;
  if (!replaced && issued.recovered && previous && previous !== issued.key_id) {
    // A confirmed interrupted issuance does not say whether it rotated: the old key does, by still working.
    const old = await ctx.admin.getKey(tenantId, previous);
    if (keyState(old, now) === 'usable' && old?.replaced_by === issued.key_id) replaced = { id: previous, expiresAt: old.expires_at };
  }
  if (replaced) {
    status.previousKeyId = replaced.id;
    status.previousKeyExpiresAt = replaced.expiresAt ?? undefined;
    status.rotatedAt = now.toISOString();
  } else if (previous && previous !== issued.key_id) {
    // A fresh key replaced a dead one: nothing left to overlap.
    status.previousKeyId = undefined;
    status.previousKeyExpiresAt = undefined;
  }
  const record = await ctx.admin.getKey(tenantId, issued.key_id);
  if (!issued.recovered) {
    await ctx.events.record(
      s.obj,
      'Normal',
      need === 'Rotation' ? 'KeyRotated' : 'KeyIssued',
      need === 'Rotation' ? 'RotateKey' : 'IssueKey',
      need === 'Rotation'
        ? `rotated: key ${issued.key_id} is in Secret ${spec.secretName}; ${previous} keeps working until ${status.previousKeyExpiresAt ?? 'now'}`
        : `issued key ${issued.key_id} into Secret ${spec.secretName}${previous ? ` (${need}; replaced ${previous})` : ''}`,
    );
  }
  return finish(ctx, s, { wasReady, current: record, now });
}

/** The platform options of the key the spec describes (Memory names resolved to memory ids). */
function keyOptions(obj: ApiKeyObject, memoryId: string | undefined, scopedMemoryIds: string[]): Omit<AdminCreateKeyBody, 'client_token'> {
  const spec = obj.spec!;
  const body: Omit<AdminCreateKeyBody, 'client_token'> = { type: spec.type, name: spec.displayName ?? platformName('', String(obj.metadata.namespace), String(obj.metadata.name)) };
  if (memoryId) body.memory_id = memoryId;
  if (spec.scopes) {
    const scopes: NonNullable<AdminCreateKeyBody['scopes']> = {};
    if (spec.scopes.modules?.length) scopes.modules = spec.scopes.modules;
    if (scopedMemoryIds.length) scopes.memories = scopedMemoryIds;
    if (spec.scopes.access) scopes.access = spec.scopes.access;
    if (Object.keys(scopes).length) body.scopes = scopes;
  }
  if (spec.ipAllowlist?.length) body.ip_allowlist = spec.ipAllowlist;
  if (spec.appPermissions && Object.keys(spec.appPermissions).length) body.app_permissions = spec.appPermissions;
  if (spec.expiresAt) body.expires_at = new Date(spec.expiresAt).toISOString();
  return body;
}

/** Final status of a key in place, and when to look again (end of the overlap, expiry). */
async function finish(ctx: ControllerContext, s: Session, args: { wasReady: boolean; current: KeyView | undefined; now: Date }): Promise<ReconcileResult | void> {
  const { status } = s;
  const { now } = args;
  if (args.current?.prefix) status.prefix = String(args.current.prefix);
  status.expiresAt = args.current?.expires_at ?? undefined;
  let requeueAt: number | undefined;
  if (status.previousKeyExpiresAt) {
    const end = Date.parse(status.previousKeyExpiresAt);
    if (end <= now.getTime()) {
      status.previousKeyId = undefined;
      status.previousKeyExpiresAt = undefined;
    } else requeueAt = end;
  }
  if (status.expiresAt) {
    const exp = Date.parse(status.expiresAt);
    requeueAt = requeueAt === undefined ? exp : Math.min(requeueAt, exp);
  }
  status.conditions = setCondition(
    status.conditions,
    { type: KEY_ISSUED, status: 'True', reason: 'KeyInSecret', message: `key ${status.keyId} is in Secret ${s.obj.spec!.secretName}` },
    s.generation,
    now,
  );
  s.summarize({ state: 'ready', reason: 'KeyIssued', message: `key ${status.keyId} is in Secret ${s.obj.spec!.secretName}` });
  await s.write();
  if (!args.wasReady) await ctx.events.record(s.obj, 'Normal', 'Ready', 'IssueKey', `key ${status.keyId} is ready in Secret ${s.obj.spec!.secretName}`);
  if (requeueAt === undefined) return undefined;
  // Wake up just after the moment (capped so a far expiry still gets looked at daily).
  return { requeueAfterMs: Math.min(Math.max(requeueAt - now.getTime() + 500, 500), 24 * 3600_000) };
}

function memoryProblem(memory: MemoryObject | undefined, name: string, tenantId: string): { reason: string; message: string } | undefined {
  if (!memory || memory.metadata.deletionTimestamp) return { reason: 'MemoryNotFound', message: `Memory ${name} does not exist in this namespace` };
  if (!memory.status?.memoryId || !isConditionTrue(memory.status.conditions, READY)) {
    return { reason: 'MemoryNotReady', message: `waiting for Memory ${name} to become Ready` };
  }
  if (memory.status.tenantId !== tenantId) return { reason: 'MemoryNotFound', message: `Memory ${name} belongs to another tenant` };
  return undefined;
}

async function waitFor(s: Session, problem: { reason: string; message: string }): Promise<ReconcileResult | void> {
  s.summarize({ state: 'progressing', reason: problem.reason, message: problem.message });
  await s.write();
}

async function cleanupApiKey(ctx: ControllerContext, obj: ApiKeyObject): Promise<{ done: boolean }> {
  const namespace = String(obj.metadata.namespace);
  const status = obj.status ?? {};
  const tenantId = tenantOfDeleted(ctx, obj);
  const ids = [status.keyId, status.previousKeyId, status.pendingKeyId].filter((x): x is string => !!x);
  if (tenantId) {
    // Keys of an issuance interrupted before anything in Kubernetes named them are found by their tokens: the
    // derived ones, and the recorded one of an operator of the earlier design.
    const found = await keysOfInterruptedIssuances(ctx, tenantId, obj, status.keyId);
    if (status.pendingKeyToken) {
      const legacy = await ctx.admin.findKeyByClientToken(tenantId, status.pendingKeyToken);
      if (legacy) found.push(legacy.key_id);
    }
    for (const id of found) if (!ids.includes(id)) ids.push(id);
  }
  if (tenantId) for (const id of ids) await ctx.admin.revokeKey(tenantId, id);
  if (ids.length && tenantId) await ctx.events.record(obj, 'Normal', 'KeyRevoked', 'RevokeKey', `revoked ${ids.join(', ')}`);
  const secretName = obj.spec?.secretName;
  // Read live when the cache lacks it: a Secret written a moment ago, or one that lost its label, is deleted too.
  const secret = secretName ? (ctx.caches.secrets.get(namespace, secretName) ?? (await ctx.kube.get<SecretObject>(SECRET, namespace, secretName))) : undefined;
  if (secret && secretName && isControlledBy(secret, obj)) await deleteIfPresent(ctx.kube, SECRET, namespace, secretName, secret.metadata.uid);
  return { done: true };
}

/** Whether two lists of ids hold the same ids, in any order. */
function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  const x = new Set(a);
  return x.size === new Set(b).size && b.every((id) => x.has(id));
}

/** Whether an RFC 3339 date-time names a day and time that exist (no 30 February, no hour 24). */
export function isCalendarDateTime(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})/.exec(value);
  if (!m) return !Number.isNaN(Date.parse(value));
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, se));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d && t.getUTCHours() === h && t.getUTCMinutes() === mi && t.getUTCSeconds() === se;
}
