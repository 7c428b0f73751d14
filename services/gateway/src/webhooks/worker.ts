import { TOPICS } from '@lore/contracts';
import { componentLogger, SecretBox, type BusMessage, type Db, type EncryptionKey, type EventBus, type Logger, type OutgoingMessage, type Subscription } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { AbortedError, AttemptProcessor, DEFAULT_ATTEMPT_LIMITS, holdController } from './attempt-processor';
import { FanOut } from './fan-out';
import { WebhookHttpClient } from './delivery-client';
import { PublishBatcher } from './publish-batcher';
import { webhookMetrics } from './metrics';
import { RETRY_DELAYS_MS, RETRY_TOPICS, topicForStep, topicForWait } from './schedule';
import { encodeDeliveryMessage, type DeliveryMessage } from './messages';
import { pruneSettledDeliveries, releaseLeasesIf, waitingDeliveriesWithLeases } from './store/deliveries';
import { TargetGuard, type HostLookup } from '@lore/outbound';

export interface WebhooksWorkerConfig {
  /** Whole-attempt deadline; a slower receiver has failed the attempt. */
  deliveryTimeoutMs: number;
  /** Attempts in flight against one endpoint, per worker process. */
  concurrencyPerEndpoint: number;
  /** Consecutive dead letters after which an endpoint is disabled automatically; 0 never disables. */
  disableAfterDeadLetters: number;
  /** Prefix of the consumer group ids (one group per topic). */
  groupIdPrefix: string;
  /**
   * Where a consumer group that has never committed starts: `earliest` (production: an event published before the
   * worker's first start is still delivered) or `latest` (tests with throw-away groups on a shared broker).
   */
  startFrom: 'earliest' | 'latest';
  /** Subscriptions one event fans out to at most. */
  maxSubscriptionsPerEvent: number;
  /** `LORE_WEBHOOKS_ALLOW_LOOPBACK`: accept loopback receivers. Refused by the config parsers in production. */
  allowLoopback: boolean;
  /** Test-only: an extra trusted certificate authority (PEM). Refused by the config parser in production. */
  extraCaPem?: string;
  /**
   * Announce again, on start, every delivery waiting for an attempt (`pending` or `retrying`, its lease not held):
   * for a bus that loses its messages when the process ends (embedded mode's MemoryBus). Kafka keeps them, so the
   * deployments leave it off. A second announcement of an attempt is harmless: the attempt's lease and the row's
   * step let exactly one be made.
   */
  recoverOnStart: boolean;
  /**
   * Days a settled delivery (succeeded or dead) and its attempts are kept after its last change; a periodic sweep
   * deletes older ones (`LORE_WEBHOOKS_RETENTION_DAYS`). 0 keeps them for ever. A delivery still waiting for an
   * attempt is never deleted.
   */
  retentionDays: number;
}

export const DEFAULT_WORKER_CONFIG: WebhooksWorkerConfig = {
  deliveryTimeoutMs: 5_000,
  concurrencyPerEndpoint: 4,
  disableAfterDeadLetters: 10,
  groupIdPrefix: 'lore.webhooks',
  startFrom: 'earliest',
  maxSubscriptionsPerEvent: 100,
  allowLoopback: false,
  recoverOnStart: false,
  retentionDays: 30,
};

/** How often the retention sweep runs (the outbox relay prunes at the same pace). */
const RETENTION_SWEEP_EVERY_MS = 60_000;
/** Deliveries deleted per statement, and statements per sweep: short locks, the rest waits for the next sweep. */
const RETENTION_BATCH = 500;
const RETENTION_MAX_BATCHES = 20;
const DAY_MS = 86_400_000;

/**
 * Deletes the settled deliveries (with their attempts) older than the retention, in bounded batches; returns how
 * many went. Several workers sweeping at once is harmless: each row is deleted once.
 */
