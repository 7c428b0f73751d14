import { randomBytes } from 'node:crypto';
import type { Consumer, ConsumerConfig, Kafka } from 'kafkajs';
import { Registry } from 'prom-client';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { consumerGroupsCheck } from '../../services/runtime/src/lifecycle/consumer-groups-check';
import { Lifecycle } from '../../services/runtime/src/lifecycle/lifecycle';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(120_000);

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * A subscription whose consumer stays out of its group comes back by itself (the bus's watchdog, kafka-bus.ts). The
 * full test run once saw kafkajs restart a consumer after a broker restart and that restart never rejoin, leaving
 * the graph worker unready for good. Here the consumer kafkajs runs is stopped behind the bus's back (kafkajs never
 * restarts a stopped consumer): the same state, out of the group with nothing coming to bring it back.
 */
describe('KafkaBus on a real broker: a consumer out of its group past the bound is replaced', () => {
  const brokers = requireEnv('LORE_TEST_KAFKA_BROKERS').split(',');
  const prefix = `rejoin-${randomBytes(4).toString('hex')}`;
  const topic = 'lore.rejoin';
  const group = 'rejoin-worker';
  const metrics = new Registry();
  let bus: KafkaBus;
  const created: Consumer[] = [];

  beforeAll(async () => {
    bus = new KafkaBus({ brokers, clientId: 'lore-rejoin', prefix, logger: silentLogger, partitions: 2, metrics, rejoinTimeoutMs: 3_000 });
    // Every consumer the bus makes, so the test can stop one the way a hung restart leaves it.
    const kafka = (bus as unknown as { kafka: Kafka }).kafka;
    const make = kafka.consumer.bind(kafka);
    kafka.consumer = (config: ConsumerConfig) => {
      const consumer = make(config);
      created.push(consumer);
      return consumer;
    };
    await bus.ensureTopics([topic]);
  });

  afterAll(() => bus.close());

  it('stops being ready, then a new consumer of the group rejoins and handles what was published meanwhile', async () => {
    const seen: string[] = [];
    const lifecycle = new Lifecycle(silentLogger);
    lifecycle.addCheck('consumer groups', consumerGroupsCheck(bus, { lagWaitMs: 5_000 }));
    const sub = await bus.subscribe({ groupId: group, topics: [topic], fromBeginning: true }, async (m) => void seen.push(m.value.toString()));
    lifecycle.markStarted();
    await until('the first consumer in its group', async () => ((await lifecycle.readiness()).ready ? true : undefined));
    await bus.publish(topic, [{ key: 'a', value: 'before' }]);
    await until('the message published before', () => (seen.includes('before') ? true : undefined));
    expect(created).toHaveLength(1);

    // kafkajs emits STOP: out of the group, and nothing in kafkajs will bring it back.
    await created[0]!.stop();
    const out = await lifecycle.readiness();
    expect(out.ready).toBe(false);
    expect(out.checks['consumer groups']).toEqual({ ok: false, groups: [expect.objectContaining({ group, state: 'stopped' })] });
    await bus.publish(topic, [{ key: 'b', value: 'while out' }]);

    await until('a new consumer in the group', async () => ((await lifecycle.readiness()).ready ? true : undefined));
    expect(created).toHaveLength(2);
    await until('the message published while the consumer was out', () => (seen.includes('while out') ? true : undefined));
    // Nothing handled twice: the old consumer committed what it had handled before it left.
    expect(seen.filter((v) => v === 'before')).toHaveLength(1);
    const replaced = await metrics.getSingleMetric('lore_bus_consumer_replacements_total')!.get();
    expect(replaced.values).toEqual([expect.objectContaining({ labels: { group }, value: 1 })]);

    // Back in the group, the watchdog leaves the new consumer alone.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(created).toHaveLength(2);
    await sub.stop();
    expect(bus.memberships()).toEqual([]);
  });
});
