import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BoundedEventStore } from './event-store';

const msg = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { n } });
const numbers = (sent: unknown[]) => sent.map((m) => (m as { params: { n: number } }).params.n);

describe('BoundedEventStore', () => {
  it('replays what followed an event on its own stream only', async () => {
    const store = new BoundedEventStore(100).forSession();
    const a1 = await store.storeEvent('a', msg(1));
    await store.storeEvent('b', msg(2));
    await store.storeEvent('a', msg(3));
    await store.storeEvent('a', msg(4));
    const sent: unknown[] = [];
    const stream = await store.replayEventsAfter(a1, { send: async (_id, m) => void sent.push(m) });
    expect(stream).toBe('a');
    expect(numbers(sent)).toEqual([3, 4]);
    expect(await store.getStreamIdForEventId!(a1)).toBe('a');
  });

  it('keeps at most its bound over every session, dropping the oldest; a dropped id replays nothing', async () => {
    const store = new BoundedEventStore(10);
    const [one, two] = [store.forSession(), store.forSession()];
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push(await (i % 2 ? two : one).storeEvent('s', msg(i)));
    expect(store.size).toBe(10);
    const sent: unknown[] = [];
    expect(await one.replayEventsAfter(ids[4]!, { send: async (_id, m) => void sent.push(m) })).toBe('');
    expect(sent).toEqual([]);
    await one.replayEventsAfter(ids[18]!, { send: async (_id, m) => void sent.push(m) });
    expect(numbers(sent)).toEqual([20, 22, 24]);
  });

  it('never replays one session\'s events to another, even on a stream of the same name, and its ids tell nothing', async () => {
    const store = new BoundedEventStore(100);
    const victim = store.forSession();
    const other = store.forSession();
    const ownId = await other.storeEvent('_GET_stream', msg(0));
    const theirs = [await victim.storeEvent('_GET_stream', msg(1)), await victim.storeEvent('_GET_stream', msg(2))];
    const sent: unknown[] = [];
    expect(await other.replayEventsAfter(theirs[0]!, { send: async (_id, m) => void sent.push(m) })).toBe('');
    expect(await other.getStreamIdForEventId!(theirs[0]!)).toBeUndefined();
    // Its own id on the same stream name replays its own events only.
    expect(await other.replayEventsAfter(ownId, { send: async (_id, m) => void sent.push(m) })).toBe('_GET_stream');
    expect(sent).toEqual([]);
    // Random ids: nothing in one id says what the next is.
    for (const id of [ownId, ...theirs]) expect(id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('forgets a closed session\'s events and keeps the others\'', async () => {
    const store = new BoundedEventStore(100);
    const [one, two] = [store.forSession(), store.forSession()];
    await one.storeEvent('a', msg(1));
    const kept = await two.storeEvent('a', msg(2));
    one.forget();
    expect(store.size).toBe(1);
    expect(await two.getStreamIdForEventId!(kept)).toBe('a');
  });
});