export async function pruneDeliveryHistory(db: Db, retentionDays: number): Promise<number> {
  let pruned = 0;
  for (let batch = 0; batch < RETENTION_MAX_BATCHES; batch++) {
    const n = await pruneSettledDeliveries(db, retentionDays * DAY_MS, RETENTION_BATCH);
    pruned += n;
    if (n < RETENTION_BATCH) break;
  }
  return pruned;
}

/** Deliveries read per statement while announcing them again. */
const RECOVERY_PAGE = 500;

/** What start-up recovery announced. */
export interface Recovered {
  announced: number;
  /**
   * `id@lease` of each delivery announced while its lease was still held: due when that lease ends, so the sweep of
   * expired leases leaves it alone (it would announce it a second time).
   */
  leased: Set<string>;
}

/** The key `Recovered.leased` and the sweep agree on. */
export function leaseKey(deliveryId: string, leaseToken: string | null): string {
  return `${deliveryId}@${leaseToken ?? ''}`;
}

/**
 * Announces every delivery waiting for an attempt again (see `recoverOnStart`), each with its due time. A delivery
 * whose lease is still held (the ended process was making or queueing its attempt) is announced due when the lease
 * ends (`not_before`), on a topic whose delay covers that wait; an expired lease is given back, so the sweep of
 * expired leases does not announce the delivery again. `skip` names deliveries this process already holds.
 */
export async function announceWaitingDeliveries(
  db: Db,
  publish: (topic: string, messages: OutgoingMessage[]) => Promise<void>,
  skip: (deliveryId: string) => boolean = () => false,
): Promise<Recovered> {
  let after: string | null = null;
  const recovered: Recovered = { announced: 0, leased: new Set() };
  // All of them first: a retry topic's consumer holds the head of a partition until it is due, so each topic's
  // messages go out in due order (the rows come in id order), or one due later would hold back one already due.
  const byTopic = new Map<string, Array<{ dueMs: number; message: OutgoingMessage }>>();
  const expired = new Map<string, Array<{ deliveryId: string; token: string }>>();
  const nowMs = Date.now();
  for (;;) {
    const page = await waitingDeliveriesWithLeases(db, after, RECOVERY_PAGE, false);
    if (page.length === 0) break;
    after = page[page.length - 1]!.id;
    for (const d of page) {
      if (skip(d.id)) continue;
      const leaseEnd = d.leaseUntil?.getTime() ?? 0;
      const held = leaseEnd > nowMs;
      const message = messageOf(d);
      const dueMs = Math.max(held ? leaseEnd + 50 : 0, d.nextAttemptAt?.getTime() ?? nowMs);
      if (held) {
        message.not_before = new Date(leaseEnd + 50).toISOString();
        recovered.leased.add(leaseKey(d.id, d.leaseToken));
      } else if (d.leaseToken !== null) {
        expired.set(d.tenantId, [...(expired.get(d.tenantId) ?? []), { deliveryId: d.id, token: d.leaseToken }]);
      }
      const topic = topicForWait(d.nextStep, dueMs - nowMs);
      const list = byTopic.get(topic) ?? [];
      list.push({ dueMs, message: encodeDeliveryMessage(message) });
      byTopic.set(topic, list);
      recovered.announced += 1;
    }
  }
  for (const [topic, list] of byTopic) {
    const ordered = list.sort((a, b) => a.dueMs - b.dueMs).map((x) => x.message);
    for (let i = 0; i < ordered.length; i += RECOVERY_PAGE) await publish(topic, ordered.slice(i, i + RECOVERY_PAGE));
  }
  for (const [tenant, leases] of expired) await db.withTenant(tenant, (sql) => releaseLeasesIf(sql, tenant, leases));
  return recovered;
}

/** How often the worker announces again the deliveries whose lease ran out without a record. */
export const LEASE_SWEEP_EVERY_MS = 10_000;

