import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BoundedEventStore } from './event-store';
import { toolResult } from './mcp-service';

const msg = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { n } });
const numbers = (sent: unknown[]) => sent.map((m) => (m as { params: { n: number } }).params.n);
/** A tool's answer as the server sends it: the envelope as text and as structuredContent. */
const answer = (id: number, filler: string): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: toolResult({ success: true, data: { id, filler } }) as never });
const MiB = 1024 * 1024;

describe('BoundedEventStore', () => {
  it('replays what followed an event on its own stream only', async () => {
    const store = new BoundedEventStore({ maxEvents: 100 }).forSession();
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
    const store = new BoundedEventStore({ maxEvents: 10 });
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
    const store = new BoundedEventStore({ maxEvents: 100 });
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
    const store = new BoundedEventStore({ maxEvents: 100 });
    const [one, two] = [store.forSession(), store.forSession()];
    await one.storeEvent('a', msg(1));
    const kept = await two.storeEvent('a', msg(2));
    one.forget();
    expect(store.size).toBe(1);
    expect(await two.getStreamIdForEventId!(kept)).toBe('a');
  });

  it('keeps many large answers under its byte bounds, per session and in all, dropping the oldest first', async () => {
    const store = new BoundedEventStore({ maxEvents: 10_000, maxBytes: 8 * MiB, maxSessionBytes: 3 * MiB });
    const sessions = [store.forSession(), store.forSession(), store.forSession(), store.forSession()];
    const filler = 'x'.repeat(256 * 1024);
    const ids: string[][] = sessions.map(() => []);
    for (let i = 0; i < 400; i++) {
      const s = i % sessions.length;
      ids[s]!.push(await sessions[s]!.storeEvent('call', answer(i, filler)));
      expect(store.bytes).toBeLessThanOrEqual(8 * MiB);
    }
    // 400 answers of 256 KiB were sent (about 200 MiB as they went out, the envelope twice); the store holds 8 MiB at
    // most, each answer once, and no session more than 3 MiB (11 answers; 5 if it counted their text twice).
    expect(store.size).toBeLessThanOrEqual(32);
    const known = async (s: number) => {
      const out: string[] = [];
      for (const id of ids[s]!) if (await sessions[s]!.getStreamIdForEventId!(id)) out.push(id);
      return out;
    };
    const kept = await known(0);
    expect(kept.length).toBeGreaterThanOrEqual(5);
    expect(kept.length).toBeLessThanOrEqual(11);
    // What a session keeps is its newest answers, without a gap.
    expect(kept).toEqual(ids[0]!.slice(-kept.length));
    const replayed: unknown[] = [];
    expect(await sessions[0]!.replayEventsAfter(kept[0]!, { send: async (_id, m) => void replayed.push(m) })).toBe('call');
    expect(replayed).toHaveLength(kept.length - 1);
    // Replayed as it was sent: the text rebuilt from structuredContent.
    expect(replayed.at(-1)).toEqual(answer(396, filler));
    // Two sessions alone keep up to their own bound, 11 answers each.
    const two = new BoundedEventStore({ maxEvents: 10_000, maxBytes: 8 * MiB, maxSessionBytes: 3 * MiB });
    const pair = [two.forSession(), two.forSession()];
    for (let i = 0; i < 100; i++) await pair[i % 2]!.storeEvent('call', answer(i, filler));
    expect(two.size).toBe(22);
    expect(two.bytes).toBeLessThanOrEqual(6 * MiB);
    // The oldest were dropped: naming one replays nothing (the SDK answers 400), and nothing was skipped in between.
    expect(await sessions[0]!.getStreamIdForEventId!(ids[0]![0]!)).toBeUndefined();
    expect(await sessions[0]!.replayEventsAfter(ids[0]![0]!, { send: async () => undefined })).toBe('');
  });

  it('keeps one session to its own share: a session filling its bound drops its own events, not another\'s', async () => {
    const store = new BoundedEventStore({ maxEvents: 10_000, maxBytes: 8 * MiB, maxSessionBytes: 1 * MiB });
    const [quiet, loud] = [store.forSession(), store.forSession()];
    const small = await quiet.storeEvent('a', msg(1));
    for (let i = 0; i < 100; i++) await loud.storeEvent('b', answer(i, 'y'.repeat(100 * 1024)));
    expect(store.bytes).toBeLessThanOrEqual(1 * MiB + 1024);
    expect(await quiet.getStreamIdForEventId!(small)).toBe('a');
  });

  it('keeps no event larger than a session may hold, and drops its stream\'s older events so no replay skips it', async () => {
    const store = new BoundedEventStore({ maxEvents: 100, maxBytes: 8 * MiB, maxSessionBytes: 1 * MiB });
    const session = store.forSession();
    const before = await session.storeEvent('s', msg(1));
    const other = await session.storeEvent('t', msg(2));
    const huge = await session.storeEvent('s', answer(3, 'z'.repeat(2 * MiB)));
    const after = await session.storeEvent('s', msg(4));
    expect(await session.getStreamIdForEventId!(huge)).toBeUndefined();
    expect(await session.getStreamIdForEventId!(before)).toBeUndefined();
    expect(await session.getStreamIdForEventId!(other)).toBe('t');
    expect(await session.getStreamIdForEventId!(after)).toBe('s');
    expect(store.bytes).toBeLessThan(1024);
  });

  it('keeps nothing a closed session still sends', async () => {
    const store = new BoundedEventStore({ maxEvents: 100 });
    const session = store.forSession();
    session.forget();
    await session.storeEvent('s', answer(1, 'late'));
    expect({ size: store.size, bytes: store.bytes }).toEqual({ size: 0, bytes: 0 });
  });
});
