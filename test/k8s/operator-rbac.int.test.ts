import { readFileSync } from 'node:fs';
import { createNamespace, installCrds, kubectl, kubectlJson, kubectlOk, runId } from '../../operator/test/support/kube';
import { operatorConfig, startInProcessOperator, type InProcessOperator } from '../../operator/test/support/operator';
import { http, startPlatform, type Platform } from '../../operator/test/support/platform';
import { waitFor } from '../../operator/test/support/wait';
import { requireEnv } from '../support/infra';
import { MINIMAL, kubectlOk as kubectlOkChart, renderObjects } from './support';

jest.setTimeout(180_000);

/**
 * The operator running with nothing but the chart's RBAC: its ServiceAccount's token from the TokenRequest API,
 * the ClusterRole, Role and bindings exactly as rendered. It must do its whole job, and nothing more is granted.
 */
describe('operator under the chart RBAC', () => {
  const run = runId();
  const release = `rb${run}`;
  let systemNs: string;
  let sa: string;
  let platform: Platform;
  let op: InProcessOperator;

  beforeAll(async () => {
    await installCrds();
    systemNs = await createNamespace(run, { prefix: 'lore-rbac' });
    const objs = await renderObjects(release, systemNs, ['-f', MINIMAL, '--set', 'crds.install=false', '--api-versions', 'lore.dev/v1alpha1']);
    const rbac = objs.filter((o) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind));
    expect(rbac.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ServiceAccount']);
    await kubectlOkChart(['apply', '-n', systemNs, '-f', '-'], rbac.map((o) => JSON.stringify(o)).join('\n'));
    sa = rbac.find((o) => o.kind === 'ServiceAccount').metadata.name;
    const token = (await kubectlOk(['create', 'token', sa, '-n', systemNs, '--duration=2h'])).trim();

    platform = await startPlatform();
    const config = operatorConfig({ run, systemNamespace: systemNs }, platform, {
      identity: `${release}-operator-0`,
      leaderElection: { namespace: systemNs, name: `${release}-lore-operator`, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
    });
    op = await startInProcessOperator(config, undefined, {
      server: requireEnv('LORE_KUBE_SERVER'),
      ca: readFileSync(requireEnv('LORE_KUBE_CA_FILE')),
      headers: async () => ({ authorization: `Bearer ${token}` }),
    });
  });

  afterAll(async () => {
    await op?.stop();
    await platform?.close();
  });

  const condition = (o: any, t: string) => (o.status?.conditions ?? []).find((c: any) => c.type === t);

  it('provisions, issues, leads and deprovisions with exactly the granted rights', async () => {
    await waitFor('leadership', async () => op.composed.operator.isLeader);
    const ns = await createNamespace(run, { tenant: `tenant-${run}` });
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'm' }, spec: {} }));
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'k' }, spec: { type: 'live', secretName: 'k' } }));
    const m = await waitFor('Memory Ready', async () => {
      const o = await kubectlJson(['-n', ns, 'get', 'memory', 'm']);
      return condition(o, 'Ready')?.status === 'True' ? o : undefined;
    });
    await waitFor('ApiKey Ready', async () => condition(await kubectlJson(['-n', ns, 'get', 'apikey', 'k']), 'Ready')?.status === 'True');
    expect((await kubectl(['-n', systemNs, 'get', 'ingress', m.status.ingressName])).code).toBe(0);
    const lease = await kubectlJson(['-n', systemNs, 'get', 'lease', `${release}-lore-operator`]);
    expect(lease.spec.holderIdentity).toBe(`${release}-operator-0`);
    const events = await kubectlJson(['-n', ns, 'get', 'events.events.k8s.io']);
    expect(events.items.length).toBeGreaterThan(0);
    const s = await kubectlJson(['-n', ns, 'get', 'secret', 'k']);
    const key = Buffer.from(s.data['api-key'], 'base64').toString();
    expect((await http(platform.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { host: '127.0.0.1', 'x-api-key': key } })).status).toBe(200);

    await kubectlOk(['-n', ns, 'delete', 'memory', 'm', '--wait=true', '--timeout=30s']);
    await kubectlOk(['-n', ns, 'delete', 'apikey', 'k', '--wait=true', '--timeout=30s']);
    expect((await kubectl(['-n', systemNs, 'get', 'ingress', m.status.ingressName])).code).not.toBe(0);
    expect((await http(platform.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { host: '127.0.0.1', 'x-api-key': key } })).status).toBe(401);
    // No permission error was ever counted.
    const text = await (await fetch(op.metricsUrl)).text();
    expect(text).not.toMatch(/lore_operator_kube_requests_total\{[^}]*code="403"/);
  });

  it.each([
    ['update', 'memories.lore.dev', []],
    ['delete', 'apikeys.lore.dev', []],
    ['update', 'secrets', []],
    ['list', 'pods', ['-A']],
    ['get', 'configmaps', ['-A']],
    ['create', 'ingresses.networking.k8s.io', ['-n', 'default']],
    ['update', 'leases.coordination.k8s.io/someone-else', ['-n', '__SYSTEM__']],
    ['create', 'deployments.apps', ['-n', '__SYSTEM__']],
    ['escalate', 'clusterroles.rbac.authorization.k8s.io', []],
  ])('is not allowed to %s %s', async (verb, resource, scope) => {
    const args = scope.map((a) => (a === '__SYSTEM__' ? systemNs : a));
    const r = await kubectl(['auth', 'can-i', verb, resource, `--as=system:serviceaccount:${systemNs}:${sa}`, ...args]);
    expect(r.stdout.trim()).toBe('no');
  });
});
