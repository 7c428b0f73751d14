import { setMaxListeners } from 'node:events';
import { TOPICS } from '@lore/contracts';
import { PoisonError, SealedValueError, claimEvent, inSpan, injectTraceHeaders, markSpanFailed, type BusMessage, type Db, type Logger, type OutgoingMessage, type SecretBox } from '@lore/runtime';
import type { WebhookHttpClient, AttemptResult } from './delivery-client';
import type { KeyedLimiter } from './keyed-limiter';
import { attemptKey, decodeDeliveryMessage, encodeDeliveryMessage, messageKey, type DeadLetterMessage, type DeliveryMessage } from './messages';
import type { WebhookMetrics } from './metrics';
import { afterFailure, RETRY_DELAYS_MS, topicForStep } from './schedule';
import { openSigningSecret } from './secret-storage';
import { signatureHeaders, type SigningSecrets } from './signing';
import {
  acquireLease,
  applyTransition,
  getDelivery,
  leaseRemainingMs,
  recordAttempt,
  releaseLease,
  type DeliveryRow,
  type DeliveryTransition,
} from './store/deliveries';
import { recordDeadLetter, type SubscriptionRow } from './store/subscriptions';

/** The consumer name under which attempts are claimed in `runtime.processed_events`. */
export const ATTEMPT_CONSUMER = 'webhooks.attempt';

/** No message waits longer than the longest delay plus a margin, whatever its header says (clock skew, corruption). */
const MAX_HOLD_MS = RETRY_DELAYS_MS[RETRY_DELAYS_MS.length - 1]! + 5_000;
/** A lease outlives the attempt's deadline by this much, covering the recording transaction. */
const LEASE_GRACE_MS = 5_000;
/** Rounds of waiting for another worker's lease before the message goes back to the bus. */
const MAX_LEASE_WAITS = 3;

export interface AttemptProcessorDeps {
  db: Db;
  /** Resolves once the broker acknowledged (a PublishBatcher in the worker). */
  publish: (topic: string, messages: OutgoingMessage[]) => Promise<void>;
  client: WebhookHttpClient;
  limiter: KeyedLimiter;
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

/**
 * Makes the attempt a delivery message names, at its due time: waits until due, takes the delivery's lease, sends,
 * records the attempt and the delivery's next state in one transaction, then publishes what follows (the next retry
 * or the dead letter). A message whose attempt is already recorded only re-publishes what follows, which covers a
 * crash between the commit and the publish.
 */
export class AttemptProcessor {
  constructor(private readonly deps: AttemptProcessorDeps) {}

  async handle(message: BusMessage, signal: AbortSignal): Promise<void> {
    const m = decodeDeliveryMessage(message.value);
    // The bus dead-letters it to lore.dead at once, where an operator sees it (docs/runtime.md, "Poison messages").
    if (!m) throw new PoisonError('malformed delivery message');
    const dueMs = Date.parse(m.due_at);
    await holdUntil(dueMs, signal);
    // The endpoint's slot comes first: the lease, the attempt's start (its record, its signature time, its lateness)
    // and so the end its next due time counts from are all taken once the attempt can go out, never before a wait.
    const sent = await this.deps.limiter.run(m.subscription_id, () => this.leaseAndSend(m, dueMs, signal));
    if (sent) await this.record(m, sent.delivery, sent.startedAt, sent.finishedAt, sent.result);
  }

