/**
 * The `EventBus` contract: one suite, run against MemoryBus (unit tests) and KafkaBus on a real broker
 * (test/runtime). Not a test file itself: each adapter's test calls `describeBusContract`.
 */
import { randomBytes } from 'node:crypto';
import { ROOT_CONTEXT, context, trace, TraceFlags } from '@opentelemetry/api';
import type { Registry } from 'prom-client';
import { TOPICS } from '@lore/contracts';
import type { BrowsableBus, BusMessage, EventBus, SubscribeOptions, Subscription } from '../ports/event-bus';
import { activeTraceId } from '../telemetry/propagation';
import { startTelemetry } from '../telemetry/setup';
import { PoisonError, REDRIVEN_FROM_HEADER, TransientError, readDeadLetter, redriveOf, type DeadLetter } from './poison';

export interface BusFixture {
  bus: EventBus & BrowsableBus;
  metrics: Registry;
  /** How long a message may take to arrive (a broker needs more than a Map). */
  deliveryTimeoutMs: number;
  close(): Promise<void>;
}

export async function waitFor(what: string, predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function counterValue(registry: Registry, name: string, topic: string, group?: string): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const data = await metric.get();
  return data.values
    .filter((v) => v.labels.topic === topic && (group === undefined || v.labels.group === group))
    .reduce((sum, v) => sum + v.value, 0);
}

