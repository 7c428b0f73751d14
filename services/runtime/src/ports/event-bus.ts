export interface OutgoingMessage {
  key: string;
  value: string | Buffer;
  headers?: Record<string, string>;
}

export interface BusMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string;
  value: Buffer;
  headers: Record<string, string>;
}

export interface SubscribeOptions {
  groupId: string;
  topics: string[];
  fromBeginning?: boolean;
}

export interface SubscribeBatchOptions extends SubscribeOptions {
  /** Messages handed to the handler at most at once. Default 100. */
  maxBatch?: number;
}

export interface Subscription {
  stop(): Promise<void>;
}

/**
 * Events between processes. At-least-once: a message is acknowledged only after its handler resolved; a handler
 * that throws sees the message again. Order is kept per key. Consumers dedupe on `event_id`.
 */
export interface EventBus {
  readonly kind: 'kafka' | 'memory';
  ensureTopics(topics: string[]): Promise<void>;
  publish(topic: string, messages: OutgoingMessage[]): Promise<void>;
  subscribe(options: SubscribeOptions, handler: (message: BusMessage) => Promise<void>): Promise<Subscription>;
  /**
   * Like `subscribe`, but the handler gets the messages of one partition that are available together (1 to
   * `maxBatch`, in partition order; never two partitions in one call). Their offsets advance only after the handler
   * resolved; a handler that throws gets the same messages again, with the same backoff, before anything behind
   * them. Lets a consumer do one transaction for many messages: under load the batches grow and the cost per
   * message falls. The handler runs outside any message's trace (each message carries its own headers).
   */
  subscribeBatch(options: SubscribeBatchOptions, handler: (messages: BusMessage[]) => Promise<void>): Promise<Subscription>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
