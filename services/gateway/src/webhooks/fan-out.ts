import { EventEnvelopeSchema, TOPICS, type EventEnvelope } from '@lore/contracts';
import { traceHeadersOf, type BusMessage, type Db, type Logger, type OutgoingMessage } from '@lore/runtime';
import { encodeDeliveryMessage, firstAttemptMessage } from './messages';
import type { WebhookMetrics } from './metrics';
import { fanOutEvents } from './store/deliveries';

/** The consumer name under which domain events are claimed in `runtime.processed_events`. */
export const FANOUT_CONSUMER = 'webhooks.fanout';

export interface FanOutDeps {
  db: Db;
  /** Resolves once the broker acknowledged (a PublishBatcher in the worker). */
  publish: (topic: string, messages: OutgoingMessage[]) => Promise<void>;
  logger: Logger;
  metrics: WebhookMetrics;
  /** Subscriptions one event is delivered to at most (per tenant); the subscription limit keeps it unreachable. */
  maxSubscriptionsPerEvent: number;
}

/**
 * The exact bytes a receiver gets: the envelope of spec 1 with its fields in a fixed order and nothing else (the
 * schema strips any field a producer added).
 */
export function serializeEnvelope(e: EventEnvelope): string {
  return JSON.stringify({
    event_id: e.event_id,
    event: e.event,
    occurred_at: e.occurred_at,
    scope: { tenant_id: e.scope.tenant_id, workspace_id: e.scope.workspace_id, memory_id: e.scope.memory_id },
    payload: e.payload,
  });
}

export function parseEnvelope(value: Buffer): EventEnvelope | null {
  try {
    const parsed = EventEnvelopeSchema.safeParse(JSON.parse(value.toString('utf8')));
    if (!parsed.success || parsed.data.scope.tenant_id === '') return null;
    return parsed.data;
  } catch {
    return null;
  }
}

/**
 * Turns domain events from `lore.events` into one delivery per matching subscription, inside each event's tenant.
 * The deliveries are created once (the claim makes a redelivered event skip matching, so a subscription created
 * later never receives older events); every delivery of the events still waiting for its first attempt is then
 * announced on `lore.webhook.deliveries`, which also repairs a crash between the commit and the publish.
 *
 * A batch (the messages of one partition that arrived together) costs one transaction of one statement per tenant
 * in it, and one publish: under load the batches grow, so the cost per event falls instead of a queue building.
 */
export class FanOut {
  constructor(private readonly deps: FanOutDeps) {}

  async handleBatch(messages: BusMessage[]): Promise<void> {
    // Valid events grouped by tenant, each group in the order of the partition.
    const byTenant = new Map<string, EventEnvelope[]>();
    // Each event's trace (the span that emitted it): its deliveries' attempts continue it (docs/runtime.md, "Telemetry").
    const traceOf = new Map<string, Record<string, string>>();
    for (const message of messages) {
      const envelope = parseEnvelope(message.value);
      if (!envelope) {
        this.deps.metrics.fanout.inc({ result: 'invalid' });
        this.deps.logger.warn({ topic: message.topic, offset: message.offset }, 'domain event does not match the envelope schema; not delivered');
        continue;
      }
      const group = byTenant.get(envelope.scope.tenant_id) ?? [];
      if (!group.some((e) => e.event_id === envelope.event_id)) {
        group.push(envelope);
        traceOf.set(envelope.event_id, traceHeadersOf(message.headers));
      }
      byTenant.set(envelope.scope.tenant_id, group);
    }
    const announce: OutgoingMessage[] = [];
    for (const [tenantId, envelopes] of byTenant) {
      const events = envelopes.map((e) => ({ eventId: e.event_id, event: e.event, workspaceId: e.scope.workspace_id, body: serializeEnvelope(e) }));
      const pending = await this.deps.db.withTenant(tenantId, (sql) =>
        fanOutEvents(sql, tenantId, FANOUT_CONSUMER, events, this.deps.maxSubscriptionsPerEvent),
      );
      const delivered = new Set(pending.map((d) => d.eventId));
      for (const e of envelopes) this.deps.metrics.fanout.inc({ result: delivered.has(e.event_id) ? 'delivered' : 'no_subscribers' });
      const dueAt = new Date().toISOString();
      for (const d of pending) {
        const m = encodeDeliveryMessage(firstAttemptMessage(tenantId, d, dueAt));
        announce.push({ ...m, headers: { ...traceOf.get(d.eventId), ...m.headers } });
      }
    }
    if (announce.length > 0) await this.deps.publish(TOPICS.webhookDeliveries, announce);
  }
}
