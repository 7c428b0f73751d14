import { INGRESS, MEMORY, SECRET } from '../kube/resources';
import { isPlatformStatus } from '../platform/admin-client';
import { applyIfChanged, deleteIfPresent, isControlledBy } from '../runtime/apply';
import { READY, isConditionTrue, removeCondition, setCondition } from '../runtime/conditions';
import type { Reconcile, ReconcileResult } from '../runtime/controller';
import { INGRESS_READY, KEY_ISSUED, PROVISIONED } from './condition-types';
import type { ControllerContext } from './context';
import { keySecret, keyState, secretKeyId, secretOwnership, secretPlaintext, secretProblem } from './key-secret';
import { repairUncachedSecret, secretBeforeIssuing, settleInterruptedIssuance } from './key-owner';
import { issueKeyIntoSecret } from './key-issuance';
import { memoryIngress } from './memory-ingress';
import { MEMORY_FINALIZER, defaultKeySecretName, hostnameProblem, ingressNameFor, memoryHostname, memoryIdFor, platformName } from './names';
import type { StatusSession } from './status-session';
import { servingTenant, tenantOfDeleted, tenantReconciler } from './tenant-reconciler';
import type { MemoryObject, MemoryStatus, SecretObject } from './types';


type Session = StatusSession<MemoryStatus, MemoryObject>;

/**
 * Memory → a memory in the platform, its hostname, an Ingress in the gateway's namespace routing the host to
 * the gateway, and a Secret with an mk_ key. Deleting the Memory deprovisions it (data kept or erased as
 * configured), revokes its keys and removes the Ingress and Secret; all through a finalizer the reconcile code
 * never touches.
 */
export function memoryReconciler(ctx: ControllerContext): Reconcile {
  return tenantReconciler<MemoryStatus, MemoryObject>(ctx, {
    rt: MEMORY,
    finalizer: MEMORY_FINALIZER,
    cache: (c) => c.caches.memories,
    tombstones: (c) => c.tombstones.memories,
    apply: provision,
    cleanup: cleanupMemory,
  });
}

async function provision(ctx: ControllerContext, s: Session, now: Date): Promise<ReconcileResult | void> {
  const obj = s.obj;
  const namespace = String(obj.metadata.namespace);
  const name = String(obj.metadata.name);
  const uid = String(obj.metadata.uid);
  const status = s.status;
  const wasReady = isConditionTrue(obj.status?.conditions, READY);

  // 1. Tenant, from the namespace only.
  const tenant = await servingTenant(
    ctx,
    s,
    (recorded, current) =>
      `this memory lives in tenant ${recorded} but namespace ${namespace} now names tenant ${current}; restore the namespace's tenant, or delete and recreate the Memory`,
  );
  if (!tenant.ok) return tenant.result;
  const tenantId = tenant.tenantId;

  // A key will be issued (first issuance, or its Secret is gone): the live read of the Secret that must precede
  // it starts now, alongside the platform call.
  const secretName = obj.spec?.keySecretName ?? defaultKeySecretName(name);
  // A name the API server refuses for a Secret would make a key on every retry, each revoked later: said once.
  if (secretName.length > 253) {
    return s.stall('Rejected', `the key's Secret name ${secretName.slice(0, 40)}… is longer than 253 characters: set spec.keySecretName`);
  }
  const secret = ctx.caches.secrets.get(namespace, secretName);
  const settling = !!(status.pendingKeyId || status.pendingKeyToken);
  const liveSecret = !settling && (!status.keyId || !secret) ? ctx.kube.get<SecretObject>(SECRET, namespace, secretName) : undefined;
  liveSecret?.catch(() => undefined);

  // 2. The memory in the platform (idempotent: its id derives from the object's uid).
  const memoryId = status.memoryId ?? memoryIdFor(uid);
  const hostname = memoryHostname(obj.spec, name, namespace, ctx.settings.baseDomain);
  if (obj.spec?.hostname) {
    const problem = hostnameProblem(obj.spec.hostname, name, namespace, ctx.settings.baseDomain, ctx.settings.hostnameDomains);
    if (problem) return s.stall('HostnameNotAllowed', problem);
  }
  let record;
  try {
    record = await ctx.admin.putMemory(tenantId, memoryId, {
      name: obj.spec?.displayName ?? platformName('', namespace, name),
      hostname,
      ...(obj.spec?.workspaceId ? { workspace_id: obj.spec.workspaceId } : {}),
    });
  } catch (err) {
    if (isPlatformStatus(err, 409)) {
      return s.stall('HostnameConflict', `hostname ${hostname} cannot be used (${err.message}); choose another spec.hostname`, 5 * 60_000);
    }
    if (isPlatformStatus(err, 400) || isPlatformStatus(err, 422)) return s.stall('Rejected', `the platform refused the memory: ${err.message}`);
    // The tenant exists (it was just ensured): what the platform does not know is the spec's workspace, which only a
    // spec change mends.
    if (isPlatformStatus(err, 404) && obj.spec?.workspaceId) {
      return s.stall('WorkspaceNotFound', `spec.workspaceId ${obj.spec.workspaceId} names no workspace of tenant ${tenantId}: ${err.message}`);
    }
    throw err;
  }
  const previousHostname = status.hostname;
  Object.assign(status, { tenantId, memoryId, hostname: record.hostname || hostname, workspaceId: record.workspace_id });
  // The platform moved the memory: its old hostname is free for a Memory that waits for it.
  if (previousHostname && previousHostname !== status.hostname) ctx.onHostnameFreed?.();
  status.conditions = setCondition(
    status.conditions,
    { type: PROVISIONED, status: 'True', reason: 'Provisioned', message: `memory ${memoryId} exists in tenant ${tenantId}` },
    s.generation,
    now,
  );

  // 3 and 4, side by side (independent): the mk_ key in its Secret, and the Ingress routing the hostname.
  status.keySecretName = secretName;
  if (secretOwnership(secret, obj) === 'foreign') return s.stall('SecretConflict', secretConflict(secretName));
  const [keyOutcome] = await Promise.all([
    ensureMemoryKey(ctx, s, { tenantId, memoryId, hostname: status.hostname!, secretName, secret, liveSecret, now }),
    ensureIngress(ctx, s, now),
  ]);
  if (keyOutcome) return keyOutcome;
  status.conditions = setCondition(
    status.conditions,
    { type: KEY_ISSUED, status: 'True', reason: 'KeyInSecret', message: `mk_ key ${status.keyId} is in Secret ${secretName}` },
    s.generation,
    now,
  );

  s.summarize({ state: 'ready', reason: 'Provisioned', message: `memory ${memoryId} is served on ${status.hostname}` });
  await s.write();
  if (!wasReady) await ctx.events.record(s.obj, 'Normal', 'Ready', 'Provision', `memory ${memoryId} is served on ${status.hostname}`);
}

