import type { Logger } from 'pino';
import { componentLogger } from '../log/logger';
import type { Registry } from 'prom-client';
import { TOPICS } from '@lore/contracts';
import type {
  BrowsableBus,
  BrowseOptions,
  BusMessage,
  EventBus,
  OutgoingMessage,
  SubscribeBatchOptions,
  SubscribeOptions,
  Subscription,
} from '../ports/event-bus';
import { injectTraceHeaders } from '../telemetry/propagation';
import { inBatchConsumerSpan, inConsumerSpan } from '../telemetry/spans';
import { busMetrics, type BusMetrics } from './metrics';
import { startsAtBeginning } from './naming';
import { DEFAULT_MAX_ATTEMPTS, afterDeadLetter, deadLetterOf, handleChunk, poisonPolicy, type FailureRecord, type PoisonPolicy } from './poison';
import { DEFAULT_HANDLER_RETRY, Sleeper, type HandlerRetry } from './retry';

export interface MemoryBusOptions {
  logger?: Logger;
  metrics?: Registry;
  /** Partitions per topic; a key always maps to the same one, so order is kept per key. Default 4. */
  partitions?: number;
  /**
   * Messages kept per partition once every active group has consumed them (for late `fromBeginning` groups).
   * Default 10 000; embedded mode keeps none (services/embedded/src/bus.ts).
   */
  retainPerPartition?: number;
  handlerRetry?: HandlerRetry;
  /** Default bound of counted failed attempts before a message is dead-lettered (per subscription: `maxAttempts`). */
  maxAttempts?: number;
}

interface StoredMessage {
  key: string;
  value: Buffer;
  headers: Record<string, string>;
}

class PartitionLog {
  base = 0;
  messages: StoredMessage[] = [];
  get end(): number {
    return this.base + this.messages.length;
  }
}

type Handler = (message: BusMessage) => Promise<void>;
type BatchHandler = (messages: BusMessage[]) => Promise<void>;

interface Member {
  groupId: string;
  policy: PoisonPolicy;
  topics: Set<string>;
  handler: BatchHandler;
  /** Messages per handler call: 1 for `subscribe`. */
  maxBatch: number;
  stopped: boolean;
  inFlight: Set<Promise<unknown>>;
  /** `SubscribeOptions.rebuiltOnStart`: `idle()` does not wait for this member's messages. */
  rebuiltOnStart: boolean;
}

interface Group {
  members: Member[];
  /** Next offset to deliver, per `topic/partition`: the committed position. */
  offsets: Map<string, number>;
  workers: Set<string>;
}

/**
 * The in-process event bus (embedded mode, unit tests), with Kafka's semantics: partitions chosen by key, each
 * consumer group receives every message once, partitions of a topic are shared among a group's members, a
 * message's offset advances only after its handler resolved, and a handler that throws gets the same message again
 * (after a capped exponential backoff) before anything behind it, until its subscription's bound: then the message
 * goes to `lore.dead` (poison.ts). `publish` resolves once the message is in the log.
 */
export class MemoryBus implements EventBus, BrowsableBus {
  readonly kind = 'memory' as const;
  private readonly topics = new Map<string, PartitionLog[]>();
  private readonly groups = new Map<string, Group>();
  private readonly partitions: number;
  private readonly retain: number;
  private readonly retry: HandlerRetry;
  private readonly maxAttempts: number;
  private readonly metrics: BusMetrics;
  private readonly logger?: Logger;
  private readonly sleeper = new Sleeper();
  /** Workers waiting for a message or a membership change. */
  private waiters = new Set<() => void>();
  private closed = false;

  constructor(opts: MemoryBusOptions = {}) {
    this.logger = opts.logger ? componentLogger(opts.logger, 'memory-bus') : undefined;
    this.partitions = opts.partitions ?? 4;
    this.retain = opts.retainPerPartition ?? 10_000;
    this.retry = opts.handlerRetry ?? DEFAULT_HANDLER_RETRY;
    this.maxAttempts = opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.metrics = busMetrics(opts.metrics);
  }

  async ensureTopics(topics: string[]): Promise<void> {
    for (const t of topics) this.log(t);
  }

