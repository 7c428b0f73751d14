import { randomBytes } from 'node:crypto';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { createMetricsRegistry } from '../../services/runtime/src/metrics/registry';
import type { Subscription } from '../../services/runtime/src/ports/event-bus';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(120_000);

/** The value of one series in the registry's text exposition (what /metrics serves), or undefined without it. */
async function sample(registry: ReturnType<typeof createMetricsRegistry>, series: string): Promise<number | undefined> {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * `lore_bus_consumer_lag_messages` on a real broker: a worker whose handler is held has the published messages as
 * its group's lag, read from the broker's committed offsets when the registry is collected, and 0 once it caught up.
 */
describe('consumer lag metric (KafkaBus on a real broker)', () => {
  const brokers = requireEnv('LORE_TEST_KAFKA_BROKERS').split(',');
  const prefix = `lagm-${randomBytes(4).toString('hex')}`;
  const topic = 'lore.lag-metric';
  const group = 'lag-worker';
  const registry = createMetricsRegistry('graph-worker', { defaultMetrics: false });
  const series = `lore_bus_consumer_lag_messages{topic="${topic}",group="${group}",service="graph-worker"}`;
  let bus: KafkaBus;
  let subscription: Subscription | undefined;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    bus = new KafkaBus({ brokers, clientId: 'lore-lag-metric', prefix, logger: silentLogger, partitions: 2, metrics: registry });
    await bus.ensureTopics([topic]);
  });

  afterAll(async () => {
    release();
    await subscription?.stop();
    await bus.close();
  });

  it('reports the messages behind the group while its handler is held, then 0 once it caught up; nothing after the bus closed', async () => {
    // No subscription yet: the gauge is registered and has no series.
    expect(await registry.metrics()).toContain('# TYPE lore_bus_consumer_lag_messages gauge');
    expect(await sample(registry, series)).toBeUndefined();

    await bus.publish(
      topic,
      Array.from({ length: 12 }, (_, i) => ({ key: `k${i % 2}`, value: `m${i}` })),
    );
    const released = new Promise<void>((resolve) => (release = resolve));
    const handled: string[] = [];
    subscription = await bus.subscribe({ groupId: group, topics: [topic], fromBeginning: true }, async (m) => {
      await released;
      handled.push(m.value.toString('utf8'));
    });

    // Every message is behind the group's committed offsets while the handler waits.
    await until('the lag of 12 held messages', async () => (await sample(registry, series)) === 12);

    release();
    await until('the handler to take every message', async () => handled.length === 12);
    await until('the lag to reach 0 once the offsets are committed', async () => (await sample(registry, series)) === 0);

    await subscription.stop();
    subscription = undefined;
    expect(await sample(registry, series)).toBeUndefined();
  });
});
