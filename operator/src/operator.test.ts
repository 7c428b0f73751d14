import { createLogger, createMetricsRegistry } from '@lore/runtime/kit';
import { LEASE } from './kube/resources';
import { LoreOperator } from './operator';
import { InMemoryPlatformAdmin } from './platform/in-memory-admin';
import { createOperatorMetrics } from './runtime/metrics';
import { TEST_SETTINGS } from './testing/controller-fixture';
import { FakeKube } from './testing/fake-kube';

const logger = createLogger({ level: 'silent', service: 'test' });

const until = async (cond: () => boolean, ms = 3_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('LoreOperator', () => {
  it('a requested stop releases the Lease without reporting a loss of leadership (the process exits 0)', async () => {
    const kube = new FakeKube();
    const lost = jest.fn();
    const op = new LoreOperator({
      kube,
      admin: new InMemoryPlatformAdmin(),
      logger,
      metrics: createOperatorMetrics(createMetricsRegistry('test', { defaultMetrics: false })),
      settings: TEST_SETTINGS,
      identity: 'replica-a',
      resyncMs: 0,
      leaderElection: { namespace: 'lore', name: 'lock', leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 50 },
      events: { record: async () => undefined },
      onLostLeadership: lost,
    });
    await op.start();
    await until(() => op.isLeader);
    await op.stop();
    expect(op.isLeader).toBe(false);
    expect(kube.peek<any>(LEASE, 'lore', 'lock')!.spec.holderIdentity).toBe('');
    expect(lost).not.toHaveBeenCalled();
  });
});
