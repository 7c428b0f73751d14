import { condition, createNamespace, kubectl, kubectlJson, kubectlOk } from './support/kube';
import { BASE_DOMAIN, inProcessOperatorSuite, metricValue } from './support/operator';
import { http } from './support/platform';
import { sleep, waitFor } from './support/wait';

/**
 * Memory objects on a real kube-apiserver, reconciled by the operator into the real gateway (PostgreSQL, Redis):
 * provisioning, the mk_ key in its Secret working on the memory's own host only, drift repair, tenancy from
 * the namespace, conflicts, and deprovisioning through the finalizer.
 */
jest.setTimeout(120_000);

describe('Memory', () => {
  const suite = inProcessOperatorSuite();

  const memoryYaml = (name: string, spec: Record<string, unknown> = {}) =>
    JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name }, spec });

  async function getMemory(ns: string, name: string): Promise<any> {
    return kubectlJson(['-n', ns, 'get', 'memory', name]);
  }

  async function waitReady(ns: string, name: string, timeoutMs = 30_000): Promise<any> {
    return waitFor(`Memory ${ns}/${name} Ready`, async () => {
      const m = await getMemory(ns, name);
      return condition(m, 'Ready')?.status === 'True' && m.status.observedGeneration === m.metadata.generation ? m : undefined;
    }, timeoutMs);
  }

  async function secretKey(ns: string, name: string): Promise<{ key: string; keyId: string; hostname: string }> {
    const s = await kubectlJson(['-n', ns, 'get', 'secret', name]);
    const d = (k: string) => Buffer.from(s.data[k], 'base64').toString('utf8');
    return { key: d('api-key'), keyId: d('key-id'), hostname: d('hostname') };
  }

  function search(host: string, key: string) {
    return http(suite.platform.publicUrl, 'POST', '/api/v1/memory/search', { headers: { host, 'x-api-key': key }, body: { query: 'what is lore?' } });
  }

  it('provisions a Memory: Ready, listed with host and readiness, Ingress to the gateway, an mk_ key that works on its host only', async () => {
    const tenant = `tenant-${suite.scope.run}-a`;
    const ns = await createNamespace(suite.scope.run, { tenant });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('notes'));
    const m = await waitReady(ns, 'notes');

    const expectedHost = `notes-${ns}.${BASE_DOMAIN}`;
    expect(m.status).toMatchObject({ hostname: expectedHost, tenantId: tenant, keySecretName: 'notes-memory-key' });
    expect(m.status.memoryId).toMatch(/^mem_[0-9a-f]{32}$/);
    expect(m.metadata.finalizers).toContain('lore.dev/memory-deprovision');
    for (const type of ['Provisioned', 'KeyIssued', 'IngressReady']) expect(condition(m, type)).toMatchObject({ status: 'True', observedGeneration: m.metadata.generation });
    expect(condition(m, 'Reconciling')).toBeUndefined();
    expect(condition(m, 'Stalled')).toBeUndefined();

    const table = await kubectlOk(['-n', ns, 'get', 'memories']);
    expect(table).toMatch(/NAME\s+HOSTNAME\s+READY\s+AGE/);
    expect(table).toMatch(new RegExp(`notes\\s+${expectedHost.replace(/\./g, '\\.')}\\s+True`));

    const ing = await kubectlJson(['-n', suite.scope.systemNamespace, 'get', 'ingress', m.status.ingressName, '--show-managed-fields']);
    expect(ing.spec.ingressClassName).toBe('nginx');
    expect(ing.spec.rules).toEqual([
      { host: expectedHost, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'lore-gateway', port: { number: 80 } } } }] } },
    ]);
    expect(ing.metadata.annotations['lore.dev/memory']).toBe(`${ns}/notes`);
    expect(ing.metadata.managedFields.some((f: any) => f.manager === 'lore-operator' && f.operation === 'Apply')).toBe(true);

    const secret = await kubectlJson(['-n', ns, 'get', 'secret', 'notes-memory-key']);
    expect(secret.metadata.ownerReferences).toEqual([
      { apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', name: 'notes', uid: m.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);
    const { key, keyId, hostname } = await secretKey(ns, 'notes-memory-key');
    expect(key).toMatch(/^mk_/);
    expect(keyId).toBe(m.status.keyId);
    expect(hostname).toBe(expectedHost);

    // The key works on its memory's host, end to end through the gateway into the graph service.
    const ingest = await http(suite.platform.publicUrl, 'POST', '/api/v1/memory/ingest', {
      headers: { host: expectedHost, 'x-api-key': key },
      body: { content: 'The Osprey data center in Lisbon runs entirely on solar power.', content_type: 'text', routing: { mode: 'auto' } },
    });
    expect(ingest.status).toBe(200);
    const found = await waitFor('the ingested document cited by search', async () => {
      const r = await http(suite.platform.publicUrl, 'POST', '/api/v1/memory/search', { headers: { host: expectedHost, 'x-api-key': key }, body: { query: 'What powers the Osprey data center?' } });
      return r.status === 200 && r.json.citations.length > 0 ? r : undefined;
    });
    expect(found.json.citations[0].document_id).toBe(ingest.json.doc_id);
    expect(found.json.answer).toMatch(/\[1\]/);

    // Refused elsewhere: on the gateway's own host, and on another memory's host.
    const gatewayHost = await search('127.0.0.1', key);
    expect(gatewayHost.status).toBe(403);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('other'));
    const other = await waitReady(ns, 'other');
    expect((await search(other.status.hostname, key)).status).toBe(404);
    expect((await http(suite.platform.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { host: '127.0.0.1', 'x-api-key': key } })).status).toBe(403);

    const events = await kubectlJson(['-n', ns, 'get', 'events.events.k8s.io', '--field-selector', `regarding.name=notes`]);
    expect(events.items.map((e: any) => e.reason)).toEqual(expect.arrayContaining(['KeyIssued', 'Ready']));
    expect(events.items.every((e: any) => e.reportingController === 'lore.dev/operator')).toBe(true);
  });

  it('makes no write at all when a resync finds everything as it should be', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-z` });
    for (const n of ['q1', 'q2', 'q3']) await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml(n));
    for (const n of ['q1', 'q2', 'q3']) await waitReady(ns, n);
    await sleep(1_000);
    const metrics = async () => (await fetch(suite.op.metricsUrl)).text();
    const writes = (t: string) => ['create', 'update', 'apply', 'patch', 'delete'].reduce((n, verb) => n + metricValue(t, 'lore_operator_kube_requests_total', { verb }), 0);
    const reconciles = (t: string) => metricValue(t, 'lore_operator_reconcile_duration_seconds_count', { controller: 'memory' });
    const before = await metrics();
    const served = suite.op.composed.operator.memories.list((m) => suite.op.composed.operator.namespaces.get(undefined, String(m.metadata.namespace)) !== undefined).length;
    suite.op.composed.operator.memories.resync();
    await waitFor('the resync reconciled every served Memory', async () => reconciles(await metrics()) - reconciles(before) >= served);
    await sleep(500);
    expect(writes(await metrics())).toBe(writes(before));
  });

  it('repairs drift: a deleted Ingress comes back, a deleted Secret gets a new working key', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-b` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('drift', { hostname: `drift-${suite.scope.run}.example.org` }));
    const m = await waitReady(ns, 'drift');
    const before = await secretKey(ns, 'drift-memory-key');

    await kubectlOk(['-n', suite.scope.systemNamespace, 'delete', 'ingress', m.status.ingressName]);
    await waitFor('Ingress recreated', async () => (await kubectl(['-n', suite.scope.systemNamespace, 'get', 'ingress', m.status.ingressName])).code === 0);

    // Someone edits the Ingress: the operator's fields are forced back.
    await kubectlOk(['-n', suite.scope.systemNamespace, 'patch', 'ingress', m.status.ingressName, '--type=json', '-p', '[{"op":"replace","path":"/spec/rules/0/host","value":"evil.example.org"}]']);
    await waitFor('Ingress host restored', async () => {
      const ing = await kubectlJson(['-n', suite.scope.systemNamespace, 'get', 'ingress', m.status.ingressName]);
      return ing.spec.rules[0].host === `drift-${suite.scope.run}.example.org`;
    });

    await kubectlOk(['-n', ns, 'delete', 'secret', 'drift-memory-key']);
    const after = await waitFor('Secret recreated with a new key', async () => {
      const r = await kubectl(['-n', ns, 'get', 'secret', 'drift-memory-key']);
      if (r.code !== 0) return undefined;
      const k = await secretKey(ns, 'drift-memory-key');
      return k.keyId !== before.keyId ? k : undefined;
    });
    const host = `drift-${suite.scope.run}.example.org`;
    expect((await search(host, after.key)).status).toBe(200);
    const m2 = await waitReady(ns, 'drift');
    expect(m2.status.keyId).toBe(after.keyId);
    expect(m2.status.pendingKeyId).toBeUndefined();
    // The lost plaintext's key is replaced with an overlap (running pods keep working), then stops.
    const oldRow = await suite.platform.keyRow(before.keyId);
    expect(oldRow?.expires_at).toBeTruthy();
  });

  it('changing spec.hostname moves the memory, its Ingress and its Secret to the new host', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-c` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('mover', { hostname: `one-${suite.scope.run}.example.org` }));
    const m = await waitReady(ns, 'mover');
    const { key } = await secretKey(ns, 'mover-memory-key');
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('mover', { hostname: `two-${suite.scope.run}.example.org` }));
    const moved = await waitFor('moved', async () => {
      const x = await waitReady(ns, 'mover');
      return x.status.hostname === `two-${suite.scope.run}.example.org` ? x : undefined;
    });
    expect(moved.status.keyId).toBe(m.status.keyId);
    const ing = await kubectlJson(['-n', suite.scope.systemNamespace, 'get', 'ingress', moved.status.ingressName]);
    expect(ing.spec.rules[0].host).toBe(`two-${suite.scope.run}.example.org`);
    expect((await secretKey(ns, 'mover-memory-key')).hostname).toBe(`two-${suite.scope.run}.example.org`);
    await waitFor('new host serves the key', async () => (await search(`two-${suite.scope.run}.example.org`, key)).status === 200);
    await waitFor('old host no longer does', async () => (await search(`one-${suite.scope.run}.example.org`, key)).status !== 200);
  });

  it('takes the tenant only from the namespace: without one it is Stalled, labelling the namespace provisions it', async () => {
    const ns = await createNamespace(suite.scope.run);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('waiting'));
    const stalled = await waitFor('Stalled', async () => {
      const m = await getMemory(ns, 'waiting');
      return condition(m, 'Stalled')?.status === 'True' ? m : undefined;
    });
    expect(condition(stalled, 'Stalled').reason).toBe('TenantNotAssigned');
    expect(condition(stalled, 'Ready')).toMatchObject({ status: 'False', reason: 'TenantNotAssigned' });
    expect((await kubectlOk(['-n', ns, 'get', 'memories'])).split('\n')[1]).toMatch(/waiting\s+False/);

    const tenant = `tenant-${suite.scope.run}-d`;
    await kubectlOk(['annotate', 'namespace', ns, `lore.dev/tenant=${tenant}`]);
    const m = await waitReady(ns, 'waiting');
    expect(m.status.tenantId).toBe(tenant);
    expect(condition(m, 'Stalled')).toBeUndefined();
  });

  it('reports a hostname the namespace may not claim as Stalled/HostnameNotAllowed, and serves it once the spec names its own', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-g` });
    // The gateway's public host: outside the base domain and the listed example.org.
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('squat', { hostname: 'lore.example.com' }));
    const stalled = await waitFor('HostnameNotAllowed', async () => {
      const x = await getMemory(ns, 'squat');
      return condition(x, 'Stalled')?.reason === 'HostnameNotAllowed' ? x : undefined;
    });
    expect(condition(stalled, 'Stalled')!.message).toContain(`the default squat-${ns}.${BASE_DOMAIN}`);
    expect(stalled.status?.memoryId).toBeUndefined();
    // A host of a listed domain (the suites list example.org) is served.
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('squat', { hostname: `kb-${suite.scope.run}.example.org` }));
    const ready = await waitReady(ns, 'squat');
    expect(ready.status?.hostname).toBe(`kb-${suite.scope.run}.example.org`);
  });

  it('reports a hostname held by another memory as Stalled/HostnameConflict', async () => {
    const host = `taken-${suite.scope.run}.example.org`;
    const ns1 = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-e` });
    const ns2 = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-f` });
    await kubectlOk(['-n', ns1, 'apply', '-f', '-'], memoryYaml('first', { hostname: host }));
    await waitReady(ns1, 'first');
    await kubectlOk(['-n', ns2, 'apply', '-f', '-'], memoryYaml('second', { hostname: host }));
    const m = await waitFor('HostnameConflict', async () => {
      const x = await getMemory(ns2, 'second');
      return condition(x, 'Stalled')?.reason === 'HostnameConflict' ? x : undefined;
    });
    expect(condition(m, 'Ready').message).toContain(host);
    expect((await kubectl(['-n', ns2, 'get', 'secret', 'second-memory-key'])).code).not.toBe(0);

    // The first moves elsewhere: the waiting one takes the host at once, not at its 5-minute requeue.
    await kubectlOk(['-n', ns1, 'patch', 'memory', 'first', '--type=merge', '-p', JSON.stringify({ spec: { hostname: `moved-${suite.scope.run}.example.org` } })]);
    const second = await waitReady(ns2, 'second', 30_000);
    expect(second.status.hostname).toBe(host);
  });

  it('refuses to overwrite a Secret it does not manage', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-g` });
    await kubectlOk(['-n', ns, 'create', 'secret', 'generic', 'mine', '--from-literal=api-key=user-data']);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('clash', { keySecretName: 'mine' }));
    const m = await waitFor('SecretConflict', async () => {
      const x = await getMemory(ns, 'clash');
      return condition(x, 'Stalled')?.reason === 'SecretConflict' ? x : undefined;
    });
    expect(m.status.keyId).toBeUndefined();
    const s = await kubectlJson(['-n', ns, 'get', 'secret', 'mine']);
    expect(Buffer.from(s.data['api-key'], 'base64').toString()).toBe('user-data');
  });

  it('deprovisions through the finalizer: key refused at once, Ingress and Secret removed, object gone', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-h` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('doomed', { dataRetention: 'Delete' }));
    const m = await waitReady(ns, 'doomed');
    const { key } = await secretKey(ns, 'doomed-memory-key');
    expect((await search(m.status.hostname, key)).status).toBe(200);

    await kubectlOk(['-n', ns, 'delete', 'memory', 'doomed', '--wait=true', '--timeout=30s']);
    expect((await kubectl(['-n', ns, 'get', 'memory', 'doomed'])).code).not.toBe(0);
    const refused = await search(m.status.hostname, key);
    expect([401, 404]).toContain(refused.status);
    expect((await http(suite.platform.publicUrl, 'POST', '/api/v1/memory/search', { headers: { host: '127.0.0.1', 'x-api-key': key }, body: { query: 'x' } })).status).toBe(401);
    expect((await kubectl(['-n', suite.scope.systemNamespace, 'get', 'ingress', m.status.ingressName])).code).not.toBe(0);
    expect((await kubectl(['-n', ns, 'get', 'secret', 'doomed-memory-key'])).code).not.toBe(0);
    expect(await suite.platform.workingKeysOfMemory(m.status.memoryId)).toEqual([]);
  });

  it('rejects invalid specs at the API server with a clear message', async () => {
    const ns = await createNamespace(suite.scope.run, { tenant: `tenant-${suite.scope.run}-i` });
    const bad = await kubectl(['-n', ns, 'apply', '-f', '-'], memoryYaml('bad', { hostname: '*.Example.org' }));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('hostname must be a lowercase DNS name');
    const single = await kubectl(['-n', ns, 'apply', '-f', '-'], memoryYaml('bad', { hostname: 'localhost' }));
    expect(single.stderr).toContain('hostname must be fully qualified');
    const retention = await kubectl(['-n', ns, 'apply', '-f', '-'], memoryYaml('bad', { dataRetention: 'Sometimes' }));
    expect(retention.stderr).toMatch(/dataRetention.*supported values: "Retain", "Delete"/);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], memoryYaml('fixed', { keySecretName: 'one' }));
    const immutable = await kubectl(['-n', ns, 'apply', '-f', '-'], memoryYaml('fixed', { keySecretName: 'two' }));
    expect(immutable.stderr).toContain('keySecretName is immutable');
  });
});