/** The Ingress routing the memory's hostname to the gateway, in the gateway's namespace (or none, if disabled). */
async function ensureIngress(ctx: ControllerContext, s: Session, now: Date): Promise<void> {
  const obj = s.obj;
  const status = s.status;
  const ingressName = ingressNameFor(String(obj.metadata.namespace), String(obj.metadata.name), String(obj.metadata.uid));
  const gatewayNs = ctx.settings.gatewayNamespace;
  if (obj.spec?.ingress?.enabled === false) {
    if (ctx.caches.ingresses.get(gatewayNs, ingressName)) await deleteIfPresent(ctx.kube, INGRESS, gatewayNs, ingressName);
    status.ingressName = undefined;
    status.conditions = removeCondition(status.conditions, INGRESS_READY);
    return;
  }
  const desired = memoryIngress(obj, ingressName, status.hostname!, ctx.settings);
  await applyIfChanged(ctx.kube, INGRESS, desired, ctx.caches.ingresses.get(gatewayNs, ingressName));
  status.ingressName = ingressName;
  status.conditions = setCondition(
    status.conditions,
    {
      type: INGRESS_READY,
      status: 'True',
      reason: 'Configured',
      message: `Ingress ${gatewayNs}/${ingressName} routes ${status.hostname} to Service ${ctx.settings.gatewayServiceName}`,
    },
    s.generation,
    now,
  );
}

/**
 * Makes the Secret hold a working mk_ key of this memory. Returns a result to end the reconcile early, or
 * undefined when the key is in place (status.keyId set; the caller's status write confirms it). A new key is
 * issued by the protocol ApiKey uses too (`issueKeyIntoSecret`): platform call with a token derived from the
 * status, Secret, then the caller's final status write records the id as keyId. A status still carrying pendingKeyId or pendingKeyToken (written by an operator of the
 * earlier design, which recorded a random token first) is settled by `settlePendingKey`.
 */