/**
 * Announces again every delivery whose attempt lease ran out without a record (its worker ended while the attempt
 * waited or ran: the bus message was committed when the attempt was handed over), each on its step's topic with its
 * due time, then gives the lease back unless it changed hands meanwhile. `skip` names deliveries this process still
 * holds. Returns how many were announced. Several workers sweeping at once may announce one twice: harmless, the
 * lease and the row's step let exactly one attempt be made.
 */
export async function announceExpiredLeases(
  db: Db,
  publish: (topic: string, messages: OutgoingMessage[]) => Promise<void>,
  skip: (deliveryId: string, leaseToken: string | null) => boolean = () => false,
): Promise<number> {
  let after: string | null = null;
  let announced = 0;
  for (;;) {
    const page = await waitingDeliveriesWithLeases(db, after, RECOVERY_PAGE, true);
    if (page.length === 0) return announced;
    after = page[page.length - 1]!.id;
    const orphans = page.filter((d) => !skip(d.id, d.leaseToken));
    const byTopic = new Map<string, OutgoingMessage[]>();
    // In due order within each topic, as at start-up recovery.
    const byDue = [...orphans].sort((a, b) => (a.nextAttemptAt?.getTime() ?? 0) - (b.nextAttemptAt?.getTime() ?? 0));
    for (const d of byDue) {
      const topic = topicForStep(d.nextStep);
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), encodeDeliveryMessage(messageOf(d))]);
    }
    for (const [topic, messages] of byTopic) await publish(topic, messages);
    const byTenant = new Map<string, Array<{ deliveryId: string; token: string }>>();
    for (const d of orphans) byTenant.set(d.tenantId, [...(byTenant.get(d.tenantId) ?? []), { deliveryId: d.id, token: d.leaseToken! }]);
    for (const [tenant, leases] of byTenant) await db.withTenant(tenant, (sql) => releaseLeasesIf(sql, tenant, leases));
    announced += orphans.length;
  }
}

function messageOf(d: { tenantId: string; id: string; subscriptionId: string; eventId: string; cycle: number; nextStep: number; nextAttemptAt: Date | null }): DeliveryMessage {
  return {
    v: 1 as const, tenant_id: d.tenantId, delivery_id: d.id, subscription_id: d.subscriptionId, event_id: d.eventId, cycle: d.cycle, step: d.nextStep,
    due_at: (d.nextAttemptAt ?? new Date()).toISOString(),
  };
}

export interface WebhooksWorkerDeps {
  db: Db;
  bus: EventBus;
  logger: Logger;
  metrics?: Registry;
  config?: Partial<WebhooksWorkerConfig>;
  /**
   * The key ring the gateway seals signing secrets with (`LORE_ENCRYPTION_KEYS`): the same keys, or the worker
   * cannot sign. A secret, so it has no default.
   */
  encryptionKeys: readonly EncryptionKey[];
  /** Replaces DNS resolution (tests simulate hostile answers with it). */
  lookup?: HostLookup;
}

export interface WebhooksWorker {
  /** Creates the topics if needed and joins the consumer groups. */
  start(): Promise<void>;
  /** Ends waiting holds (their messages stay uncommitted for the next owner), leaves the groups, closes sockets. */
  stop(): Promise<void>;
  readonly running: boolean;
}

/** Domain events fanned out in one statement (per tenant) at most. */
const FANOUT_MAX_BATCH = 100;

/** Every topic the webhook pipeline reads or writes. */
export const WEBHOOK_TOPICS: string[] = [TOPICS.events, TOPICS.webhookDeliveries, ...RETRY_TOPICS, TOPICS.webhookDead];

/**
 * The webhooks worker: fan-out from `lore.events`, first attempts from `lore.webhook.deliveries`, one consumer group
 * per retry topic (each topic is a delay line whose messages all wait the same time, so holding the head of a
 * partition until it is due never delays a message due earlier), and dead letters to `lore.webhook.dead`.
 * Runs as the `webhooks` deployment (webhooks-main.ts) or inside the embedded process on a MemoryBus.
 */
