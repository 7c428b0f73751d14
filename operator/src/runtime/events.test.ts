import pino from 'pino';
import { FakeKube } from '../testing/fake-kube';
import { EVENT } from '../kube/resources';
import { KubeEventRecorder } from './events';

describe('KubeEventRecorder', () => {
  it('names an event of an object with a name of 253 characters within the 253 an Event may have', async () => {
    const kube = new FakeKube();
    const recorder = new KubeEventRecorder({ kube, logger: pino({ level: 'silent' }), controller: 'lore.dev/operator', instance: 'op-0' });
    const name = `${'a'.repeat(240)}.b-${'c'.repeat(10)}`;
    await recorder.record({ apiVersion: 'lore.dev/v1alpha1', kind: 'Memory', metadata: { name, namespace: 'team', uid: 'u1' } }, 'Warning', 'Rejected', 'Provision', 'refused');
    await recorder.flush();
    const [event] = kube.all<{ metadata: { name: string }; regarding: { name: string } }>(EVENT);
    expect(event).toBeDefined();
    expect(event!.metadata.name.length).toBeLessThanOrEqual(253);
    expect(event!.metadata.name).toMatch(/^a+\.[0-9a-f]{16}$/);
    expect(event!.regarding.name).toBe(name);
  });
});
