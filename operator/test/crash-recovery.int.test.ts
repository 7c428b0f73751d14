import { issuanceToken } from '../src/controllers/key-secret';
import { memoryIdFor } from '../src/controllers/names';
import { condition, createNamespace, installCrds, kubectl, kubectlJson, kubectlOk, runId } from './support/kube';
import { createSystemNamespace, operatorEnv, spawnOperator, waitHealthy, type OperatorProcess, type SuiteScope } from './support/operator';
import { http, startPlatform, type Platform } from './support/platform';
import { waitFor } from './support/wait';

jest.setTimeout(180_000);

/**
 * The compiled operator as a real process, killed with SIGKILL in the middle of a reconcile, then restarted:
 * it must converge, and no key it issued may be left working unless it is the one in the Secret.
 */
describe('crash recovery', () => {
  let platform: Platform;
  let scope: SuiteScope;
  const procs: OperatorProcess[] = [];
  let port = 19_400 + Math.floor(Math.random() * 500);

  beforeAll(async () => {
    await installCrds();
    const run = runId();
    scope = { run, systemNamespace: await createSystemNamespace(run) };
    platform = await startPlatform();
  });

  afterEach(async () => {
    for (const p of procs.splice(0)) await p.kill('SIGTERM');
  });

  afterAll(async () => {
    await platform?.close();
  });

  async function start(extra: Record<string, string> = {}): Promise<OperatorProcess> {
    const p = await spawnOperator(operatorEnv(scope, platform, { LORE_OPERATOR_LEADER_ELECTION: 'false', ...extra }), port++);
    procs.push(p);
    return p;
  }

  async function waitReady(kind: string, ns: string, name: string): Promise<any> {
    return waitFor(`${kind} ${ns}/${name} Ready`, async () => {
      const o = await kubectlJson(['-n', ns, 'get', kind, name]);
      return condition(o, 'Ready')?.status === 'True' && !o.status.pendingKeyId && !o.status.pendingKeyToken ? o : undefined;
    }, 60_000);
  }

  async function secretKey(ns: string, name: string): Promise<{ key: string; keyId: string }> {
    const s = await kubectlJson(['-n', ns, 'get', 'secret', name]);
    return { key: Buffer.from(s.data['api-key'], 'base64').toString(), keyId: Buffer.from(s.data['key-id'], 'base64').toString() };
  }

  it('dies after the platform made an mk_ key, before anything in Kubernetes names it: the restart finds it by the repeated call and revokes it', async () => {
    const tenant = `tenant-${scope.run}-e`;
    const ns = await createNamespace(scope.run, { tenant });
    const crashing = await start({ LORE_OPERATOR_CRASH_AT: 'key-created' });
    await waitHealthy(crashing);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'm' }, spec: {} }));
    expect(await crashing.exited).toBe(-1);

    // Nothing in Kubernetes names the key; the token of the call derives from the object's uid (no key yet,
    // attempt 0), so the restart's repeated call is answered with the key's id.
    // (No status at all: the first status write of a new Memory is the one that reports it Ready.)
    const interrupted = await kubectlJson(['-n', ns, 'get', 'memory', 'm']);
    expect(interrupted.status?.keyId).toBeUndefined();
    expect(interrupted.status?.pendingKeyId).toBeUndefined();
    expect(interrupted.status?.pendingKeyToken).toBeUndefined();
    expect((await kubectl(['-n', ns, 'get', 'secret', 'm-memory-key'])).code).not.toBe(0);
    const orphan = await platform.keyIdByClientToken(tenant, issuanceToken(interrupted.metadata.uid, undefined, 0));
    expect(orphan).toBeTruthy();
    // At this instant the orphan is a working key of the memory that no Secret holds.
    expect(await platform.workingKeysOfMemory(memoryIdFor(interrupted.metadata.uid))).toEqual([orphan]);

    await waitHealthy(await start());
    const m = await waitReady('memory', ns, 'm');
    const { key, keyId } = await secretKey(ns, 'm-memory-key');
    expect(keyId).toBe(m.status.keyId);
    expect(keyId).not.toBe(orphan);
    expect((await platform.keyRow(orphan!))?.revoked_at).toBeTruthy();
    // No working key of the tenant that is not in a Secret.
    expect(await platform.workingKeysOfTenant(tenant)).toEqual([keyId]);
    const ok = await http(platform.publicUrl, 'POST', '/api/v1/memory/search', { headers: { host: m.status.hostname, 'x-api-key': key }, body: { query: 'q' } });
    expect(ok.status).toBe(200);
    const events = await kubectlJson(['-n', ns, 'get', 'events.events.k8s.io', '--field-selector', 'regarding.name=m']);
    expect(events.items.some((e: any) => e.reason === 'KeyRevoked' && e.note.includes(orphan))).toBe(true);
  });

  it('dies after writing an mk_ key into its Secret, before status names it: the restart keeps that key and issues nothing', async () => {
    const tenant = `tenant-${scope.run}-a`;
    const ns = await createNamespace(scope.run, { tenant });
    const crashing = await start({ LORE_OPERATOR_CRASH_AT: 'secret-written' });
    await waitHealthy(crashing);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'm' }, spec: {} }));
    expect(await crashing.exited).toBe(-1);
    const interrupted = await kubectlJson(['-n', ns, 'get', 'memory', 'm']);
    expect(interrupted.status?.keyId).toBeUndefined();
    const written = await secretKey(ns, 'm-memory-key');

    await waitHealthy(await start());
    const m = await waitReady('memory', ns, 'm');
    expect(m.status.keyId).toBe(written.keyId);
    expect((await secretKey(ns, 'm-memory-key')).keyId).toBe(written.keyId);
    expect(await platform.workingKeysOfTenant(tenant)).toEqual([written.keyId]);
    const ok = await http(platform.publicUrl, 'POST', '/api/v1/memory/search', { headers: { host: m.status.hostname, 'x-api-key': written.key }, body: { query: 'q' } });
    expect(ok.status).toBe(200);
  });

  it('dies after the platform rotated a key but before the replacement was recorded: the restart revokes it and completes the rotation', async () => {
    const tenant = `tenant-${scope.run}-f`;
    const ns = await createNamespace(scope.run, { tenant });
    const normal = await start();
    await waitHealthy(normal);
    const spec = { type: 'live', secretName: 'q', rotationOverlapSeconds: 600 };
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'q' }, spec }));
    const before = await waitReady('apikey', ns, 'q');
    await normal.kill('SIGTERM');

    const crashing = await start({ LORE_OPERATOR_CRASH_AT: 'key-created' });
    await waitHealthy(crashing);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'q' }, spec: { ...spec, rotationRequest: 'now' } }));
    expect(await crashing.exited).toBe(-1);
    // Nothing in Kubernetes names the replacement: its token derives from the uid and the key it replaces.
    const interrupted = await kubectlJson(['-n', ns, 'get', 'apikey', 'q']);
    expect(interrupted.status.pendingKeyId).toBeUndefined();
    expect(interrupted.status.pendingKeyToken).toBeUndefined();
    expect(interrupted.status.keyId).toBe(before.status.keyId);
    const orphan = await platform.keyIdByClientToken(tenant, issuanceToken(interrupted.metadata.uid, before.status.keyId, 0));
    expect(orphan).toBeTruthy();
    expect((await platform.workingKeysNamed(`${ns}/q`)).sort()).toEqual([before.status.keyId, orphan].sort());

    await waitHealthy(await start());
    const after = await waitFor('rotation completed', async () => {
      const k = await waitReady('apikey', ns, 'q');
      return k.status.lastRotationRequest === 'now' ? k : undefined;
    });
    expect(after.status.keyId).not.toBe(orphan);
    expect(after.status.keyId).not.toBe(before.status.keyId);
    expect((await platform.keyRow(orphan!))?.revoked_at).toBeTruthy();
    expect((await secretKey(ns, 'q')).keyId).toBe(after.status.keyId);
    // The current key, plus the original inside the overlap the interrupted rotation gave it; nothing else.
    expect((await platform.workingKeysOfTenant(tenant)).sort()).toEqual([after.status.keyId, before.status.keyId].sort());
  });

  it('dies after writing the Secret but before confirming: the restart keeps that key and issues nothing', async () => {
    const ns = await createNamespace(scope.run, { tenant: `tenant-${scope.run}-b` });
    const crashing = await start({ LORE_OPERATOR_CRASH_AT: 'secret-written' });
    await waitHealthy(crashing);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'k' }, spec: { type: 'live', secretName: 'k' } }));
    expect(await crashing.exited).toBe(-1);
    const interrupted = await kubectlJson(['-n', ns, 'get', 'apikey', 'k']);
    const written = await secretKey(ns, 'k');
    // Only the Secret names the key: status was never written for it.
    expect(interrupted.status?.keyId).toBeUndefined();
    expect(interrupted.status?.pendingKeyId).toBeUndefined();
    expect(await platform.keyIdByClientToken(`tenant-${scope.run}-b`, issuanceToken(interrupted.metadata.uid, undefined, 0))).toBe(written.keyId);

    await waitHealthy(await start());
    const k = await waitReady('apikey', ns, 'k');
    expect(k.status.keyId).toBe(written.keyId);
    expect((await secretKey(ns, 'k')).keyId).toBe(written.keyId);
    expect(await platform.workingKeysNamed(`${ns}/k`)).toEqual([written.keyId]);
  });

  it('dies after the platform made a new ApiKey\'s key, before anything in Kubernetes names it: the restart finds it by the repeated call and revokes it', async () => {
    const tenant = `tenant-${scope.run}-c`;
    const ns = await createNamespace(scope.run, { tenant });
    const crashing = await start({ LORE_OPERATOR_CRASH_AT: 'key-created' });
    await waitHealthy(crashing);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'n' }, spec: { type: 'live', secretName: 'n' } }));
    expect(await crashing.exited).toBe(-1);

    const interrupted = await kubectlJson(['-n', ns, 'get', 'apikey', 'n']);
    expect(interrupted.status?.keyId).toBeUndefined();
    expect(interrupted.status?.pendingKeyId).toBeUndefined();
    expect(interrupted.status?.pendingKeyToken).toBeUndefined();
    expect((await kubectl(['-n', ns, 'get', 'secret', 'n'])).code).not.toBe(0);
    const orphan = await platform.keyIdByClientToken(tenant, issuanceToken(interrupted.metadata.uid, undefined, 0));
    expect(orphan).toBeTruthy();
    // At this instant the orphan is a working key that no Secret holds.
    expect(await platform.workingKeysNamed(`${ns}/n`)).toEqual([orphan]);

    await waitHealthy(await start());
    const k = await waitReady('apikey', ns, 'n');
    const { key, keyId } = await secretKey(ns, 'n');
    expect(keyId).toBe(k.status.keyId);
    expect(keyId).not.toBe(orphan);
    expect((await platform.keyRow(orphan!))?.revoked_at).toBeTruthy();
    expect(await platform.workingKeysOfTenant(tenant)).toEqual([keyId]);
    expect((await http(platform.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { host: '127.0.0.1', 'x-api-key': key } })).status).toBe(200);
    const events = await kubectlJson(['-n', ns, 'get', 'events.events.k8s.io', '--field-selector', 'regarding.name=n']);
    expect(events.items.some((e: any) => e.reason === 'KeyRevoked' && e.note.includes(orphan))).toBe(true);
  });

  it('converges after a SIGKILL at a random moment while many objects are being provisioned', async () => {
    const tenant = `tenant-${scope.run}-d`;
    const ns = await createNamespace(scope.run, { tenant });
    const first = await start();
    await waitHealthy(first);
    const docs: string[] = [];
    for (let i = 0; i < 10; i++) docs.push(JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: `m${i}` }, spec: {} }));
    for (let i = 0; i < 5; i++) docs.push(JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name: `k${i}` }, spec: { type: 'live', secretName: `k${i}` } }));
    const applied = kubectlOk(['-n', ns, 'apply', '-f', '-'], docs.join('\n---\n'));
    await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
    await first.kill('SIGKILL');
    await applied;

    await waitHealthy(await start());
    const inSecrets: string[] = [];
    for (let i = 0; i < 10; i++) {
      const m = await waitReady('memory', ns, `m${i}`);
      const { keyId } = await secretKey(ns, `m${i}-memory-key`);
      expect(keyId).toBe(m.status.keyId);
      inSecrets.push(keyId);
    }
    for (let i = 0; i < 5; i++) {
      const k = await waitReady('apikey', ns, `k${i}`);
      const { key, keyId } = await secretKey(ns, `k${i}`);
      expect(keyId).toBe(k.status.keyId);
      inSecrets.push(keyId);
      expect((await http(platform.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { host: '127.0.0.1', 'x-api-key': key } })).status).toBe(200);
    }
    // Wherever the kill landed (the platform's answer to a create included), every working key is in a Secret.
    expect((await platform.workingKeysOfTenant(tenant)).sort()).toEqual(inSecrets.sort());
  });
});
