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

  it('with a retention of 0 keeps nothing every group handled, and a waiting message holds only its own bytes', async () => {
    const bus = new MemoryBus({ logger, partitions: 2, retainPerPartition: 0, handlerRetry: retry });
    // Not read by any group yet: kept, each value in a buffer of its own (not a view of a shared 8 KB pool slab).
    await bus.publish('t', [{ key: 'a', value: 'x'.repeat(100) }, { key: 'b', value: Buffer.from('y'.repeat(50)) }]);
    const waiting = await bus.browse('t');
    expect(waiting).toHaveLength(2);
    for (const m of waiting) expect(m.value.buffer.byteLength).toBe(m.value.length);
    let handled = 0;
    const s = await bus.subscribe({ groupId: 'g', topics: ['t'], fromBeginning: true }, async () => void handled++);
    await bus.publish('t', Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })));
    await waitFor('42 messages', () => handled === 42, 1_000);
    // The log is trimmed right after each handled message is committed.
    await new Promise((r) => setTimeout(r, 20));
    expect(await bus.browse('t')).toHaveLength(0);
    await s.stop();
    await bus.close();
  });

  it('is idle while only a group rebuilt at start has messages waiting, and not while any other group has', async () => {
    const bus = new MemoryBus({ logger, partitions: 2, handlerRetry: retry });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // Like a webhook retry held until it is due: handled (and committed) only later.
    const rebuilt = await bus.subscribe({ groupId: 'retries', topics: ['retry'], rebuiltOnStart: true }, () => held);
    let handled = 0;
    const ordinary = await bus.subscribe({ groupId: 'jobs', topics: ['jobs'] }, async () => void handled++);
    await bus.publish('retry', [{ key: 'a', value: '1' }, { key: 'b', value: '2' }]);
    expect(bus.idle()).toBe(true);
    await bus.publish('jobs', [{ key: 'a', value: 'j' }]);
    await waitFor('the job', () => handled === 1, 1_000);
    await new Promise((r) => setTimeout(r, 10));
    expect(bus.idle()).toBe(true);
    // The same topic read by an ordinary group too: its messages count again.
    const other = await bus.subscribe({ groupId: 'audit', topics: ['retry'], fromBeginning: true }, () => held);
    expect(bus.idle()).toBe(false);
    release();
    await waitFor('idle', () => bus.idle(), 1_000);
    await Promise.all([rebuilt.stop(), ordinary.stop(), other.stop()]);
    await bus.close();
  });

  it('refuses to publish once closed', async () => {
    const bus = new MemoryBus();
    await bus.close();
    await expect(bus.publish('t', [{ key: 'k', value: 'v' }])).rejects.toThrow('closed');
  });
});
