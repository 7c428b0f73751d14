import { setMaxListeners } from 'node:events';
import { TOPICS } from '@lore/contracts';
import {
  PoisonError,
  SealedValueError,
  claimEvent,
  inSpan,
  injectTraceHeaders,
  markSpanFailed,
  traceHeadersOf,
  withExtractedContext,
  type BusMessage,
  type Db,
  type Logger,
  type OutgoingMessage,
  type SecretBox,
} from '@lore/runtime';
import type { WebhookHttpClient, AttemptResult } from './delivery-client';
import { EndpointQueue } from './endpoint-queue';
import { attemptKey, decodeDeliveryMessage, encodeDeliveryMessage, messageKey, type DeadLetterMessage, type DeliveryMessage } from './messages';
import type { WebhookMetrics } from './metrics';
import { afterFailure, RETRY_DELAYS_MS, topicForStep, topicForWait } from './schedule';
import { openSigningSecret } from './secret-storage';
import { signatureHeaders, type SigningSecrets } from './signing';
import {
  acquireLease,
  applyTransition,
  getDelivery,
  leaseRemainingMs,
  recordAttempt,
  releaseLease,
  releaseLeasesIf,
  renewLease,
  type DeliveryRow,
  type DeliveryTransition,
  type LeasedDelivery,
} from './store/deliveries';
import { recordDeadLetter, type SubscriptionRow } from './store/subscriptions';

/** The consumer name under which attempts are claimed in `runtime.processed_events`. */
export const ATTEMPT_CONSUMER = 'webhooks.attempt';

/** No message waits longer than the longest delay plus a margin, whatever its header says (clock skew, corruption). */
const MAX_HOLD_MS = RETRY_DELAYS_MS[RETRY_DELAYS_MS.length - 1]! + 5_000;
/** A lease outlives the attempt's deadline by this much, covering the recording transaction. */
const LEASE_GRACE_MS = 5_000;
/**
 * The lease of an attempt waiting in this process for its endpoint's slot. When the process ends first, the lease
 * runs out and the sweep (or, in embedded mode, the next start) announces the attempt again; a waiting attempt whose
 * lease ran out is still made here unless another worker took the lease meanwhile.
 */
export const QUEUED_LEASE_MS = 30_000;
/** An attempt started this soon after its lease was taken sends under that lease; a later start renews it first. */
const FRESH_LEASE_MS = 1_000;
/** Waits before an attempt handed back because its endpoint had too many waiting is looked at again, by hand-backs. */
const BUSY_WAITS_MS = [1_000, 2_000, 4_000, 8_000] as const;
/** Retries of an attempt's record (the receiver's answer is known: it is not sent again for a database hiccup). */
const RECORD_RETRIES_MS = [200, 1_000, 3_000] as const;
/** Rounds of trying the lease when it changes hands under the message before the bus retries the message. */
const MAX_LEASE_ROUNDS = 3;

/** Bounds of the attempts of one worker process (docs/webhooks.md, "Concurrency and ordering"). */
export interface AttemptLimits {
  /** `WEBHOOKS_CONCURRENCY_PER_ENDPOINT`: attempts in flight against one endpoint. */
  perEndpoint: number;
  /** Attempts in flight in all. */
  maxRunning: number;
  /** Attempts waiting for one endpoint's slot; beyond, they go back to the bus for a while. */
  maxWaitingPerEndpoint: number;
  /** Attempts waiting in all; beyond, the bus handlers wait (the process is saturated, not one endpoint). */
  maxWaiting: number;
}

export const DEFAULT_ATTEMPT_LIMITS: Omit<AttemptLimits, 'perEndpoint'> = { maxRunning: 128, maxWaitingPerEndpoint: 100, maxWaiting: 10_000 };

export interface AttemptProcessorDeps {
  db: Db;
  /** Resolves once the broker acknowledged (a PublishBatcher in the worker). */
  publish: (topic: string, messages: OutgoingMessage[]) => Promise<void>;
  client: WebhookHttpClient;
  limits: Pick<AttemptLimits, 'perEndpoint'> & Partial<AttemptLimits>;
  logger: Logger;
  metrics: WebhookMetrics;
  deliveryTimeoutMs: number;
  /** Consecutive dead letters that disable an endpoint; 0 never disables. */
  disableAfterDeadLetters: number;
  /** Opens the stored signing secrets (the gateway sealed them). */
  secrets: SecretBox;
}

