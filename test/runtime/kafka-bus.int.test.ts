import { Registry } from 'prom-client';
import { describeBusContract } from '../../services/runtime/src/bus/bus.contract';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(120_000);

describeBusContract('KafkaBus on a real broker', async () => {
  const metrics = new Registry();
  const bus = new KafkaBus({
    brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','),
    clientId: 'lore-contract',
    logger: silentLogger,
    metrics,
    partitions: 3,
    handlerRetry: { initialMs: 20, maxMs: 200 },
  });
  return { bus, metrics, deliveryTimeoutMs: 30_000, close: () => bus.close() };
});
