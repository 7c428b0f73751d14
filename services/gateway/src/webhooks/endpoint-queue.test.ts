import { EndpointQueue } from './endpoint-queue';

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('EndpointQueue', () => {
  it('runs at most the bound per key, queues the rest in arrival order, and lets other keys run meanwhile', async () => {
    const gates = new Map<string, ReturnType<typeof gate>>();
    const started: string[] = [];
    const q = new EndpointQueue<string>({ perKey: 2, maxRunning: 10, maxWaitingPerKey: 10, maxWaiting: 100 }, async (item) => {
      started.push(item);
      const g = gate();
      gates.set(item, g);
      await g.promise;
    });
    expect(['a1', 'a2', 'a3', 'a4'].map((i) => q.offer('a', i))).toEqual(['started', 'started', 'queued', 'queued']);
    expect(q.offer('b', 'b1')).toBe('started');
    expect(started).toEqual(['a1', 'a2', 'b1']);
    expect(q.running('a')).toBe(2);
    expect(q.waiting('a')).toBe(2);
    gates.get('a2')!.open();
    await tick();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    gates.get('a1')!.open();
    await tick();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
    for (const g of gates.values()) g.open();
    await q.settled();
    expect(q.running()).toBe(0);
  });

  it('refuses an item when its key has as many waiting as it may, without touching other keys', async () => {
    const g = gate();
    const q = new EndpointQueue<string>({ perKey: 1, maxRunning: 10, maxWaitingPerKey: 1, maxWaiting: 100 }, () => g.promise);
    expect(q.offer('a', 'a1')).toBe('started');
    expect(q.hasRoom('a')).toBe(true);
    expect(q.offer('a', 'a2')).toBe('queued');
    expect(q.hasRoom('a')).toBe(false);
    expect(q.offer('a', 'a3')).toBe('key_full');
    expect(q.offer('b', 'b1')).toBe('started');
    g.open();
    await q.settled();
  });

  it('bounds what runs in all, starting the oldest waiting item whose key has a free slot', async () => {
    const gates = new Map<string, ReturnType<typeof gate>>();
    const started: string[] = [];
    const q = new EndpointQueue<string>({ perKey: 1, maxRunning: 2, maxWaitingPerKey: 10, maxWaiting: 100 }, async (item) => {
      started.push(item);
      const g = gate();
      gates.set(item, g);
      await g.promise;
    });
    q.offer('a', 'a1');
    q.offer('b', 'b1');
    expect(q.offer('a', 'a2')).toBe('queued');
    expect(q.offer('c', 'c1')).toBe('queued'); // its key is free, the process is not
    expect(q.canStart('d')).toBe(false);
    // b1 ends: a2 is older but a's slot is taken, so c1 goes.
    gates.get('b1')!.open();
    await tick();
    expect(started).toEqual(['a1', 'b1', 'c1']);
    gates.get('a1')!.open();
    await tick();
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2']);
    for (const g of gates.values()) g.open();
    await q.settled();
  });

  it('keeps going when an item throws, makes callers wait for room when too many wait in all, and hands waiting items back', async () => {
    const g = gate();
    let calls = 0;
    const q = new EndpointQueue<string>({ perKey: 1, maxRunning: 1, maxWaitingPerKey: 5, maxWaiting: 2 }, async () => {
      calls += 1;
      if (calls === 1) throw new Error('boom');
      await g.promise;
    });
    q.offer('a', 'x1'); // throws at once
    await tick();
    expect(q.running()).toBe(0);
    q.offer('a', 'x2');
    q.offer('a', 'x3');
    q.offer('b', 'y1');
    let roomy = false;
    const room = q.room().then(() => (roomy = true));
    await tick();
    expect(roomy).toBe(false);
    expect(q.takeWaiting()).toEqual(['x3', 'y1']);
    await room;
    expect(roomy).toBe(true);
    g.open();
    await q.settled();
    expect(calls).toBe(2);
  });
});
