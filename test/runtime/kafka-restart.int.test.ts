import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { waitFor } from '../../services/runtime/src/bus/bus.contract';
import { eventIdOf } from '../../services/runtime/src/bus/event-id';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(300_000);

const sh = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs one of the infra env's commands (e.g. `bash …/down.sh kafka`). */
async function infra(command: string): Promise<void> {
  await sh('bash', ['-c', command], { timeout: 180_000 });
}

describe('Kafka broker restarted while a producer and a consumer run', () => {
  const brokers = () => requireEnv('LORE_TEST_KAFKA_BROKERS').split(',');
  let producerBus: KafkaBus;
  let consumerBus: KafkaBus;

  afterAll(async () => {
    // Whatever happened, leave a broker running for the suites after this one.
    await infra(requireEnv('LORE_TEST_KAFKA_START'));
    await producerBus?.close();
    await consumerBus?.close();
  });

  it('loses no event: everything the broker acknowledged before, during and after the restart is consumed, in order per key', async () => {
    const topic = `lore.restart.${randomBytes(4).toString('hex')}`;
    producerBus = new KafkaBus({ brokers: brokers(), clientId: 'restart-producer', logger: silentLogger, partitions: 3 });
    consumerBus = new KafkaBus({ brokers: brokers(), clientId: 'restart-consumer', logger: silentLogger });
    await producerBus.ensureTopics([topic]);

    const consumed = new Map<string, number>();
    const order = new Map<string, number[]>();
    await consumerBus.subscribe({ groupId: `restart-${randomBytes(3).toString('hex')}`, topics: [topic], fromBeginning: true }, async (m) => {
      const id = eventIdOf(m)!;
      consumed.set(id, (consumed.get(id) ?? 0) + 1);
      order.set(m.key, [...(order.get(m.key) ?? []), (JSON.parse(m.value.toString()) as { i: number }).i]);
    });

    // The producer behaves like the outbox relay: an event counts once the broker acknowledged it; until then it is
    // retried, in order.
    const acked: string[] = [];
    let publishFailures = 0;
    let longestPublishMs = 0;
    let stop = false;
    const producer = (async () => {
      for (let i = 0; !stop; i++) {
        const id = `e${i}`;
        const started = Date.now();
        for (;;) {
          try {
            await producerBus.publish(topic, [{ key: `k${i % 6}`, value: JSON.stringify({ i }), headers: { 'event-id': id } }]);
            acked.push(id);
            longestPublishMs = Math.max(longestPublishMs, Date.now() - started);
            break;
          } catch {
            publishFailures += 1;
            await sleep(250);
          }
        }
        await sleep(20);
      }
    })();

    await waitFor('50 events before the restart', () => acked.length >= 50, 60_000);
    await infra(requireEnv('LORE_TEST_KAFKA_STOP'));
    const ackedWhenStopped = acked.length;
    await sleep(3_000);
    // Nothing can be acknowledged while the broker is down.
    expect(acked.length).toBeLessThanOrEqual(ackedWhenStopped + 1);
    await infra(requireEnv('LORE_TEST_KAFKA_START'));
    await waitFor('50 events after the restart', () => acked.length >= ackedWhenStopped + 50, 120_000);
    stop = true;
    await producer;

    await waitFor(
      `the consumer to see all ${acked.length} acknowledged events`,
      () => acked.every((id) => consumed.has(id)),
      120_000,
    );
    expect(acked.filter((id) => !consumed.has(id))).toEqual([]);
    for (const seq of order.values()) {
      // Redeliveries may repeat a number; the first sightings must still be in publish order.
      const firstSeen = seq.filter((n, idx) => seq.indexOf(n) === idx);
      expect(firstSeen).toEqual([...firstSeen].sort((a, b) => a - b));
    }
    // The producer really was cut off for the downtime (otherwise this test proved nothing).
    expect(longestPublishMs).toBeGreaterThan(3_000);
    process.stdout.write(`kafka restart: ${acked.length} events acknowledged, ${publishFailures} publish calls failed, longest wait ${longestPublishMs} ms, ${[...consumed.values()].filter((n) => n > 1).length} redelivered\n`);
  });
});
