import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import IORedis from 'ioredis';
import type Redis from 'ioredis';
import { describeProgressStreamsContract } from '../../services/runtime/src/streams/progress-streams.contract';
import { RedisProgressStreams } from '../../services/runtime/src/streams/redis-progress-streams';
import { requireEnv } from '../support/infra';

jest.setTimeout(120_000);

describeProgressStreamsContract('RedisProgressStreams on a real Redis', async () => new RedisProgressStreams(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: 'lore-test:' }));

describe('RedisProgressStreams', () => {
  it('keeps installs with different key prefixes apart, listing included', async () => {
    const url = requireEnv('LORE_TEST_REDIS_URL');
    const a = new RedisProgressStreams(url, { keyPrefix: `a-${randomBytes(3).toString('hex')}:` });
    const b = new RedisProgressStreams(url, { keyPrefix: `b-${randomBytes(3).toString('hex')}:` });
    try {
      await a.append('s:1', { from: 'a' });
      expect(await b.read('s:1', '0-0')).toEqual([]);
      expect(await a.list('s:')).toEqual(['s:1']);
      expect(await b.list('s:')).toEqual([]);
      expect(await b.describe('s:1')).toBeNull();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('waits on one subscriber connection, whatever the number of waiters: one error listener, no MaxListenersExceededWarning', async () => {
    const streams = new RedisProgressStreams(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: `l-${randomBytes(3).toString('hex')}:` });
    const warnings: Error[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'MaxListenersExceededWarning') warnings.push(w);
    };
    process.on('warning', onWarning);
    try {
      // One follower after another, then many at once, then one after another again.
      for (let i = 0; i < 30; i++) expect(await streams.waitFor('quiet', '0-0', 5)).toEqual([]);
      await Promise.all(Array.from({ length: 50 }, (_, i) => streams.waitFor(`quiet-${i}`, '0-0', 30)));
      for (let i = 0; i < 30; i++) expect(await streams.waitFor('quiet', '0-0', 5)).toEqual([]);
      const subscriber = (streams as unknown as { subscriber: Redis | null }).subscriber;
      expect(subscriber).not.toBeNull();
      expect(subscriber!.listenerCount('error')).toBe(1);
      expect(subscriber!.listenerCount('message')).toBe(1);
      // Node emits the warning on a later tick.
      await new Promise((r) => setTimeout(r, 20));
      expect(warnings.map((w) => w.message)).toEqual([]);
      // The same connection still answers a wait that an append ends.
      const waiting = streams.waitFor('live', '0-0', 5_000);
      await new Promise((r) => setTimeout(r, 50));
      await streams.append('live', { n: '1' });
      expect((await waiting).map((e) => e.fields.n)).toEqual(['1']);
    } finally {
      process.off('warning', onWarning);
      await streams.close();
    }
  });

  it('wakes a follower with one small read of its own stream, not a read naming every waited stream', async () => {
    const streams = new RedisProgressStreams(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: `w-${randomBytes(3).toString('hex')}:` });
    const watched = (streams as unknown as { watched: Map<string, { waiters: Set<unknown> }> }).watched;
    // Every XREAD any connection of this process sends, with the number of streams it names.
    const reads: number[] = [];
    const original = IORedis.prototype.call as unknown as (this: Redis, ...args: unknown[]) => unknown;
    const call = jest.spyOn(IORedis.prototype, 'call').mockImplementation(function (this: Redis, ...args: unknown[]) {
      const words = args.map(String);
      if (words[0]!.toUpperCase() === 'XREAD') reads.push((words.length - words.indexOf('STREAMS') - 1) / 2);
      return original.apply(this, args) as never;
    });
    try {
      const quiet = Array.from({ length: 200 }, (_, i) => streams.waitFor(`quiet-${i}`, '0-0', 3_000));
      const live = streams.waitFor('live', '0-0', 3_000);
      // Every waiter is waiting: its subscription and its first read are done.
      for (let i = 0; i < 200 && [...watched.values()].filter((w) => w.waiters.size === 1).length < 201; i++) await new Promise((r) => setTimeout(r, 10));
      expect([...watched.values()].filter((w) => w.waiters.size === 1)).toHaveLength(201);
      reads.length = 0;
      await streams.append('live', { n: '1' });
      expect((await live).map((e) => e.fields.n)).toEqual(['1']);
      await new Promise((r) => setTimeout(r, 100));
      // The wake-up is one read of `live` alone; none of the 200 quiet streams is read again.
      expect(reads).toEqual([1]);
      expect(await Promise.all(quiet)).toEqual(Array.from({ length: 200 }, () => []));
    } finally {
      call.mockRestore();
      await streams.close();
    }
  });

  it('announces appends per stream on its channel, and drops a channel a while after its last waiter', async () => {
    const url = requireEnv('LORE_TEST_REDIS_URL');
    const prefix = `c-${randomBytes(3).toString('hex')}:`;
    const streams = new RedisProgressStreams(url, { keyPrefix: prefix });
    const admin = new IORedis(url);
    const subscribers = async (key: string) => Number(((await admin.call('PUBSUB', 'NUMSUB', `progress-appended:${prefix}${key}`)) as [string, number])[1]);
    try {
      const waiting = streams.waitFor('s', '0-0', 2_000);
      await new Promise((r) => setTimeout(r, 50));
      expect(await subscribers('s')).toBe(1);
      expect(await subscribers('other')).toBe(0);
      await streams.append('s', { n: '1' });
      expect((await waiting).map((e) => e.fields.n)).toEqual(['1']);
      // Still subscribed right after (a follower waits again at once).
      expect(await subscribers('s')).toBe(1);
    } finally {
      await streams.close();
      await new Promise((r) => setTimeout(r, 50));
      expect(await subscribers('s')).toBe(0);
      admin.disconnect();
    }
  });

  it('loses no entry when its subscriber connection is killed: a reconnect reads every waited stream again', async () => {
    const url = requireEnv('LORE_TEST_REDIS_URL');
    const streams = new RedisProgressStreams(url, { keyPrefix: `k-${randomBytes(3).toString('hex')}:` });
    const writer = new RedisProgressStreams(url, { keyPrefix: (streams as unknown as { prefix: string }).prefix });
    const admin = new IORedis(url);
    try {
      const waiting = streams.waitFor('s', '0-0', 20_000);
      await new Promise((r) => setTimeout(r, 50));
      const subscriber = (streams as unknown as { subscriber: Redis & { stream: Socket } }).subscriber;
      // Kill this adapter's subscriber (found by its socket's address; other suites share the server), and append
      // while it is away: nobody hears that announcement.
      const reconnected = new Promise((r) => subscriber.once('ready', r));
      expect(await admin.client('KILL', 'ADDR', `${subscriber.stream.localAddress}:${subscriber.stream.localPort}`)).toBe(1);
      await writer.append('s', { n: '1' });
      await reconnected;
      const entries = await waiting;
      expect(entries.map((e) => e.fields.n)).toEqual(['1']);
    } finally {
      await streams.close();
      await writer.close();
      admin.disconnect();
    }
  });
});
