import { randomBytes } from 'node:crypto';
import { describeCacheContract } from '../../services/runtime/src/cache/cache.contract';
import { RedisCache } from '../../services/runtime/src/cache/redis-cache';
import { requireEnv } from '../support/infra';

jest.setTimeout(120_000);

describeCacheContract('RedisCache on a real Redis', async () => new RedisCache(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: 'lore-test:' }));

describe('RedisCache', () => {
  it('keeps caches with different key prefixes apart, scripts included', async () => {
    const url = requireEnv('LORE_TEST_REDIS_URL');
    const a = new RedisCache(url, { keyPrefix: `a-${randomBytes(3).toString('hex')}:` });
    const b = new RedisCache(url, { keyPrefix: `b-${randomBytes(3).toString('hex')}:` });
    try {
      await a.set('k', 'from a');
      expect(await b.get('k')).toBeNull();
      expect((await a.rateLimit('rl', 1, 1)).allowed).toBe(true);
      expect((await a.rateLimit('rl', 1, 1)).allowed).toBe(false);
      expect((await b.rateLimit('rl', 1, 1)).allowed).toBe(true);
      expect(await a.incrBy('n', 1)).toBe(1);
      expect(await b.incrBy('n', 5)).toBe(5);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