async function ensureMemoryKey(
  ctx: ControllerContext,
  s: Session,
  args: {
    tenantId: string;
    memoryId: string;
    hostname: string;
    secretName: string;
    secret: SecretObject | undefined;
    /** The Secret read live, when the read was started early. */
    liveSecret?: Promise<SecretObject | undefined>;
    now: Date;
  },
): Promise<ReconcileResult | undefined> {
  const { tenantId, memoryId, hostname, secretName, secret, now } = args;
  const status = s.status;
  const namespace = String(s.obj.metadata.namespace);
  const name = String(s.obj.metadata.name);
  const extra = { hostname, 'memory-id': memoryId };

  if (status.pendingKeyId || status.pendingKeyToken) {
    return settleInterruptedIssuance(ctx, s, {
      rt: MEMORY,
      tenantId,
      secretName,
      confirm: (keyId) => {
        status.keyId = keyId;
      },
    });
  }

  let need: string | undefined = secretProblem(status.keyId, secret);
  if (!need) {
    const state = keyState(await ctx.admin.getKey(tenantId, status.keyId!), now);
    if (state !== 'usable') need = `Key${state[0]!.toUpperCase()}${state.slice(1)}`;
  }
  if (!need) {
    // The key is fine: keep the Secret's metadata and public data as desired (repairs edited labels, a moved host).
    await applyIfChanged(ctx.kube, SECRET, keySecret(s.obj, secretName, secretPlaintext(secret)!, status.keyId!, extra), secret);
    return undefined;
  }

  const read = await secretBeforeIssuing(ctx, s, { rt: MEMORY, secretName, conflict: secretConflict(secretName), started: args.liveSecret });
  if (!read.ok) return read.result;
  const live = read.live;
  let oldUsable = false;
  if (status.keyId && (need === 'SecretMissing' || need === 'SecretMismatch')) {
    if (secretKeyId(live) === status.keyId && secretPlaintext(live)) {
      await repairUncachedSecret(ctx, s.obj, live!, (plaintext) => keySecret(s.obj, secretName, plaintext, status.keyId!, extra));
      // The watch brings the relabelled Secret into the cache; the next reconcile checks the key in it.
      return { requeueAfterMs: 1_000 };
    }
    oldUsable = keyState(await ctx.admin.getKey(tenantId, status.keyId), now) === 'usable';
  }

  // Nothing is written before the platform call: see key-issuance.ts for how a crash at any step is found.
  const issued = await issueKeyIntoSecret(ctx, {
    tenantId,
    owner: s.obj,
    base: status.keyId,
    baseUsable: oldUsable,
    overlapSeconds: ctx.settings.memoryKeyOverlapSeconds,
    options: { type: 'memory', name: platformName('k8s ', namespace, name), memory_id: memoryId },
    secretName,
    live,
    extra,
  });
  const previous = status.keyId;
  status.keyId = issued.key_id;
  if (issued.recovered) return undefined;
  await ctx.events.record(
    s.obj,
    'Normal',
    'KeyIssued',
    'IssueKey',
    previous ? `issued mk_ key ${issued.key_id} into Secret ${secretName} (${need}; replaced ${previous})` : `issued mk_ key ${issued.key_id} into Secret ${secretName}`,
  );
  return undefined;
}

async function cleanupMemory(ctx: ControllerContext, obj: MemoryObject): Promise<{ done: boolean }> {
  const namespace = String(obj.metadata.namespace);
  const name = String(obj.metadata.name);
  const status = obj.status ?? {};
  const tenantId = tenantOfDeleted(ctx, obj);
  if (tenantId) {
    const memoryId = status.memoryId ?? memoryIdFor(String(obj.metadata.uid));
    const retain = (obj.spec?.dataRetention ?? ctx.settings.defaultDataRetention) === 'Retain';
    await ctx.admin.deleteMemory(tenantId, memoryId, retain);
    ctx.onHostnameFreed?.();
    // The platform revokes a deleted memory's keys; revoking ours explicitly costs little and leaves no doubt.
    for (const keyId of [status.keyId, status.pendingKeyId]) if (keyId) await ctx.admin.revokeKey(tenantId, keyId);
    await ctx.events.record(obj, 'Normal', 'Deprovisioned', 'Deprovision', `memory ${memoryId} deleted (data ${retain ? 'retained' : 'erased'}); its keys are revoked`);
  }
  await deleteIfPresent(ctx.kube, INGRESS, ctx.settings.gatewayNamespace, status.ingressName ?? ingressNameFor(namespace, name, String(obj.metadata.uid)));
  const secretName = status.keySecretName ?? obj.spec?.keySecretName ?? defaultKeySecretName(name);
  // Read live when the cache lacks it: a Secret written a moment ago, or one that lost its label, is deleted too.
  const secret = ctx.caches.secrets.get(namespace, secretName) ?? (await ctx.kube.get<SecretObject>(SECRET, namespace, secretName));
  if (secret && isControlledBy(secret, obj)) await deleteIfPresent(ctx.kube, SECRET, namespace, secretName, secret.metadata.uid);
  return { done: true };
}

function secretConflict(secretName: string): string {
  return `Secret ${secretName} exists and is not managed by this Memory; delete it or set spec.keySecretName`;
}
