import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { TOPICS } from '@lore/contracts';
import {
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
  type Admin,
  type Consumer,
  type IHeaders,
  type KafkaMessage,
  type LogEntry,
  type Producer,
} from 'kafkajs';
import type { Logger } from 'pino';
import { componentLogger } from '../log/logger';
import type { Registry } from 'prom-client';
import type {
  BrowsableBus,
  BrowseOptions,
  BusMessage,
  EventBus,
  GroupMembership,
  GroupMembershipSource,
  OutgoingMessage,
  SubscribeBatchOptions,
  SubscribeOptions,
  Subscription,
} from '../ports/event-bus';
import { withTimeout } from '../lifecycle/lifecycle';
import { injectTraceHeaders } from '../telemetry/propagation';
import { inBatchConsumerSpan, inConsumerSpan } from '../telemetry/spans';
import { consumerLagGauge, type ConsumerLagGauge } from './lag-metrics';
import { busMetrics, type BusMetrics } from './metrics';
import { BrokerNames, startsAtBeginning } from './naming';
import { DEFAULT_MAX_ATTEMPTS, afterDeadLetter, deadLetterOf, handleChunk, poisonPolicy, type ChunkSteps, type FailureRecord, type PoisonPolicy } from './poison';
import { DEFAULT_HANDLER_RETRY, Sleeper, backoffMs, type HandlerRetry } from './retry';
import { DEFAULT_MAX_STARTS, PartitionStarts, type StartDecision } from './start-guard';
import type { ConsumerStartJournal } from './start-journal';

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /**
   * `LORE_KAFKA_PREFIX`: put in front of every topic and consumer group (`<prefix>.lore.events`), so installs
   * sharing a broker never see each other's messages. Empty (default): the names as they are.
   */
  prefix?: string;
  /** Default bound of counted failed attempts before a message is dead-lettered (per subscription: `maxAttempts`). */
  maxAttempts?: number;
  metrics?: Registry;
  /** Partitions for topics this bus creates; default: the broker's `num.partitions`. */
  partitions?: number;
  handlerRetry?: HandlerRetry;
  /** Partitions one subscription works on at once (order is per partition either way). Default 4. */
  partitionsConsumedConcurrently?: number;
  /** How long `subscribe` waits for the consumer to join its group before resolving anyway. Default 30 s. */
  joinTimeoutMs?: number;
  /** Consumer session: a member silent this long is evicted from its group. Default 30 s. */
  sessionTimeoutMs?: number;
  /** Heartbeat period, also while a handler runs. Default 3 s. */
  heartbeatIntervalMs?: number;
  /**
   * How long a subscription's consumer may stay out of its group (joining, restarting after a crash, crashed,
   * stopped, or rebalancing) before the bus replaces it with a new consumer of the same group. Default 90 s: the
   * broker's rebalance wait (60 s, the longest a legitimate join blocks) plus a session.
   */
  rejoinTimeoutMs?: number;
  /**
   * Where each subscription records the message it starts on per partition (`PostgresStartJournal` in a process
   * with a database). With it, a message whose handling kills the process (a crash, an out-of-memory kill, a hang
   * until SIGKILL) is dead-lettered after `maxStarts` starts on it instead of stopping its partition in a crash
   * loop (start-guard.ts). Without it, only failures a handler throws are bounded.
   */
  startJournal?: ConsumerStartJournal;
  /** Starts at one message, each ended without a graceful stop, before it is dead-lettered unhandled. Default 3, at least 2. */
  maxStarts?: number;
}

/**
 * Client retries: long enough to ride out a broker restart (a publish waits rather than fails), bounded so a dead
 * cluster surfaces as an error. A consumer that still crashes after them is restarted by kafkajs.
 */
const CLIENT_RETRY = { initialRetryTime: 300, maxRetryTime: 5_000, retries: 12 };

/**
 * The event bus on Kafka (kafkajs). `publish` resolves after every in-sync replica acknowledged (acks=-1, idempotent
 * producer, one request in flight so retries cannot reorder). A subscription awaits its handler per message, keeps
 * per-partition order, and lets kafkajs commit an offset only after the handler resolved; a handler that throws is
 * retried in place with capped exponential backoff, heartbeating meanwhile, so nothing behind it overtakes it, until
 * its subscription's bound: then the message goes to `lore.dead` and the partition moves on (poison.ts). Every topic
 * and group carries the install's prefix on the broker; callers see logical names only.
 */