export class AbortedError extends Error {
  constructor() {
    super('worker is stopping');
    this.name = 'AbortedError';
  }
}

/** An attempt handed over by a bus handler: leased, waiting for its slot or running. */
interface Attempt {
  m: DeliveryMessage;
  dueMs: number;
  /** The lease's end as the database has it: who holds the lease. */
  leaseToken: string;
  /** The delivery and subscription read with the lease, when it was taken for the attempt itself. */
  leased: LeasedDelivery | null;
  leasedAtMs: number;
  /** The message's trace headers: what the attempt's message carries when it is handed back to the bus. */
  trace: Record<string, string>;
  /**
   * The trace context of the hand-over (the bus handler's consumer span, else the message's): the attempt's span is
   * its child wherever and whenever the attempt starts, as when it ran inside the handler.
   */
  runTrace: Record<string, string>;
}

/**
 * Makes the attempt a delivery message names, at its due time. The bus handler waits until due, takes the delivery's
 * lease and hands the attempt to the process's queue of attempts (`EndpointQueue`), then returns: neither the wait
 * for the endpoint's slot nor the request holds the partition, so a hanging endpoint delays no one else's messages.
 * From then on the lease is what says the attempt is owed (a worker that ends leaves it to run out, and the sweep
 * announces the delivery again). When the attempt runs it sends, publishes what follows (the next retry), then
 * records the attempt and the delivery's next state in one transaction (a dead letter is published after it). A
 * message whose attempt is already recorded only re-publishes what follows, which covers a lost publish.
 */
export class AttemptProcessor {
  private readonly queue: EndpointQueue<Attempt>;
  /** Deliveries whose attempt this process holds (waiting or running): the sweep leaves their leases alone. */
  private readonly owned = new Map<string, number>();
  private readonly attemptLeaseMs: number;

  constructor(private readonly deps: AttemptProcessorDeps) {
    this.attemptLeaseMs = deps.deliveryTimeoutMs + LEASE_GRACE_MS;
    const limits = { ...DEFAULT_ATTEMPT_LIMITS, ...deps.limits };
    this.queue = new EndpointQueue<Attempt>(
      { perKey: limits.perEndpoint, maxRunning: limits.maxRunning, maxWaitingPerKey: limits.maxWaitingPerEndpoint, maxWaiting: limits.maxWaiting },
      (a) => this.run(a),
    );
  }

  async handle(message: BusMessage, signal: AbortSignal): Promise<void> {
    const m = decodeDeliveryMessage(message.value);
    // The bus dead-letters it to lore.dead at once, where an operator sees it (docs/runtime.md, "Poison messages").
    if (!m) throw new PoisonError('malformed delivery message');
    const dueMs = Date.parse(m.due_at);
    await holdUntil(Math.max(dueMs, m.not_before ? Date.parse(m.not_before) : 0), signal);

    const key = m.subscription_id;
    if (!this.queue.hasRoom(key)) {
      // The endpoint has as many attempts waiting here as it may: hand this one back to the bus for a while, no
      // attempt counted, rather than hold the partition or the process's memory for one slow endpoint.
      await this.defer(m, BUSY_WAITS_MS[Math.min(m.deferrals ?? 0, BUSY_WAITS_MS.length - 1)]!, 'endpoint_busy');
      return;
    }
    await this.queue.room(signal).catch(() => {
      throw new AbortedError();
    });
    const startsNow = this.queue.canStart(key);
    const leased = await this.lease(m, startsNow ? this.attemptLeaseMs : QUEUED_LEASE_MS);
    if (leased === 'handled') return;
    const { delivery, subscription } = leased;
    if (!subscription.enabled) {
      await this.deadLetter(m, delivery, 'endpoint_disabled');
      return;
    }
    // Open the secrets now: one this worker cannot open fails here, where the bus retries the message.
    if (!(await this.checkSecrets(m, delivery, subscription, 'throw'))) return;

    const attempt: Attempt = { m, dueMs, leaseToken: leased.leaseToken, leased: startsNow ? leased : null, leasedAtMs: Date.now(), trace: traceHeadersOf(message.headers), runTrace: handOverTrace(message) };
    this.own(m.delivery_id);
    if (this.queue.offer(key, attempt) === 'key_full') {
      // The endpoint's queue filled up while the lease was being taken: give the lease back and the attempt to the bus.
      this.disown(m.delivery_id);
      await this.deps.db.withTenant(m.tenant_id, (sql) => releaseLeasesIf(sql, m.tenant_id, [{ deliveryId: m.delivery_id, token: leased.leaseToken }]));
      await this.defer(m, BUSY_WAITS_MS[Math.min(m.deferrals ?? 0, BUSY_WAITS_MS.length - 1)]!, 'endpoint_busy');
    }
  }

