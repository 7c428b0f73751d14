import pino from 'pino';
import { MemoryBus } from '../bus/memory-bus';
import { PgliteDb } from '../db/pglite';
import { describeOutboxContract } from './outbox.contract';
import { runRuntimeMigrations } from './outbox';

jest.setTimeout(60_000);

describeOutboxContract('PGlite + MemoryBus', async () => {
  const db = await PgliteDb.open();
  await runRuntimeMigrations(db);
  await runRuntimeMigrations(db);
  const bus = new MemoryBus({ logger: pino({ level: 'silent' }), handlerRetry: { initialMs: 10, maxMs: 100 } });
  return {
    db,
    bus,
    deliveryTimeoutMs: 2_000,
    close: async () => {
      await bus.close();
      await db.close();
    },
  };
});