export function createWebhooksWorker(deps: WebhooksWorkerDeps): WebhooksWorker {
  const config: WebhooksWorkerConfig = { ...DEFAULT_WORKER_CONFIG, ...stripUndefined(deps.config ?? {}) };
  const logger = componentLogger(deps.logger, 'webhooks-worker');
  const metrics = webhookMetrics(deps.metrics);
  const secrets = new SecretBox(deps.encryptionKeys);
  // Receivers are https only; plain http only to loopback, and only when loopback is allowed (checkWebhookUrl).
  const guard = new TargetGuard({ protocols: ['https:'], allowLoopback: config.allowLoopback, ...(deps.lookup ? { lookup: deps.lookup } : {}) });
  let client: WebhookHttpClient | undefined;
  let abort = holdController();
  let subscriptions: Subscription[] = [];
  let running = false;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> = Promise.resolve();
  let leaseTimer: NodeJS.Timeout | undefined;
  let leaseSweeping: Promise<void> = Promise.resolve();
  let processor: AttemptProcessor | undefined;
  /** Deliveries start-up recovery announced due at the end of a lease still held then (`Recovered.leased`). */
  let recoveredLeases = new Set<string>();

  /** One retention sweep, then the next one a minute later while the worker runs; a failure waits for the next. */
  const sweep = async () => {
    try {
      const pruned = await pruneDeliveryHistory(deps.db, config.retentionDays);
      if (pruned > 0) logger.debug({ deliveries: pruned, retention_days: config.retentionDays }, 'settled deliveries past the retention deleted');
    } catch (err) {
      logger.warn({ err }, 'webhook delivery retention sweep failed; retrying at the next one');
    }
  };
  const scheduleSweep = (delayMs: number) => {
    if (config.retentionDays <= 0) return;
    sweepTimer = setTimeout(() => {
      sweeping = sweep().finally(() => {
        if (running) scheduleSweep(RETENTION_SWEEP_EVERY_MS);
      });
    }, delayMs);
    sweepTimer.unref();
  };

  /** The sweep of expired leases, then the next one while the worker runs; a failure waits for the next. */
  const scheduleLeaseSweep = (delayMs: number, publish: (topic: string, messages: OutgoingMessage[]) => Promise<void>) => {
    leaseTimer = setTimeout(() => {
      leaseSweeping = announceExpiredLeases(deps.db, publish, (id, token) => (processor?.holds(id) ?? false) || recoveredLeases.has(leaseKey(id, token)))
        .then((n) => {
          if (n > 0) logger.info({ deliveries: n }, 'deliveries whose attempt lease ran out without a record announced again');
        })
        .catch((err: unknown) => logger.warn({ err }, 'sweep of expired webhook attempt leases failed; retrying at the next one'))
        .finally(() => {
          if (running) scheduleLeaseSweep(LEASE_SWEEP_EVERY_MS, publish);
        });
    }, delayMs);
    leaseTimer.unref();
  };

  const build = () => {
    client = new WebhookHttpClient({
      guard,
      timeoutMs: config.deliveryTimeoutMs,
      // Not one subscription's bound: several subscriptions (of several tenants) may point at one host, and a socket
      // cap per host shared by them would let one hanging path hold every other's requests. The attempt queue bounds
      // each subscription (concurrencyPerEndpoint) and the process (maxRunning), so this only mirrors the latter.
      maxSocketsPerOrigin: DEFAULT_ATTEMPT_LIMITS.maxRunning,
      ...(config.extraCaPem ? { extraCaPem: config.extraCaPem } : {}),
    });
    // Concurrent handlers share broker round trips; each still waits for its own acknowledgement.
    const batcher = new PublishBatcher(deps.bus);
    const publish = (topic: string, messages: OutgoingMessage[]) => batcher.publish(topic, messages);
    const fanOut = new FanOut({ db: deps.db, publish, logger, metrics, maxSubscriptionsPerEvent: config.maxSubscriptionsPerEvent });
    const attempts = new AttemptProcessor({
      db: deps.db,
      publish,
      client,
      limits: { perEndpoint: config.concurrencyPerEndpoint },
      logger,
      metrics,
      deliveryTimeoutMs: config.deliveryTimeoutMs,
      disableAfterDeadLetters: config.disableAfterDeadLetters,
      secrets,
    });
    return { fanOut, attempts, publish };
  };

  return {
    get running() {
      return running;
    },
    async start() {
      if (running) return;
      abort = holdController();
      const { fanOut, attempts, publish } = build();
      processor = attempts;
      const signal = abort.signal;
      await deps.bus.ensureTopics(WEBHOOK_TOPICS);
      const fromBeginning = config.startFrom === 'earliest';
      const attemptHandler = (message: BusMessage) =>
        attempts.handle(message, signal).catch((err: unknown) => {
          // A stopping worker leaves the message uncommitted; anything else is logged and retried by the bus.
          if (!(err instanceof AbortedError)) logger.error({ err, topic: message.topic, offset: message.offset }, 'delivery attempt failed');
          throw err;
        });
      const plans: Array<{ group: string; topic: string; handler: (m: BusMessage) => Promise<void> }> = [
        { group: 'deliveries', topic: TOPICS.webhookDeliveries, handler: attemptHandler },
        ...RETRY_TOPICS.map((topic, i) => ({ group: `retry.${RETRY_DELAYS_MS[i]! / 1000}s`, topic, handler: attemptHandler })),
      ];
      try {
        subscriptions = await Promise.all([
          // The fan-out takes what waits in a partition of lore.events at once: one statement per tenant in it.
          deps.bus.subscribeBatch({ groupId: `${config.groupIdPrefix}.fanout`, topics: [TOPICS.events], fromBeginning, maxBatch: FANOUT_MAX_BATCH }, (ms) =>
            fanOut.handleBatch(ms),
          ),
          // With recoverOnStart the deliveries' rows are announced again at every start, so a bus that ends with the
          // process need not be idle of these messages before the outbox relay checkpoints (held retries would keep
          // it from ever being idle while a receiver fails).
          ...plans.map((p) =>
            deps.bus.subscribe({ groupId: `${config.groupIdPrefix}.${p.group}`, topics: [p.topic], fromBeginning, rebuiltOnStart: config.recoverOnStart }, p.handler),
          ),
        ]);
      } catch (err) {
        abort.abort();
        client?.close();
        throw err;
      }
      running = true;
      logger.info({ groups: plans.length + 1, timeout_ms: config.deliveryTimeoutMs, allow_loopback: config.allowLoopback }, 'webhooks worker started');
      if (config.recoverOnStart) {
        const recovered = await announceWaitingDeliveries(deps.db, (topic, messages) => deps.bus.publish(topic, messages), (id) => attempts.holds(id));
        recoveredLeases = recovered.leased;
        if (recovered.announced > 0) {
          logger.info({ deliveries: recovered.announced, leased: recovered.leased.size }, 'deliveries waiting since the last stop announced again');
        }
      }
      scheduleSweep(0);
      scheduleLeaseSweep(0, publish);
    },
    async stop() {
      if (!running) return;
      running = false;
      clearTimeout(sweepTimer);
      clearTimeout(leaseTimer);
      // Leaving the groups first marks each subscription as stopping, so the holds ended by the abort hand their
      // messages back instead of being retried in place.
      const leaving = subscriptions.map((s) => s.stop());
      abort.abort();
      await Promise.allSettled([...leaving, sweeping, leaseSweeping]);
      subscriptions = [];
      // Attempts waiting for their endpoint go back to the bus; those running are finished and recorded.
      await processor?.stop();
      processor = undefined;
      client?.close();
      logger.info('webhooks worker stopped');
    },
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