  /** True when this process holds the attempt of `deliveryId` (waiting or running). */
  holds(deliveryId: string): boolean {
    return this.owned.has(deliveryId);
  }

  /** Resolves when no attempt is waiting or running (tests). */
  settled(): Promise<void> {
    return this.queue.settled();
  }

  /** Attempts waiting for a slot, and running (tests, metrics). */
  load(subscriptionId?: string): { waiting: number; running: number } {
    return { waiting: this.queue.waiting(subscriptionId), running: this.queue.running(subscriptionId) };
  }

  /**
   * A stopping worker: hands every waiting attempt back to the bus (its message again, as it came) and gives their
   * leases back, then waits for the running ones to be recorded. An attempt whose hand-back fails keeps its lease,
   * which runs out; the sweep (or the next start) announces it again.
   */
  async stop(): Promise<void> {
    const waiting = this.queue.takeWaiting();
    const byTopic = new Map<string, Attempt[]>();
    for (const a of waiting) byTopic.set(topicForStep(a.m.step), [...(byTopic.get(topicForStep(a.m.step)) ?? []), a]);
    for (const [topic, attempts] of byTopic) {
      try {
        await this.deps.publish(
          topic,
          attempts.map((a) => {
            const message = encodeDeliveryMessage(a.m);
            return { ...message, headers: { ...a.trace, ...message.headers } };
          }),
        );
        const byTenant = new Map<string, Array<{ deliveryId: string; token: string }>>();
        for (const a of attempts) byTenant.set(a.m.tenant_id, [...(byTenant.get(a.m.tenant_id) ?? []), { deliveryId: a.m.delivery_id, token: a.leaseToken }]);
        for (const [tenant, leases] of byTenant) await this.deps.db.withTenant(tenant, (sql) => releaseLeasesIf(sql, tenant, leases));
      } catch (err) {
        this.deps.logger.warn({ err, attempts: attempts.length }, 'waiting webhook attempts not handed back; they are announced again once their leases run out');
      }
    }
    for (const a of waiting) this.disown(a.m.delivery_id);
    await this.queue.settled();
  }

  private own(id: string): void {
    this.owned.set(id, (this.owned.get(id) ?? 0) + 1);
  }

  private disown(id: string): void {
    const n = (this.owned.get(id) ?? 1) - 1;
    if (n <= 0) this.owned.delete(id);
    else this.owned.set(id, n);
  }

