import { randomBytes } from 'node:crypto';
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
    // An install of its own on the shared broker: its dead-letter and work topics hold only this run's messages.
    prefix: `contract-${randomBytes(4).toString('hex')}`,
    logger: silentLogger,
    metrics,
    partitions: 3,
    handlerRetry: { initialMs: 20, maxMs: 200 },
  });
  return { bus, metrics, deliveryTimeoutMs: 30_000, close: () => bus.close() };
});
