import { createLogger } from '@lore/runtime/kit';
import type { RequestOptions } from '../kube/client';
import { LEASE, type ResourceType } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import { FakeKube } from '../testing/fake-kube';
import { LeaderElector } from './leader-election';

const logger = createLogger({ level: 'silent', service: 'test' });

function elector(kube: FakeKube, identity: string, log: string[]) {
  return new LeaderElector({
    kube,
    logger,
    namespace: 'lore',
    name: 'lock',
    identity,
    leaseDurationMs: 600,
    renewDeadlineMs: 400,
    retryPeriodMs: 50,
    onStartedLeading: () => log.push(`${identity}+`),
    onStoppedLeading: () => log.push(`${identity}-`),
  });
}

const until = async (cond: () => boolean, ms = 3_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('LeaderElector', () => {
  it('lets exactly one candidate lead, and hands over when the leader releases the lease', async () => {
    const kube = new FakeKube();
    const log: string[] = [];
    const a = elector(kube, 'a', log);
    const b = elector(kube, 'b', log);
    a.start();
    await until(() => a.isLeader);
    b.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(b.isLeader).toBe(false);
    expect(kube.peek<any>(LEASE, 'lore', 'lock')!.spec.holderIdentity).toBe('a');

    await a.stop();
    await until(() => b.isLeader);
    expect(log).toEqual(['a+', 'a-', 'b+']);
    const lease = kube.peek<any>(LEASE, 'lore', 'lock')!;
    expect(lease.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.stop();
  });

  it('takes over a lease whose holder stopped renewing, only after a whole lease duration', async () => {
    const kube = new FakeKube();
    kube.seed(LEASE, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'lock', namespace: 'lore' },
      spec: { holderIdentity: 'dead', leaseDurationSeconds: 1, renewTime: new Date().toISOString(), leaseTransitions: 4 },
    });
    const log: string[] = [];
    const c = elector(kube, 'c', log);
    const started = Date.now();
    c.start();
    await until(() => c.isLeader);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(kube.peek<any>(LEASE, 'lore', 'lock')!.spec).toMatchObject({ holderIdentity: 'c', leaseTransitions: 5 });
    await c.stop();
  });

  it('steps down at once when another candidate holds the lease', async () => {
    const kube = new FakeKube();
    const log: string[] = [];
    const a = elector(kube, 'a', log);
    a.start();
    await until(() => a.isLeader);
    const lease = kube.peek<any>(LEASE, 'lore', 'lock')!;
    await kube.replace(LEASE, { ...lease, spec: { ...lease.spec, holderIdentity: 'usurper', renewTime: new Date().toISOString() } });
    await until(() => !a.isLeader);
    expect(log).toEqual(['a+', 'a-']);
    await a.stop();
  });

  it('steps down at the renew deadline while a renewal hangs on a dead connection, aborting it, before the lease runs out', async () => {
    const kube = new FakeKube();
    let hang = false;
    const aborted: string[] = [];
    // Requests that never get an answer once `hang` is set, as on a blackholed keep-alive connection.
    const stall = <T>(verb: string, opts: RequestOptions | undefined, real: () => Promise<T>): Promise<T> => {
      if (!hang) return real();
      return new Promise<T>((_resolve, reject) => {
        opts?.signal?.addEventListener('abort', () => {
          aborted.push(verb);
          reject(new Error('aborted'));
        });
      });
    };
    const dead = Object.create(kube) as FakeKube;
    dead.get = <T extends KubeObject>(rt: ResourceType, ns: string | undefined, name: string, opts?: RequestOptions) => stall('get', opts, () => kube.get<T>(rt, ns, name));
    dead.replace = <T extends KubeObject>(rt: ResourceType, obj: T, opts?: RequestOptions) => stall('replace', opts, () => kube.replace<T>(rt, obj));
    const log: string[] = [];
    const a = elector(dead, 'a', log);
    a.start();
    await until(() => a.isLeader);
    const renewTime = () => Date.parse(kube.peek<any>(LEASE, 'lore', 'lock')!.spec.renewTime);
    const before = renewTime();
    await until(() => renewTime() > before);
    hang = true;
    const lastRenewal = renewTime();
    await until(() => !a.isLeader);
    const steppedDownAfter = Date.now() - lastRenewal;
    // renewDeadlineMs 400, leaseDurationMs 600: down before anyone else may take the lease.
    expect(steppedDownAfter).toBeLessThan(600);
    expect(aborted.length).toBeGreaterThanOrEqual(1);
    expect(log).toEqual(['a+', 'a-']);
    hang = false;
    await a.stop();
  });
});