  /** One attempt, once its endpoint has a slot: renews the lease if needed, sends, publishes what follows, records. */
  private async run(a: Attempt): Promise<void> {
    const { m } = a;
    const log = () => this.deps.logger.child({ delivery_id: m.delivery_id, subscription_id: m.subscription_id, event_id: m.event_id });
    try {
      await withExtractedContext(a.runTrace, async () => {
        let leased = a.leased && Date.now() - a.leasedAtMs < FRESH_LEASE_MS ? a.leased : null;
        if (!leased) {
          // The times of the attempt start now: its lease runs from here (and the subscription is read again: it may
          // have been disabled, changed or rotated while the attempt waited).
          leased = await this.deps.db.withTenant(m.tenant_id, (sql) => renewLease(sql, m.tenant_id, m.delivery_id, m.cycle, m.step, a.leaseToken, this.attemptLeaseMs));
          if (!leased) {
            log().info({ step: m.step, cycle: m.cycle }, 'waiting attempt no longer ours (lease taken over, delivery moved on or deleted); not sent');
            return;
          }
          if (!leased.subscription.enabled) {
            await this.deadLetter(m, leased.delivery, 'endpoint_disabled');
            return;
          }
          if (!(await this.checkSecrets(m, leased.delivery, leased.subscription, 'defer', leased.leaseToken))) return;
        }
        const { delivery, subscription } = leased;
        const startedAt = new Date();
        const secrets = this.signingSecrets(subscription, startedAt);
        this.deps.metrics.lateness.observe({ step: String(m.step) }, Math.max(0, startedAt.getTime() - a.dueMs) / 1000);
        const result = await this.tracedSend(m, delivery, subscription, secrets, startedAt);
        // The attempt ends when its response, error or timeout is known: the next due time counts from here.
        const finishedAt = new Date(Math.max(Date.now(), startedAt.getTime() + result.latencyMs));
        this.deps.metrics.attempts.inc({ outcome: result.outcome, step: String(m.step) });
        this.deps.metrics.attemptDuration.observe({ outcome: result.outcome }, result.latencyMs / 1000);
        await this.finish(m, delivery, startedAt, finishedAt, result);
      });
    } catch (err) {
      // An unexpected local failure (not the receiver's): the lease stays and runs out, then the sweep announces the
      // delivery again (docs/webhooks.md, "How an event reaches a receiver").
      log().error({ err, step: m.step, cycle: m.cycle }, 'delivery attempt failed; the delivery is announced again once its lease runs out');
    } finally {
      this.disown(m.delivery_id);
    }
  }

  /**
   * Opens the subscription's secrets as a check. A value that is not authentic dead-letters the delivery (false). A
   * key this worker lacks is configuration: nothing is sent, the lease goes back, and the message is retried by the
   * bus (`throw`, in a handler) or handed back to it (`defer`, for an attempt that waited), so the delivery resumes
   * once the worker has the key.
   */
  private async checkSecrets(m: DeliveryMessage, delivery: DeliveryRow, subscription: SubscriptionRow, onUnknownKey: 'throw' | 'defer', leaseToken?: string): Promise<boolean> {
    try {
      this.signingSecrets(subscription, new Date());
      return true;
    } catch (err) {
      if (!(err instanceof SealedValueError)) throw err;
      const log = this.deps.logger.child({ delivery_id: delivery.id, subscription_id: subscription.id });
      if (err.reason === 'unknown_key') {
        log.error({ reason: err.reason, message: err.message }, 'webhook secret sealed with a key this worker does not have (LORE_ENCRYPTION_KEYS)');
        await this.deps.db
          .withTenant(m.tenant_id, (sql) => (leaseToken ? releaseLeasesIf(sql, m.tenant_id, [{ deliveryId: m.delivery_id, token: leaseToken }]) : releaseLease(sql, m.tenant_id, m.delivery_id)))
          .catch(() => undefined);
        if (onUnknownKey === 'throw') throw err;
        await this.defer(m, BUSY_WAITS_MS[BUSY_WAITS_MS.length - 1]!, 'unknown_key');
        return false;
      }
      // The stored value was altered or moved from another row: never sign with it. The delivery is dead-lettered
      // without an attempt and can be replayed once the secret is rotated.
      log.error({ reason: err.reason }, 'stored webhook secret does not open; delivery dead-lettered');
      await this.deadLetter(m, delivery, 'secret_unreadable');
      return false;
    }
  }

  /**
   * Hands the attempt back to the bus, due again in `waitMs` at the earliest, without counting an attempt: on the
   * shortest retry topic whose delay is at least that long, so a topic's messages still come due in the order they
   * were published (a shorter wait than the topic's delay never delays a message behind it).
   */
  private async defer(m: DeliveryMessage, waitMs: number, reason: 'endpoint_busy' | 'leased' | 'unknown_key'): Promise<void> {
    // As a first attempt would wait: on the shortest retry topic whose delay covers the wait.
    const topic = topicForWait(0, waitMs);
    const wait = Math.min(waitMs, RETRY_DELAYS_MS[RETRY_DELAYS_MS.length - 1]!);
    const again: DeliveryMessage = { ...m, not_before: new Date(Date.now() + wait).toISOString(), deferrals: (m.deferrals ?? 0) + 1 };
    await this.deps.publish(topic, [encodeDeliveryMessage(again)]);
    this.deps.metrics.deferred.inc({ reason });
  }

