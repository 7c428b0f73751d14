import { EventEmitter } from 'node:events';
import pino from 'pino';
import { Lifecycle, withTimeout } from './lifecycle';

describe('Lifecycle', () => {
  const quiet = pino({ level: 'silent' });

  it('is not ready before start, ready after, and not ready from the first moment of shutdown', async () => {
    const lc = new Lifecycle(quiet);
    expect((await lc.readiness()).ready).toBe(false);
    lc.markStarted();
    expect((await lc.readiness()).ready).toBe(true);
    let readyDuringHook: boolean | undefined;
    lc.onShutdown('probe', async () => {
      readyDuringHook = (await lc.readiness()).ready;
    });
    await lc.shutdown();
    expect(readyDuringHook).toBe(false);
    expect(lc.isStopping).toBe(true);
  });

  it('shuts down gracefully once for one Ctrl-C delivered twice, and exits at once on a later signal', async () => {
    const lc = new Lifecycle(quiet);
    const signals = new EventEmitter();
    const exits: number[] = [];
    let release!: () => void;
    const hookDone = new Promise<void>((resolve) => (release = resolve));
    let hookRuns = 0;
    lc.onShutdown('slow', async () => {
      hookRuns++;
      await hookDone;
    });
    lc.installSignalHandlers((code) => void exits.push(code), signals as unknown as Pick<NodeJS.Process, 'on'>, 50);
    // The terminal's SIGINT to the process group, then the launcher's forwarded one.
    signals.emit('SIGINT', 'SIGINT');
    signals.emit('SIGINT', 'SIGINT');
    await new Promise((r) => setTimeout(r, 10));
    expect(exits).toEqual([]);
    expect(hookRuns).toBe(1);
    await new Promise((r) => setTimeout(r, 60));
    signals.emit('SIGTERM', 'SIGTERM');
    expect(exits).toEqual([130]);
    release();
    await lc.shutdown();
    await new Promise((r) => setImmediate(r));
    expect(exits).toEqual([130, 0]);
    expect(hookRuns).toBe(1);
  });

  it('reports a failing or throwing check as not ready, naming it', async () => {
    const lc = new Lifecycle(quiet);
    lc.markStarted();
    lc.addCheck('db', async () => ({ ok: true }));
    lc.addCheck('cache', async () => {
      throw new Error('connection refused');
    });
    const r = await lc.readiness();
    expect(r.ready).toBe(false);
    expect(r.checks).toEqual({ db: { ok: true }, cache: { ok: false, error: 'connection refused' } });
  });

  it('runs hooks in reverse order, each under its timeout, and keeps going past a failure', async () => {
    const lc = new Lifecycle(quiet);
    const order: string[] = [];
    lc.onShutdown('pools', async () => void order.push('pools'));
    lc.onShutdown('consumers', async () => {
      order.push('consumers');
      throw new Error('broker gone');
    });
    lc.onShutdown('server', () => new Promise<void>(() => order.push('server')), 50); // never settles
    const started = Date.now();
    await lc.shutdown();
    expect(order).toEqual(['server', 'consumers', 'pools']);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('shuts down once however often it is asked', async () => {
    const lc = new Lifecycle(quiet);
    let runs = 0;
    lc.onShutdown('once', async () => void runs++);
    await Promise.all([lc.shutdown(), lc.shutdown('again')]);
    expect(runs).toBe(1);
  });

  it('withTimeout rejects with the name of what timed out', async () => {
    await expect(withTimeout(new Promise(() => {}), 10, 'drain')).rejects.toThrow('drain timed out after 10 ms');
    await expect(withTimeout(Promise.resolve(3), 10, 'x')).resolves.toBe(3);
  });
});
