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
  /**
   * Where the group starts if it never committed: the first retained message (true) or the end of each partition as
   * of `subscribe` (false). Default: the topic's policy in `NEW_GROUP_START` (contracts), `latest` for other topics.
   */
  fromBeginning?: boolean;
  /**
   * Failed attempts of one message (or batch) before it goes to the dead-letter topic `lore.dead` and the group
   * moves on. Attempts that failed with a transient error (`isTransientError`) do not count: a dependency outage is
   * waited out, never dead-lettered. Default: the bus's (10). `Infinity` never dead-letters.
   */
  maxAttempts?: number;
  /** Backoff between attempts. Default: the bus's (200 ms doubling to 10 s). */
  retry?: { initialMs: number; maxMs: number };
  /** Also treats these errors as transient (besides `TransientError` and recognised dependency outages). */
  isTransient?: (err: unknown) => boolean;
  /**
   * Called once a message of this subscription is in `lore.dead` (its handler kept failing, declared it poison, or
   * consumers kept stopping on it), before its offset is committed: the place to mark what the message stood for
   * (a job, an upload) as failed, so it is not left waiting for good. It is tried once; an error is logged and the
   * group goes on.
   */
  onDeadLetter?: (message: BusMessage, failure: { error: string; attempts: number }) => Promise<void>;
  /**
   * The subscriber makes this group's work again from durable state when its process starts (the webhooks worker
   * announces every delivery still waiting, from its rows), so a bus that ends with the process may lose the group's
   * unhandled messages: `MemoryBus.idle()`, what the outbox relay checkpoints by, does not wait for them. Kafka keeps
   * every message and ignores it.
   */
  rebuiltOnStart?: boolean;
}

export interface SubscribeBatchOptions extends SubscribeOptions {
  /** Messages handed to the handler at most at once. Default 100. */
  maxBatch?: number;
}

export interface Subscription {
  stop(): Promise<void>;
}

export interface BrowseOptions {
  /** Messages returned at most (the oldest first, per partition). Default 100. */
  limit?: number;
}

/**
 * Where one subscription stands in its consumer group. `joining` until the group first took it in; `member` after
 * each join (`partitions` 0 is an idle member: more members than partitions); `rebalancing` while a member rejoins;
 * `restarting` after the consumer crashed and will be restarted; `crashed` when it will not be; `stopped` when the
 * consumer stopped without its subscription being stopped.
 */
export interface GroupMembership {
  /** Logical group and topic names, as the subscription gave them. */
  group: string;
  topics: string[];
  state: 'joining' | 'member' | 'rebalancing' | 'restarting' | 'crashed' | 'stopped';
  /** Partitions assigned at the last join. */
  partitions: number;
  /** When the state last changed (ISO 8601). */
  since: string;
  /** The crash's message, in `restarting` and `crashed`. */
  error?: string;
}

/** Readiness reads of a bus whose consumers belong to broker-side groups (the Kafka adapter). */
export interface GroupMembershipSource {
  /** Every live subscription of this bus, in the order they were made. */
  memberships(): GroupMembership[];
  /** Messages each topic holds beyond the group's committed offsets (from the first retained one if none). */
  groupLag(group: string, topics: string[]): Promise<Record<string, number>>;
}

/** Operator reads: both adapters have it; kept off `EventBus` since no service needs it. */
export interface BrowsableBus {
  /**
   * The messages a topic holds now, without any consumer group (nothing is committed): e.g. to list dead letters.
   * Partitions in order, each from its oldest retained message.
   */
  browse(topic: string, options?: BrowseOptions): Promise<BusMessage[]>;
}

/**
 * Events between processes. At-least-once: a message is acknowledged only after its handler resolved; a handler
 * that throws sees the message again, up to its subscription's bound; then the message goes to the dead-letter topic
 * and the group goes on (transient errors are retried without bound). Order is kept per key. Consumers dedupe on
 * `event_id`. Topic and group names are logical (`lore.events`): the adapter adds the install's prefix.
 */
export interface EventBus {
  readonly kind: 'kafka' | 'memory';
  ensureTopics(topics: string[]): Promise<void>;
  publish(topic: string, messages: OutgoingMessage[]): Promise<void>;
  /**
   * Makes the first `publish` to these topics as quick as the next ones: a process that will publish (the outbox
   * relay) calls it at start, so the first event after a deployment does not wait for the broker connection and the
   * topics' metadata. Writes nothing. Optional: a bus without connection set-up has nothing to prepare.
   */
  preparePublish?(topics: string[]): Promise<void>;
  subscribe(options: SubscribeOptions, handler: (message: BusMessage) => Promise<void>): Promise<Subscription>;
  /**
   * Like `subscribe`, but the handler gets the messages of one partition that are available together (1 to
   * `maxBatch`, in partition order; never two partitions in one call). Their offsets advance only after the handler
   * resolved; a handler that throws gets the same messages again, with the same backoff, before anything behind
   * them; past the bound, each message is tried alone and only those that still fail are dead-lettered. Lets a consumer do one transaction for many messages: under load the batches grow and the cost per
   * message falls. The handler runs outside any message's trace (each message carries its own headers).
   */
  subscribeBatch(options: SubscribeBatchOptions, handler: (messages: BusMessage[]) => Promise<void>): Promise<Subscription>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
