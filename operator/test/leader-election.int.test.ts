import { createNamespace, installCrds, kubectlJson, kubectlOk, runId } from './support/kube';
import { createSystemNamespace, fetchText, metricValue, operatorEnv, spawnOperator, waitHealthy, type OperatorProcess, type SuiteScope } from './support/operator';
import { startPlatform, type Platform } from './support/platform';
import { waitFor } from './support/wait';

jest.setTimeout(180_000);

/** Two replicas of the compiled operator: one Lease, one leader, and only the leader reconciles. */
describe('leader election', () => {
  let platform: Platform;
  let scope: SuiteScope;
  const procs: OperatorProcess[] = [];
  let port = 19_900 + Math.floor(Math.random() * 500);

  beforeAll(async () => {
    await installCrds();
    const run = runId();
    scope = { run, systemNamespace: await createSystemNamespace(run) };
    platform = await startPlatform();
  });

  afterAll(async () => {
    for (const p of procs) await p.kill('SIGTERM');
    await platform?.close();
  });

  const fast = {
    LORE_OPERATOR_LEADER_ELECTION: 'true',
    LORE_OPERATOR_LEASE_DURATION_SECONDS: '4',
    LORE_OPERATOR_RENEW_DEADLINE_SECONDS: '3',
    LORE_OPERATOR_RETRY_PERIOD_SECONDS: '1',
  };

  async function replica(name: string): Promise<OperatorProcess> {
    const p = await spawnOperator(operatorEnv(scope, platform, { ...fast, POD_NAME: name }), port++);
    procs.push(p);
    return p;
  }

  const reconciles = async (p: OperatorProcess) => metricValue(await fetchText(`${p.healthUrl}/metrics`), 'lore_operator_reconcile_duration_seconds_count');
  const leading = async (p: OperatorProcess) => metricValue(await fetchText(`${p.healthUrl}/metrics`), 'lore_operator_leader');

  async function ready(ns: string, name: string): Promise<any> {
    return waitFor(`Memory ${name} Ready`, async () => {
      const m = await kubectlJson(['-n', ns, 'get', 'memory', name]);
      return (m.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True') ? m : undefined;
    }, 60_000);
  }

  it('elects one leader; the standby reconciles nothing until the leader dies, then takes over', async () => {
    const a = await replica('replica-a');
    const b = await replica('replica-b');
    await Promise.all([waitHealthy(a), waitHealthy(b)]);

    const lease = await waitFor('a Lease holder', async () => {
      const l = await kubectlJson(['-n', scope.systemNamespace, 'get', 'lease', 'lore-operator']);
      return l.spec?.holderIdentity ? l : undefined;
    });
    const [leader, standby] = lease.spec.holderIdentity === 'replica-a' ? [a, b] : [b, a];
    expect(lease.spec.leaseDurationSeconds).toBe(4);
    await waitFor('leader metric', async () => (await leading(leader)) === 1);
    expect(await leading(standby)).toBe(0);

    const ns = await createNamespace(scope.run, { tenant: `tenant-${scope.run}-a` });
    for (let i = 0; i < 3; i++) {
      await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: `m${i}` }, spec: {} }));
    }
    for (let i = 0; i < 3; i++) await ready(ns, `m${i}`);
    expect(await reconciles(leader)).toBeGreaterThan(0);
    expect(await reconciles(standby)).toBe(0);
    // Events name the replica that did the work.
    const events = await kubectlJson(['-n', ns, 'get', 'events.events.k8s.io']);
    expect(new Set(events.items.map((e: any) => e.reportingInstance))).toEqual(new Set([lease.spec.holderIdentity]));

    await leader.kill('SIGKILL');
    await waitFor('the standby takes the Lease', async () => {
      const l = await kubectlJson(['-n', scope.systemNamespace, 'get', 'lease', 'lore-operator']);
      return l.spec.holderIdentity !== lease.spec.holderIdentity && l.spec.leaseTransitions > lease.spec.leaseTransitions;
    }, 30_000);
    await waitFor('standby leads', async () => (await leading(standby)) === 1);
    await kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name: 'after' }, spec: {} }));
    await ready(ns, 'after');
    expect(await reconciles(standby)).toBeGreaterThan(0);
  });

  it('a leader stopped gracefully releases the Lease so another replica takes over at once', async () => {
    const current = await kubectlJson(['-n', scope.systemNamespace, 'get', 'lease', 'lore-operator']);
    const leader = procs.find((p) => p.child.exitCode === null && p.child.signalCode === null)!;
    const c = await replica('replica-c');
    await waitHealthy(c);
    expect(await leading(c)).toBe(0);
    const stoppedAt = Date.now();
    // A clean stop: controllers drained while the API client still works, exit 0, no loss of leadership reported.
    expect(await leader.kill('SIGTERM')).toBe(0);
    expect(leader.output()).not.toMatch(/leadership lost|socket hang up/);
    await waitFor('replica-c leads', async () => (await leading(c)) === 1, 20_000);
    // A released lease is taken within a retry period or two, well before the 4 s lease would expire.
    expect(Date.now() - stoppedAt).toBeLessThan(4_000);
    const lease = await kubectlJson(['-n', scope.systemNamespace, 'get', 'lease', 'lore-operator']);
    expect(lease.spec.holderIdentity).toBe('replica-c');
    expect(lease.spec.leaseTransitions).toBeGreaterThan(current.spec.leaseTransitions);
  });
});
