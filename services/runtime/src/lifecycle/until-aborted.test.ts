import { untilAborted } from './until-aborted';

describe('untilAborted', () => {
  it('answers what the promise answers while the signal stays quiet', async () => {
    await expect(untilAborted(Promise.resolve(7), new AbortController().signal)).resolves.toBe(7);
    await expect(untilAborted(Promise.reject(new Error('no')), new AbortController().signal)).rejects.toThrow('no');
  });

  it('rejects with the signal\'s reason as soon as it aborts, however long the promise takes', async () => {
    const c = new AbortController();
    const never = new Promise<number>(() => undefined);
    const waiting = untilAborted(never, c.signal);
    c.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
  });

  it('rejects at once on a signal already aborted, with the reason asked for', async () => {
    const c = new AbortController();
    c.abort();
    await expect(untilAborted(Promise.resolve(1), c.signal, () => new Error('stopped'))).rejects.toThrow('stopped');
  });

  it('leaves no unhandled rejection behind when the promise fails after a signal already aborted', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const c = new AbortController();
      c.abort(new Error('gone'));
      let fail: (e: Error) => void = () => undefined;
      const later = new Promise<number>((_, reject) => (fail = reject));
      await expect(untilAborted(later, c.signal)).rejects.toThrow('gone');
      fail(new Error('the work failed afterwards'));
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('leaves no listener on the signal once it has answered', async () => {
    const c = new AbortController();
    let listeners = 0;
    const add = c.signal.addEventListener.bind(c.signal);
    const remove = c.signal.removeEventListener.bind(c.signal);
    c.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      return add(...args);
    }) as typeof add;
    c.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--;
      return remove(...args);
    }) as typeof remove;
    await untilAborted(Promise.resolve(1), c.signal);
    await untilAborted(Promise.reject(new Error('x')), c.signal).catch(() => undefined);
    expect(listeners).toBe(0);
  });
});
