import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { describeOutboxContract } from '../../services/runtime/src/outbox/outbox.contract';
import { runRuntimeMigrations } from '../../services/runtime/src/outbox/outbox';
import { requireEnv } from '../support/infra';
import { freshPostgresDb, silentLogger } from './support';

jest.setTimeout(120_000);

describeOutboxContract('real PostgreSQL + Kafka', async () => {
  const pg = await freshPostgresDb();
  await runRuntimeMigrations(pg.db);
  const bus = new KafkaBus({
    brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','),
    clientId: 'lore-outbox-contract',
    logger: silentLogger,
    partitions: 3,
    handlerRetry: { initialMs: 20, maxMs: 200 },
  });
  return {
    db: pg.db,
    bus,
    deliveryTimeoutMs: 30_000,
    close: async () => {
      await bus.close();
      await pg.close();
    },
  };
});
