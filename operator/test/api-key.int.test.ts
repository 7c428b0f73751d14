import { condition, createNamespace, kubectl, kubectlJson, kubectlOk } from './support/kube';
import { inProcessOperatorSuite } from './support/operator';
import { ADMIN_TOKEN, http } from './support/platform';
import { sleep, waitFor } from './support/wait';

jest.setTimeout(120_000);

/**
 * ApiKey objects on a real kube-apiserver, issued by the real gateway: options carried through, the plaintext
 * in the Secret, rotation with both keys working during the overlap, revocation on delete, and the API
 * server refusing invalid specs.
 */
describe('ApiKey', () => {
  const suite = inProcessOperatorSuite();

  const apiKey = (name: string, spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name }, spec });

  async function waitReady(ns: string, name: string, extra: (o: any) => boolean = () => true): Promise<any> {
    return waitFor(`ApiKey ${ns}/${name} Ready`, async () => {
      const k = await kubectlJson(['-n', ns, 'get', 'apikey', name]);
      return condition(k, 'Ready')?.status === 'True' && k.status.observedGeneration === k.metadata.generation && extra(k) ? k : undefined;
    });
  }

  async function secret(ns: string, name: string): Promise<{ key: string; keyId: string; data: Record<string, string> }> {
    const s = await kubectlJson(['-n', ns, 'get', 'secret', name]);
    const data = Object.fromEntries(Object.entries(s.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    return { key: data['api-key']!, keyId: data['key-id']!, data };
  }

  const ping = (key: string) => http(suite.platform.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { host: '127.0.0.1', 'x-api-key': key } });

  it('issues a key with the spec options; its plaintext is in the Secret and it authenticates as the namespace tenant', async () => {
    const tenant = `tenant-${suite.scope.run}-a`;
    const ns = await createNamespace(suite.scope.run, { tenant });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('ci', { type: 'live', secretName: 'ci-key', scopes: { modules: ['pages', 'workspaces'], access: 'read' }, appPermissions: { pages: ['*'], workspaces: ['*'] } }));
    const k = await waitReady(ns, 'ci');
    const s = await secret(ns, 'ci-key');
    expect(s.key).toMatch(/^ck_live_/);
    expect(s.keyId).toBe(k.status.keyId);
    expect(k.status).toMatchObject({ tenantId: tenant, prefix: expect.stringMatching(/^ck_live_/) });
    expect(condition(k, 'KeyIssued')).toMatchObject({ status: 'True' });

    const r = await ping(s.key);
    expect(r.status).toBe(200);
    expect(r.json.tenant_id).toBe(tenant);
    // Scope is carried through: a write on another module is refused.
    const write = await http(suite.platform.publicUrl, 'POST', '/api/v1/projects', { headers: { host: '127.0.0.1', 'x-api-key': s.key }, body: { name: 'p' } });
    expect(write.status).toBe(403);
    const table = await kubectlOk(['-n', ns, 'get', 'apikeys']);
    expect(table).toMatch(/ci\s+live\s+ci-key\s+True/);
  });

  it('carries the IP allowlist and the expiry through to the platform', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-b` });
    const expiresAt = new Date(Date.now() + 3 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('fenced', { type: 'test', secretName: 'fenced', ipAllowlist: ['192.0.2.0/24'], expiresAt }));
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('open', { type: 'test', secretName: 'open', ipAllowlist: ['127.0.0.0/8', '::1/128'] }));
    const fenced = await waitReady(ns, 'fenced');
    await waitReady(ns, 'open');
    expect(Date.parse(fenced.status.expiresAt)).toBe(Date.parse(expiresAt));
    expect((await ping((await secret(ns, 'fenced')).key)).status).toBe(403);
    const open = await ping((await secret(ns, 'open')).key);
    expect(open.status).toBe(200);
  });

  it('rotates on request: both keys work during the overlap, then only the new one', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-c` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('rot', { type: 'live', secretName: 'rot', rotationOverlapSeconds: 5 }));
    const first = await waitReady(ns, 'rot');
    const old = await secret(ns, 'rot');
    expect((await ping(old.key)).status).toBe(200);

    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('rot', { type: 'live', secretName: 'rot', rotationOverlapSeconds: 5, rotationRequest: 'r-1' }));
    const rotated = await waitReady(ns, 'rot', (k) => k.status.lastRotationRequest === 'r-1');
    const fresh = await secret(ns, 'rot');
    expect(fresh.keyId).toBe(rotated.status.keyId);
    expect(fresh.keyId).not.toBe(old.keyId);
    expect(rotated.status.previousKeyId).toBe(first.status.keyId);
    expect(Date.parse(rotated.status.previousKeyExpiresAt)).toBeGreaterThan(Date.now());

    expect((await ping(old.key)).status).toBe(200);
    expect((await ping(fresh.key)).status).toBe(200);
    await sleep(Math.max(0, Date.parse(rotated.status.previousKeyExpiresAt) - Date.now()) + 500);
    expect((await ping(old.key)).status).toBe(401);
    expect((await ping(fresh.key)).status).toBe(200);
    // After the overlap the status forgets the previous key.
    await waitReady(ns, 'rot', (k) => k.status.previousKeyId === undefined);
    const events = await kubectlJson(['-n', ns, 'get', 'events.events.k8s.io', '--field-selector', 'regarding.name=rot']);
    expect(events.items.map((e: any) => e.reason)).toContain('KeyRotated');
  });

  it('revokes at once when the ApiKey is deleted, and removes its Secret', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-d` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('gone', { type: 'ephemeral', secretName: 'gone' }));
    const k = await waitReady(ns, 'gone');
    expect(Date.parse(k.status.expiresAt) - Date.now()).toBeGreaterThan(23 * 3600_000);
    const { key } = await secret(ns, 'gone');
    expect(key).toMatch(/^ck_eph_/);
    expect((await ping(key)).status).toBe(200);
    await kubectlOk(['-n', ns, 'delete', 'apikey', 'gone', '--wait=true', '--timeout=30s']);
    expect((await ping(key)).status).toBe(401);
    expect((await kubectl(['-n', ns, 'get', 'secret', 'gone'])).code).not.toBe(0);
    expect((await suite.platform.keyRow(k.status.keyId))?.revoked_at).toBeTruthy();
  });

  it('issues a memory key for a Memory of the namespace; it works on that memory host only', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-e` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('edge', { type: 'memory', secretName: 'edge', memoryRef: { name: 'kb' } }));
    const waiting = await waitFor('waiting for the memory', async () => {
      const k = await kubectlJson(['-n', ns, 'get', 'apikey', 'edge']);
      return condition(k, 'Ready')?.reason === 'MemoryNotFound' ? k : undefined;
    });
    expect(condition(waiting, 'Reconciling')?.status).toBe('True');
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'kb' }, spec: {} }));
    const k = await waitReady(ns, 'edge');
    const mem = await kubectlJson(['-n', ns, 'get', 'memory', 'kb']);
    const s = await secret(ns, 'edge');
    expect(s.key).toMatch(/^mk_/);
    expect(s.data.hostname).toBe(mem.status.hostname);
    expect(k.status).toMatchObject({ memoryId: mem.status.memoryId, hostname: mem.status.hostname });
    const ok = await http(suite.platform.publicUrl, 'POST', '/api/v1/memory/search', { headers: { host: mem.status.hostname, 'x-api-key': s.key }, body: { query: 'q' } });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual(expect.objectContaining({ answer: expect.any(String), citations: expect.any(Array) }));
    expect((await ping(s.key)).status).toBe(403);
  });

  it('replaces a key revoked behind its back, and a Secret deleted by someone', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-f` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('sturdy', { type: 'live', secretName: 'sturdy', rotationOverlapSeconds: 0 }));
    const k = await waitReady(ns, 'sturdy');
    await kubectlOk(['-n', ns, 'delete', 'secret', 'sturdy']);
    const second = await waitFor('new key in a new Secret', async () => {
      const r = await kubectl(['-n', ns, 'get', 'secret', 'sturdy']);
      if (r.code !== 0) return undefined;
      const s = await secret(ns, 'sturdy');
      return s.keyId !== k.status.keyId ? s : undefined;
    });
    expect((await ping(second.key)).status).toBe(200);
    const readyAgain = await waitReady(ns, 'sturdy', (x) => x.status.keyId === second.keyId);
    expect(readyAgain.status.pendingKeyId).toBeUndefined();

    // Revoked in the platform behind the operator's back: the next resync notices and issues a new key.
    const revoke = await http(suite.platform.adminUrl, 'DELETE', `/internal/v1/tenants/tenant-${suite.scope.run}-f/keys/${second.keyId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(revoke.status).toBe(204);
    expect((await ping(second.key)).status).toBe(401);
    suite.op.composed.operator.apiKeys.resync();
    const third = await waitFor('a key replacing the revoked one', async () => {
      const s = await secret(ns, 'sturdy');
      return s.keyId !== second.keyId ? s : undefined;
    });
    expect((await ping(third.key)).status).toBe(200);
  });

  it('restores the label of its Secret when someone removes it, keeping the key in it', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-g` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('labelled', { type: 'live', secretName: 'labelled' }));
    const k = await waitReady(ns, 'labelled');
    await kubectlOk(['-n', ns, 'label', 'secret', 'labelled', 'app.kubernetes.io/managed-by-']);
    await waitFor('label restored', async () => {
      const s = await kubectlJson(['-n', ns, 'get', 'secret', 'labelled']);
      return s.metadata.labels?.['app.kubernetes.io/managed-by'] === 'lore-operator';
    });
    expect((await secret(ns, 'labelled')).keyId).toBe(k.status.keyId);
    const again = await waitReady(ns, 'labelled');
    expect(again.status.keyId).toBe(k.status.keyId);
  });

  it('rejects invalid specs at the API server with a clear message', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-g` });
    const noRef = await kubectl(['-n', ns, 'apply', '-f', '-'], apiKey('bad', { type: 'memory', secretName: 's' }));
    expect(noRef.code).not.toBe(0);
    expect(noRef.stderr).toContain('memoryRef is required when type is memory');
    const cidr = await kubectl(['-n', ns, 'apply', '-f', '-'], apiKey('bad', { type: 'live', secretName: 's', ipAllowlist: ['10.0.0.0/8', '300.1.1.1/8'] }));
    expect(cidr.stderr).toContain('ipAllowlist[1]');
    expect(cidr.stderr).toContain('must be a CIDR range');
    const expiry = await kubectl(['-n', ns, 'apply', '-f', '-'], apiKey('bad', { type: 'live', secretName: 's', expiresAt: '31/12/2030' }));
    expect(expiry.stderr).toContain('expiresAt must be an RFC 3339 timestamp');
    const type = await kubectl(['-n', ns, 'apply', '-f', '-'], apiKey('bad', { type: 'admin', secretName: 's' }));
    expect(type.stderr).toMatch(/supported values: "live", "test", "ephemeral", "memory"/);
    const perms = await kubectl(['-n', ns, 'apply', '-f', '-'], apiKey('bad', { type: 'live', secretName: 's', appPermissions: { crm: ['*'] } }));
    expect(perms.stderr).toContain('appPermissions keys must be apps');
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], apiKey('fixed', { type: 'live', secretName: 's' }));
    const change = await kubectl(['-n', ns, 'apply', '-f', '-'], apiKey('fixed', { type: 'test', secretName: 's' }));
    expect(change.stderr).toContain('type is immutable');
  });
});
