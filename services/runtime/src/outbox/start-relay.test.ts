import pino from 'pino';
import { MemoryBus } from '../bus/memory-bus';
import { PgliteDb } from '../db/pglite';
import type { BusMessage } from '../ports/event-bus';
import { enqueueOutbox, runRuntimeMigrations } from './outbox';
import { startOutboxRelay } from './start-relay';

jest.setTimeout(60_000);

describe('startOutboxRelay', () => {
  const logger = pino({ level: 'silent' });
  let db: PgliteDb;
  let bus: MemoryBus;
  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
  });
  beforeEach(() => {
    bus = new MemoryBus({ logger });
  });
  afterEach(() => bus.close());
  afterAll(() => db.close());

  it('starts no relay when the process switch is off, and creates no topic', async () => {
    const ensure = jest.spyOn(bus, 'ensureTopics');
    expect(await startOutboxRelay({ process: 'graph', enabled: false, db, bus, logger, topics: ['lore.t.off'] })).toBeNull();
    expect(ensure).not.toHaveBeenCalled();
  });

  it('creates the topics, publishes what is enqueued, and stops with the process lifecycle', async () => {
    const ensure = jest.spyOn(bus, 'ensureTopics');
    const hooks: Array<{ name: string; fn: () => Promise<void> }> = [];
    const relay = await startOutboxRelay({
      process: 'webhooks',
      db,
      bus,
      logger,
      pollIntervalMs: 10,
      topics: ['lore.t.on'],
      lifecycle: { onShutdown: (name, fn) => void hooks.push({ name, fn }) },
    });
    expect(relay).not.toBeNull();
    expect(ensure).toHaveBeenCalledWith(['lore.t.on']);
    expect(hooks.map((h) => h.name)).toEqual(['outbox relay']);

    const received = new Promise<BusMessage>((resolve) => {
      void bus.subscribe({ groupId: 'g', topics: ['lore.t.on'], fromBeginning: true }, async (m) => resolve(m));
    });
    await db.withTenant('ten_1', (sql) => enqueueOutbox(sql, { topic: 'lore.t.on', key: 'k', eventId: 'evt_1', value: { n: 1 } }));
    expect(JSON.parse((await received).value.toString('utf8'))).toEqual({ n: 1 });
    await hooks[0]!.fn();
  });
});
