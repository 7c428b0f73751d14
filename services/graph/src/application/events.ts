import { EventEnvelopeSchema, isoMillis, TOPICS, type EventKind } from '@lore/contracts';
import { enqueueOutbox, type Sql } from '@lore/runtime';
import { newId, type MemoryScope } from './context';

/**
 * Records a domain event in the caller's transaction; the outbox relay publishes it to `lore.events`, keyed by
 * tenant, in the envelope every consumer (webhooks included) reads. Returns the event id.
 */
export async function emitEvent(sql: Sql, kind: EventKind, scope: MemoryScope, payload: Record<string, unknown>): Promise<string> {
  const envelope = EventEnvelopeSchema.parse({
    event_id: newId('evt'),
    event: kind,
    occurred_at: isoMillis(),
    scope: { tenant_id: scope.tenantId, workspace_id: scope.workspaceId, memory_id: scope.memoryId },
    payload,
  });
  await enqueueOutbox(sql, { topic: TOPICS.events, key: scope.tenantId, eventId: envelope.event_id, value: envelope });
  return envelope.event_id;
}
