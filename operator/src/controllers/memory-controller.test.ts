import { PlatformError } from '../platform/admin-client';
import { INGRESS, MEMORY, NAMESPACE, SECRET } from '../kube/resources';
import { controllerFixture, namespace, settle } from '../testing/controller-fixture';
import { issuanceToken } from './key-secret';
import { memoryReconciler } from './memory-controller';
import type { MemoryObject, SecretObject } from './types';

function memory(name: string, ns: string, spec: MemoryObject['spec'] = {}): MemoryObject {
  return { apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name, namespace: ns }, spec };
}

const cond = (m: MemoryObject | undefined, type: string) => m?.status?.conditions?.find((c) => c.type === type);

/** A namespace of tenant `acme` with Memory `team/notes`, reconciled until it settled (provisioned and Ready). */
async function provisionedNotes() {
  const fixture = controllerFixture();
  fixture.kube.seed(NAMESPACE, namespace('team', 'acme'));
  fixture.kube.seed(MEMORY, memory('notes', 'team'));
  const reconcile = memoryReconciler(fixture.ctx);
  await settle(reconcile, 'team/notes');
  return { ...fixture, reconcile };
}

describe('memory reconciler', () => {
  it('provisions the memory, an mk_ key in an owned Secret and an Ingress, then reports Ready', async () => {
    const { ctx, kube, admin, events } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('notes', 'team'));
    await settle(memoryReconciler(ctx), 'team/notes');

    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(m.metadata.finalizers).toEqual(['lore.dev/memory-deprovision']);
    expect(m.status).toMatchObject({ tenantId: 'acme', hostname: 'notes-team.mem.example.test', observedGeneration: 1 });
    expect(cond(m, 'Ready')).toMatchObject({ status: 'True', reason: 'Provisioned', observedGeneration: 1 });
    expect(admin.memories.get(m.status!.memoryId!)).toMatchObject({ tenant_id: 'acme', hostname: 'notes-team.mem.example.test', name: 'team/notes' });

    const secret = kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!;
    expect(secret.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Memory', uid: m.metadata.uid, controller: true });
    const plaintext = Buffer.from(secret.data!['api-key']!, 'base64').toString();
    expect(plaintext).toMatch(/^mk_/);
    expect(admin.workingKeys('acme').map((k) => k.key_id)).toEqual([m.status!.keyId]);

    const ing = kube.peek(INGRESS, 'lore-system', m.status!.ingressName!)!;
    expect((ing as any).spec.rules[0].host).toBe('notes-team.mem.example.test');
    expect(events.map((e) => e.reason)).toEqual(['KeyIssued', 'Ready']);
  });

  it('makes no write at all when reconciling an object that is already in its desired state', async () => {
    const { kube, reconcile } = await provisionedNotes();
    const mark = kube.writes.length;
    for (let i = 0; i < 3; i++) await reconcile('team/notes');
    expect(kube.writesSince(mark)).toEqual([]);
  });

  it('is Stalled without a tenant on the namespace and never contacts the platform', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team'));
    kube.seed(MEMORY, memory('notes', 'team'));
    await settle(memoryReconciler(ctx), 'team/notes');
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(cond(m, 'Stalled')).toMatchObject({ status: 'True', reason: 'TenantNotAssigned' });
    expect(cond(m, 'Ready')).toMatchObject({ status: 'False' });
    expect(admin.calls).toEqual([]);
  });

  it('ignores objects in namespaces the operator does not serve', async () => {
    const { ctx, kube } = controllerFixture();
    kube.seed(MEMORY, memory('notes', 'elsewhere'));
    await settle(memoryReconciler(ctx), 'elsewhere/notes');
    expect(kube.writes).toEqual([]);
  });

  it('provisions a new Memory with one status write: nothing is recorded before the platform makes the key', async () => {
    const { ctx, kube } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('notes', 'team'));
    await settle(memoryReconciler(ctx), 'team/notes');
    expect(kube.writes.map((w) => `${w.verb} ${w.resource}`).sort()).toEqual(
      ['patch memories', 'apply ingresses', 'create secrets', 'update-status memories'].sort(),
    );
  });

  it('finds a key the platform made before a crash (nothing in Kubernetes names it) by the repeated call, revokes it and issues a fresh one', async () => {
    const { ctx, kube, admin, events } = controllerFixture({
      afterKeyCreated: () => {
        throw new Error('crash');
      },
    });
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('notes', 'team'));
    await expect(memoryReconciler(ctx)('team/notes')).rejects.toThrow('crash');
    const interrupted = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(interrupted.status?.keyId).toBeUndefined();
    expect(interrupted.status?.pendingKeyId).toBeUndefined();
    expect(interrupted.status?.pendingKeyToken).toBeUndefined();
    expect(kube.peek(SECRET, 'team', 'notes-memory-key')).toBeUndefined();
    const [orphan] = admin.workingKeys('acme');
    expect(orphan!.client_token).toBe(issuanceToken(String(interrupted.metadata.uid), undefined, 0));

    ctx.hooks = undefined;
    await settle(memoryReconciler(ctx), 'team/notes');
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(cond(m, 'Ready')?.status).toBe('True');
    expect(m.status!.keyId).not.toBe(orphan!.key_id);
    expect(admin.keys.get(orphan!.key_id)!.revoked_at).toBeTruthy();
    expect(admin.keys.get(m.status!.keyId!)!.client_token).toBe(issuanceToken(String(m.metadata.uid), undefined, 1));
    expect(admin.workingKeys('acme').map((k) => k.key_id)).toEqual([m.status!.keyId]);
    const s = kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!;
    expect(Buffer.from(s.data!['key-id']!, 'base64').toString()).toBe(m.status!.keyId);
    expect(events.filter((e) => e.reason === 'KeyRevoked').map((e) => e.note)).toEqual([expect.stringContaining(orphan!.key_id)]);
  });

  it('walks past several interrupted attempts, and finds a key whose create answer was lost', async () => {
    const { ctx, kube, admin } = controllerFixture({
      afterKeyCreated: () => {
        throw new Error('crash');
      },
    });
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('notes', 'team'));
    const reconcile = memoryReconciler(ctx);
    await expect(reconcile('team/notes')).rejects.toThrow('crash');
    await expect(reconcile('team/notes')).rejects.toThrow('crash');
    expect(admin.workingKeys('acme')).toHaveLength(1);
    expect(admin.keys.size).toBe(2);
    ctx.hooks = undefined;
    admin.loseAnswerNext.set('create_key', 1);
    await expect(reconcile('team/notes')).rejects.toThrow('injected loss of the answer');
    expect(admin.keys.size).toBe(3);

    await settle(reconcile, 'team/notes');
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(admin.keys.size).toBe(4);
    expect(admin.workingKeys('acme').map((k) => k.key_id)).toEqual([m.status!.keyId]);
    expect(admin.keys.get(m.status!.keyId!)!.client_token).toBe(issuanceToken(String(m.metadata.uid), undefined, 3));
  });

  it('keeps the key that did reach the Secret before a crash instead of issuing another', async () => {
    const { ctx, kube, admin } = controllerFixture({
      afterSecretWritten: () => {
        throw new Error('crash');
      },
    });
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('notes', 'team'));
    await expect(memoryReconciler(ctx)('team/notes')).rejects.toThrow('crash');
    expect(kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!.status?.keyId).toBeUndefined();
    const written = Buffer.from(kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!.data!['key-id']!, 'base64').toString();
    ctx.hooks = undefined;
    await settle(memoryReconciler(ctx), 'team/notes');
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(m.status!.keyId).toBe(written);
    expect(cond(m, 'Ready')?.status).toBe('True');
    expect(admin.keys.size).toBe(1);
  });

  it('completes a rotation interrupted after the platform answered: the replacement is revoked, the original keeps its overlap', async () => {
    const { ctx, kube, admin, reconcile } = await provisionedNotes();
    const first = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!.status!.keyId!;

    kube.userDelete(SECRET, 'team', 'notes-memory-key');
    ctx.hooks = {
      afterKeyCreated: () => {
        throw new Error('crash');
      },
    };
    await expect(reconcile('team/notes')).rejects.toThrow('crash');
    const orphan = admin.workingKeys('acme').find((k) => k.key_id !== first)!;
    expect(admin.keys.get(first)!.replaced_by).toBe(orphan.key_id);

    ctx.hooks = undefined;
    await settle(reconcile, 'team/notes');
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect([first, orphan.key_id]).not.toContain(m.status!.keyId);
    expect(admin.keys.get(orphan.key_id)!.revoked_at).toBeTruthy();
    expect(admin.workingKeys('acme').map((k) => k.key_id).sort()).toEqual([first, m.status!.keyId!].sort());
    const s = kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!;
    expect(Buffer.from(s.data!['key-id']!, 'base64').toString()).toBe(m.status!.keyId);
  });

  it('settles a pending key id or token left in status by an operator of the earlier design', async () => {
    const { kube, admin, reconcile } = await provisionedNotes();
    const current = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    const keyId = current.status!.keyId!;
    const byToken = await admin.createKey('acme', { type: 'memory', name: 'x', memory_id: current.status!.memoryId!, client_token: 'op-legacy-token' });
    await kube.replaceStatus(MEMORY, { ...current, status: { ...current.status, pendingKeyToken: 'op-legacy-token' } });
    await settle(reconcile, 'team/notes');
    const byId = await admin.createKey('acme', { type: 'memory', name: 'y', memory_id: current.status!.memoryId! });
    const again = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    await kube.replaceStatus(MEMORY, { ...again, status: { ...again.status, pendingKeyId: byId.key_id } });
    await settle(reconcile, 'team/notes');

    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(m.status).not.toHaveProperty('pendingKeyToken');
    expect(m.status).not.toHaveProperty('pendingKeyId');
    expect(m.status!.keyId).toBe(keyId);
    expect(admin.keys.get(byToken.key_id)!.revoked_at).toBeTruthy();
    expect(admin.keys.get(byId.key_id)!.revoked_at).toBeTruthy();
    expect(admin.workingKeys('acme').map((k) => k.key_id)).toEqual([keyId]);
  });

  it('rotates the key with an overlap when its Secret is deleted, and reissues when the key was revoked', async () => {
    const { kube, admin, reconcile } = await provisionedNotes();
    const first = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!.status!.keyId!;

    kube.userDelete(SECRET, 'team', 'notes-memory-key');
    await settle(reconcile, 'team/notes');
    const second = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!.status!.keyId!;
    expect(second).not.toBe(first);
    expect(admin.keys.get(first)!.expires_at).toBeTruthy();
    expect(admin.keys.get(first)!.revoked_at).toBeNull();

    await admin.revokeKey('acme', second);
    await settle(reconcile, 'team/notes');
    const third = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!.status!.keyId!;
    expect(third).not.toBe(second);
    const s = kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!;
    expect(Buffer.from(s.data!['key-id']!, 'base64').toString()).toBe(third);
  });

  it('stalls on a hostname the namespace may not claim, before asking the platform for anything', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    // The gateway's own host (a memory's hostname serves only that memory, for every tenant), and another
    // namespace's default hostname.
    kube.seed(MEMORY, memory('squat', 'team', { hostname: 'lore.example.com' }));
    kube.seed(MEMORY, memory('wiki', 'team', { hostname: 'wiki-other.mem.example.test' }));
    kube.seed(MEMORY, memory('own', 'team', { hostname: 'own-team.mem.example.test' }));
    const reconcile = memoryReconciler(ctx);
    for (const name of ['squat', 'wiki']) {
      await settle(reconcile, `team/${name}`);
      const stalled = cond(kube.peek<MemoryObject>(MEMORY, 'team', name), 'Stalled');
      expect(stalled).toMatchObject({ status: 'True', reason: 'HostnameNotAllowed', message: expect.stringContaining(`the default ${name}-team.mem.example.test`) });
    }
    await settle(reconcile, 'team/own');
    expect([...admin.memories.values()].map((m) => m.hostname)).toEqual(['own-team.mem.example.test']);
  });

  it('stalls, making no key, when its key Secret\'s default name would be too long for a Secret', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('n'.repeat(245), 'team'));
    await settle(memoryReconciler(ctx), `team/${'n'.repeat(245)}`);
    expect(cond(kube.peek<MemoryObject>(MEMORY, 'team', 'n'.repeat(245)), 'Stalled')).toMatchObject({ status: 'True', reason: 'Rejected', message: expect.stringContaining('spec.keySecretName') });
    expect(admin.keys.size).toBe(0);
  });

  it('stalls on a workspace the platform does not know instead of retrying it for ever', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    const put = admin.putMemory.bind(admin);
    admin.putMemory = async (tenantId, memoryId, body) => {
      if (body.workspace_id === 'ws_nowhere') throw new PlatformError('put_memory', 404, 'NOT_FOUND', 'workspace not found');
      return put(tenantId, memoryId, body);
    };
    kube.seed(MEMORY, memory('lost', 'team', { workspaceId: 'ws_nowhere' }));
    const r = await settle(memoryReconciler(ctx), 'team/lost');
    expect(r?.requeueAfterMs).toBeUndefined();
    expect(cond(kube.peek<MemoryObject>(MEMORY, 'team', 'lost'), 'Stalled')).toMatchObject({ status: 'True', reason: 'WorkspaceNotFound', message: expect.stringContaining('ws_nowhere') });
  });

  it('stalls on a hostname held by another memory, and on a Secret it does not own', async () => {
    const { ctx, kube } = controllerFixture();
    kube.seed(NAMESPACE, namespace('a', 't1'));
    kube.seed(NAMESPACE, namespace('b', 't2'));
    kube.seed(MEMORY, memory('one', 'a', { hostname: 'kb.example.org' }));
    kube.seed(MEMORY, memory('two', 'b', { hostname: 'kb.example.org' }));
    const reconcile = memoryReconciler(ctx);
    await settle(reconcile, 'a/one');
    const r = await settle(reconcile, 'b/two');
    expect(r).toEqual({ requeueAfterMs: 300_000 });
    expect(cond(kube.peek<MemoryObject>(MEMORY, 'b', 'two'), 'Stalled')?.reason).toBe('HostnameConflict');

    kube.seed(SECRET, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'three-memory-key', namespace: 'a' }, data: { x: 'eA==' } });
    kube.seed(MEMORY, memory('three', 'a'));
    await settle(reconcile, 'a/three');
    expect(cond(kube.peek<MemoryObject>(MEMORY, 'a', 'three'), 'Stalled')?.reason).toBe('SecretConflict');
    expect(kube.peek<SecretObject>(SECRET, 'a', 'three-memory-key')!.data).toEqual({ x: 'eA==' });
  });

  it('deprovisions on delete: memory removed with the configured retention, keys revoked, children deleted, finalizer last', async () => {
    const { ctx, kube, admin } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('notes', 'team', { dataRetention: 'Delete' }));
    const reconcile = memoryReconciler(ctx);
    await settle(reconcile, 'team/notes');
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    kube.userDelete(MEMORY, 'team', 'notes');
    expect(kube.peek(MEMORY, 'team', 'notes')).toBeDefined();

    // A failing platform keeps the finalizer: nothing is forgotten.
    admin.failNext.set('delete_memory', 1);
    await expect(reconcile('team/notes')).rejects.toThrow('injected failure');
    expect(kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!.metadata.finalizers).toEqual(['lore.dev/memory-deprovision']);

    await settle(reconcile, 'team/notes');
    expect(kube.peek(MEMORY, 'team', 'notes')).toBeUndefined();
    expect(admin.memories.get(m.status!.memoryId!)).toMatchObject({ deleted: true, retained: false });
    expect(admin.workingKeys('acme')).toEqual([]);
    expect(kube.peek(SECRET, 'team', 'notes-memory-key')).toBeUndefined();
    expect(kube.peek(INGRESS, 'lore-system', m.status!.ingressName!)).toBeUndefined();
  });

  it('removes the Ingress and its condition when spec.ingress.enabled turns false', async () => {
    const { kube, reconcile } = await provisionedNotes();
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    const ingressName = m.status!.ingressName!;
    expect(kube.peek(INGRESS, 'lore-system', ingressName)).toBeDefined();
    await kube.replace(MEMORY, { ...m, spec: { ingress: { enabled: false } } });
    await settle(reconcile, 'team/notes');
    const after = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(kube.peek(INGRESS, 'lore-system', ingressName)).toBeUndefined();
    expect(after.status!.ingressName).toBeUndefined();
    expect(cond(after, 'IngressReady')).toBeUndefined();
    expect(cond(after, 'Ready')?.status).toBe('True');
  });

  it('keeps the transition time of unchanged conditions when the spec changes', async () => {
    const { ctx, kube } = controllerFixture();
    kube.seed(NAMESPACE, namespace('team', 'acme'));
    kube.seed(MEMORY, memory('notes', 'team'));
    let clock = new Date('2030-01-01T00:00:00Z');
    ctx.now = () => clock;
    const reconcile = memoryReconciler(ctx);
    await settle(reconcile, 'team/notes');
    const before = cond(kube.peek<MemoryObject>(MEMORY, 'team', 'notes'), 'Ready')!;
    clock = new Date('2030-01-02T00:00:00Z');
    const current = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    await kube.replace(MEMORY, { ...current, spec: { hostname: 'moved.example.org' } });
    await settle(reconcile, 'team/notes');
    const after = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(after.status!.hostname).toBe('moved.example.org');
    expect(cond(after, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 2, lastTransitionTime: before.lastTransitionTime });
  });

  describe('an object the API server deletes while its finalizer is being added (finalizer ignored)', () => {
    it('cleans up when the reconcile\'s status write is refused for the gone uid, and a Memory made again with the name comes up', async () => {
      let vanish = () => {};
      const { ctx, kube, admin } = controllerFixture({ afterSecretWritten: () => vanish() });
      kube.seed(NAMESPACE, namespace('team', 'acme'));
      kube.seed(MEMORY, memory('notes', 'team'));
      vanish = () => {
        vanish = () => {};
        kube.vanish(MEMORY, 'team', 'notes');
      };
      const reconcile = memoryReconciler(ctx);
      await settle(reconcile, 'team/notes');

      expect(kube.peek(MEMORY, 'team', 'notes')).toBeUndefined();
      expect([...admin.memories.values()].map((m) => m.deleted)).toEqual([true]);
      expect(admin.workingKeys('acme')).toEqual([]);
      expect(kube.peek(SECRET, 'team', 'notes-memory-key')).toBeUndefined();
      expect(kube.all(INGRESS)).toEqual([]);

      kube.seed(MEMORY, memory('notes', 'team'));
      await settle(reconcile, 'team/notes');
      const again = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
      expect(cond(again, 'Ready')).toMatchObject({ status: 'True', reason: 'Provisioned' });
      expect(again.status!.hostname).toBe('notes-team.mem.example.test');
      expect(admin.workingKeys('acme').map((k) => k.key_id)).toEqual([again.status!.keyId]);
    });

    it('cleans up from the final copy a watch DELETED event carries with the finalizer, before serving a Memory made again', async () => {
      const { ctx, kube, admin, reconcile } = await provisionedNotes();
      const dead = kube.vanish<MemoryObject>(MEMORY, 'team', 'notes');
      // The operator's watch handler: the final copy still carries the finalizer.
      ctx.tombstones.memories.add(dead);
      kube.seed(MEMORY, memory('notes', 'team'));
      await settle(reconcile, 'team/notes');

      expect(admin.memories.get(dead.status!.memoryId!)).toMatchObject({ deleted: true });
      expect(kube.peek(INGRESS, 'lore-system', dead.status!.ingressName!)).toBeUndefined();
      const again = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
      expect(again.metadata.uid).not.toBe(dead.metadata.uid);
      expect(cond(again, 'Ready')).toMatchObject({ status: 'True' });
      expect(kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!.metadata.ownerReferences![0]!.uid).toBe(again.metadata.uid);
      expect(admin.workingKeys('acme').map((k) => k.key_id)).toEqual([again.status!.keyId]);
      expect(ctx.tombstones.memories.size).toBe(0);
    });
  });

  it('tells Memories waiting for a hostname when one is released (deleted or moved)', async () => {
    const { ctx, kube } = controllerFixture();
    const freed: number[] = [];
    ctx.onHostnameFreed = () => freed.push(1);
    kube.seed(NAMESPACE, namespace('a', 't1'));
    kube.seed(MEMORY, memory('one', 'a', { hostname: 'kb.example.org' }));
    const reconcile = memoryReconciler(ctx);
    await settle(reconcile, 'a/one');
    expect(freed).toEqual([]);
    const m = kube.peek<MemoryObject>(MEMORY, 'a', 'one')!;
    await kube.replace(MEMORY, { ...m, spec: { hostname: 'other.example.org' } });
    await settle(reconcile, 'a/one');
    expect(freed).toHaveLength(1);
    kube.userDelete(MEMORY, 'a', 'one');
    await settle(reconcile, 'a/one');
    expect(freed).toHaveLength(2);
  });

  it('restores the label of its key Secret when someone removes it, keeping the key; a failed repair shows in status', async () => {
    const { ctx, kube, reconcile } = await provisionedNotes();
    const labelled = (o: SecretObject | undefined) => (o?.metadata.labels?.['app.kubernetes.io/managed-by'] === 'lore-operator' ? o : undefined);
    ctx.caches.secrets = { get: (ns, name) => labelled(kube.peek<SecretObject>(SECRET, ns, name)), list: () => kube.all<SecretObject>(SECRET).filter((o) => !!labelled(o)) };
    const m = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    const unlabel = async () => {
      const s = kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!;
      await kube.replace(SECRET, { ...s, metadata: { ...s.metadata, labels: { 'app.kubernetes.io/managed-by': 'someone-else' } } });
    };
    await unlabel();

    // The repair is refused once: status says what is wrong.
    const apply = kube.apply.bind(kube);
    kube.apply = async () => {
      kube.apply = apply;
      throw new Error('denied by policy');
    };
    await expect(reconcile('team/notes')).rejects.toThrow('lost its label');
    expect(cond(kube.peek<MemoryObject>(MEMORY, 'team', 'notes'), 'Ready')).toMatchObject({ status: 'False', message: expect.stringContaining('lost its label app.kubernetes.io/managed-by=lore-operator') });

    await settle(reconcile, 'team/notes');
    await settle(reconcile, 'team/notes');
    const s = kube.peek<SecretObject>(SECRET, 'team', 'notes-memory-key')!;
    expect(s.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'lore-operator' });
    const after = kube.peek<MemoryObject>(MEMORY, 'team', 'notes')!;
    expect(after.status!.keyId).toBe(m.status!.keyId);
    expect(cond(after, 'Ready')?.status).toBe('True');
  });
});
