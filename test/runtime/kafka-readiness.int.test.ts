import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { Lifecycle } from '../../services/runtime/src/lifecycle/lifecycle';
import { consumerGroupsCheck } from '../../services/runtime/src/lifecycle/consumer-groups-check';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(120_000);

/**
 * A worker's readiness follows its consumer group membership on a real broker. To hold the worker out of its group
 * without racing it, another member of the group is kept busy inside a handler: the coordinator answers a new
 * member's JoinGroup only once every existing member has rejoined (or its rebalance timeout ran out, set far
 * beyond the test here), and a kafkajs member rejoins only after its handler returned.
 */
describe('consumer group readiness (KafkaBus on a real broker)', () => {
  const brokers = requireEnv('LORE_TEST_KAFKA_BROKERS').split(',');
  const prefix = `ready-${randomBytes(4).toString('hex')}`;
  const topic = 'lore.readiness';
  const group = 'readiness-worker';
  let bus: KafkaBus;
  let holder: Consumer | undefined;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    bus = new KafkaBus({ brokers, clientId: 'lore-readiness', prefix, logger: silentLogger, partitions: 1 });
    await bus.ensureTopics([topic]);
    await bus.publish(topic, [{ key: 'k', value: 'first' }]);
  });

  afterAll(async () => {
    // A failed assertion must not leave the holder's handler (and its disconnect) waiting.
    release();
    await holder?.disconnect();
    await bus.close();
  });

  it('is not ready while the worker has not joined its group, and ready once it has, with the lag in the details', async () => {
    // The holder: a member of the same group whose handler does not return until the test lets it.
    const kafka = new Kafka({ clientId: 'lore-readiness-holder', brokers, logLevel: logLevel.NOTHING });
    holder = kafka.consumer({ groupId: `${prefix}.${group}`, sessionTimeout: 90_000, rebalanceTimeout: 90_000, heartbeatInterval: 3_000 });
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    await holder.connect();
    await holder.subscribe({ topics: [`${prefix}.${topic}`], fromBeginning: true });
    await holder.run({
      eachMessage: async () => {
        entered();
        await released;
      },
    });
    await inHandler;

    const lifecycle = new Lifecycle(silentLogger);
    lifecycle.addCheck('consumer groups', consumerGroupsCheck(bus, { lagWaitMs: 5_000 }));
    // subscribe registers the subscription before its first await; it resolves only once the consumer joined.
    const subscribing = bus.subscribe({ groupId: group, topics: [topic], fromBeginning: true }, async () => undefined);
    lifecycle.markStarted();

    // The holder keeps the group from taking the worker in.
    const before = await lifecycle.readiness();
    expect(before.ready).toBe(false);
    expect(before.checks['consumer groups']).toEqual({ ok: false, groups: [expect.objectContaining({ group, state: 'joining' })] });

    release();
    const sub = await subscribing;
    let after = await lifecycle.readiness();
    for (const deadline = Date.now() + 60_000; !after.ready && Date.now() < deadline; after = await lifecycle.readiness()) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(after.ready).toBe(true);
    // One partition, two members: one of them is idle, which counts as in the group. The one message is counted as
    // lag until the holder's commit of it is read.
    const [details] = (after.checks['consumer groups'] as { groups: Array<Record<string, unknown>> }).groups;
    expect(details).toEqual(expect.objectContaining({ group, state: 'member', lag: { [topic]: expect.any(Number) } }));
    expect([0, 1]).toContain(details!.partitions);

    await sub.stop();
    // A stopped subscription leaves the check: this bus has none left, so it is not a worker in any group.
    expect((await lifecycle.readiness()).ready).toBe(false);
  });
});
