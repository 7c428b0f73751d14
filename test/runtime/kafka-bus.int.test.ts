import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { describeBusContract } from '../../services/runtime/src/bus/bus.contract';
import { KafkaBus, type KafkaBusOptions } from '../../services/runtime/src/bus/kafka-bus';
import { MemoryStartJournal } from '../../services/runtime/src/bus/start-journal';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(120_000);

const contractBus = (extra: Partial<KafkaBusOptions> = {}) => {
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
    ...extra,
  });
  return { bus, metrics, deliveryTimeoutMs: 30_000, close: () => bus.close() };
};

describeBusContract('KafkaBus on a real broker', async () => contractBus());

// As the services run it: every subscription records its starts (partitions handed between two subscriptions of a
// test count as unclean starts and go one message at a time for a while, which the contract must not notice).
describeBusContract('KafkaBus on a real broker, with a start journal', async () => contractBus({ startJournal: new MemoryStartJournal() }));