  /** Takes the lease, or decides the message needs nothing more (handed back, or what follows it re-published). */
  private async lease(m: DeliveryMessage, leaseMs: number): Promise<'handled' | LeasedDelivery> {
    for (let round = 0; round < MAX_LEASE_ROUNDS; round++) {
      const state = await this.deps.db.withTenant(m.tenant_id, async (sql) => {
        const leased = await acquireLease(sql, m.tenant_id, m.delivery_id, m.cycle, m.step, leaseMs);
        if (leased) return { kind: 'leased' as const, leased };
        const current = await getDelivery(sql, m.tenant_id, m.delivery_id);
        const waitMs = current ? await leaseRemainingMs(sql, m.tenant_id, m.delivery_id) : 0;
        return { kind: 'not_leased' as const, current, waitMs };
      });
      if (state.kind === 'leased') return state.leased;
      const { current, waitMs } = state;
      if (!current) return 'handled'; // the subscription (and with it the delivery) was deleted
      const waiting = current.cycle === m.cycle && (current.status === 'pending' || current.status === 'retrying');
      if (waiting && current.nextStep <= m.step) {
        if (waitMs > 0) {
          // Another copy of this attempt is held (waiting or in flight), or the attempt before it is still being
          // recorded: look again when that lease ends, without holding the partition meanwhile.
          await this.defer(m, waitMs + 50, 'leased');
          return 'handled';
        }
        if (current.nextStep === m.step) continue; // the lease ended just now: take it
        // The attempt before this one ended without a record (its worker ended): it is announced again when its lease
        // has run out, and makes this one anew. This copy is not needed.
        return 'handled';
      }
      await this.republishFollowUp(m, current);
      return 'handled';
    }
    throw new Error(`lease of delivery ${m.delivery_id} changed hands ${MAX_LEASE_ROUNDS} times`);
  }

  /** The secrets that sign an attempt starting at `startedAt`: the current one, and the replaced one during its overlap. */
  private signingSecrets(subscription: SubscriptionRow, startedAt: Date): SigningSecrets {
    const open = (stored: string) => openSigningSecret(this.deps.secrets, subscription.tenantId, subscription.id, stored);
    const overlapActive =
      subscription.storedPreviousSecret !== null &&
      subscription.previousSecretExpiresAt !== null &&
      subscription.previousSecretExpiresAt.getTime() > startedAt.getTime();
    return { current: open(subscription.storedSecret), previous: overlapActive ? open(subscription.storedPreviousSecret!) : null };
  }

  /**
   * The attempt as span `webhook attempt` (in the trace of the event, carried by the delivery message): the HTTP
   * client span of the request is its child, and the receiver gets that trace in `traceparent`.
   */
  private tracedSend(m: DeliveryMessage, delivery: DeliveryRow, subscription: SubscriptionRow, secrets: SigningSecrets, startedAt: Date): Promise<AttemptResult> {
    const attributes = {
      'lore.tenant.id': m.tenant_id,
      'lore.webhook.delivery_id': delivery.id,
      'lore.webhook.subscription_id': subscription.id,
      'lore.webhook.event': delivery.event,
      'lore.webhook.event_id': delivery.eventId,
      'lore.webhook.attempt': delivery.attempts + 1,
      'lore.webhook.step': m.step,
    };
    return inSpan('webhook attempt', attributes, async (span) => {
      const result = await this.send(delivery, subscription, secrets, startedAt);
      span.setAttribute('lore.webhook.outcome', result.outcome);
      if (result.statusCode !== null) span.setAttribute('http.response.status_code', result.statusCode);
      if (result.outcome !== 'succeeded') markSpanFailed(span, result.error ?? result.outcome);
      return result;
    });
  }

