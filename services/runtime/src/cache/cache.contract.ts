/**
 * The `Cache` contract: one suite, run against MemoryCache (unit tests) and RedisCache on a real Redis
 * (test/runtime). Not a test file itself: each adapter's test calls `describeCacheContract`.
 */
import { randomBytes } from 'node:crypto';
import type { Cache } from '../ports/cache';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function describeCacheContract(name: string, open: () => Promise<Cache>): void {
  describe(`Cache contract: ${name}`, () => {
    let cache: Cache;
    // Keys unique per run, so a shared Redis holds no state from an earlier one.
    const k = (s: string) => `contract:${runId}:${s}`;
    const runId = randomBytes(4).toString('hex');

    beforeAll(async () => {
      cache = await open();
    });
    afterAll(async () => {
      await cache?.close();
    });

    it('stores, reads and deletes values', async () => {
      expect(await cache.get(k('missing'))).toBeNull();
      await cache.set(k('a'), 'one');
      expect(await cache.get(k('a'))).toBe('one');
      await cache.set(k('a'), 'two');
      expect(await cache.get(k('a'))).toBe('two');
      await cache.del(k('a'));
      expect(await cache.get(k('a'))).toBeNull();
      await expect(cache.del(k('never-set'))).resolves.toBeUndefined();
    });

    it('expires a value after its ttl', async () => {
      await cache.set(k('ttl'), 'soon gone', 80);
      expect(await cache.get(k('ttl'))).toBe('soon gone');
      await sleep(160);
      expect(await cache.get(k('ttl'))).toBeNull();
    });

    it('sets only when absent, and reports whether it did', async () => {
      expect(await cache.setIfAbsent(k('nx'), 'first', 10_000)).toBe(true);
      expect(await cache.setIfAbsent(k('nx'), 'second', 10_000)).toBe(false);
      expect(await cache.get(k('nx'))).toBe('first');
      expect(await cache.setIfAbsent(k('nx-ttl'), 'x', 60)).toBe(true);
      await sleep(140);
      expect(await cache.setIfAbsent(k('nx-ttl'), 'y')).toBe(true);
      expect(await cache.get(k('nx-ttl'))).toBe('y');
    });

    it('elects exactly one winner among concurrent setIfAbsent calls', async () => {
      const wins = await Promise.all(Array.from({ length: 20 }, (_, i) => cache.setIfAbsent(k('race'), String(i), 10_000)));
      expect(wins.filter(Boolean)).toHaveLength(1);
    });

    it('increments counters atomically; the ttl is set when the counter is created and does not slide', async () => {
      const results = await Promise.all(Array.from({ length: 25 }, () => cache.incrBy(k('n'), 2, 150)));
      expect(new Set(results).size).toBe(25);
      expect(Math.max(...results)).toBe(50);
      await sleep(100);
      expect(await cache.incrBy(k('n'), 1, 150)).toBe(51);
      await sleep(100);
      // 200 ms after creation: the 150 ms window ended although the last increment was 100 ms ago.
      expect(await cache.incrBy(k('n'), 1, 150)).toBe(1);
      expect(await cache.incrBy(k('neg'), -3)).toBe(-3);
    });

    it('rate-limits with GCRA: burst at once, then the steady rate (the one burst rule, gcra.ts)', async () => {
      const key = k('rl');
      const first = await cache.rateLimit(key, 10, 4);
      expect(first).toEqual({ allowed: true, remaining: 3, retryAfterMs: 0, resetAfterMs: expect.any(Number) });
      expect(first.resetAfterMs).toBeGreaterThan(50);
      expect(first.resetAfterMs).toBeLessThanOrEqual(100);
      const next = [];
      for (let i = 0; i < 3; i++) next.push(await cache.rateLimit(key, 10, 4));
      expect(next.map((d) => d.allowed)).toEqual([true, true, true]);
      expect(next.map((d) => d.remaining)).toEqual([2, 1, 0]);
      const denied = await cache.rateLimit(key, 10, 4);
      expect(denied.allowed).toBe(false);
      expect(denied.remaining).toBe(0);
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(100);
      expect(denied.resetAfterMs).toBeGreaterThan(300);
      await sleep(denied.retryAfterMs + 20);
      expect((await cache.rateLimit(key, 10, 4)).allowed).toBe(true);
      expect((await cache.rateLimit(key, 10, 4)).allowed).toBe(false);
    });

    it('keeps rate-limit buckets per key', async () => {
      expect((await cache.rateLimit(k('rl-a'), 1, 1)).allowed).toBe(true);
      expect((await cache.rateLimit(k('rl-a'), 1, 1)).allowed).toBe(false);
      expect((await cache.rateLimit(k('rl-b'), 1, 1)).allowed).toBe(true);
    });

    it('admits exactly burst of many concurrent requests (the check and the update are atomic)', async () => {
      const decisions = await Promise.all(Array.from({ length: 60 }, () => cache.rateLimit(k('rl-race'), 1, 10)));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    });

    it('refuses a rate limit without a positive rate or with a burst below 1', async () => {
      await expect(cache.rateLimit(k('rl-bad'), 0, 1)).rejects.toThrow();
      await expect(cache.rateLimit(k('rl-bad'), 1, 0)).rejects.toThrow();
    });

    it('answers ping', async () => {
      await expect(cache.ping()).resolves.toBeUndefined();
    });
  });
}
