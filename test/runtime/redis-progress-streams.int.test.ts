import { randomBytes } from 'node:crypto';
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

  it('waits on one blocking connection, whatever the number of waiters: one error listener, no MaxListenersExceededWarning', async () => {
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
      const reader = (streams as unknown as { reader: Redis | null }).reader;
      expect(reader).not.toBeNull();
      expect(reader!.listenerCount('error')).toBe(1);
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
});