  async publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    if (this.closed) throw new Error('bus is closed');
    const logs = this.log(topic);
    for (const m of messages) {
      logs[partitionOf(m.key, this.partitions)]!.messages.push({
        key: m.key,
        value: ownBytes(m.value),
        // A traceparent the caller carries (the outbox keeps the enqueuing request's) wins over the active one.
        headers: { ...injectTraceHeaders({}), ...m.headers },
      });
    }
    this.metrics.published.inc({ topic }, messages.length);
    this.wake();
  }

  subscribe(options: SubscribeOptions, handler: Handler): Promise<Subscription> {
    // One message per call, in its span `process {topic}`, a child of its publisher's (docs/runtime.md, "Telemetry").
    return this.join(options, 1, ([message]) => inConsumerSpan('lore_memory_bus', options.groupId, message!, () => handler(message!)));
  }

  subscribeBatch(options: SubscribeBatchOptions, handler: BatchHandler): Promise<Subscription> {
    return this.join(options, Math.max(1, Math.floor(options.maxBatch ?? 100)), (ms) => inBatchConsumerSpan('lore_memory_bus', options.groupId, ms, () => handler(ms)));
  }

  async browse(topic: string, options: BrowseOptions = {}): Promise<BusMessage[]> {
    const limit = options.limit ?? 100;
    const out: BusMessage[] = [];
    this.log(topic).forEach((log, partition) => {
      log.messages.forEach((stored, i) => {
        if (out.length < limit) out.push(toBusMessage(topic, partition, log.base + i, stored));
      });
    });
    return out;
  }

  private async join(options: SubscribeOptions, maxBatch: number, handler: BatchHandler): Promise<Subscription> {
    if (this.closed) throw new Error('bus is closed');
    const policy = poisonPolicy(options, { maxAttempts: this.maxAttempts, retry: this.retry });
    let group = this.groups.get(options.groupId);
    if (!group) {
      group = { members: [], offsets: new Map(), workers: new Set() };
      this.groups.set(options.groupId, group);
    }
    const member: Member = {
      groupId: options.groupId,
      policy,
      topics: new Set(options.topics),
      handler,
      maxBatch,
      stopped: false,
      inFlight: new Set(),
      rebuiltOnStart: options.rebuiltOnStart === true,
    };
    group.members.push(member);
    for (const topic of options.topics) {
      this.log(topic).forEach((log, p) => {
        const k = slot(topic, p);
        if (!group.offsets.has(k)) group.offsets.set(k, startsAtBeginning(topic, options.fromBeginning) ? log.base : log.end);
        if (!group.workers.has(k)) {
          group.workers.add(k);
          void this.work(group, topic, p);
        }
      });
    }
    this.wake();
    return {
      stop: async () => {
        if (member.stopped) return;
        member.stopped = true;
        group.members.splice(group.members.indexOf(member), 1);
        this.sleeper.abort();
        this.wake();
        // Like a Kafka consumer leaving: the handler in progress finishes; its offset is kept if it succeeded.
        await Promise.allSettled([...member.inFlight]);
      },
    };
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error('bus is closed');
  }

  /**
   * True when every message published so far has been handled by every group that reads its topic (each group's
   * committed offset is at the end of every partition; a message being handled is not committed yet). Messages of a
   * topic no group reads count as handled, and so do those of a group whose subscriber rebuilds its work at start
   * (`rebuiltOnStart`: webhook deliveries and retries, which wait on the bus for up to 30 s each and would otherwise
   * keep it from ever being idle while a receiver fails). What the outbox relay checkpoints by (`volatileBus`).
   */
  idle(): boolean {
    for (const group of this.groups.values()) {
      const topics = new Set(group.members.filter((m) => !m.rebuiltOnStart).flatMap((m) => [...m.topics]));
      for (const topic of topics) {
        const logs = this.log(topic);
        for (let p = 0; p < logs.length; p++) if ((group.offsets.get(slot(topic, p)) ?? logs[p]!.base) < logs[p]!.end) return false;
      }
    }
    return true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const inFlight: Promise<unknown>[] = [];
    for (const group of this.groups.values()) {
      for (const m of group.members) {
        m.stopped = true;
        inFlight.push(...m.inFlight);
      }
      group.members = [];
    }
    this.sleeper.abort();
    this.wake();
    await Promise.allSettled(inFlight);
  }

  /**
   * One worker per (group, topic, partition): the only place messages of that partition are delivered from. A failing
   * handler is retried in place by its owner (poison.ts); a member that leaves hands the message to the next owner.
   */
  private async work(group: Group, topic: string, p: number): Promise<void> {
    const k = slot(topic, p);
    const log = this.log(topic)[p]!;
    for (;;) {
      const owners = this.closed ? [] : group.members.filter((m) => m.topics.has(topic));
      if (owners.length === 0) {
        // Restarted by the next subscribe of this group to the topic.
        group.workers.delete(k);
        return;
      }
      const owner = owners[p % owners.length]!;
      const offset = Math.max(group.offsets.get(k) ?? log.base, log.base);
      if (offset >= log.end) {
        await new Promise<void>((resolve) => this.waiters.add(resolve));
        continue;
      }
      const count = Math.min(owner.maxBatch, log.end - offset);
      const messages = log.messages.slice(offset - log.base, offset - log.base + count).map((stored, i) => toBusMessage(topic, p, offset + i, stored));
      const run = handleChunk(messages, (ms) => owner.handler(ms), {
        policy: owner.policy,
        stopping: () => owner.stopped || this.closed,
        sleep: (ms) => this.sleeper.sleep(ms),
        onFailure: ({ err, attempt, transient, delayMs, final }) => {
          this.metrics.handlerFailures.inc({ topic });
          if (!final) {
            this.logger?.warn({ err, topic, partition: p, offset, group: owner.groupId, attempt, transient, delay_ms: delayMs }, 'event handler failed; retrying');
          }
        },
        deadLetter: (message, failure) => this.deadLetter(message, owner, failure),
        done: (last, handled) => {
          if (handled > 0) this.metrics.consumed.inc({ topic }, handled);
          group.offsets.set(k, Number(last.offset) + 1);
        },
      });
      owner.inFlight.add(run);
      try {
        await run;
        this.trim(topic, p);
      } catch {
        // The owner is leaving: the next owner gets the message again.
      } finally {
        owner.inFlight.delete(run);
      }
    }
  }

  private async deadLetter(message: BusMessage, owner: Member, failure: FailureRecord): Promise<void> {
    await this.publish(TOPICS.dead, [deadLetterOf(message, owner.groupId, failure)]);
    this.metrics.deadLetters.inc({ topic: message.topic, group: owner.groupId });
    this.logger?.error(
      { topic: message.topic, partition: message.partition, offset: message.offset, group: owner.groupId, attempts: failure.attempts, error: failure.error },
      'message dead-lettered after its handler kept failing; going on with the next one',
    );
    await afterDeadLetter(owner.policy, message, owner.groupId, failure, this.logger);
  }

  /** Drops what every active group has consumed, keeping the newest `retainPerPartition` messages. */
  private trim(topic: string, p: number): void {
    const log = this.log(topic)[p]!;
    let consumedByAll = log.end;
    for (const group of this.groups.values()) {
      if (!group.members.some((m) => m.topics.has(topic))) continue;
      consumedByAll = Math.min(consumedByAll, group.offsets.get(slot(topic, p)) ?? log.base);
    }
    const dropTo = Math.min(consumedByAll, log.end - this.retain);
    if (dropTo > log.base) {
      log.messages.splice(0, dropTo - log.base);
      log.base = dropTo;
    }
  }

  private log(topic: string): PartitionLog[] {
    let logs = this.topics.get(topic);
    if (!logs) {
      logs = Array.from({ length: this.partitions }, () => new PartitionLog());
      this.topics.set(topic, logs);
    }
    return logs;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const resolve of waiters) resolve();
  }
}

/**
 * The message's bytes in a buffer of their own. `Buffer.from` puts anything under 4 KB in a shared 8 KB pool slab,
 * so a message the log kept would keep the whole slab (and whatever else shares it) alive; this costs only its bytes.
 */
function ownBytes(value: Buffer | string): Buffer {
  if (typeof value === 'string') {
    const own = Buffer.allocUnsafeSlow(Buffer.byteLength(value, 'utf8'));
    own.write(value, 'utf8');
    return own;
  }
  const own = Buffer.allocUnsafeSlow(value.length);
  value.copy(own);
  return own;
}

function toBusMessage(topic: string, partition: number, offset: number, stored: StoredMessage): BusMessage {
  return { topic, partition, offset: String(offset), key: stored.key, value: stored.value, headers: { ...stored.headers } };
}

function slot(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/** FNV-1a: stable across processes and restarts, so a key keeps its partition. */
function partitionOf(key: string, partitions: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % partitions;
}