  private send(delivery: DeliveryRow, subscription: SubscriptionRow, secrets: SigningSecrets, startedAt: Date): Promise<AttemptResult> {
    const headers = {
      ...injectTraceHeaders({}),
      ...signatureHeaders({
        secrets,
        messageId: delivery.eventId,
        timestampSeconds: Math.floor(startedAt.getTime() / 1000),
        body: delivery.body,
      }),
      'x-lore-event': delivery.event,
      'x-lore-delivery-id': delivery.id,
      'x-lore-attempt': String(delivery.attempts + 1),
    };
    return this.deps.client.send({ url: subscription.url, body: delivery.body, headers });
  }

  /**
   * What follows a sent attempt. The next retry's message is published first, then the attempt and the delivery's
   * next state are recorded: the bus message of this attempt is long committed, so a worker ending between the two
   * must leave something that leads on. Ended before the publish, the delivery still waits for this step under a
   * lease that runs out, and the sweep announces it again; ended after it, the retry's message finds the delivery
   * still at this step with no lease and drops itself, and the same sweep makes the attempt anew. A dead letter is
   * published after the record (it is a notice; the row is the record).
   */
  private async finish(m: DeliveryMessage, delivery: DeliveryRow, startedAt: Date, finishedAt: Date, result: AttemptResult): Promise<void> {
    let transition: DeliveryTransition;
    if (result.outcome === 'succeeded') {
      transition = { status: 'succeeded', at: finishedAt };
    } else {
      const move = afterFailure(m.step, finishedAt);
      transition = move.kind === 'retry' ? { status: 'retrying', nextStep: move.step, nextAttemptAt: move.dueAt } : { status: 'dead', at: finishedAt, reason: 'retries_exhausted' };
    }
    if (transition.status === 'retrying') await this.publishRetry(m, transition.nextStep, transition.nextAttemptAt);
    const attempt = delivery.attempts + 1;
    const record = () =>
      this.deps.db.withTenant(m.tenant_id, async (sql) => {
        // Two workers can only both get here if a lease expired mid-attempt; the claim lets exactly one record.
        const recorded = await recordAttempt(
          sql,
          m.tenant_id,
          { consumer: ATTEMPT_CONSUMER, key: attemptKey(m) },
          {
            deliveryId: delivery.id,
            subscriptionId: delivery.subscriptionId,
            eventId: delivery.eventId,
            attempt,
            cycle: m.cycle,
            step: m.step,
            scheduledFor: new Date(m.due_at),
            startedAt,
            latencyMs: result.latencyMs,
            statusCode: result.statusCode,
            outcome: result.outcome,
            error: result.error,
            responseSnippet: result.responseSnippet,
          },
          transition,
        );
        if (recorded !== 'recorded') return recorded;
        if (transition.status === 'dead' && this.deps.disableAfterDeadLetters > 0) {
          const disabled = await recordDeadLetter(sql, m.tenant_id, delivery.subscriptionId, this.deps.disableAfterDeadLetters);
          return disabled ? ('disabled' as const) : ('recorded' as const);
        }
        return 'recorded' as const;
      });
    const log = this.deps.logger.child({ delivery_id: delivery.id, subscription_id: delivery.subscriptionId, event_id: delivery.eventId });
    // The answer is known and the request is not to be sent again for a database hiccup: retry the record a little.
    let outcome: Awaited<ReturnType<typeof record>> | undefined;
    for (let i = 0; outcome === undefined; i++) {
      try {
        outcome = await record();
      } catch (err) {
        const wait = RECORD_RETRIES_MS[i];
        if (wait === undefined) throw err;
        log.warn({ err, step: m.step }, 'could not record the attempt; retrying');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    if (outcome === 'duplicate') {
      log.info({ step: m.step, cycle: m.cycle }, 'attempt already recorded by another worker');
      return;
    }
    if (outcome === 'gone') {
      // The subscription was deleted (its deliveries with it) while the attempt was in flight: nothing to record,
      // nothing follows, and no dead letter is counted.
      log.info({ step: m.step, cycle: m.cycle, outcome: result.outcome }, 'delivery deleted with its subscription during the attempt; nothing recorded');
      return;
    }
    log.debug({ step: m.step, attempt, outcome: result.outcome, status_code: result.statusCode, latency_ms: result.latencyMs }, 'attempt recorded');
    if (outcome === 'disabled') {
      this.deps.metrics.endpointsDisabled.inc();
      log.warn({ threshold: this.deps.disableAfterDeadLetters }, 'endpoint disabled after repeated dead letters');
    }
    if (transition.status === 'dead') {
      this.deps.metrics.deadLetters.inc({ reason: transition.reason });
      await this.publishDead(m, delivery.event, attempt, transition.reason, transition.at).catch((err: unknown) =>
        log.warn({ err }, 'dead-letter notice not published on lore.webhook.dead; the delivery is recorded as dead'),
      );
    }
  }

  /** A disabled endpoint gets no attempt: the delivery goes straight to the dead letters, replayable later. */
  private async deadLetter(m: DeliveryMessage, delivery: DeliveryRow, reason: string): Promise<void> {
    const at = new Date();
    const done = await this.deps.db.withTenant(m.tenant_id, async (sql) => {
      if (!(await claimEvent(sql, ATTEMPT_CONSUMER, attemptKey(m)))) return false;
      await applyTransition(sql, m.tenant_id, delivery.id, { status: 'dead', at, reason }, {
        attempts: delivery.attempts,
        statusCode: delivery.lastStatusCode,
        outcome: null,
      });
      return true;
    });
    if (!done) return;
    this.deps.metrics.deadLetters.inc({ reason });
    await this.publishDead(m, delivery.event, delivery.attempts, reason, at);
  }

  /** Re-publishes what follows an attempt already recorded (its first publish may have been lost in a crash). */
  private async republishFollowUp(m: DeliveryMessage, current: DeliveryRow): Promise<void> {
    if (current.cycle !== m.cycle) return;
    if (current.status === 'retrying' && current.nextStep === m.step + 1 && current.nextAttemptAt) {
      await this.publishRetry(m, current.nextStep, current.nextAttemptAt);
    } else if (current.status === 'dead' && current.nextStep === m.step && current.deadAt) {
      await this.publishDead(m, current.event, current.attempts, current.deadReason ?? 'retries_exhausted', current.deadAt);
    }
  }

  private async publishRetry(m: DeliveryMessage, step: number, dueAt: Date): Promise<void> {
    const { not_before: _notBefore, deferrals: _deferrals, ...rest } = m;
    const next: DeliveryMessage = { ...rest, step, due_at: dueAt.toISOString() };
    await this.deps.publish(topicForStep(step), [encodeDeliveryMessage(next)]);
  }

  private async publishDead(m: DeliveryMessage, event: string, attempts: number, reason: string, at: Date): Promise<void> {
    const dead: DeadLetterMessage = {
      v: 1,
      tenant_id: m.tenant_id,
      delivery_id: m.delivery_id,
      subscription_id: m.subscription_id,
      event_id: m.event_id,
      event,
      cycle: m.cycle,
      attempts,
      reason,
      dead_at: at.toISOString(),
    };
    await this.deps.publish(TOPICS.webhookDead, [
      { key: messageKey(m.tenant_id, m.delivery_id), value: JSON.stringify(dead), headers: { 'event-id': `${attemptKey(m)}:dead` } },
    ]);
  }
}

/**
 * The controller whose signal ends every hold of one worker. Each held message (and each wait for another worker's
 * lease) listens to that one signal until its timer fires, so more than ten at once is normal, not a leak: the
 * listener limit is lifted, or Node would print a MaxListenersExceededWarning whenever a slow or down receiver makes
 * more than ten retries wait together.
 */
export function holdController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/** Waits until `dueMs` (bounded by MAX_HOLD_MS); a stopping worker ends the wait by throwing, leaving the offset. */
export async function holdUntil(dueMs: number, signal: AbortSignal): Promise<void> {
  const waitMs = Number.isFinite(dueMs) ? Math.min(dueMs - Date.now(), MAX_HOLD_MS) : 0;
  if (waitMs > 0) await sleep(waitMs, signal);
  if (signal.aborted) throw new AbortedError();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new AbortedError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The trace context an attempt handed over now runs in: the active one (the bus handler's consumer span, itself in
 * the event's trace), or, with no span active, the one the message carries.
 */
function handOverTrace(message: BusMessage): Record<string, string> {
  const here = injectTraceHeaders({});
  return here.traceparent ? here : traceHeadersOf(message.headers);
}
