import { KeyedLimiter } from './keyed-limiter';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('KeyedLimiter', () => {
  it('never runs more than the bound per key, and keys do not wait for each other', async () => {
    const limiter = new KeyedLimiter(2);
    let peakA = 0;
    let runningA = 0;
    const gates = Array.from({ length: 5 }, deferred);
    const tasks = gates.map((gate) =>
      limiter.run('a', async () => {
        runningA += 1;
        peakA = Math.max(peakA, runningA);
        await gate.promise;
        runningA -= 1;
      }),
    );
    const other = await limiter.run('b', async () => 'b ran');
    expect(other).toBe('b ran');
    await new Promise((r) => setImmediate(r));
    expect(limiter.active('a')).toBe(2);
    for (const gate of gates) {
      gate.resolve();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(tasks);
    expect(peakA).toBe(2);
    expect(limiter.active('a')).toBe(0);
  });

  it('releases the slot when the task throws', async () => {
    const limiter = new KeyedLimiter(1);
    await expect(limiter.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run('a', async () => 1)).resolves.toBe(1);
    expect(limiter.active('a')).toBe(0);
  });
});
