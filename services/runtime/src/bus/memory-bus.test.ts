import pino from 'pino';
import { Registry } from 'prom-client';
import { describeBusContract, waitFor } from './bus.contract';
import { MemoryBus } from './memory-bus';

const logger = pino({ level: 'silent' });
const retry = { initialMs: 10, maxMs: 100 };

describeBusContract('MemoryBus', async () => {
  const metrics = new Registry();
  const bus = new MemoryBus({ logger, metrics, handlerRetry: retry });
  return { bus, metrics, deliveryTimeoutMs: 2_000, close: () => bus.close() };
});

describe('MemoryBus', () => {
  it('drops what every active group consumed beyond the retention, and keeps the rest for late groups', async () => {
    const bus = new MemoryBus({ logger, partitions: 1, retainPerPartition: 3, handlerRetry: retry });
    const got: string[] = [];
    const s = await bus.subscribe({ groupId: 'g', topics: ['t'] }, async (m) => void got.push(m.value.toString()));
    await bus.publish('t', ['1', '2', '3', '4', '5'].map((value) => ({ key: 'k', value })));
    await waitFor('5 messages', () => got.length === 5, 1_000);
    const late: string[] = [];
    await bus.subscribe({ groupId: 'late', topics: ['t'], fromBeginning: true }, async (m) => void late.push(m.value.toString()));
    await waitFor('the retained messages', () => late.length === 3, 1_000);
    expect(late).toEqual(['3', '4', '5']);
    await s.stop();
    await bus.close();
  });

  it('refuses to publish once closed', async () => {
    const bus = new MemoryBus();
    await bus.close();
    await expect(bus.publish('t', [{ key: 'k', value: 'v' }])).rejects.toThrow('closed');
  });
});
