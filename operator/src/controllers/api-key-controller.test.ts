import { API_KEY, MEMORY, NAMESPACE, SECRET } from '../kube/resources';
import { PlatformError } from '../platform/admin-client';
import { controllerFixture, namespace, settle } from '../testing/controller-fixture';
import { apiKeyReconciler, apiKeysReferencing, isCalendarDateTime } from './api-key-controller';
import { issuanceToken } from './key-secret';
import { memoryReconciler } from './memory-controller';
import type { ApiKeyObject, MemoryObject, SecretObject } from './types';

function apiKey(name: string, ns: string, spec: ApiKeyObject['spec']): ApiKeyObject {
  return { apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name, namespace: ns }, spec };
}
const cond = (o: ApiKeyObject | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);
const secretKeyId = (s: SecretObject | undefined) => Buffer.from(s!.data!['key-id']!, 'base64').toString();

/** A fixture with one ApiKey of namespace `team` (tenant acme) reconciled until it settled. */
async function issuedKey(name: string, spec: ApiKeyObject['spec']) {
  const fixture = controllerFixture();
  fixture.kube.seed(NAMESPACE, namespace('team', 'acme'));
  fixture.kube.seed(API_KEY, apiKey(name, 'team', spec));
  const reconcile = apiKeyReconciler(fixture.ctx);
  await settle(reconcile, `team/${name}`);
  return { ...fixture, reconcile, key: fixture.kube.peek<ApiKeyObject>(API_KEY, 'team', name)! };
}