export class KafkaBus implements EventBus, BrowsableBus, GroupMembershipSource {
  readonly kind = 'kafka' as const;
  private readonly kafka: Kafka;
  private readonly names: BrokerNames;
  private readonly maxAttempts: number;
  private readonly maxStarts: number;
  private deadTopic?: Promise<void>;
  private readonly logger: Logger;
  private readonly metrics: BusMetrics;
  /** `lore_bus_consumer_lag_messages` of the registry, reporting this bus's groups until it closes. */
  private readonly lag?: ConsumerLagGauge;
  private readonly retry: HandlerRetry;
  private producer?: Promise<Producer>;
  private admin?: Promise<Admin>;
  private readonly subscriptions = new Set<Subscription>();
  /** The group membership of each live subscription, from its consumer's events (readiness). */
  private readonly members = new Map<symbol, GroupMembership>();
  /** Every broker connection kafkajs opened, so `close` can end the ones it forgets (see `close`). */
  private readonly sockets = new Set<Socket>();
  private closed = false;

  constructor(private readonly opts: KafkaBusOptions) {
    this.logger = componentLogger(opts.logger, 'kafka-bus');
    this.metrics = busMetrics(opts.metrics);
    if (opts.metrics) {
      this.lag = consumerLagGauge(opts.metrics, { onError: (err, group) => this.logger.warn({ err, group }, 'could not read the consumer lag for the metrics') });
      this.lag.add(this);
    }
    this.retry = opts.handlerRetry ?? DEFAULT_HANDLER_RETRY;
    this.maxAttempts = opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.maxStarts = opts.maxStarts ?? DEFAULT_MAX_STARTS;
    if (!(this.maxStarts >= 2)) throw new Error(`maxStarts must be at least 2 (got ${this.maxStarts})`);
    this.names = new BrokerNames(opts.prefix ?? '');
    this.kafka = new Kafka({
      clientId: opts.clientId,
      brokers: opts.brokers,
      connectionTimeout: 3_000,
      requestTimeout: 30_000,
      retry: CLIENT_RETRY,
      logLevel: KafkaLogLevel.WARN,
      logCreator: () => (entry: LogEntry) => this.kafkaLog(entry),
      socketFactory: ({ host, port, onConnect }) => {
        const socket = connect({ host, port }, onConnect);
        socket.setKeepAlive(true, 60_000);
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
        return socket;
      },
    });
  }

