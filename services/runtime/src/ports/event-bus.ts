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
  ping(): Promise<void>;
  close(): Promise<void>;
}