  /** Takes the lease and sends (inside the endpoint's slot); null when nothing is to be sent. */
  private async leaseAndSend(
    m: DeliveryMessage,
    dueMs: number,
    signal: AbortSignal,
  ): Promise<{ delivery: DeliveryRow; startedAt: Date; finishedAt: Date; result: AttemptResult } | null> {
    const leased = await this.lease(m, signal);
    if (leased === 'handled') return null;
    const { delivery, subscription } = leased;
    if (!subscription.enabled) {
      await this.deadLetter(m, delivery, 'endpoint_disabled');
      return null;
    }

    const startedAt = new Date();
    let secrets: SigningSecrets;
    try {
      secrets = this.signingSecrets(subscription, startedAt);
    } catch (err) {
      if (!(err instanceof SealedValueError)) throw err;
      const log = this.deps.logger.child({ delivery_id: delivery.id, subscription_id: subscription.id });
      if (err.reason === 'unknown_key') {
        // Configuration, not data: the ring lacks the key that sealed this secret. Nothing is sent; the lease goes
        // back and the bus retries the message, so the delivery resumes once the worker has the key.
        log.error({ reason: err.reason, message: err.message }, 'webhook secret sealed with a key this worker does not have (LORE_ENCRYPTION_KEYS)');
        await this.deps.db.withTenant(m.tenant_id, (sql) => releaseLease(sql, m.tenant_id, m.delivery_id)).catch(() => undefined);
        throw err;
      }
      // The stored value was altered or moved from another row: never sign with it. The delivery is dead-lettered
      // without an attempt and can be replayed once the secret is rotated.
      log.error({ reason: err.reason }, 'stored webhook secret does not open; delivery dead-lettered');
      await this.deadLetter(m, delivery, 'secret_unreadable');
      return null;
    }
    this.deps.metrics.lateness.observe({ step: String(m.step) }, Math.max(0, startedAt.getTime() - dueMs) / 1000);
    let result: AttemptResult;
    try {
      result = await this.tracedSend(m, delivery, subscription, secrets, startedAt);
    } catch (err) {
      // An unexpected local failure (not the receiver's): give the lease back and let the bus retry the message.
      await this.deps.db.withTenant(m.tenant_id, (sql) => releaseLease(sql, m.tenant_id, m.delivery_id)).catch(() => undefined);
      throw err;
    }
    // The attempt ends when its response, error or timeout is known: the next due time counts from here.
    const finishedAt = new Date(Math.max(Date.now(), startedAt.getTime() + result.latencyMs));
    this.deps.metrics.attempts.inc({ outcome: result.outcome, step: String(m.step) });
    this.deps.metrics.attemptDuration.observe({ outcome: result.outcome }, result.latencyMs / 1000);
    return { delivery, startedAt, finishedAt, result };
  }

  /** Takes the lease, or decides the message needs nothing more than a re-publish of what follows it. */
  private async lease(
    m: DeliveryMessage,
    signal: AbortSignal,
  ): Promise<'handled' | { delivery: DeliveryRow; subscription: SubscriptionRow }> {
    const leaseMs = this.deps.deliveryTimeoutMs + LEASE_GRACE_MS;
    for (let round = 0; ; round++) {
      const state = await this.deps.db.withTenant(m.tenant_id, async (sql) => {
        const leased = await acquireLease(sql, m.tenant_id, m.delivery_id, m.cycle, m.step, leaseMs);
        if (leased) return { kind: 'leased' as const, ...leased };
        const current = await getDelivery(sql, m.tenant_id, m.delivery_id);
        const waitMs = current ? await leaseRemainingMs(sql, m.tenant_id, m.delivery_id) : 0;
        return { kind: 'not_leased' as const, current, waitMs };
      });
      if (state.kind === 'leased') return { delivery: state.delivery, subscription: state.subscription };
      const { current, waitMs } = state;
      if (!current) return 'handled'; // the subscription (and with it the delivery) was deleted
      const waitingForThis = current.cycle === m.cycle && current.nextStep === m.step && (current.status === 'pending' || current.status === 'retrying');
      if (waitingForThis && waitMs > 0) {
        // Another copy of this message is being attempted right now; wait for its outcome instead of sending twice.
        if (round >= MAX_LEASE_WAITS) throw new Error(`delivery ${m.delivery_id} stays leased by another worker`);
        await sleep(Math.min(waitMs + 50, leaseMs), signal);
        continue;
      }
      await this.republishFollowUp(m, current);
      return 'handled';
    }
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

  private async record(m: DeliveryMessage, delivery: DeliveryRow, startedAt: Date, finishedAt: Date, result: AttemptResult): Promise<void> {
    let transition: DeliveryTransition;
    if (result.outcome === 'succeeded') {
      transition = { status: 'succeeded', at: finishedAt };
    } else {
      const move = afterFailure(m.step, finishedAt);
      transition = move.kind === 'retry' ? { status: 'retrying', nextStep: move.step, nextAttemptAt: move.dueAt } : { status: 'dead', at: finishedAt, reason: 'retries_exhausted' };
    }
    const attempt = delivery.attempts + 1;
    const outcome = await this.deps.db.withTenant(m.tenant_id, async (sql) => {
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
    if (transition.status === 'retrying') {
      await this.publishRetry(m, transition.nextStep, transition.nextAttemptAt);
    } else if (transition.status === 'dead') {
      this.deps.metrics.deadLetters.inc({ reason: transition.reason });
      await this.publishDead(m, delivery.event, attempt, transition.reason, transition.at);
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
    const next: DeliveryMessage = { ...m, step, due_at: dueAt.toISOString() };
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