  /**
   * Creates the topics that do not exist and resolves once every one of them is in the broker's metadata with a
   * leader for each partition, so a subscribe or publish right after it finds them. kafkajs waits for the leaders
   * only of topics its own call created: when another process created one a moment earlier (the deployments of a
   * fresh install start together and each ensures the topics it uses), `createTopics` resolves at once with
   * TOPIC_ALREADY_EXISTS, and the broker may not list the topic yet; a subscribe then failed with
   * UNKNOWN_TOPIC_OR_PARTITION and ended the process.
   */
  async ensureTopics(logical: string[]): Promise<void> {
    const topics = logical.map((t) => this.names.topic(t));
    const admin = await this.connectedAdmin();
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length === 0) return;
    // No waiting inside kafkajs: its wait for the leaders of topics it created gives up on the first
    // UNKNOWN_TOPIC_OR_PARTITION (a broker that has not yet learnt of a topic it just created), which ended a worker's
    // start; the poll below waits through that answer and for the leaders, whoever created the topics.
    await admin.createTopics({
      waitForLeaders: false,
      topics: missing.map((topic) => ({ topic, numPartitions: this.opts.partitions ?? -1, replicationFactor: -1 })),
    });
    await this.untilTopicsLed(missing);
  }

  /** Polls the topics' metadata (retriable answers: not there yet, no leader yet) with backoff, for about half a minute. */
  private async untilTopicsLed(topics: string[]): Promise<void> {
    const retry: HandlerRetry = { initialMs: 50, maxMs: 1_000 };
    for (let attempt = 1; ; attempt++) {
      let missing: string[];
      try {
        const { topics: found } = await (await this.connectedAdmin()).fetchTopicMetadata({ topics });
        const led = new Set(found.filter((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)).map((t) => t.name));
        missing = topics.filter((t) => !led.has(t));
        if (missing.length === 0) return;
      } catch (err) {
        if ((err as { retriable?: boolean }).retriable !== true || attempt >= 40) throw err;
        missing = topics;
      }
      if (attempt >= 40) throw new Error(`topics without a leader after creation: ${missing.join(', ')}`);
      this.logger.debug({ topics: missing, attempt }, 'topics not in the broker metadata yet; waiting');
      await new Promise((resolve) => setTimeout(resolve, backoffMs(retry, attempt)));
    }
  }

  async publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    if (this.closed) throw new Error('bus is closed');
    if (messages.length === 0) return;
    const producer = await this.connectedProducer();
    await producer.send({
      topic: this.names.topic(topic),
      acks: -1,
      messages: messages.map((m) => ({
        key: m.key,
        value: m.value,
        // A traceparent the caller carries (the outbox keeps the enqueuing request's) wins over the active one.
        headers: { ...injectTraceHeaders({}), ...m.headers },
      })),
    });
    this.metrics.published.inc({ topic }, messages.length);
  }

  /**
   * Connects the producer (its connection and idempotent producer id) and loads the topics' partition metadata: a
   * send of no messages asks kafkajs for the metadata and writes nothing. Without it the first publish of a process
   * paid 60–90 ms on loopback, the next ones 4–8 ms.
   */
  async preparePublish(topics: string[]): Promise<void> {
    if (this.closed) throw new Error('bus is closed');
    const producer = await this.connectedProducer();
    const topicMessages = [...new Set(topics)].map((topic) => ({ topic: this.names.topic(topic), messages: [] }));
    if (topicMessages.length > 0) await producer.sendBatch({ acks: -1, topicMessages });
  }

  subscribe(options: SubscribeOptions, handler: (message: BusMessage) => Promise<void>): Promise<Subscription> {
    return this.join(options, { kind: 'each', handler });
  }

  subscribeBatch(options: SubscribeBatchOptions, handler: (messages: BusMessage[]) => Promise<void>): Promise<Subscription> {
    return this.join(options, { kind: 'batch', handler, maxBatch: Math.max(1, Math.floor(options.maxBatch ?? 100)) });
  }

  private async join(
    options: SubscribeOptions,
    mode:
      | { kind: 'each'; handler: (message: BusMessage) => Promise<void> }
      | { kind: 'batch'; handler: (messages: BusMessage[]) => Promise<void>; maxBatch: number },
  ): Promise<Subscription> {
    if (this.closed) throw new Error('bus is closed');
    const policy = poisonPolicy(options, { maxAttempts: this.maxAttempts, retry: this.retry });
    const sleeper = new Sleeper();
    let stopping = false;
    const groupId = this.names.group(options.groupId);
    const earliest = options.topics.filter((t) => startsAtBeginning(t, options.fromBeginning));
    const latest = options.topics.filter((t) => !earliest.includes(t));
    if (latest.length > 0) await this.startNewGroupAtEnd(groupId, latest.map((t) => this.names.topic(t)));
    const heartbeatMs = this.opts.heartbeatIntervalMs ?? 3_000;
    // Membership as the current consumer reports it. kafkajs emits STOP and DISCONNECT before CRASH, then GROUP_JOIN
    // again once a restarted consumer is back in its group.
    const memberKey = Symbol(groupId);
    const membership: GroupMembership = { group: options.groupId, topics: [...options.topics], state: 'joining', partitions: 0, since: new Date().toISOString() };
    let outSince = Date.now();
    let resolveJoined: () => void = () => undefined;
    const joined = new Promise<void>((resolve) => (resolveJoined = resolve));
    const moveTo = (state: GroupMembership['state'], extra: Partial<GroupMembership> = {}) => {
      if (state === 'member') resolveJoined();
      // The watchdog below measures time out of the group from the last moment the consumer was a member.
      if (state === 'member') outSince = Infinity;
      else if (outSince === Infinity) outSince = Date.now();
      Object.assign(membership, { state, since: new Date().toISOString(), error: undefined }, extra);
    };
    // Registered before the first await, so readiness sees the subscription from the moment `subscribe` is called.
    this.members.set(memberKey, membership);
    // The last offset of the batch kafkajs is handing to `eachMessage`, per partition: how long a suspect partition
    // goes one message at a time at least. Emitted synchronously before the batch's first message.
    const fetchEnds = new Map<string, string>();
    /** The consumer this subscription runs on now: the watchdog below replaces one that stays out of its group. */
    let current: Consumer | undefined;
    const newConsumer = (): Consumer => {
      const consumer = this.kafka.consumer({
        groupId,
        allowAutoTopicCreation: false,
        sessionTimeout: this.opts.sessionTimeoutMs ?? 30_000,
        heartbeatInterval: heartbeatMs,
        maxWaitTimeInMs: 1_000,
        // kafkajs restarts a crashed consumer on a timer; one that crashed while being stopped (or after it was
        // replaced) must stay stopped.
        retry: { ...CLIENT_RETRY, restartOnFailure: async () => !stopping && consumer === current },
      });
      // A replaced consumer's late events say nothing of the subscription any more.
      const mine = () => consumer === current;
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        if (mine()) moveTo('member', { partitions: Object.values(e.payload.memberAssignment).reduce((n, partitions) => n + partitions.length, 0) });
      });
      consumer.on(consumer.events.REBALANCING, () => mine() && moveTo(membership.state === 'joining' ? 'joining' : 'rebalancing'));
      consumer.on(consumer.events.STOP, () => mine() && moveTo('stopped'));
      consumer.on(consumer.events.DISCONNECT, () => mine() && moveTo('stopped'));
      consumer.on(consumer.events.CRASH, (e) => {
        if (!mine()) return;
        this.logger.error({ err: e.payload.error, group: options.groupId, restart: e.payload.restart }, 'consumer crashed');
        moveTo(e.payload.restart ? 'restarting' : 'crashed', { error: e.payload.error.message });
      });
      if (starts) consumer.on(consumer.events.START_BATCH_PROCESS, (e) => void fetchEnds.set(`${e.payload.topic}:${e.payload.partition}`, e.payload.lastOffset));
      return consumer;
    };

    // Crash loops (start-guard.ts): each partition's first message after this process got it is recorded in the
    // journal; a message consumers kept stopping on is dead-lettered without calling the handler.
    const journal = this.opts.startJournal;
    const starts = journal
      ? new PartitionStarts({
          group: groupId,
          journal,
          maxStarts: this.maxStarts,
          onJournalError: (err, where) =>
            this.logger.warn(
              { err, group: options.groupId, topic: this.names.logicalTopic(where.topic), partition: where.partition, offset: where.offset },
              where.call === 'record' ? 'could not record the start in the start journal; going on without it' : 'could not clear the start journal',
            ),
          onUncleanStart: ({ topic, partition, offset, starts: count }) => {
            this.metrics.uncleanStarts.inc({ topic: this.names.logicalTopic(topic), group: options.groupId });
            this.logger.warn(
              { topic: this.names.logicalTopic(topic), partition, offset, group: options.groupId, starts: count, max_starts: this.maxStarts },
              'a consumer stopped before while handling this message (a crash, an out-of-memory kill or a hang); handling the partition one message at a time',
            );
          },
        })
      : undefined;
    /** Dead-letters a message consumers kept stopping on, without calling the handler. */
    const deadLetterStopped = (message: BusMessage, stops: number, heartbeat: () => Promise<void>) => {
      const now = new Date();
      const failure: FailureRecord = {
        error: `ConsumerStopped: the consumer stopped ${stops} times while handling this message (a crash, an out-of-memory kill or a hang); dead-lettered without calling the handler again`,
        attempts: stops,
        firstFailureAt: now,
        lastFailureAt: now,
      };
      return this.deadLetter(message, options.groupId, policy, failure, () => stopping, sleeper, heartbeat, 'message dead-lettered unhandled: consumers kept stopping while handling it; going on with the next one');
    };

    /**
     * The steps of one partition's messages (poison.ts): retried in place with backoff, then dead-lettered. kafkajs
     * heartbeats only between messages: a handler running past the session timeout (a slow webhook receiver, a large
     * extraction) would get the member evicted and its partitions handed to another member. So heartbeat on a timer
     * while the handler runs (a heartbeat refused during a rebalance is retried on the next tick) and after each
     * backoff (that one throws during a rebalance, handing the messages over uncommitted).
     */
    const steps = (topic: string, partition: number, heartbeat: () => Promise<void>, done: ChunkSteps['done']): ChunkSteps => ({
      policy,
      stopping: () => stopping,
      sleep: (ms) => sleeper.sleep(ms),
      between: heartbeat,
      onFailure: ({ err, attempt, transient, delayMs, final }) => {
        this.metrics.handlerFailures.inc({ topic });
        if (!final) {
          this.logger.warn({ err, topic, partition, group: options.groupId, attempt, transient, delay_ms: delayMs }, 'event handler failed; retrying');
        }
      },
      deadLetter: (message, failure) => this.deadLetter(message, options.groupId, policy, failure, () => stopping, sleeper, heartbeat),
      done: (last, handled) => {
        if (handled > 0) this.metrics.consumed.inc({ topic }, handled);
        done(last, handled);
      },
    });
    const withBeat = async (heartbeat: () => Promise<void>, work: () => Promise<void>): Promise<void> => {
      const beat = setInterval(() => void heartbeat().catch(() => undefined), heartbeatMs);
      try {
        await work();
      } finally {
        clearInterval(beat);
      }
    };

    /** Connects a consumer, subscribes it to the topics and starts its loop (joining the group happens after). */
    const runConsumer = async (consumer: Consumer): Promise<void> => {
      await consumer.connect();
      if (earliest.length > 0) await consumer.subscribe({ topics: earliest.map((t) => this.names.topic(t)), fromBeginning: true });
      if (latest.length > 0) await consumer.subscribe({ topics: latest.map((t) => this.names.topic(t)), fromBeginning: false });
      const partitionsConsumedConcurrently = this.opts.partitionsConsumedConcurrently ?? 4;
      if (mode.kind === 'each') {
        const handler = mode.handler;
        await consumer.run({
          autoCommit: true,
          partitionsConsumedConcurrently,
          eachMessage: async ({ topic: physical, partition, message, heartbeat }) => {
            const topic = this.names.logicalTopic(physical);
            const msg = toBusMessage(topic, partition, message);
            let decision = NORMAL_START;
            // kafkajs commits the offset once the batch is done; throwing (only while stopping) leaves it uncommitted.
            await withBeat(heartbeat, async () => {
              if (starts) decision = await starts.before(physical, partition, message.offset, fetchEnds.get(`${physical}:${partition}`));
              if (decision.deadLetter) return deadLetterStopped(msg, decision.deadLetter.stops, heartbeat);
              await handleChunk([msg], ([m]) => inConsumerSpan('kafka', options.groupId, m!, () => handler(m!)), steps(topic, partition, heartbeat, () => undefined));
            });
            // A suspect partition commits each message: a crash on the next one then restarts at that one.
            if (decision.oneAtATime) await consumer.commitOffsets([{ topic: physical, partition, offset: nextOffset(message.offset) }]);
            starts?.after(physical, partition, message.offset, 1);
          },
        });
      } else {
        const { handler, maxBatch } = mode;
        await consumer.run({
          autoCommit: true,
          // Offsets are resolved below, only after the handler resolved for them (or they were dead-lettered).
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently,
          eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale, commitOffsetsIfNecessary }) => {
            const { partition } = batch;
            const topic = this.names.logicalTopic(batch.topic);
            const fetchEnd = batch.lastOffset();
            for (let i = 0; i < batch.messages.length; ) {
              // A rebalance or a stop hands the rest of the fetched messages to the partition's next owner.
              if (!isRunning() || isStale() || stopping) return;
              let decision = NORMAL_START;
              let messages: BusMessage[] = [];
              await withBeat(heartbeat, async () => {
                if (starts) decision = await starts.before(batch.topic, partition, batch.messages[i]!.offset, fetchEnd);
                messages = batch.messages.slice(i, i + (decision.oneAtATime ? 1 : maxBatch)).map((m) => toBusMessage(topic, partition, m));
                if (!decision.deadLetter) return handleChunk(messages, (ms) => inBatchConsumerSpan('kafka', options.groupId, ms, () => handler(ms)), steps(topic, partition, heartbeat, (m) => resolveOffset(m.offset)));
                await deadLetterStopped(messages[0]!, decision.deadLetter.stops, heartbeat);
                resolveOffset(messages[0]!.offset);
              });
              const last = messages[messages.length - 1]!;
              // A suspect partition commits each message: a crash on the next one then restarts at that one.
              if (decision.oneAtATime) {
                await commitOffsetsIfNecessary({ topics: [{ topic: batch.topic, partitions: [{ partition, offset: nextOffset(last.offset) }] }] });
              }
              starts?.after(batch.topic, partition, last.offset, messages.length);
              i += messages.length;
            }
          },
        });
      }
    };

    current = newConsumer();
    try {
      await runConsumer(current);
    } catch (err) {
      // A subscription that never started is not one readiness waits for.
      this.members.delete(memberKey);
      throw err;
    }

    /**
     * The watchdog. kafkajs restarts a crashed consumer on a timer, but a restart can hang before the consumer
     * rejoins (seen after a broker restart, when the coordinator was still loading its groups: "Restarting the
     * consumer", then nothing), and a consumer that crashed on an error kafkajs deems final is never restarted. Either
     * way the subscription would stay out of its group, and its worker unready, until someone restarts the process.
     * So a consumer out of its group past `rejoinTimeoutMs` is abandoned (disconnected in the background, never
     * restarted) and a new one of the same group takes its place; its messages resume from the committed offsets.
     */
    const rejoinMs = this.opts.rejoinTimeoutMs ?? 90_000;
    let replacing: Promise<void> | undefined;
    const replace = async (): Promise<void> => {
      const old = current!;
      const fresh = newConsumer();
      this.logger.warn(
        { group: options.groupId, state: membership.state, error: membership.error, out_of_group_ms: Date.now() - outSince },
        'consumer has been out of its group too long; replacing it with a new consumer',
      );
      this.metrics.consumerReplacements.inc({ group: options.groupId });
      current = fresh;
      moveTo('joining');
      // The new consumer gets a whole bound of its own (and a broker still down is not asked in a tight loop).
      outSince = Date.now();
      // Bounded: a hung consumer may not even disconnect. Its handlers resolve into offsets nobody commits.
      void withTimeout(old.disconnect(), 10_000, 'disconnecting the replaced consumer').catch((err: unknown) => this.logger.warn({ err, group: options.groupId }, 'could not disconnect the replaced consumer'));
      try {
        await runConsumer(fresh);
      } catch (err) {
        // Kafka still unreachable, say: the next tick tries again once the bound passed anew.
        if (fresh === current) moveTo('crashed', { error: err instanceof Error ? err.message : String(err) });
        this.logger.error({ err, group: options.groupId }, 'the new consumer could not start');
      }
    };
    const watchdog = setInterval(
      () => {
        if (stopping || this.closed || replacing || membership.state === 'member' || Date.now() - outSince < rejoinMs) return;
        replacing = replace().finally(() => (replacing = undefined));
      },
      Math.max(50, Math.min(5_000, Math.floor(rejoinMs / 4))),
    );
    watchdog.unref();

    const timeoutMs = this.opts.joinTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const joinedInTime = await Promise.race([
      joined.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!joinedInTime) this.logger.warn({ group: options.groupId, timeout_ms: timeoutMs }, 'consumer has not joined its group yet');

    const subscription: Subscription = {
      stop: async () => {
        if (!this.subscriptions.delete(subscription)) return;
        this.members.delete(memberKey);
        stopping = true;
        clearInterval(watchdog);
        sleeper.abort();
        await replacing;
        // Waits for the handler in progress, then commits what was resolved.
        await current!.disconnect();
        // A graceful stop is no crash: the starts this process recorded must not count against their messages.
        await starts?.forgetAll();
      },
    };
    this.subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Publishes a dead letter, retrying until the broker has it (the message's offset is committed only then), and
   * counts and logs it, then runs the subscription's `onDeadLetter`. Creates the dead-letter topic the first time.
   */
  private async deadLetter(
    message: BusMessage,
    group: string,
    policy: PoisonPolicy,
    failure: FailureRecord,
    stopping: () => boolean,
    sleeper: Sleeper,
    heartbeat: () => Promise<void>,
    logLine = 'message dead-lettered after its handler kept failing; going on with the next one',
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.deadTopic ??= this.ensureTopics([TOPICS.dead]).catch((err: unknown) => {
          this.deadTopic = undefined;
          throw err;
        });
        await this.deadTopic;
        await this.publish(TOPICS.dead, [deadLetterOf(message, group, failure)]);
        break;
      } catch (err) {
        if (stopping()) throw err;
        const delayMs = backoffMs(this.retry, attempt);
        this.logger.warn({ err, topic: message.topic, offset: message.offset, group, delay_ms: delayMs }, 'could not publish a dead letter; retrying');
        await sleeper.sleep(delayMs);
        await heartbeat();
      }
    }
    this.metrics.deadLetters.inc({ topic: message.topic, group });
    this.logger.error(
      { topic: message.topic, partition: message.partition, offset: message.offset, key: message.key, group, attempts: failure.attempts, error: failure.error },
      logLine,
    );
    await afterDeadLetter(policy, message, group, failure, this.logger);
  }

  async browse(logical: string, options: BrowseOptions = {}): Promise<BusMessage[]> {
    const limit = options.limit ?? 100;
    const topic = this.names.topic(logical);
    const admin = await this.connectedAdmin();
    // Nothing was ever published there (the dead-letter topic is created with the first dead letter).
    if (!(await admin.listTopics()).includes(topic)) return [];
    // Up to `limit` messages of each partition, from its low watermark; then the oldest `limit` across them.
    const wanted = new Map<number, bigint>();
    for (const p of await admin.fetchTopicOffsets(topic)) {
      const end = BigInt(p.high) < BigInt(p.low) + BigInt(limit) ? BigInt(p.high) : BigInt(p.low) + BigInt(limit);
      if (end > BigInt(p.low)) wanted.set(p.partition, end);
    }
    if (wanted.size === 0) return [];
    const got: BusMessage[] = [];
    // A throw-away group that never commits: Kafka forgets it once it is empty.
    const consumer = this.kafka.consumer({ groupId: this.names.group(`lore.browse.${randomBytes(6).toString('hex')}`), allowAutoTopicCreation: false, maxWaitTimeInMs: 500 });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`browsing ${logical} timed out`)), 30_000);
        consumer
          .run({
            autoCommit: false,
            eachMessage: async ({ partition, message }) => {
              const end = wanted.get(partition);
              if (end === undefined || BigInt(message.offset) >= end) return;
              got.push(toBusMessage(logical, partition, message));
              if (BigInt(message.offset) + 1n >= end) wanted.delete(partition);
              if (wanted.size === 0) {
                clearTimeout(timer);
                resolve();
              }
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
    got.sort((a, b) => a.partition - b.partition || (BigInt(a.offset) < BigInt(b.offset) ? -1 : 1));
    return got.slice(0, limit);
  }

  memberships(): GroupMembership[] {
    return [...this.members.values()].map((m) => ({ ...m, topics: [...m.topics] }));
  }

  async groupLag(group: string, topics: string[]): Promise<Record<string, number>> {
    const admin = await this.connectedAdmin();
    const committed = await admin.fetchOffsets({ groupId: this.names.group(group), topics: topics.map((t) => this.names.topic(t)) });
    const lag: Record<string, number> = {};
    for (const { topic, partitions } of committed) {
      const at = new Map(partitions.map((p) => [p.partition, BigInt(p.offset)]));
      let behind = 0n;
      for (const p of await admin.fetchTopicOffsets(topic)) {
        const offset = at.get(p.partition) ?? -1n;
        const from = offset < 0n ? BigInt(p.low) : offset;
        if (BigInt(p.high) > from) behind += BigInt(p.high) - from;
      }
      lag[this.names.logicalTopic(topic)] = Number(behind);
    }
    return lag;
  }

  async ping(): Promise<void> {
    const admin = await this.connectedAdmin();
    await admin.describeCluster();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.lag?.remove(this);
    await Promise.allSettled([...this.subscriptions].map((s) => s.stop()));
    const [producer, admin] = await Promise.allSettled([this.producer, this.admin]);
    if (producer.status === 'fulfilled' && producer.value) await producer.value.disconnect();
    if (admin.status === 'fulfilled' && admin.value) await admin.value.disconnect();
    // After a broker restart kafkajs can keep a connection it no longer tracks (with a 100 ms request-timeout timer)
    // that would hold the process open. Failing its socket makes kafkajs tear the connection down itself.
    for (const socket of this.sockets) socket.destroy(new Error('event bus closed'));
  }

  /**
   * A group that has never committed starts at the end of each partition as of this call, so every message
   * published after `subscribe` resolved is delivered (kafkajs alone would pick "latest" only at its first fetch,
   * missing what was published in between).
   */
  /**
   * kafkajs' admin does not retry these offset calls on a retriable broker answer; right after a topic was created
   * (or a broker restarted) its partitions may still be electing a leader (NOT_LEADER_FOR_PARTITION,
   * LEADER_NOT_AVAILABLE). Retry with backoff, refreshing the topics' metadata between tries.
   */
  private async startNewGroupAtEnd(groupId: string, topics: string[]): Promise<void> {
    const retry: HandlerRetry = { initialMs: 100, maxMs: 2_000 };
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.trySetNewGroupAtEnd(groupId, topics);
      } catch (err) {
        const retriable = (err as { retriable?: boolean }).retriable === true;
        if (!retriable || attempt >= 10) throw err;
        this.logger.debug({ err, group: groupId, attempt }, 'starting offsets not set yet; retrying');
        await new Promise((resolve) => setTimeout(resolve, backoffMs(retry, attempt)));
        await (await this.connectedAdmin()).fetchTopicMetadata({ topics }).catch(() => undefined);
      }
    }
  }

  private async trySetNewGroupAtEnd(groupId: string, topics: string[]): Promise<void> {
    const admin = await this.connectedAdmin();
    // The partitions come from the broker's metadata, asked first. kafkajs lists a group's committed offsets only for
    // the partitions of its own cached metadata, which for a topic created moments ago (ensureTopics) can be none:
    // such a partition was never given its starting offset, and a member that joined later (after a crash) then
    // started it at the end, past a message the first member had read and not yet committed (a held webhook retry).
    // A partition the offsets answer lacks is as uncommitted as one at -1.
    const { topics: metas } = await admin.fetchTopicMetadata({ topics });
    const committed = await admin.fetchOffsets({ groupId, topics });
    for (const topic of topics) {
      // kafkajs asks each partition's leader for its end offset and silently drops a partition without one (the
      // answer then lacks the topic and fetchTopicOffsets fails with a TypeError): wait until every partition has a
      // leader, retriably.
      const meta = metas.find((m) => m.name === topic);
      if (!meta || meta.partitions.length === 0 || meta.partitions.some((p) => p.leader < 0)) {
        throw Object.assign(new Error(`topic ${topic} has a partition without a leader yet`), { retriable: true });
      }
      const offsets = new Map((committed.find((c) => c.topic === topic)?.partitions ?? []).map((p) => [p.partition, p.offset]));
      const partitions = meta.partitions.map((p) => ({ partition: p.partitionId, offset: offsets.get(p.partitionId) ?? '-1' }));
      const fresh = new Set(partitions.filter((p) => p.offset === '-1').map((p) => p.partition));
      if (fresh.size === 0) continue;
      // The leaders kafkajs asks are those of its own cached metadata, which may still lag the answer above (a
      // loaded broker, a leader moving): the same dropped partition then surfaces here as a TypeError, or as an
      // answer without some partition. Both are retriable, after the metadata refresh the retry loop does.
      const ends = await admin.fetchTopicOffsets(topic).catch((err: unknown) => {
        if (err instanceof TypeError) throw Object.assign(new Error(`the end offsets of ${topic} came back incomplete (${err.message})`), { retriable: true });
        throw err;
      });
      const answered = new Set(ends.map((e) => e.partition));
      if ([...fresh].some((p) => !answered.has(p))) {
        throw Object.assign(new Error(`the end offsets of ${topic} lack a partition`), { retriable: true });
      }
      const seek = ends.filter((e) => fresh.has(e.partition)).map((e) => ({ partition: e.partition, offset: e.high }));
      try {
        await admin.setOffsets({ groupId, topic, partitions: seek });
      } catch (err) {
        // The group is already running elsewhere: its members own the starting point.
        this.logger.debug({ err, group: groupId, topic, committed: partitions, ends }, 'did not set starting offsets');
      }
    }
  }

  private connectedProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const producer = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
        retry: CLIENT_RETRY,
      });
      await producer.connect();
      return producer;
    })().catch((err) => {
      this.producer = undefined;
      throw err;
    });
    return this.producer;
  }

  private connectedAdmin(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin({ retry: CLIENT_RETRY });
      await admin.connect();
      return admin;
    })().catch((err) => {
      this.admin = undefined;
      throw err;
    });
    return this.admin;
  }

  private kafkaLog({ level, namespace, log }: LogEntry): void {
    const { message, timestamp: _t, logger: _l, ...rest } = log as Record<string, unknown> & { message: string };
    const fields = { namespace, ...rest };
    // Connections failing because `close` ended them are expected.
    if (this.closed) this.logger.debug(fields, message);
    else if (level === KafkaLogLevel.ERROR) this.logger.error(fields, message);
    else if (level === KafkaLogLevel.WARN) this.logger.warn(fields, message);
    else this.logger.debug(fields, message);
  }
}

/** Handle normally: no start journal, or nothing suspect about the partition. */
const NORMAL_START: StartDecision = { oneAtATime: false };

/** The offset to commit once `offset` is done: the next one to read. */
function nextOffset(offset: string): string {
  return (BigInt(offset) + 1n).toString();
}

function toBusMessage(topic: string, partition: number, message: KafkaMessage): BusMessage {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString('utf8') ?? '',
    value: message.value ?? Buffer.alloc(0),
    headers: headersOf(message.headers),
  };
}

function headersOf(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (v === undefined) continue;
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) out[k] = first.toString();
  }
  return out;
}
