import { randomBytes } from 'node:crypto';
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
});
