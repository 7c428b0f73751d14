import { EventEnvelopeSchema, TOPICS, type EventEnvelope } from '@lore/contracts';
import { claimEvent, type BusMessage, type Db, type Logger, type OutgoingMessage } from '@lore/runtime';
import { encodeDeliveryMessage } from './messages';
import type { WebhookMetrics } from './metrics';
import { fanOutEvent } from './store/deliveries';

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
 * Turns one domain event from `lore.events` into one delivery per matching subscription, inside the event's tenant.
 * The deliveries are created once (the claim makes a redelivered event skip matching, so a subscription created
 * later never receives older events); every delivery of the event still waiting for its first attempt is then
 * announced on `lore.webhook.deliveries`, which also repairs a crash between the commit and the publish.
 */
export class FanOut {
  constructor(private readonly deps: FanOutDeps) {}

  async handle(message: BusMessage): Promise<void> {
    const envelope = parseEnvelope(message.value);
    if (!envelope) {
      this.deps.metrics.fanout.inc({ result: 'invalid' });
      this.deps.logger.warn({ topic: message.topic, offset: message.offset }, 'domain event does not match the envelope schema; not delivered');
      return;
    }
    const tenantId = envelope.scope.tenant_id;
    const limit = this.deps.maxSubscriptionsPerEvent;
    const event = { eventId: envelope.event_id, event: envelope.event, workspaceId: envelope.scope.workspace_id, body: serializeEnvelope(envelope) };
    const pending = await this.deps.db.withTenant(tenantId, async (sql) => {
      const first = await claimEvent(sql, FANOUT_CONSUMER, envelope.event_id);
      return fanOutEvent(sql, tenantId, event, first, limit);
    });
    this.deps.metrics.fanout.inc({ result: pending.length > 0 ? 'delivered' : 'no_subscribers' });
    if (pending.length === 0) return;
    const dueAt = new Date().toISOString();
    await this.deps.publish(
      TOPICS.webhookDeliveries,
      pending.map((d) =>
        encodeDeliveryMessage({
          v: 1,
          tenant_id: tenantId,
          delivery_id: d.id,
          subscription_id: d.subscriptionId,
          event_id: envelope.event_id,
          cycle: d.cycle,
          step: 0,
          due_at: dueAt,
        }),
      ),
    );
  }
}
