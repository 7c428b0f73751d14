/**
 * Two installs of Lore on one Kafka (LORE_KAFKA_PREFIX): each gets its own topics and consumer groups, so neither
 * sees the other's messages, and a new group of one install does not replay the other's history.
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { TOPICS } from '@lore/contracts';
import { Registry } from 'prom-client';
import { waitFor } from '../../services/runtime/src/bus/bus.contract';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { readDeadLetter } from '../../services/runtime/src/bus/poison';
import type { BusMessage, Subscription } from '../../services/runtime/src/ports/event-bus';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(120_000);

const brokers = requireEnv('LORE_TEST_KAFKA_BROKERS').split(',');
const run = randomBytes(4).toString('hex');
const prefixA = `install-a-${run}`;
const prefixB = `install-b-${run}`;
const install = (prefix: string) =>
  new KafkaBus({ brokers, clientId: prefix, prefix, logger: silentLogger, metrics: new Registry(), partitions: 2, handlerRetry: { initialMs: 20, maxMs: 100 } });

describe('installs sharing one broker (LORE_KAFKA_PREFIX)', () => {
  const a = install(prefixA);
  const b = install(prefixB);
  const subscriptions: Subscription[] = [];
  const text = (m: BusMessage) => m.value.toString('utf8');

  afterAll(async () => {
    await Promise.all(subscriptions.map((s) => s.stop()));
    await Promise.all([a.close(), b.close()]);
  });

  it('keeps topics, groups and dead letters apart, and a new group starts from its own install only', async () => {
    const topics = [TOPICS.memoryLifecycle, TOPICS.events];
    await Promise.all([a.ensureTopics(topics), b.ensureTopics(topics)]);

    // Install A's history: an erasure published long before install B exists.
    await a.publish(TOPICS.memoryLifecycle, [{ key: 'mem-1', value: 'erase memory of install A' }]);
    // Install B accepted a job before its worker joined: its own backlog, which its new group must still do.
    await b.publish(TOPICS.memoryLifecycle, [{ key: 'mem-1', value: 'erase memory of install B' }]);

    // The same logical group name in both installs, with the documented start policy (earliest for this topic).
    const seenA: string[] = [];
    const seenB: string[] = [];
    subscriptions.push(await a.subscribe({ groupId: 'graph-worker-lifecycle', topics: [TOPICS.memoryLifecycle] }, async (m) => void seenA.push(text(m))));
    subscriptions.push(await b.subscribe({ groupId: 'graph-worker-lifecycle', topics: [TOPICS.memoryLifecycle] }, async (m) => void seenB.push(text(m))));
    await a.publish(TOPICS.memoryLifecycle, [{ key: 'mem-2', value: 'later job of install A' }]);
    await b.publish(TOPICS.memoryLifecycle, [{ key: 'mem-2', value: 'later job of install B' }]);
    await waitFor('both installs to handle their own two jobs', () => seenA.length >= 2 && seenB.length >= 2, 60_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(seenA.sort()).toEqual(['erase memory of install A', 'later job of install A']);
    expect(seenB.sort()).toEqual(['erase memory of install B', 'later job of install B']);

    // Handlers see logical names; on the broker everything carries the install's prefix.
    const admin = new Kafka({ clientId: `shared-broker-${run}`, brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const onBroker = await admin.listTopics();
      for (const p of [prefixA, prefixB]) {
        expect(onBroker).toEqual(expect.arrayContaining([`${p}.${TOPICS.memoryLifecycle}`, `${p}.${TOPICS.events}`]));
      }
      const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
      expect(groups).toEqual(expect.arrayContaining([`${prefixA}.graph-worker-lifecycle`, `${prefixB}.graph-worker-lifecycle`]));
    } finally {
      await admin.disconnect();
    }

    // A poison message of install A goes to A's dead-letter topic only.
    const handledB: string[] = [];
    subscriptions.push(
      await a.subscribe({ groupId: 'webhooks.fanout', topics: [TOPICS.events], maxAttempts: 2 }, async () => {
        throw new Error('malformed event');
      }),
    );
    subscriptions.push(await b.subscribe({ groupId: 'webhooks.fanout', topics: [TOPICS.events], maxAttempts: 2 }, async (m) => void handledB.push(text(m))));
    await a.publish(TOPICS.events, [{ key: 'tenant-a', value: 'not an envelope' }]);
    let deadA: ReturnType<typeof readDeadLetter>[] = [];
    for (const deadline = Date.now() + 60_000; deadA.length === 0 && Date.now() < deadline; ) {
      deadA = (await a.browse(TOPICS.dead)).map(readDeadLetter);
      if (deadA.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    expect(deadA).toHaveLength(1);
    expect(deadA[0]).toMatchObject({ topic: TOPICS.events, group: 'webhooks.fanout', attempts: 2 });
    await b.ensureTopics([TOPICS.dead]);
    expect(await b.browse(TOPICS.dead)).toEqual([]);
    expect(handledB).toEqual([]);
  });
});