export function describeBusContract(name: string, open: () => Promise<BusFixture>): void {
  describe(`EventBus contract: ${name}`, () => {
    let fx: BusFixture;
    let bus: EventBus & BrowsableBus;
    let timeout: number;
    const subscriptions: Subscription[] = [];
    const runId = randomBytes(4).toString('hex');
    let seq = 0;
    /** A topic of its own per test, created before use. */
    const freshTopic = async () => {
      const topic = `lore.contract.${runId}.${++seq}`;
      await bus.ensureTopics([topic]);
      return topic;
    };
    const group = (s: string) => `contract-${runId}-${s}-${seq}`;
    const subscribe = async (opts: SubscribeOptions, handler: (m: BusMessage) => Promise<void>) => {
      const s = await bus.subscribe(opts, handler);
      subscriptions.push(s);
      return s;
    };
    const text = (m: BusMessage) => m.value.toString('utf8');
    /** The dead letters whose original message was on `topic`. */
    const deadLettersOf = async (topic: string): Promise<DeadLetter[]> =>
      (await bus.browse(TOPICS.dead, { limit: 10_000 })).map(readDeadLetter).filter((d): d is DeadLetter => d !== null && d.topic === topic);

    beforeAll(async () => {
      startTelemetry({});
      fx = await open();
      bus = fx.bus;
      timeout = fx.deliveryTimeoutMs;
    });
    afterEach(async () => {
      await Promise.all(subscriptions.splice(0).map((s) => s.stop()));
    });
    afterAll(async () => {
      await fx?.close();
    });

    it('delivers the key, value and headers of what was published', async () => {
      const topic = await freshTopic();
      await bus.publish(topic, [
        { key: 'k1', value: JSON.stringify({ n: 1 }), headers: { 'event-id': 'e-1' } },
        { key: 'k2', value: Buffer.from([1, 2, 3]), headers: { 'event-id': 'e-2', other: 'x' } },
      ]);
      const got: BusMessage[] = [];
      await subscribe({ groupId: group('basic'), topics: [topic], fromBeginning: true }, async (m) => {
        got.push(m);
      });
      await waitFor('2 messages', () => got.length >= 2, timeout);
      const byKey = Object.fromEntries(got.map((m) => [m.key, m]));
      expect(JSON.parse(text(byKey.k1!))).toEqual({ n: 1 });
      expect(byKey.k1!.headers['event-id']).toBe('e-1');
      expect([...byKey.k2!.value]).toEqual([1, 2, 3]);
      expect(byKey.k2!.headers).toMatchObject({ 'event-id': 'e-2', other: 'x' });
      for (const m of got) {
        expect(m.topic).toBe(topic);
        expect(typeof m.partition).toBe('number');
        expect(m.offset).toMatch(/^\d+$/);
      }
    });

    it('keeps the order of messages with the same key', async () => {
      const topic = await freshTopic();
      const keys = ['alpha', 'beta', 'gamma', 'delta'];
      for (let batch = 0; batch < 5; batch++) {
        await bus.publish(
          topic,
          Array.from({ length: 24 }, (_, i) => {
            const n = batch * 6 + Math.floor(i / keys.length);
            return { key: keys[i % keys.length]!, value: String(n) };
          }),
        );
      }
      const seen = new Map<string, number[]>();
      await subscribe({ groupId: group('order'), topics: [topic], fromBeginning: true }, async (m) => {
        seen.set(m.key, [...(seen.get(m.key) ?? []), Number(text(m))]);
        // Uneven handler times must not reorder anything.
        if (Number(text(m)) % 7 === 0) await new Promise((r) => setTimeout(r, 5));
      });
      await waitFor('120 messages', () => [...seen.values()].reduce((s, v) => s + v.length, 0) >= 120, timeout);
      for (const key of keys) expect(seen.get(key)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    });

    it('gives a failing handler the same message again, before anything behind it, and counts the failures', async () => {
      const topic = await freshTopic();
      const failuresBefore = await counterValue(fx.metrics, 'lore_bus_handler_failures_total', topic);
      await bus.publish(topic, Array.from({ length: 6 }, (_, i) => ({ key: 'one-key', value: String(i) })));
      const done: number[] = [];
      let attemptsOnTwo = 0;
      await subscribe({ groupId: group('retry'), topics: [topic], fromBeginning: true }, async (m) => {
        const n = Number(text(m));
        if (n === 2 && ++attemptsOnTwo <= 2) throw new Error('transient failure');
        done.push(n);
      });
      await waitFor('6 handled messages', () => done.length >= 6, timeout);
      expect(done).toEqual([0, 1, 2, 3, 4, 5]);
      expect(attemptsOnTwo).toBe(3);
      expect((await counterValue(fx.metrics, 'lore_bus_handler_failures_total', topic)) - failuresBefore).toBe(2);
    });

    it("delivers every message once to each group, sharing a topic's partitions among a group's members", async () => {
      const topic = await freshTopic();
      const shared = group('shared');
      const memberA: string[] = [];
      const memberB: string[] = [];
      const other: string[] = [];
      await subscribe({ groupId: shared, topics: [topic] }, async (m) => void memberA.push(text(m)));
      await subscribe({ groupId: shared, topics: [topic] }, async (m) => void memberB.push(text(m)));
      await subscribe({ groupId: group('other'), topics: [topic] }, async (m) => void other.push(text(m)));
      const sent = Array.from({ length: 48 }, (_, i) => `m${i}`);
      await bus.publish(topic, sent.map((value, i) => ({ key: `key-${i % 12}`, value })));
      await waitFor('both groups to have everything', () => memberA.length + memberB.length >= 48 && other.length >= 48, timeout);
      await new Promise((r) => setTimeout(r, 200));
      expect([...memberA, ...memberB].sort()).toEqual([...sent].sort());
      expect([...other].sort()).toEqual([...sent].sort());
      expect(memberA.length).toBeGreaterThan(0);
      expect(memberB.length).toBeGreaterThan(0);
    });

    it('starts a new group after the last message unless it asks for the beginning', async () => {
      const topic = await freshTopic();
      await bus.publish(topic, [{ key: 'k', value: 'before' }]);
      const late: string[] = [];
      const early: string[] = [];
      await subscribe({ groupId: group('late'), topics: [topic] }, async (m) => void late.push(text(m)));
      await subscribe({ groupId: group('early'), topics: [topic], fromBeginning: true }, async (m) => void early.push(text(m)));
      await bus.publish(topic, [{ key: 'k', value: 'after' }]);
      await waitFor('the message published after subscribing', () => late.length >= 1 && early.length >= 2, timeout);
      await new Promise((r) => setTimeout(r, 200));
      expect(late).toEqual(['after']);
      expect(early).toEqual(['before', 'after']);
    });

    it('resumes a group after the last message its handlers finished', async () => {
      const topic = await freshTopic();
      const groupId = group('resume');
      const first: string[] = [];
      const s = await subscribe({ groupId, topics: [topic], fromBeginning: true }, async (m) => void first.push(text(m)));
      await bus.publish(topic, ['a', 'b', 'c'].map((value) => ({ key: 'k', value })));
      await waitFor('the first three', () => first.length >= 3, timeout);
      await s.stop();
      await bus.publish(topic, ['d', 'e'].map((value) => ({ key: 'k', value })));
      const second: string[] = [];
      await subscribe({ groupId, topics: [topic], fromBeginning: true }, async (m) => void second.push(text(m)));
      await waitFor('the next two', () => second.length >= 2, timeout);
      await new Promise((r) => setTimeout(r, 200));
      expect(first).toEqual(['a', 'b', 'c']);
      expect(second).toEqual(['d', 'e']);
    });

    it('stops promptly while a handler keeps failing, and the message then goes to the next member', async () => {
      const topic = await freshTopic();
      const groupId = group('stuck');
      let failures = 0;
      const s = await subscribe({ groupId, topics: [topic], fromBeginning: true }, async () => {
        failures += 1;
        throw new Error('permanent failure');
      });
      await bus.publish(topic, [{ key: 'k', value: 'poison' }]);
      await waitFor('a failure', () => failures >= 1, timeout);
      const started = Date.now();
      await s.stop();
      expect(Date.now() - started).toBeLessThan(5_000);
      const got: string[] = [];
      await subscribe({ groupId, topics: [topic], fromBeginning: true }, async (m) => void got.push(text(m)));
      await waitFor('the redelivered message', () => got.length >= 1, timeout);
      expect(got[0]).toBe('poison');
    });

    it("runs the handler in the publisher's trace", async () => {
      const topic = await freshTopic();
      const traceId = randomBytes(16).toString('hex');
      const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: randomBytes(8).toString('hex'), traceFlags: TraceFlags.SAMPLED, isRemote: true });
      await context.with(parent, () => bus.publish(topic, [{ key: 'k', value: 'traced' }]));
      const seen: Array<{ traceId?: string; traceparent?: string }> = [];
      await subscribe({ groupId: group('trace'), topics: [topic], fromBeginning: true }, async (m) => {
        seen.push({ traceId: activeTraceId(), traceparent: m.headers.traceparent });
      });
      await waitFor('the traced message', () => seen.length >= 1, timeout);
      expect(seen[0]!.traceparent).toContain(traceId);
      expect(seen[0]!.traceId).toBe(traceId);
    });

    it('counts published and consumed messages per topic', async () => {
      const topic = await freshTopic();
      await bus.publish(topic, [1, 2, 3].map((n) => ({ key: `k${n}`, value: String(n) })));
      let handled = 0;
      await subscribe({ groupId: group('count'), topics: [topic], fromBeginning: true }, async () => void handled++);
      await waitFor('3 messages', () => handled >= 3, timeout);
      expect(await counterValue(fx.metrics, 'lore_bus_messages_published_total', topic)).toBe(3);
      expect(await counterValue(fx.metrics, 'lore_bus_messages_consumed_total', topic)).toBe(3);
    });

    it('hands a batch handler waiting messages of one partition together, in order, at most maxBatch at once', async () => {
      const topic = await freshTopic();
      // Published before the group starts, so they are all waiting when it does.
      await bus.publish(topic, Array.from({ length: 40 }, (_, i) => ({ key: i % 2 === 0 ? 'even' : 'odd', value: String(i) })));
      const batches: BusMessage[][] = [];
      const s = await bus.subscribeBatch({ groupId: group('batch'), topics: [topic], fromBeginning: true, maxBatch: 8 }, async (ms) => {
        batches.push(ms);
      });
      subscriptions.push(s);
      await waitFor('40 messages', () => batches.flat().length >= 40, timeout);
      await new Promise((r) => setTimeout(r, 200));
      expect(batches.flat()).toHaveLength(40);
      for (const b of batches) {
        expect(b.length).toBeGreaterThanOrEqual(1);
        expect(b.length).toBeLessThanOrEqual(8);
        expect(new Set(b.map((m) => `${m.topic}/${m.partition}`)).size).toBe(1);
        const offsets = b.map((m) => BigInt(m.offset));
        offsets.slice(1).forEach((o, i) => expect(o).toBeGreaterThan(offsets[i]!));
      }
      expect(batches.some((b) => b.length > 1)).toBe(true);
      for (const key of ['even', 'odd']) {
        const values = batches.flat().filter((m) => m.key === key).map((m) => Number(text(m)));
        expect(values).toEqual(Array.from({ length: 20 }, (_, i) => 2 * i + (key === 'odd' ? 1 : 0)));
      }
      expect(await counterValue(fx.metrics, 'lore_bus_messages_consumed_total', topic)).toBe(40);
    });

    it('gives a failing batch handler the same messages again before anything behind them, and resumes after the last batch that succeeded', async () => {
      const topic = await freshTopic();
      const groupId = group('batch-retry');
      await bus.publish(topic, Array.from({ length: 10 }, (_, i) => ({ key: 'one-key', value: String(i) })));
      const calls: number[][] = [];
      const done: number[] = [];
      let failures = 0;
      const s = await bus.subscribeBatch({ groupId, topics: [topic], fromBeginning: true, maxBatch: 4 }, async (ms) => {
        const values = ms.map((m) => Number(text(m)));
        calls.push(values);
        if (values.includes(5) && ++failures <= 2) throw new Error('transient failure');
        done.push(...values);
      });
      await waitFor('10 handled messages', () => done.length >= 10, timeout);
      expect(done).toEqual(Array.from({ length: 10 }, (_, i) => i));
      // The failed call was repeated with the same first message, and nothing after it ran in between.
      const failed = calls.findIndex((c) => c.includes(5));
      expect(calls[failed + 1]![0]).toBe(calls[failed]![0]);
      expect(calls[failed + 2]![0]).toBe(calls[failed]![0]);
      await s.stop();
      await bus.publish(topic, [{ key: 'one-key', value: '10' }]);
      const after: number[] = [];
      const again = await bus.subscribeBatch({ groupId, topics: [topic], fromBeginning: true }, async (ms) => {
        after.push(...ms.map((m) => Number(text(m))));
      });
      subscriptions.push(again);
      await waitFor('the message published after the stop', () => after.length >= 1, timeout);
      await new Promise((r) => setTimeout(r, 200));
      expect(after).toEqual([10]);
    });

    it('dead-letters a message whose handler keeps failing, with the reason, and goes on with the next one', async () => {
      const topic = await freshTopic();
      const groupId = group('poison');
      await bus.publish(topic, [
        { key: 'one-key', value: 'first' },
        { key: 'one-key', value: 'poison', headers: { 'event-id': 'evt-poison', extra: 'kept' } },
        { key: 'one-key', value: 'third' },
      ]);
      const done: string[] = [];
      const attempts: number[] = [];
      const startedAt = Date.now();
      await subscribe({ groupId, topics: [topic], fromBeginning: true, maxAttempts: 3 }, async (m) => {
        if (text(m) === 'poison') {
          attempts.push(Date.now());
          throw new Error('cannot parse this one');
        }
        done.push(text(m));
      });
      await waitFor('the message after the poison one', () => done.length >= 2, timeout);
      expect(done).toEqual(['first', 'third']);
      expect(attempts).toHaveLength(3);
      // Backoff between attempts (the fixtures start at 10–20 ms and double).
      expect(attempts[2]! - attempts[0]!).toBeGreaterThanOrEqual(20);
      let dead: DeadLetter[] = [];
      for (const deadline = Date.now() + timeout; dead.length === 0 && Date.now() < deadline; ) dead = await deadLettersOf(topic);
      expect(dead).toHaveLength(1);
      const d = dead[0]!;
      expect(d.value.toString('utf8')).toBe('poison');
      expect(d).toMatchObject({ topic, key: 'one-key', group: groupId, attempts: 3 });
      expect(d.error).toContain('cannot parse this one');
      expect(d.offset).toMatch(/^\d+$/);
      expect(typeof d.partition).toBe('number');
      expect(d.headers).toMatchObject({ 'event-id': 'evt-poison', extra: 'kept' });
      const first = Date.parse(d.firstFailureAt);
      const last = Date.parse(d.lastFailureAt);
      expect(first).toBeGreaterThanOrEqual(startedAt - 1_000);
      expect(last).toBeGreaterThan(first);
      expect(await counterValue(fx.metrics, 'lore_bus_dead_letters_total', topic, groupId)).toBe(1);
      expect(await counterValue(fx.metrics, 'lore_bus_handler_failures_total', topic)).toBe(3);
    });

    it('runs the subscription\'s dead-letter hook once for a dead-lettered message, and goes on when the hook fails', async () => {
      const topic = await freshTopic();
      const groupId = group('dead-hook');
      await bus.publish(topic, [
        { key: 'k', value: 'bad-1' },
        { key: 'k', value: 'good' },
        { key: 'k', value: 'bad-2' },
        { key: 'k', value: 'last' },
      ]);
      const done: string[] = [];
      const hooked: Array<{ value: string; error: string; attempts: number }> = [];
      await subscribe(
        {
          groupId,
          topics: [topic],
          fromBeginning: true,
          maxAttempts: 2,
          onDeadLetter: async (m, failure) => {
            hooked.push({ value: text(m), error: failure.error, attempts: failure.attempts });
            if (text(m) === 'bad-2') throw new Error('the hook itself failed');
          },
        },
        async (m) => {
          if (text(m).startsWith('bad')) throw new Error(`cannot handle ${text(m)}`);
          done.push(text(m));
        },
      );
      await waitFor('the message after the second bad one', () => done.length >= 2, timeout);
      expect(done).toEqual(['good', 'last']);
      expect(hooked).toEqual([
        { value: 'bad-1', error: expect.stringContaining('cannot handle bad-1'), attempts: 2 },
        { value: 'bad-2', error: expect.stringContaining('cannot handle bad-2'), attempts: 2 },
      ]);
      let dead: DeadLetter[] = [];
      for (const deadline = Date.now() + timeout; dead.length < 2 && Date.now() < deadline; ) dead = await deadLettersOf(topic);
      expect(dead.map((d) => d.value.toString('utf8'))).toEqual(['bad-1', 'bad-2']);
    });

    it('retries a transient error past the bound without dead-lettering the message', async () => {
      const topic = await freshTopic();
      const groupId = group('transient');
      await bus.publish(topic, [{ key: 'k', value: 'needs-the-database' }, { key: 'k', value: 'next' }]);
      const done: string[] = [];
      let outage = 6;
      await subscribe({ groupId, topics: [topic], fromBeginning: true, maxAttempts: 2 }, async (m) => {
        if (text(m) === 'needs-the-database' && outage-- > 0) {
          // One marked by the handler, the others a dependency outage as a driver reports it.
          if (outage % 2 === 0) throw new TransientError('database unavailable');
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        }
        done.push(text(m));
      });
      await waitFor('both messages', () => done.length >= 2, timeout);
      expect(done).toEqual(['needs-the-database', 'next']);
      expect(await counterValue(fx.metrics, 'lore_bus_handler_failures_total', topic)).toBe(6);
      expect(await counterValue(fx.metrics, 'lore_bus_dead_letters_total', topic)).toBe(0);
      expect(await deadLettersOf(topic)).toEqual([]);
    });

    it('dead-letters a message its handler declares poison at once, without retries', async () => {
      const topic = await freshTopic();
      const groupId = group('declared-poison');
      await bus.publish(topic, [{ key: 'k', value: '{not json' }, { key: 'k', value: '{"ok":true}' }]);
      const done: string[] = [];
      let calls = 0;
      await subscribe({ groupId, topics: [topic], fromBeginning: true, maxAttempts: 5 }, async (m) => {
        calls += 1;
        if (text(m).startsWith('{not')) throw new PoisonError('malformed message');
        done.push(text(m));
      });
      await waitFor('the good message', () => done.length >= 1, timeout);
      expect(calls).toBe(2);
      let dead: DeadLetter[] = [];
      for (const deadline = Date.now() + timeout; dead.length === 0 && Date.now() < deadline; ) dead = await deadLettersOf(topic);
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ group: groupId, attempts: 1 });
      expect(dead[0]!.error).toContain('PoisonError: malformed message');
    });

    it('dead-letters only the poison message of a failing batch and hands the others to the handler', async () => {
      const topic = await freshTopic();
      const groupId = group('batch-poison');
      await bus.publish(topic, Array.from({ length: 6 }, (_, i) => ({ key: 'one-key', value: String(i) })));
      const done: number[] = [];
      const s = await bus.subscribeBatch({ groupId, topics: [topic], fromBeginning: true, maxBatch: 6, maxAttempts: 2 }, async (ms) => {
        const values = ms.map((m) => Number(text(m)));
        if (values.includes(3)) throw new Error('batch contains a bad message');
        done.push(...values);
      });
      subscriptions.push(s);
      await waitFor('the five good messages', () => done.length >= 5, timeout);
      expect([...done].sort()).toEqual([0, 1, 2, 4, 5]);
      // Order per partition is kept: the good messages behind the poison one come after the ones before it.
      expect(done.indexOf(4)).toBeGreaterThan(done.indexOf(2));
      let dead: DeadLetter[] = [];
      for (const deadline = Date.now() + timeout; dead.length === 0 && Date.now() < deadline; ) dead = await deadLettersOf(topic);
      expect(dead.map((d) => d.value.toString('utf8'))).toEqual(['3']);
      expect(dead[0]).toMatchObject({ group: groupId, attempts: 2 });
      expect(await counterValue(fx.metrics, 'lore_bus_dead_letters_total', topic, groupId)).toBe(1);
    });

    it('re-drives a dead letter to its original topic, where the group handles it', async () => {
      const topic = await freshTopic();
      const groupId = group('redrive');
      let broken = true;
      const done: BusMessage[] = [];
      await subscribe({ groupId, topics: [topic], fromBeginning: true, maxAttempts: 1 }, async (m) => {
        if (broken) throw new Error('bug in the handler');
        done.push(m);
      });
      await bus.publish(topic, [{ key: 'k', value: 'again', headers: { 'event-id': 'evt-again' } }]);
      let dead: DeadLetter[] = [];
      for (const deadline = Date.now() + timeout; dead.length === 0 && Date.now() < deadline; ) dead = await deadLettersOf(topic);
      expect(dead).toHaveLength(1);
      broken = false;
      const { topic: target, message } = redriveOf(dead[0]!);
      expect(target).toBe(topic);
      await bus.publish(target, [message]);
      await waitFor('the re-driven message', () => done.length >= 1, timeout);
      expect(text(done[0]!)).toBe('again');
      expect(done[0]!.key).toBe('k');
      expect(done[0]!.headers['event-id']).toBe('evt-again');
      expect(done[0]!.headers[REDRIVEN_FROM_HEADER]).toBe(dead[0]!.id);
      expect(Object.keys(done[0]!.headers).some((h) => h.startsWith('lore-dead-'))).toBe(false);
    });

    it("starts a group that does not choose by its topic's policy: earliest for work topics, latest for dead letters", async () => {
      const key = `policy-${runId}-${++seq}`;
      await bus.ensureTopics([TOPICS.memoryIngest, TOPICS.dead]);
      await bus.publish(TOPICS.memoryIngest, [{ key, value: 'job published before the worker joined' }]);
      await bus.publish(TOPICS.dead, [{ key, value: 'old dead letter' }]);
      const jobs: string[] = [];
      const dead: string[] = [];
      await subscribe({ groupId: group('policy-work'), topics: [TOPICS.memoryIngest] }, async (m) => {
        if (m.key === key) jobs.push(text(m));
      });
      await subscribe({ groupId: group('policy-dead'), topics: [TOPICS.dead] }, async (m) => {
        if (m.key === key) dead.push(text(m));
      });
      await bus.publish(TOPICS.dead, [{ key, value: 'new dead letter' }]);
      await waitFor('the job and the new dead letter', () => jobs.length >= 1 && dead.length >= 1, timeout);
      await new Promise((r) => setTimeout(r, 200));
      expect(jobs).toEqual(['job published before the worker joined']);
      expect(dead).toEqual(['new dead letter']);
    });

    it('answers ping', async () => {
      await expect(bus.ping()).resolves.toBeUndefined();
    });
  });
}
