import { PerKeyBackoff } from './backoff';
import { WorkQueue } from './work-queue';

const noJitter = { baseMs: 100, maxMs: 1_000, jitter: 0 };

describe('WorkQueue', () => {
  afterEach(() => jest.useRealTimers());

  it('merges repeated adds of a waiting key into one entry, keeping first-in order', async () => {
    const q = new WorkQueue(noJitter);
    q.add('a');
    q.add('b');
    q.add('a');
    q.add('a');
    expect(q.depth).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands out a key that is in flight; an add meanwhile requeues it once when done', async () => {
    const q = new WorkQueue(noJitter);
    q.add('a');
    const key = await q.get();
    q.add('a');
    q.add('a');
    expect(q.depth).toBe(0);
    expect(q.isInFlight('a')).toBe(true);
    q.done(key!);
    expect(q.depth).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    expect(q.depth).toBe(0);
  });

  it('wakes a waiting worker when a key arrives', async () => {
    const q = new WorkQueue(noJitter);
    const waiting = q.get();
    q.add('x');
    await expect(waiting).resolves.toBe('x');
  });

  it('delays keys with addAfter, keeping the earliest of several delays', () => {
    jest.useFakeTimers();
    const q = new WorkQueue(noJitter);
    q.addAfter('a', 5_000);
    q.addAfter('a', 1_000);
    q.addAfter('a', 3_000);
    jest.advanceTimersByTime(999);
    expect(q.depth).toBe(0);
    jest.advanceTimersByTime(1);
    expect(q.depth).toBe(1);
    jest.advanceTimersByTime(10_000);
    expect(q.depth).toBe(1);
  });

  it('backs off per key exponentially up to the cap, and forget resets only that key', () => {
    const q = new WorkQueue(noJitter);
    expect([q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a')]).toEqual([100, 200, 400, 800, 1_000]);
    expect(q.addRateLimited('b')).toBe(100);
    q.forget('a');
    expect(q.addRateLimited('a')).toBe(100);
    expect(q.failuresOf('b')).toBe(1);
    q.shutDown();
  });

  it('hands out nothing after shutdown and releases waiting workers', async () => {
    const q = new WorkQueue(noJitter);
    const waiting = q.get();
    q.shutDown();
    await expect(waiting).resolves.toBeUndefined();
    q.add('a');
    await expect(q.get()).resolves.toBeUndefined();
  });

  it('reports depth changes to its hook', async () => {
    const depths: number[] = [];
    const q = new WorkQueue(noJitter, { onDepth: (d) => depths.push(d) });
    q.add('a');
    q.add('b');
    await q.get();
    expect(depths).toEqual([1, 2, 1]);
  });
});

describe('PerKeyBackoff', () => {
  it('adds bounded jitter on top of the exponential delay', () => {
    const b = new PerKeyBackoff({ baseMs: 1_000, maxMs: 60_000, jitter: 0.5 }, () => 1);
    expect(b.next('k')).toBe(1_500);
    expect(b.next('k')).toBe(3_000);
  });
});
