import { createLogger } from '@lore/runtime/kit';
import type { KubeClient, ListOptions, WatchOptions } from '../kube/client';
import { KubeApiError } from '../kube/errors';
import { MEMORY } from '../kube/resources';
import type { KubeList, KubeObject, WatchEvent } from '../kube/types';
import { Informer } from './informer';

const logger = createLogger({ level: 'silent', service: 'test' });
const obj = (name: string, rv: string): KubeObject => ({ metadata: { name, namespace: 'ns', resourceVersion: rv } });

/** What the informer reports, in order, as `add a`, `update a`, `delete a`. */
function recordChanges(inf: Informer<KubeObject>): string[] {
  const seen: string[] = [];
  inf.addHandlers({
    onAdd: (o) => seen.push(`add ${o.metadata.name}`),
    onUpdate: (_old, o) => seen.push(`update ${o.metadata.name}`),
    onDelete: (o) => seen.push(`delete ${o.metadata.name}`),
  });
  return seen;
}

/** A scripted API server: each list answers the next snapshot, each watch plays the next script. */
class ScriptedKube {
  lists: Array<{ items: KubeObject[]; rv: string }> = [];
  watches: Array<(emit: (e: WatchEvent) => void) => Promise<void>> = [];
  watchCalls: WatchOptions[] = [];
  listCalls = 0;

  async list(_rt: unknown, _opts?: ListOptions): Promise<KubeList> {
    const snap = this.lists[Math.min(this.listCalls++, this.lists.length - 1)]!;
    return { metadata: { resourceVersion: snap.rv }, items: snap.items };
  }

  async watch(_rt: unknown, opts: WatchOptions, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    this.watchCalls.push(opts);
    const script = this.watches.shift();
    if (script) return script(onEvent);
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
  }
}

describe('Informer', () => {
  it('lists, then watches from the list version, applying events to the cache and handlers', async () => {
    const kube = new ScriptedKube();
    kube.lists = [{ items: [obj('a', '1')], rv: '10' }];
    kube.watches = [
      async (emit) => {
        emit({ type: 'ADDED', object: obj('b', '11') });
        emit({ type: 'MODIFIED', object: obj('a', '12') });
        emit({ type: 'BOOKMARK', object: obj('', '13') });
        emit({ type: 'DELETED', object: obj('b', '14') });
      },
    ];
    const inf = new Informer({ kube: kube as unknown as KubeClient, resource: MEMORY, logger });
    const seen = recordChanges(inf);
    inf.start();
    await inf.waitForSync();
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual(['add a', 'add b', 'update a', 'delete b']);
    expect(inf.list().map((o) => o.metadata.name)).toEqual(['a']);
    expect(inf.get('ns', 'a')!.kind).toBe('Memory');
    // First watch from the list version, the next one from the newest version seen (the bookmark's or later).
    expect(kube.watchCalls[0]!.resourceVersion).toBe('10');
    expect(kube.watchCalls[1]!.resourceVersion).toBe('14');
    await inf.stop();
  });

  it('relists after 410 Gone and reports what changed meanwhile, deletions included', async () => {
    const kube = new ScriptedKube();
    kube.lists = [
      { items: [obj('a', '1'), obj('b', '2')], rv: '10' },
      { items: [obj('a', '5'), obj('c', '6')], rv: '20' },
    ];
    kube.watches = [
      async (emit) => emit({ type: 'ERROR', object: { metadata: {}, code: 410, message: 'too old resource version' } as unknown as KubeObject }),
    ];
    const inf = new Informer({ kube: kube as unknown as KubeClient, resource: MEMORY, logger });
    const seen = recordChanges(inf);
    inf.start();
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual(['add a', 'add b', 'update a', 'add c', 'delete b']);
    expect(kube.listCalls).toBe(2);
    expect(kube.watchCalls.at(-1)!.resourceVersion).toBe('20');
    await inf.stop();
  });

  it('retries a failed watch after a pause, keeping its cache', async () => {
    const kube = new ScriptedKube();
    kube.lists = [{ items: [obj('a', '1')], rv: '10' }];
    kube.watches = [async () => Promise.reject(new KubeApiError(500, 'WATCH', 'memories', { message: 'boom' }))];
    const inf = new Informer({ kube: kube as unknown as KubeClient, resource: MEMORY, logger });
    inf.start();
    await inf.waitForSync();
    await new Promise((r) => setTimeout(r, 700));
    expect(kube.watchCalls.length).toBe(2);
    expect(kube.listCalls).toBe(1);
    expect(inf.list()).toHaveLength(1);
    await inf.stop();
  });

  it('offers every cached object again on resync', async () => {
    const kube = new ScriptedKube();
    kube.lists = [{ items: [obj('a', '1'), obj('b', '2')], rv: '10' }];
    const inf = new Informer({ kube: kube as unknown as KubeClient, resource: MEMORY, logger });
    const resynced: string[] = [];
    inf.addHandlers({ onResync: (o) => resynced.push(String(o.metadata.name)) });
    inf.start();
    await inf.waitForSync();
    inf.resync();
    expect(resynced.sort()).toEqual(['a', 'b']);
    await inf.stop();
  });

  it('hands delete handlers the final copy a DELETED event carries (finalizers included), not the older cached one', async () => {
    const kube = new ScriptedKube();
    kube.lists = [{ items: [obj('a', '1')], rv: '10' }];
    kube.watches = [
      async (emit) => {
        emit({ type: 'DELETED', object: { metadata: { name: 'a', namespace: 'ns', resourceVersion: '12', finalizers: ['lore.dev/memory-deprovision'] } } });
      },
    ];
    const inf = new Informer({ kube: kube as unknown as KubeClient, resource: MEMORY, logger });
    const deleted: KubeObject[] = [];
    inf.addHandlers({ onDelete: (o) => deleted.push(o) });
    inf.start();
    await inf.waitForSync();
    await new Promise((r) => setTimeout(r, 20));
    expect(deleted.map((o) => o.metadata.finalizers)).toEqual([['lore.dev/memory-deprovision']]);
    await inf.stop();
  });
});
