/**
 * The outbox and idempotency contract: one suite, run on PGlite + MemoryBus (unit tests) and on real PostgreSQL +
 * Kafka (test/runtime). Not a test file itself: callers use `describeOutboxContract`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ROOT_CONTEXT, TraceFlags, context, trace } from '@opentelemetry/api';
import pino from 'pino';
import { Registry } from 'prom-client';
import { waitFor } from '../bus/bus.contract';
import { eventIdOf } from '../bus/event-id';
import type { Db, Sql } from '../ports/db';
import type { BusMessage, EventBus, OutgoingMessage } from '../ports/event-bus';
import { activeTraceId } from '../telemetry/propagation';
import { startTelemetry } from '../telemetry/setup';
import { OutboxRelay, claimEvent, enqueueOutbox, enqueueOutboxBatch } from './outbox';
import { startOutboxRelay } from './start-relay';

export interface OutboxFixture {
  /** Runtime migrations already applied. */
  db: Db;
  bus: EventBus;
  deliveryTimeoutMs: number;
  close(): Promise<void>;
}

const logger = pino({ level: 'silent' });

export function describeOutboxContract(name: string, open: () => Promise<OutboxFixture>): void {
  describe(`Outbox contract: ${name}`, () => {
    let fx: OutboxFixture;
    let db: Db;
    let bus: EventBus;
    const runId = randomBytes(4).toString('hex');
    let seq = 0;
    const stops: Array<() => Promise<void>> = [];

    const freshTopic = async () => {
      const topic = `lore.outbox-contract.${runId}.${++seq}`;
      await bus.ensureTopics([topic]);
      return topic;
    };
    const collect = async (topic: string) => {
      const got: BusMessage[] = [];
      const s = await bus.subscribe({ groupId: `outbox-${runId}-${seq}-${randomBytes(2).toString('hex')}`, topics: [topic], fromBeginning: true }, async (m) => {
        got.push(m);
      });
      stops.push(() => s.stop());
      return got;
    };
    /** Publishes everything pending, whatever earlier tests left behind. */
    const drainAll = async (relay: OutboxRelay) => {
      let total = 0;
      for (let n = await relay.drainOnce(); n > 0; n = await relay.drainOnce()) total += n;
      return total;
    };
    const pendingFor = async (topic: string) =>
      Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM runtime.outbox WHERE topic = $1 AND published_at IS NULL`, [topic])).rows[0]!.n);

    beforeAll(async () => {
      startTelemetry({});
      fx = await open();
      db = fx.db;
      bus = fx.bus;
    });
    afterEach(async () => {
      await Promise.all(stops.splice(0).map((stop) => stop()));
    });
    afterAll(async () => {
      await fx?.close();
    });

    it("publishes an event enqueued in a committed tenant transaction, with the key, JSON value and event-id header", async () => {
      const topic = await freshTopic();
      const relay = new OutboxRelay({ db, bus, logger });
      const eventId = randomUUID();
      await db.withTenant('t-outbox', (sql) => enqueueOutbox(sql, { topic, key: 'mem-1', eventId, value: { hello: 'world', n: 1 }, headers: { kind: 'test' } }));
      const got = await collect(topic);
      expect(await drainAll(relay)).toBeGreaterThanOrEqual(1);
      await waitFor('the event', () => got.length >= 1, fx.deliveryTimeoutMs);
      expect(got[0]!.key).toBe('mem-1');
      expect(JSON.parse(got[0]!.value.toString('utf8'))).toEqual({ hello: 'world', n: 1 });
      expect(eventIdOf(got[0]!)).toBe(eventId);
      expect(got[0]!.headers.kind).toBe('test');
      expect(await pendingFor(topic)).toBe(0);
      expect(await relay.drainOnce()).toBe(0);
    });

    it('publishes nothing for a transaction that rolled back', async () => {
      const topic = await freshTopic();
      await expect(
        db.withTenant('t-outbox', async (sql) => {
          await enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: { lost: true } });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await db.query(`SELECT 1 FROM runtime.outbox WHERE topic = $1`, [topic])).rowCount).toBe(0);
    });

    it('enqueues a batch with one statement, published like single events and, per key, in the batch\'s order', async () => {
      const [a, b] = [await freshTopic(), await freshTopic()];
      const relay = new OutboxRelay({ db, bus, logger });
      await drainAll(relay);
      const values: unknown[] = [{ nested: { list: [1, 'two', null], quote: 'a "b" \\ c', unicode: 'é \u2028 🙂' } }, 'a string', 42, null, [true]];
      // Kafka orders messages within a partition only: topic a's messages share a key so their order is observable.
      const msgs = values.map((value, i) => ({ topic: i % 2 === 0 ? a : b, key: i % 2 === 0 ? 'ka' : `k${i}`, eventId: `batch-${runId}-${i}`, value, ...(i === 0 ? { headers: { kind: 'batch' } } : {}) }));
      let statements = 0;
      await db.withTenant('t-batch', async (sql) => {
        const counting: Sql = {
          query: (text, params, options) => {
            statements += 1;
            return sql.query(text, params, options);
          },
        };
        await enqueueOutboxBatch(counting, msgs);
        await enqueueOutboxBatch(counting, []);
      });
      expect(statements).toBe(1);
      const stored = await db.query<{ topic: string; key: string; event_id: string; value: unknown }>(
        `SELECT topic, key, event_id, value FROM runtime.outbox WHERE topic = ANY($1::text[]) ORDER BY id`,
        [[a, b]],
      );
      expect(stored.rows.map((r) => [r.topic, r.key, r.event_id, r.value])).toEqual(msgs.map((m) => [m.topic, m.key, m.eventId, m.value]));
      const gotA = await collect(a);
      const gotB = await collect(b);
      expect(await drainAll(relay)).toBeGreaterThanOrEqual(values.length);
      await waitFor('the batch', () => gotA.length + gotB.length >= values.length, fx.deliveryTimeoutMs);
      const seen = [...gotA, ...gotB].map((m) => [eventIdOf(m), m.key, JSON.parse(m.value.toString('utf8'))]);
      expect(seen.sort((x, y) => String(x[0]).localeCompare(String(y[0])))).toEqual(msgs.map((m) => [m.eventId, m.key, m.value]));
      expect(gotA[0]!.headers.kind).toBe('batch');
      expect(gotA.map((m) => eventIdOf(m))).toEqual(msgs.filter((m) => m.topic === a).map((m) => m.eventId));
    });

    it('writes nothing of a batch with a message it cannot take, nor of one whose transaction rolled back', async () => {
      const topic = await freshTopic();
      const good = { topic, key: 'k', eventId: randomUUID(), value: 1 };
      await expect(db.withTenant('t-batch', (sql) => enqueueOutboxBatch(sql, [good, { topic, key: 'k', eventId: '', value: 2 }]))).rejects.toThrow(/eventId/);
      await expect(db.withTenant('t-batch', (sql) => enqueueOutboxBatch(sql, [good, { topic, key: 'k', eventId: randomUUID(), value: undefined }]))).rejects.toThrow(/JSON/);
      await expect(
        db.withTenant('t-batch', async (sql) => {
          await enqueueOutboxBatch(sql, [good, { ...good, eventId: randomUUID() }]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await db.query(`SELECT 1 FROM runtime.outbox WHERE topic = $1`, [topic])).rowCount).toBe(0);
    });

    it('publishes in id order across topics and batches', async () => {
      const [a, b] = [await freshTopic(), await freshTopic()];
      const relay = new OutboxRelay({ db, bus, logger, batchSize: 40 });
      await drainAll(relay);
      for (let i = 0; i < 100; i++) {
        await db.withTenant('t-order', (sql) => enqueueOutbox(sql, { topic: i % 3 === 0 ? a : b, key: `k${i % 2}`, eventId: randomUUID(), value: { i } }));
      }
      const gotA = await collect(a);
      const gotB = await collect(b);
      expect(await relay.drainOnce()).toBe(40);
      expect(await drainAll(relay)).toBe(60);
      await waitFor('100 events', () => gotA.length + gotB.length >= 100, fx.deliveryTimeoutMs);
      for (const got of [gotA, gotB]) {
        for (const key of ['k0', 'k1']) {
          const seqOfKey = got.filter((m) => m.key === key).map((m) => (JSON.parse(m.value.toString()) as { i: number }).i);
          expect(seqOfKey).toEqual([...seqOfKey].sort((x, y) => x - y));
        }
      }
    });

    it('keeps rows the broker did not acknowledge and marks the ones it did', async () => {
      const topic = await freshTopic();
      const other = await freshTopic();
      let failNext = false;
      const flaky: EventBus = {
        kind: bus.kind,
        ensureTopics: (t) => bus.ensureTopics(t),
        subscribe: (o, h) => bus.subscribe(o, h),
        subscribeBatch: (o, h) => bus.subscribeBatch(o, h),
        ping: () => bus.ping(),
        close: () => bus.close(),
        publish: async (t: string, m: OutgoingMessage[]) => {
          if (failNext && t === other) throw new Error('broker unavailable');
          return bus.publish(t, m);
        },
      };
      const relay = new OutboxRelay({ db, bus: flaky, logger });
      await drainAll(relay);
      await db.withTenant('t-flaky', async (sql) => {
        await enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: 1 });
        await enqueueOutbox(sql, { topic: other, key: 'k', eventId: randomUUID(), value: 2 });
      });
      failNext = true;
      await expect(relay.drainOnce()).rejects.toThrow('broker unavailable');
      expect(await pendingFor(topic)).toBe(0);
      expect(await pendingFor(other)).toBe(1);
      failNext = false;
      const got = await collect(other);
      expect(await drainAll(relay)).toBe(1);
      await waitFor('the retried event', () => got.length >= 1, fx.deliveryTimeoutMs);
      expect(got).toHaveLength(1);
    });

    it('publishes each row once when two relays drain at the same time', async () => {
      const topic = await freshTopic();
      const relays = [new OutboxRelay({ db, bus, logger, batchSize: 5 }), new OutboxRelay({ db, bus, logger, batchSize: 5 })];
      await drainAll(relays[0]!);
      for (let i = 0; i < 30; i++) await db.withTenant('t-two', (sql) => enqueueOutbox(sql, { topic, key: 'k', eventId: `e${i}`, value: i }));
      const got = await collect(topic);
      await Promise.all(relays.map(async (r) => {
        for (let i = 0; i < 20; i++) await r.drainOnce();
      }));
      await drainAll(relays[0]!);
      await waitFor('30 events', () => got.length >= 30, fx.deliveryTimeoutMs);
      await new Promise((r) => setTimeout(r, 300));
      expect(got.map((m) => eventIdOf(m))).toEqual(Array.from({ length: 30 }, (_, i) => `e${i}`));
    });

    it("carries the enqueuing request's trace to the consumer", async () => {
      const topic = await freshTopic();
      const relay = new OutboxRelay({ db, bus, logger });
      await drainAll(relay);
      const traceId = randomBytes(16).toString('hex');
      const requestCtx = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: randomBytes(8).toString('hex'), traceFlags: TraceFlags.SAMPLED, isRemote: true });
      await context.with(requestCtx, () => db.withTenant('t-trace', (sql) => enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: {} })));
      const seen: Array<string | undefined> = [];
      const s = await bus.subscribe({ groupId: `outbox-trace-${runId}`, topics: [topic], fromBeginning: true }, async () => {
        seen.push(activeTraceId());
      });
      stops.push(() => s.stop());
      await drainAll(relay);
      await waitFor('the event', () => seen.length >= 1, fx.deliveryTimeoutMs);
      expect(seen[0]).toBe(traceId);
    });

    it('runs in the background from start() until stop(), and reports the backlog', async () => {
      const topic = await freshTopic();
      const metrics = new Registry();
      const relay = new OutboxRelay({ db, bus, logger, metrics, pollIntervalMs: 20 });
      await drainAll(relay);
      for (let i = 0; i < 3; i++) await db.withTenant('t-bg', (sql) => enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: i }));
      const backlog = async () => (await metrics.getSingleMetric('lore_outbox_backlog_messages')!.get()).values[0]!.value;
      expect(await backlog()).toBeGreaterThanOrEqual(3);
      const got = await collect(topic);
      relay.start();
      await waitFor('3 events', () => got.length >= 3, fx.deliveryTimeoutMs);
      await relay.stop();
      expect(await backlog()).toBe(0);
    });

    it('publishes a row committed in its own process at once when idle, not at its next poll', async () => {
      const topic = await freshTopic();
      const relay = new OutboxRelay({ db, bus, logger, pollIntervalMs: 600_000 });
      await drainAll(relay);
      const got = await collect(topic);
      relay.start();
      stops.push(() => relay.stop());
      // Its first scan finds nothing: the relay is idle, its next poll ten minutes away. (Were the row committed
      // before or during that scan, the scan, or the one more it brings, would publish it: the test would still pass.)
      await new Promise((r) => setTimeout(r, 500));
      await db.withTenant('t-nudge', (sql) => enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: 'now' }));
      await waitFor('the event, long before the poll', () => got.length >= 1, fx.deliveryTimeoutMs);
      expect(JSON.parse(got[0]!.value.toString('utf8'))).toBe('now');
      // A rolled-back transaction's row is not there to publish.
      await expect(
        db.withTenant('t-nudge', async (sql) => {
          await enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: 'rolled back' });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await pendingFor(topic)).toBe(0);
    });

    it('keeps its poll while it publishes: a steady stream of commits in its process does not bring a scan each', async () => {
      const topic = await freshTopic();
      let scans = 0;
      const counting = Object.assign(Object.create(db) as Db, {
        tx: <T>(fn: (sql: Sql) => Promise<T>): Promise<T> => {
          scans++;
          return db.tx(fn);
        },
      });
      const relay = new OutboxRelay({ db: counting, bus, logger, pollIntervalMs: 200 });
      await drainAll(relay);
      const got = await collect(topic);
      relay.start();
      stops.push(() => relay.stop());
      scans = 0;
      const commits = 60;
      for (let i = 0; i < commits; i++) {
        await db.withTenant('t-steady', (sql) => enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: i }));
        await new Promise((r) => setTimeout(r, 10));
      }
      await waitFor(`${commits} events`, () => got.length >= commits, fx.deliveryTimeoutMs);
      expect(got.map((m) => JSON.parse(m.value.toString('utf8')))).toEqual(Array.from({ length: commits }, (_, i) => i));
      // Woken by every commit it would scan about once a commit; polling while it finds rows, once per 200 ms.
      expect(scans).toBeLessThan(commits / 2);
    });

    it("prepares the bus's publisher when started as a process's relay, writing nothing to the topics", async () => {
      const topic = await freshTopic();
      const relay = await startOutboxRelay({ process: 'contract', db, bus, logger, topics: [topic], pollIntervalMs: 20 });
      stops.push(() => relay!.stop());
      await bus.preparePublish?.([topic, topic]);
      const got = await collect(topic);
      await new Promise((r) => setTimeout(r, 300));
      expect(got).toHaveLength(0);
      await db.withTenant('t-prepare', (sql) => enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: 'first' }));
      await waitFor('the first event', () => got.length >= 1, fx.deliveryTimeoutMs);
      expect(got.map((m) => JSON.parse(m.value.toString('utf8')))).toEqual(['first']);
    });

    it('lets the application role insert, read and update outbox rows but never delete them', async () => {
      const topic = await freshTopic();
      await db.withTenant('t-perm', (sql) => enqueueOutbox(sql, { topic, key: 'k', eventId: randomUUID(), value: 1 }));
      await expect(db.tx((sql) => sql.query(`DELETE FROM runtime.outbox WHERE topic = $1`, [topic]))).rejects.toThrow(/permission denied/);
      await expect(db.tx((sql) => sql.query(`TRUNCATE runtime.outbox`))).rejects.toThrow(/permission denied/);
      expect((await db.query(`SELECT 1 FROM runtime.outbox WHERE topic = $1`, [topic])).rowCount).toBe(1);
    });

    it('prunes only rows published longer ago than the retention', async () => {
      const topic = await freshTopic();
      for (const age of ['3 days', '1 hour']) {
        await db.withTenant('t-prune', (sql) => enqueueOutbox(sql, { topic, key: age, eventId: randomUUID(), value: age }));
        await db.query(`UPDATE runtime.outbox SET published_at = now() - $2::interval WHERE topic = $1 AND key = $2`, [topic, age]);
      }
      await db.withTenant('t-prune', (sql) => enqueueOutbox(sql, { topic, key: 'pending', eventId: randomUUID(), value: 0 }));
      await db.query(`UPDATE runtime.outbox SET created_at = now() - interval '9 days' WHERE topic = $1 AND key = 'pending'`, [topic]);
      await db.query(`SELECT runtime.prune_outbox(interval '1 day')`);
      const left = await db.query<{ key: string }>(`SELECT key FROM runtime.outbox WHERE topic = $1 ORDER BY id`, [topic]);
      expect(left.rows.map((r) => r.key)).toEqual(['1 hour', 'pending']);
    });

    it('prunes idempotency markers older than their retention, keeping recent ones', async () => {
      const consumer = `prune-${runId}`;
      const ids = { old: randomUUID(), recent: randomUUID() };
      await db.withTenant('t-prune', (sql) => claimEvent(sql, consumer, ids.recent));
      await db.query(`INSERT INTO runtime.processed_events (consumer, event_id, processed_at) VALUES ($1, $2, now() - interval '8 days')`, [consumer, ids.old]);
      const relay = new OutboxRelay({ db, bus, logger, processedRetentionMs: 7 * 24 * 3600_000 });
      const pruned = await relay.prune();
      expect(pruned.processed).toBeGreaterThanOrEqual(1);
      const left = await db.query<{ event_id: string }>(`SELECT event_id FROM runtime.processed_events WHERE consumer = $1`, [consumer]);
      expect(left.rows.map((r) => r.event_id)).toEqual([ids.recent]);
      // A marker pruned away no longer dedupes: the retention must outlast any redelivery.
      expect(await db.withTenant('t-prune', (sql) => claimEvent(sql, consumer, ids.old))).toBe(true);
      expect(await db.withTenant('t-prune', (sql) => claimEvent(sql, consumer, ids.recent))).toBe(false);
    });

    it('claims an event id once per consumer, and not when the claiming transaction rolled back', async () => {
      const eventId = randomUUID();
      await expect(
        db.withTenant('t-claim', async (sql) => {
          expect(await claimEvent(sql, 'indexer', eventId)).toBe(true);
          throw new Error('side effect failed');
        }),
      ).rejects.toThrow('side effect failed');
      expect(await db.withTenant('t-claim', (sql) => claimEvent(sql, 'indexer', eventId))).toBe(true);
      expect(await db.withTenant('t-claim', (sql) => claimEvent(sql, 'indexer', eventId))).toBe(false);
      expect(await db.withTenant('t-other', (sql) => claimEvent(sql, 'indexer', eventId))).toBe(false);
      expect(await db.withTenant('t-claim', (sql) => claimEvent(sql, 'webhooks', eventId))).toBe(true);
    });
  });
}
