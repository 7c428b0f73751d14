import { randomUUID } from 'node:crypto';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(90_000);

/**
 * A handler that runs longer than the consumer's session timeout (a slow webhook receiver, a large extraction)
 * must keep its group membership: the message is handled once, and the next one follows without a rebalance
 * handing the partition (and the message in flight) to someone else.
 */
describe('KafkaBus: a handler longer than the session timeout', () => {
  let bus: KafkaBus;
  afterAll(() => bus?.close());

  it('keeps the member in its group: the slow message is delivered once and the next follows', async () => {
    bus = new KafkaBus({
      brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','),
      clientId: 'lore-long-handler',
      logger: silentLogger,
      partitions: 1,
      // The broker's smallest allowed session; the handler below takes well over it.
      sessionTimeoutMs: 6_000,
      heartbeatIntervalMs: 1_000,
    });
    const topic = `lore.test.long-handler.${randomUUID()}`;
    await bus.ensureTopics([topic]);
    const deliveries: string[] = [];
    let resolveSecond!: () => void;
    const secondHandled = new Promise<void>((r) => (resolveSecond = r));
    const sub = await bus.subscribe({ groupId: `long-${randomUUID()}`, topics: [topic], fromBeginning: true }, async (m) => {
      const v = m.value.toString();
      deliveries.push(v);
      if (v === 'slow') await new Promise((r) => setTimeout(r, 11_000));
      if (v === 'next') resolveSecond();
    });
    await bus.publish(topic, [{ key: 'k', value: 'slow' }, { key: 'k', value: 'next' }]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      secondHandled,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the next message was not handled within 40 s (deliveries: ${deliveries.join(', ')})`)), 40_000);
      }),
    ]).finally(() => clearTimeout(timer));
    // Anything redelivered by a rebalance would arrive within a few seconds of the slow handler's end.
    await new Promise((r) => setTimeout(r, 4_000));
    await sub.stop();
    expect(deliveries).toEqual(['slow', 'next']);
  });
});
