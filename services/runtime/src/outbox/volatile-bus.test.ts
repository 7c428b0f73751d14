import pino from 'pino';
import { MemoryBus } from '../bus/memory-bus';
import { PgliteDb } from '../db/pglite';
import type { BusMessage } from '../ports/event-bus';
import { enqueueOutbox, OutboxRelay, runRuntimeMigrations } from './outbox';

jest.setTimeout(60_000);

const logger = pino({ level: 'silent' });
const TOPIC = 'lore.test.volatile';

async function eventually<T>(what: string, probe: () => T | null | Promise<T | null>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== null) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('MemoryBus.idle', () => {
  it('is true once every group that reads a topic has handled what it holds, and false while one is handling', async () => {
    const bus = new MemoryBus({ logger });
    try {
      await bus.publish('lore.test.unread', [{ key: 'k', value: 'nobody reads this topic' }]);
      expect(bus.idle()).toBe(true);
      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      const seen: string[] = [];
      await bus.subscribe({ groupId: 'g', topics: [TOPIC], fromBeginning: true }, async (m: BusMessage) => {
        seen.push(m.value.toString());
        await held;
      });
      await bus.publish(TOPIC, [{ key: 'a', value: 'one' }]);
      await eventually('the handler holding the message', () => (seen.length === 1 ? true : null));
      expect(bus.idle()).toBe(false);
      release();
      await eventually('the bus idle', () => (bus.idle() ? true : null));
    } finally {
      await bus.close();
    }
  });
});

describe('the outbox relay of a bus that ends with the process', () => {
  it('publishes again, on the next start, the rows the ended bus had not handled, and only those', async () => {
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      const handled: string[] = [];
      let holdFrom = Infinity;
      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      const start = async () => {
        const bus = new MemoryBus({ logger });
        await bus.subscribe({ groupId: 'consumer', topics: [TOPIC], fromBeginning: true }, async (m: BusMessage) => {
          const n = Number(m.value.toString());
          // From `holdFrom` on the first process never gets through (it is killed while handling).
          if (n >= holdFrom) await held;
          handled.push(String(n));
        });
        const relay = new OutboxRelay({ db, bus, logger, pollIntervalMs: 10, volatileBus: bus });
        relay.start();
        return { bus, relay };
      };
      // One key: one partition, so 5 waits behind 4.
      const enqueue = (n: number) => db.tx((sql) => enqueueOutbox(sql, { topic: TOPIC, key: 'k', eventId: `e${n}`, value: n }));

      const first = await start();
      for (const n of [1, 2, 3]) await enqueue(n);
      await eventually('the first three handled', () => (handled.length === 3 ? true : null));
      // The checkpoint follows once the bus was idle after them.
      await eventually('the checkpoint at row 3', async () => {
        const r = await db.query<{ outbox_id: string }>(`SELECT outbox_id::text FROM runtime.bus_checkpoint WHERE id = 1`);
        return r.rows[0]?.outbox_id === '3' ? true : null;
      });
      holdFrom = 4;
      for (const n of [4, 5]) await enqueue(n);
      await eventually('rows 4 and 5 published', async () => {
        const r = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM runtime.outbox WHERE published_at IS NOT NULL`);
        return r.rows[0]?.n === '5' ? true : null;
      });
      // The process ends while its bus holds 4 (being handled) and 5 (waiting): both are gone with it.
      await first.relay.stop();
      const closing = first.bus.close();
      release();
      await closing;
      const before = handled.length;

      holdFrom = Infinity;
      handled.length = 0;
      const second = await start();
      try {
        await eventually('rows 4 and 5 handled after the restart', () => (handled.includes('4') && handled.includes('5') ? true : null));
        await new Promise((r) => setTimeout(r, 200));
        // Nothing before the checkpoint came again.
        expect(handled.filter((n) => Number(n) <= 3)).toEqual([]);
        // The first process got as far as 4 (handled while it closed), never to 5.
        expect(before).toBe(4);
      } finally {
        await second.relay.stop();
        await second.bus.close();
      }
    } finally {
      await db.close();
    }
  });

  it('gives rows up after three starts in a row that never got past them (a message that ends the process each time)', async () => {
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      await db.tx((sql) => enqueueOutbox(sql, { topic: TOPIC, key: 'k', eventId: 'poison', value: 'poison' }));
      const seen: number[] = [];
      const life = async (n: number) => {
        const bus = new MemoryBus({ logger });
        let release: () => void = () => undefined;
        const held = new Promise<void>((r) => (release = r));
        await bus.subscribe({ groupId: 'consumer', topics: [TOPIC], fromBeginning: true }, async () => {
          seen.push(n);
          // The message "ends the process": its handler never finishes before the process does.
          await held;
        });
        const relay = new OutboxRelay({ db, bus, logger, pollIntervalMs: 10, volatileBus: bus });
        relay.start();
        await new Promise((r) => setTimeout(r, 300));
        await relay.stop();
        const closing = bus.close();
        release();
        await closing;
      };
      for (let n = 1; n <= 5; n++) await life(n);
      // Published by the first life, published again by the next three, given up by the fifth.
      expect(seen).toEqual([1, 2, 3, 4]);
      const cp = await db.query<{ outbox_id: string; replays: number }>(`SELECT outbox_id::text, replays FROM runtime.bus_checkpoint WHERE id = 1`);
      expect(cp.rows[0]).toEqual({ outbox_id: '1', replays: 0 });
    } finally {
      await db.close();
    }
  });
});
