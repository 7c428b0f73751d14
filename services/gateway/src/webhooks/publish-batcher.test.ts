import { MemoryBus, startTelemetry, withExtractedContext, type EventBus, type OutgoingMessage } from '@lore/runtime';
import { PublishBatcher } from './publish-batcher';

/** A bus whose sends take a while and can be made to fail; records each send. */
function slowBus(delayMs: number): { bus: EventBus; sends: Array<{ topic: string; n: number }>; fail: { next: boolean } } {
  const sends: Array<{ topic: string; n: number }> = [];
  const fail = { next: false };
  const inner = new MemoryBus();
  const bus: EventBus = {
    kind: 'memory',
    ensureTopics: (t) => inner.ensureTopics(t),
    subscribe: (o, h) => inner.subscribe(o, h),
    subscribeBatch: (o, h) => inner.subscribeBatch(o, h),
    ping: () => inner.ping(),
    close: () => inner.close(),
    async publish(topic: string, messages: OutgoingMessage[]) {
      sends.push({ topic, n: messages.length });
      await new Promise((r) => setTimeout(r, delayMs));
      if (fail.next) {
        fail.next = false;
        throw new Error('broker unavailable');
      }
    },
  };
  return { bus, sends, fail };
}

const msg = (key: string): OutgoingMessage => ({ key, value: key });

describe('PublishBatcher', () => {
  it('sends the first publish at once and groups the ones that arrive while it is in flight', async () => {
    const { bus, sends } = slowBus(20);
    const batcher = new PublishBatcher(bus);
    const first = batcher.publish('t', [msg('a')]);
    const rest = Array.from({ length: 9 }, (_, i) => batcher.publish('t', [msg(`b${i}`)]));
    await Promise.all([first, ...rest]);
    expect(sends).toEqual([
      { topic: 't', n: 1 },
      { topic: 't', n: 9 },
    ]);
  });

  it('keeps topics apart and caps a batch', async () => {
    const { bus, sends } = slowBus(5);
    const batcher = new PublishBatcher(bus, 3);
    await Promise.all([batcher.publish('x', [msg('1')]), batcher.publish('y', [msg('2'), msg('3'), msg('4'), msg('5')])]);
    expect(sends).toEqual([
      { topic: 'x', n: 1 },
      { topic: 'y', n: 3 },
      { topic: 'y', n: 1 },
    ]);
  });

  it('sends each message in its own caller’s trace, not in the trace of the caller whose send carried it', async () => {
    startTelemetry({}); // W3C propagation, as in every process
    const { bus } = slowBus(20);
    const sent: OutgoingMessage[] = [];
    const publish = bus.publish.bind(bus);
    bus.publish = async (topic, messages) => {
      sent.push(...messages);
      await publish(topic, messages);
    };
    const batcher = new PublishBatcher(bus);
    const parent = (n: string) => `00-${n.repeat(32)}-${n.repeat(16)}-01`;
    const inTrace = (n: string, m: OutgoingMessage) => withExtractedContext({ traceparent: parent(n) }, () => batcher.publish('t', [m]));
    const own = `00-${'d'.repeat(32)}-${'d'.repeat(16)}-01`;
    await Promise.all([inTrace('a', msg('first')), inTrace('b', msg('second')), inTrace('c', msg('third')), inTrace('e', { ...msg('carried'), headers: { traceparent: own } })]);
    expect(Object.fromEntries(sent.map((m) => [m.key, m.headers?.traceparent]))).toEqual({ first: parent('a'), second: parent('b'), third: parent('c'), carried: own });
  });

  it('rejects exactly the callers whose send failed, and goes on', async () => {
    const { bus, fail } = slowBus(10);
    const batcher = new PublishBatcher(bus);
    fail.next = true;
    const failed = batcher.publish('t', [msg('a')]);
    const later = batcher.publish('t', [msg('b')]);
    await expect(failed).rejects.toThrow('broker unavailable');
    await expect(later).resolves.toBeUndefined();
  });
});
