import { TtlCache } from './ttl-cache';

describe('TtlCache', () => {
  let now = 0;
  const clock = () => now;

  it('expires entries and evicts the oldest beyond its size', () => {
    const c = new TtlCache<number>(100, 2, clock);
    c.set('a', 1);
    c.set('b', 2);
    c.set('c', 3);
    expect(c.get('a')).toBeUndefined();
    expect(c.get('c')).toBe(3);
    now += 100;
    expect(c.get('c')).toBeUndefined();
  });

  it('shares one load among concurrent misses', async () => {
    const c = new TtlCache<number>(100, 10, clock);
    let loads = 0;
    const load = async () => {
      loads++;
      await new Promise((r) => setTimeout(r, 10));
      return 7;
    };
    const values = await Promise.all(Array.from({ length: 20 }, () => c.getOrLoad('k', load)));
    expect(values).toEqual(Array(20).fill(7));
    expect(loads).toBe(1);
  });

  it('answers a recently expired entry while one background load refreshes it', async () => {
    now = 1000;
    const c = new TtlCache<string>(100, 10, clock, 1000);
    await c.getOrLoad('k', async () => 'old');
    now += 150;
    let release: (v: string) => void = () => undefined;
    const slow = () => new Promise<string>((r) => (release = r));
    expect(await c.getOrLoad('k', slow)).toBe('old');
    expect(await c.getOrLoad('k', slow)).toBe('old');
    release('new');
    await new Promise((r) => setImmediate(r));
    expect(await c.getOrLoad('k', slow)).toBe('new');
    now += 5000;
    expect(await c.getOrLoad('k', async () => 'fresh')).toBe('fresh');
  });

  it('caches nothing when its lifetime is zero', async () => {
    const c = new TtlCache<number>(0, 10, clock);
    let loads = 0;
    await c.getOrLoad('k', async () => ++loads);
    await c.getOrLoad('k', async () => ++loads);
    expect(loads).toBe(2);
  });
});
