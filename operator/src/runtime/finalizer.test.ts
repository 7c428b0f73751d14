import { MEMORY } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import { FakeKube } from '../testing/fake-kube';
import { withFinalizer } from './finalizer';

const F = 'lore.dev/test';

describe('withFinalizer', () => {
  it('adds the finalizer before the reconcile code runs, and never twice', async () => {
    const kube = new FakeKube();
    const seen: Array<string[] | undefined> = [];
    const run = withFinalizer<KubeObject>(kube, MEMORY, F, {
      apply: async (o) => {
        seen.push(o.metadata.finalizers);
      },
      cleanup: async () => ({ done: true }),
    });
    kube.seed(MEMORY, { metadata: { name: 'm', namespace: 'n', finalizers: ['other'] } });
    await run(kube.peek(MEMORY, 'n', 'm')!);
    await run(kube.peek(MEMORY, 'n', 'm')!);
    expect(seen).toEqual([['other', F], ['other', F]]);
    expect(kube.writes.map((w) => w.verb)).toEqual(['patch']);
  });

  it('removes the finalizer only after cleanup succeeded', async () => {
    const kube = new FakeKube();
    let fail = 2;
    const run = withFinalizer<KubeObject>(kube, MEMORY, F, {
      apply: async () => undefined,
      cleanup: async () => {
        if (fail-- > 0) throw new Error('platform down');
        return { done: true };
      },
    });
    kube.seed(MEMORY, { metadata: { name: 'm', namespace: 'n' } });
    await run(kube.peek(MEMORY, 'n', 'm')!);
    kube.userDelete(MEMORY, 'n', 'm');
    await expect(run(kube.peek(MEMORY, 'n', 'm')!)).rejects.toThrow('platform down');
    await expect(run(kube.peek(MEMORY, 'n', 'm')!)).rejects.toThrow('platform down');
    expect(kube.peek(MEMORY, 'n', 'm')!.metadata.finalizers).toEqual([F]);
    await run(kube.peek(MEMORY, 'n', 'm')!);
    expect(kube.peek(MEMORY, 'n', 'm')).toBeUndefined();
  });

  it('asks to be called again when cleanup is not finished, and leaves foreign deletions alone', async () => {
    const kube = new FakeKube();
    const run = withFinalizer<KubeObject>(kube, MEMORY, F, {
      apply: async () => undefined,
      cleanup: async () => ({ done: false, requeueAfterMs: 1234 }),
    });
    kube.seed(MEMORY, { metadata: { name: 'm', namespace: 'n', finalizers: [F] } });
    kube.userDelete(MEMORY, 'n', 'm');
    await expect(run(kube.peek(MEMORY, 'n', 'm')!)).resolves.toEqual({ requeueAfterMs: 1234 });
    kube.seed(MEMORY, { metadata: { name: 'x', namespace: 'n', finalizers: ['someone-else'] } });
    kube.userDelete(MEMORY, 'n', 'x');
    const mark = kube.writes.length;
    await expect(run(kube.peek(MEMORY, 'n', 'x')!)).resolves.toBeUndefined();
    expect(kube.writesSince(mark)).toEqual([]);
  });
});
