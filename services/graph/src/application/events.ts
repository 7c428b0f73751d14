import { EventEnvelopeSchema, isoMillis, TOPICS, type EventKind } from '@lore/contracts';
import { enqueueOutbox, type OutboxMessage, type Sql } from '@lore/runtime';
import { newId, type MemoryScope } from './context';

/**
 * A domain event as the outbox message that carries it: published to `lore.events`, keyed by tenant, in the
 * envelope every consumer (webhooks included) reads. `emitEvent` records one; a write of many documents records
 * its events with `enqueueOutboxBatch`, in one statement.
 */
export function eventMessage(kind: EventKind, scope: MemoryScope, payload: Record<string, unknown>): OutboxMessage {
  const envelope = EventEnvelopeSchema.parse({
    event_id: newId('evt'),
    event: kind,
    occurred_at: isoMillis(),
    scope: { tenant_id: scope.tenantId, workspace_id: scope.workspaceId, memory_id: scope.memoryId },
    payload,
  });
  return { topic: TOPICS.events, key: scope.tenantId, eventId: envelope.event_id, value: envelope };
}

/**
 * Records a domain event in the caller's transaction; the outbox relay publishes it to `lore.events`, keyed by
 * tenant, in the envelope every consumer (webhooks included) reads. Returns the event id.
 */
export async function emitEvent(sql: Sql, kind: EventKind, scope: MemoryScope, payload: Record<string, unknown>): Promise<string> {
  const message = eventMessage(kind, scope, payload);
  await enqueueOutbox(sql, message);
  return message.eventId;
}
