import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BoundedEventStore } from './event-store';

const msg = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { n } });

describe('BoundedEventStore', () => {
  it('replays what followed an event on its own stream only', async () => {
    const store = new BoundedEventStore(100);
    const a1 = await store.storeEvent('a', msg(1));
    await store.storeEvent('b', msg(2));
    await store.storeEvent('a', msg(3));
    await store.storeEvent('a', msg(4));
    const sent: unknown[] = [];
    const stream = await store.replayEventsAfter(a1, { send: async (_id, m) => void sent.push((m as any).params.n) });
    expect(stream).toBe('a');
    expect(sent).toEqual([3, 4]);
    expect(await store.getStreamIdForEventId(a1)).toBe('a');
  });

  it('keeps at most its bound, dropping the oldest; a dropped id replays nothing', async () => {
    const store = new BoundedEventStore(10);
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push(await store.storeEvent('s', msg(i)));
    expect(store.size).toBe(10);
    const sent: unknown[] = [];
    expect(await store.replayEventsAfter(ids[3]!, { send: async (_id, m) => void sent.push(m) })).toBe('');
    expect(sent).toEqual([]);
    await store.replayEventsAfter(ids[20]!, { send: async (_id, m) => void sent.push((m as any).params.n) });
    expect(sent).toEqual([21, 22, 23, 24]);
  });
});
