import { injectTraceHeaders, type EventBus, type OutgoingMessage } from '@lore/runtime';

interface Waiting {
  message: OutgoingMessage;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for publishes: the first caller's messages go out at once; callers that arrive while a send is in
 * flight are sent together in the next one. Every caller still resolves only after the broker acknowledged its
 * messages, so handlers keep their at-least-once contract, but N concurrent handlers cost one round trip to the
 * broker instead of N (the bus's producer sends one request at a time).
 */
export class PublishBatcher {
  private readonly queues = new Map<string, Waiting[]>();
  private sending = false;

  constructor(
    private readonly bus: EventBus,
    private readonly maxBatch = 500,
  ) {}

  publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    const queue = this.queues.get(topic) ?? [];
    this.queues.set(topic, queue);
    const done = Promise.all(
      messages.map(
        (message) =>
          new Promise<void>((resolve, reject) => {
            // The send may run in another caller's context: each message takes its own caller's trace along now.
            const traced = message.headers?.traceparent ? message : { ...message, headers: { ...injectTraceHeaders({}), ...message.headers } };
            queue.push({ message: traced, resolve, reject });
          }),
      ),
    ).then(() => undefined);
    if (!this.sending) void this.drain();
    return done;
  }

  private async drain(): Promise<void> {
    this.sending = true;
    try {
      // Bounded: each pass sends what was queued; a pass only repeats for callers that arrived meanwhile.
      for (;;) {
        const next = [...this.queues.entries()].find(([, q]) => q.length > 0);
        if (!next) return;
        const [topic, queue] = next;
        const batch = queue.splice(0, this.maxBatch);
        try {
          await this.bus.publish(
            topic,
            batch.map((w) => w.message),
          );
          batch.forEach((w) => w.resolve());
        } catch (err) {
          batch.forEach((w) => w.reject(err));
        }
      }
    } finally {
      this.sending = false;
    }
  }
}