describe('api key reconciler', () => {
  it('creates the key with the spec options in the namespace tenant and writes its plaintext once', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, { apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'kb', namespace: 'team' }, spec: {} });
    await settle(memoryReconciler(ctx), 'team/kb');
    const memoryId = kube.peek<MemoryObject>(MEMORY, 'team', 'kb')!.status!.memoryId!;
    kube.seed(
      API_KEY,
      apiKey('ci', 'team', {
        type: 'live',
        secretName: 'ci',
        displayName: 'CI pipeline',
        scopes: { modules: ['memory'], memories: ['kb'], access: 'read' },
        ipAllowlist: ['10.0.0.0/8'],
        appPermissions: { memory: ['search'] },
        expiresAt: '2099-01-01T00:00:00Z',
      }),
    );
    await settle(apiKeyReconciler(ctx), 'team/ci');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'ci')!;
    expect(cond(k, 'Ready')?.status).toBe('True');
    expect(admin.keys.get(k.status!.keyId!)!.request).toEqual({
      type: 'live',
      name: 'CI pipeline',
      scopes: { modules: ['memory'], memories: [memoryId], access: 'read' },
      ip_allowlist: ['10.0.0.0/8'],
      app_permissions: { memory: ['search'] },
      expires_at: '2099-01-01T00:00:00.000Z',
      client_token: expect.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/),
    });
    expect(k.status!.pendingKeyToken).toBeUndefined();
    expect(secretKeyId(kube.peek(SECRET, 'team', 'ci'))).toBe(k.status!.keyId);
    expect(k.status!.expiresAt).toBe('2099-01-01T00:00:00.000Z');
  });

  it('refuses an expiresAt that is no date (30 February) instead of moving it, and tells how to renew a key past its own expiresAt', async () => {
    expect(['2030-02-28T00:00:00Z', '2028-02-29T23:59:59+02:00'].map(isCalendarDateTime)).toEqual([true, true]);
    expect(['2030-02-30T00:00:00Z', '2029-02-29T00:00:00Z', '2030-04-31T12:00:00Z', '2030-01-01T24:00:00Z'].map(isCalendarDateTime)).toEqual([false, false, false, false]);
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('feb', 'team', { type: 'live', secretName: 'feb', expiresAt: '2030-02-30T00:00:00Z' }));
    await settle(apiKeyReconciler(ctx), 'team/feb');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'feb')!;
    expect(cond(k, 'Stalled')).toMatchObject({ status: 'True', reason: 'Rejected', message: expect.stringContaining('2030-02-30') });
    expect(admin.keys.size).toBe(0);
  });

  it('issues a fresh key when a Memory of its scope now has another id (deleted and made again), revoking the old one', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, { apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'kb', namespace: 'team' }, spec: {} });
    await settle(memoryReconciler(ctx), 'team/kb');
    kube.seed(API_KEY, apiKey('scoped', 'team', { type: 'live', secretName: 'scoped', scopes: { memories: ['kb'] } }));
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/scoped');
    const first = kube.peek<ApiKeyObject>(API_KEY, 'team', 'scoped')!.status!.keyId!;
    // The Memory now names another platform memory (as after a delete and a create under the same name).
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'kb')!;
    await kube.replaceStatus(MEMORY, { ...m, status: { ...m.status!, memoryId: 'mem_again' } });
    await settle(reconcile, 'team/scoped');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'scoped')!;
    expect(k.status!.keyId).not.toBe(first);
    expect(admin.keys.get(first)!.revoked_at).not.toBeNull();
    expect(admin.keys.get(k.status!.keyId!)!.request).toMatchObject({ scopes: { memories: ['mem_again'] } });
    expect(secretKeyId(kube.peek(SECRET, 'team', 'scoped'))).toBe(k.status!.keyId);
    expect(cond(k, 'Ready')?.status).toBe('True');
  });

  it('waits for the referenced Memory, then issues an mk_ key bound to it', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('edge', 'team', { type: 'memory', secretName: 'edge', memoryRef: { name: 'kb' } }));
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/edge');
    let k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'edge')!;
    expect(cond(k, 'Ready')).toMatchObject({ status: 'False', reason: 'MemoryNotFound' });
    expect(cond(k, 'Reconciling')?.status).toBe('True');
    expect(admin.keys.size).toBe(0);

    kube.seed(MEMORY, { apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'kb', namespace: 'team' }, spec: {} });
    const memory = kube.peek<MemoryObject>(MEMORY, 'team', 'kb')!;
    expect(apiKeysReferencing(kube.all<ApiKeyObject>(API_KEY), memory)).toEqual(['team/edge']);
    await settle(memoryReconciler(ctx), 'team/kb');
    await settle(reconcile, 'team/edge');
    k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'edge')!;
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'kb')!;
    expect(k.status).toMatchObject({ memoryId: m.status!.memoryId, hostname: m.status!.hostname });
    expect(admin.keys.get(k.status!.keyId!)).toMatchObject({ type: 'memory', memory_id: m.status!.memoryId });
    expect(cond(k, 'KeyIssued')?.status).toBe('True');

    // The Memory is deleted: its keys are revoked by the platform, and KeyIssued says so.
    kube.userDelete(MEMORY, 'team', 'kb');
    await settle(memoryReconciler(ctx), 'team/kb');
    await settle(reconcile, 'team/edge');
    k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'edge')!;
    expect(cond(k, 'Ready')).toMatchObject({ status: 'False', reason: 'MemoryNotFound' });
    expect(cond(k, 'KeyIssued')).toMatchObject({ status: 'False', reason: 'MemoryNotFound' });
  });

  it('rotates when rotationRequest changes, keeping the previous key for the overlap', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('r', 'team', { type: 'test', secretName: 'r', rotationOverlapSeconds: 120 }));
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/r');
    const first = kube.peek<ApiKeyObject>(API_KEY, 'team', 'r')!;
    await kube.replace(API_KEY, { ...first, spec: { ...first.spec!, rotationRequest: '2030-01' } });
    const r = await settle(reconcile, 'team/r');
    const rotated = kube.peek<ApiKeyObject>(API_KEY, 'team', 'r')!;
    expect(rotated.status).toMatchObject({ previousKeyId: first.status!.keyId, lastRotationRequest: '2030-01' });
    expect(rotated.status!.keyId).not.toBe(first.status!.keyId);
    expect(secretKeyId(kube.peek(SECRET, 'team', 'r'))).toBe(rotated.status!.keyId);
    expect(admin.workingKeys('acme').map((k) => k.key_id).sort()).toEqual([first.status!.keyId, rotated.status!.keyId].sort());
    // Woken up at the end of the overlap to forget the previous key.
    expect(r).toEqual({ requeueAfterMs: expect.any(Number) });
    expect((r as { requeueAfterMs: number }).requeueAfterMs).toBeGreaterThan(100_000);
  });

  it('revokes every key it issued on delete, then lets the object go', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('d', 'team', { type: 'live', secretName: 'd', rotationOverlapSeconds: 600 }));
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/d');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'd')!;
    await kube.replace(API_KEY, { ...k, spec: { ...k.spec!, rotationRequest: 'x' } });
    await settle(reconcile, 'team/d');
    expect(admin.workingKeys('acme')).toHaveLength(2);
    kube.userDelete(API_KEY, 'team', 'd');
    await settle(reconcile, 'team/d');
    expect(admin.workingKeys('acme')).toEqual([]);
    expect(kube.peek(API_KEY, 'team', 'd')).toBeUndefined();
    expect(kube.peek(SECRET, 'team', 'd')).toBeUndefined();
  });

  it('stalls on an expired key instead of silently issuing a new one', async () => {
    const { kube, admin, reconcile, key: k } = await issuedKey('e', { type: 'ephemeral', secretName: 'e' });
    admin.keys.get(k.status!.keyId!)!.expires_at = new Date(Date.now() - 1000).toISOString();
    await settle(reconcile, 'team/e');
    expect(cond(kube.peek(API_KEY, 'team', 'e'), 'Stalled')?.reason).toBe('KeyExpired');
    expect(admin.keys.size).toBe(1);
  });

  it('shows a platform refusal of the options as Stalled/Rejected', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('x', 'team', { type: 'live', secretName: 'x' }));
    admin.createKey = async () => {
      throw new PlatformError('create_key', 400, 'VALIDATION_FAILED', 'expires_at must be in the future');
    };
    await settle(apiKeyReconciler(ctx), 'team/x');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'x')!;
    expect(cond(k, 'Stalled')).toMatchObject({ reason: 'Rejected' });
    expect(cond(k, 'Ready')!.message).toContain('expires_at must be in the future');
    // A refusal made no key: no token is left to look up.
    expect(k.status!.pendingKeyToken).toBeUndefined();
  });

  it('never takes over a Secret another owner creates while it issues: its new key is revoked, and it stalls on the conflict', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('twin-a', 'team', { type: 'live', secretName: 'shared' }));
    // Another ApiKey naming the same Secret writes it between this one's read and its write (applied together).
    const foreign = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'shared', namespace: 'team' }, data: { 'key-id': Buffer.from('key_other').toString('base64') } };
    ctx.hooks = { afterKeyCreated: () => kube.seed(SECRET, foreign) };
    await expect(apiKeyReconciler(ctx)('team/twin-a')).rejects.toThrow(/created by another owner/);
    ctx.hooks = undefined;
    expect(kube.peek<SecretObject>(SECRET, 'team', 'shared')!.data).toEqual(foreign.data);
    const made = [...admin.keys.values()];
    expect(made).toHaveLength(1);
    expect(made[0]!.revoked_at).not.toBeNull();
    await settle(apiKeyReconciler(ctx), 'team/twin-a');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'twin-a')!;
    expect(cond(k, 'Stalled')).toMatchObject({ status: 'True', reason: 'SecretConflict' });
    expect(cond(k, 'Ready')?.status).not.toBe('True');
  });

  it('never writes a rotated key over a Secret someone replaced while the platform rotated it', async () => {
    const { ctx, kube, admin, reconcile, key: k } = await issuedKey('rot', { type: 'live', secretName: 'rot' });
    const before = admin.keys.size;
    await kube.replace(API_KEY, { ...k, spec: { ...k.spec!, rotationRequest: 'now' } });
    // The user deletes the operator's Secret and makes their own of the same name while the rotation is under way.
    const theirs = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'rot', namespace: 'team' }, data: { mine: Buffer.from('yes').toString('base64') } };
    ctx.hooks = {
      afterKeyCreated: () => {
        void kube.delete(SECRET, 'team', 'rot');
        kube.seed(SECRET, theirs);
      },
    };
    await expect(reconcile('team/rot')).rejects.toThrow(/replaced or created by another owner/);
    ctx.hooks = undefined;
    expect(kube.peek<SecretObject>(SECRET, 'team', 'rot')!.data).toEqual(theirs.data);
    const made = [...admin.keys.values()].slice(before);
    expect(made).toHaveLength(1);
    expect(made[0]!.revoked_at).not.toBeNull();
  });

  it('issues a new ApiKey with one status write: nothing is recorded before the platform makes the key', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('one', 'team', { type: 'live', secretName: 'one' }));
    await settle(apiKeyReconciler(ctx), 'team/one');
    expect(kube.writes.map((w) => `${w.verb} ${w.resource}`).sort()).toEqual(['patch apikeys', 'create secrets', 'update-status apikeys'].sort());
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'one')!;
    expect(admin.keys.get(k.status!.keyId!)!.client_token).toBe(issuanceToken(String(k.metadata.uid), undefined, 0));
  });

  it('rotates with a token derived from the status; a crash after the platform answered is found by the repeated call', async () => {
    const { ctx, kube, admin, events } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('r', 'team', { type: 'test', secretName: 'r', rotationOverlapSeconds: 120 }));
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/r');
    const first = kube.peek<ApiKeyObject>(API_KEY, 'team', 'r')!;
    await kube.replace(API_KEY, { ...first, spec: { ...first.spec!, rotationRequest: 'now' } });

    const mark = kube.writes.length;
    let tokenAtCall: string | undefined;
    const rotate = admin.rotateKey.bind(admin);
    admin.rotateKey = async (t, id, overlap, token) => {
      tokenAtCall = token;
      // Nothing in Kubernetes was written for this issuance before the call.
      expect(kube.writesSince(mark)).toEqual([]);
      return rotate(t, id, overlap, token);
    };
    ctx.hooks = {
      afterKeyCreated: () => {
        throw new Error('crash');
      },
    };
    await expect(reconcile('team/r')).rejects.toThrow('crash');
    expect(tokenAtCall).toBe(issuanceToken(String(first.metadata.uid), first.status!.keyId, 0));
    const interrupted = kube.peek<ApiKeyObject>(API_KEY, 'team', 'r')!;
    expect(interrupted.status).toMatchObject({ keyId: first.status!.keyId });
    expect(interrupted.status!.pendingKeyToken).toBeUndefined();
    expect(interrupted.status!.pendingKeyId).toBeUndefined();
    const orphan = (await admin.findKeyByClientToken('acme', tokenAtCall!))!.key_id;
    expect(admin.workingKeys('acme').map((k) => k.key_id)).toContain(orphan);

    ctx.hooks = undefined;
    admin.rotateKey = rotate;
    await settle(reconcile, 'team/r');
    const after = kube.peek<ApiKeyObject>(API_KEY, 'team', 'r')!;
    expect(after.status!.lastRotationRequest).toBe('now');
    expect(after.status!.keyId).not.toBe(orphan);
    expect(after.status!.keyId).not.toBe(first.status!.keyId);
    expect(admin.keys.get(after.status!.keyId!)!.client_token).toBe(issuanceToken(String(first.metadata.uid), first.status!.keyId, 1));
    expect(admin.keys.get(orphan)!.revoked_at).toBeTruthy();
    expect(secretKeyId(kube.peek(SECRET, 'team', 'r'))).toBe(after.status!.keyId);
    // The original stays inside the overlap the half-done rotation gave it; nothing else works.
    expect(admin.workingKeys('acme').map((k) => k.key_id).sort()).toEqual([first.status!.keyId, after.status!.keyId].sort());
    expect(events.some((e) => e.reason === 'KeyRevoked' && e.note.includes(orphan))).toBe(true);
  });

  it('keeps the rotated key that reached the Secret before a crash, with the original\'s overlap', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('w', 'team', { type: 'live', secretName: 'w', rotationOverlapSeconds: 300 }));
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/w');
    const first = kube.peek<ApiKeyObject>(API_KEY, 'team', 'w')!;
    await kube.replace(API_KEY, { ...first, spec: { ...first.spec!, rotationRequest: 'now' } });
    ctx.hooks = {
      afterSecretWritten: () => {
        throw new Error('crash');
      },
    };
    await expect(reconcile('team/w')).rejects.toThrow('crash');
    expect(kube.peek<ApiKeyObject>(API_KEY, 'team', 'w')!.status!.keyId).toBe(first.status!.keyId);
    const written = secretKeyId(kube.peek(SECRET, 'team', 'w'));
    expect(written).not.toBe(first.status!.keyId);

    ctx.hooks = undefined;
    await settle(reconcile, 'team/w');
    const after = kube.peek<ApiKeyObject>(API_KEY, 'team', 'w')!;
    expect(after.status).toMatchObject({ keyId: written, previousKeyId: first.status!.keyId, lastRotationRequest: 'now' });
    expect(Date.parse(after.status!.previousKeyExpiresAt!)).toBeGreaterThan(Date.now() + 200_000);
    expect(admin.keys.size).toBe(2);
    expect(cond(after, 'Ready')?.status).toBe('True');
  });

  it('retries a call that got no answer with the same token, so it makes one key', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('u', 'team', { type: 'live', secretName: 'u' }));
    const reconcile = apiKeyReconciler(ctx);
    admin.loseAnswerNext.set('create_key', 1);
    await expect(reconcile('team/u')).rejects.toThrow('injected loss of the answer');
    expect(kube.peek<ApiKeyObject>(API_KEY, 'team', 'u')!.status?.pendingKeyToken).toBeUndefined();
    expect(admin.keys.size).toBe(1);
    await settle(reconcile, 'team/u');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'u')!;
    expect(cond(k, 'Ready')?.status).toBe('True');
    // The lost key was found by the replay and revoked (its plaintext is gone); the next attempt's key is in use.
    expect(admin.keys.size).toBe(2);
    expect(admin.workingKeys('acme').map((w) => w.key_id)).toEqual([k.status!.keyId]);
    expect(admin.keys.get(k.status!.keyId!)!.client_token).toBe(issuanceToken(String(k.metadata.uid), undefined, 1));
  });

  it('revokes on delete a key that only its derived token names (crash after the platform call)', async () => {
    const { ctx, kube, admin } = controllerFixture({
      afterKeyCreated: () => {
        throw new Error('crash');
      },
    });
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('g', 'team', { type: 'live', secretName: 'g' }));
    const reconcile = apiKeyReconciler(ctx);
    await expect(reconcile('team/g')).rejects.toThrow('crash');
    await expect(reconcile('team/g')).rejects.toThrow('crash');
    // Two interrupted attempts: the second revoked the first's key and made its own.
    expect(kube.peek<ApiKeyObject>(API_KEY, 'team', 'g')!.status?.keyId).toBeUndefined();
    expect(admin.keys.size).toBe(2);
    expect(admin.workingKeys('acme')).toHaveLength(1);
    ctx.hooks = undefined;
    kube.userDelete(API_KEY, 'team', 'g');
    await settle(reconcile, 'team/g');
    expect(kube.peek(API_KEY, 'team', 'g')).toBeUndefined();
    expect(admin.workingKeys('acme')).toEqual([]);
  });

  it('settles a pending key token left in status by an operator of the earlier design', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('l', 'team', { type: 'live', secretName: 'l' }));
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/l');
    const current = kube.peek<ApiKeyObject>(API_KEY, 'team', 'l')!;
    const legacy = await admin.createKey('acme', { type: 'live', name: 'x', client_token: 'op-legacy-token' });
    await kube.replaceStatus(API_KEY, { ...current, status: { ...current.status, pendingKeyToken: 'op-legacy-token' } });
    await settle(reconcile, 'team/l');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'l')!;
    expect(k.status).not.toHaveProperty('pendingKeyToken');
    expect(k.status!.keyId).toBe(current.status!.keyId);
    expect(admin.keys.get(legacy.key_id)!.revoked_at).toBeTruthy();
    expect(admin.workingKeys('acme').map((w) => w.key_id)).toEqual([current.status!.keyId]);
  });

  it('revokes its key and deletes its Secret when the API server deletes it while its finalizer is being added', async () => {
    let vanish = () => {};
    const { ctx, kube, admin } = controllerFixture({ afterSecretWritten: () => vanish() });
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(API_KEY, apiKey('k7', 'team', { type: 'live', secretName: 'k7-secret' }));
    vanish = () => {
      vanish = () => {};
      kube.vanish(API_KEY, 'team', 'k7');
    };
    const reconcile = apiKeyReconciler(ctx);
    await settle(reconcile, 'team/k7');
    expect(admin.keys.size).toBe(1);
    expect(admin.workingKeys('acme')).toEqual([]);
    expect(kube.peek(SECRET, 'team', 'k7-secret')).toBeUndefined();

    // Made again with the name: a fresh key in a Secret of its own, no SecretConflict with the dead one's.
    kube.seed(API_KEY, apiKey('k7', 'team', { type: 'live', secretName: 'k7-secret' }));
    await settle(reconcile, 'team/k7');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'k7')!;
    expect(cond(k, 'Ready')?.status).toBe('True');
    expect(admin.workingKeys('acme').map((x) => x.key_id)).toEqual([k.status!.keyId]);
  });

  it('revokes the key of a watch DELETED copy that still carries its finalizer (nothing else names the key)', async () => {
    const { ctx, kube, admin, reconcile } = await issuedKey('k6', { type: 'live', secretName: 'k6-secret' });
    const dead = kube.vanish<ApiKeyObject>(API_KEY, 'team', 'k6');
    // The last copy the watch saw may not carry the status the reconcile was about to write.
    ctx.tombstones.apiKeys.add({ ...dead, status: undefined });
    await settle(reconcile, 'team/k6');
    expect(admin.workingKeys('acme')).toEqual([]);
    expect(kube.peek(SECRET, 'team', 'k6-secret')).toBeUndefined();
  });

  it('restores the label of its Secret when someone removes it (the Secret informer selects on it), keeping the key', async () => {
    const { ctx, kube, admin, events, reconcile, key } = await issuedKey('k2', { type: 'live', secretName: 'k2-secret' });
    // The cache holds only Secrets labelled as the operator's, as the informer's label selector does.
    const labelled = (o: SecretObject | undefined) => (o?.metadata.labels?.['app.kubernetes.io/managed-by'] === 'lore-operator' ? o : undefined);
    ctx.caches.secrets = { get: (ns, name) => labelled(kube.peek<SecretObject>(SECRET, ns, name)), list: () => kube.all<SecretObject>(SECRET).filter((o) => !!labelled(o)) };
    const before = kube.peek<SecretObject>(SECRET, 'team', 'k2-secret')!;
    const { 'app.kubernetes.io/managed-by': _gone, ...rest } = before.metadata.labels!;
    await kube.replace(SECRET, { ...before, metadata: { ...before.metadata, labels: rest } });

    await settle(reconcile, 'team/k2');
    const after = kube.peek<SecretObject>(SECRET, 'team', 'k2-secret')!;
    expect(after.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'lore-operator' });
    expect(secretKeyId(after)).toBe(key.status!.keyId);
    expect(after.data!['api-key']).toBe(before.data!['api-key']);
    expect(events.map((e) => e.reason)).toContain('SecretRelabelled');
    await settle(reconcile, 'team/k2');
    const k = kube.peek<ApiKeyObject>(API_KEY, 'team', 'k2')!;
    expect(cond(k, 'Ready')?.status).toBe('True');
    expect(k.status!.keyId).toBe(key.status!.keyId);
    expect(admin.workingKeys('acme').map((x) => x.key_id)).toEqual([key.status!.keyId]);
  });
});
