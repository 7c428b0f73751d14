import { z } from 'zod';
import { LAST_STEP } from './schedule';

/**
 * Messages of the webhook topics. A delivery message names one attempt to make: which delivery, which replay cycle,
 * which step of the schedule, and when it is due. The body and the secrets stay in PostgreSQL; the message only
 * points at them, so a message can never sign stale content or leak a secret.
 */
export const DeliveryMessageSchema = z.object({
  v: z.literal(1),
  tenant_id: z.string().min(1),
  delivery_id: z.string().min(1),
  subscription_id: z.string().min(1),
  event_id: z.string().min(1),
  cycle: z.number().int().min(1),
  step: z.number().int().min(0).max(LAST_STEP),
  due_at: z.iso.datetime(),
  /**
   * Set when a worker handed the attempt back without making it (its endpoint had too many attempts waiting, or
   * another copy held the lease): not before then. `due_at` stays the schedule's time, which the attempt records.
   * A worker of an earlier release ignores both fields and attempts at once.
   */
  not_before: z.iso.datetime().optional(),
  /** How many times the attempt was handed back so far (the wait grows with it). */
  deferrals: z.number().int().min(0).optional(),
});
export type DeliveryMessage = z.infer<typeof DeliveryMessageSchema>;

/** Published on `lore.webhook.dead` when a delivery is dead-lettered (the row in PostgreSQL is the record). */
export const DeadLetterMessageSchema = z.object({
  v: z.literal(1),
  tenant_id: z.string(),
  delivery_id: z.string(),
  subscription_id: z.string(),
  event_id: z.string(),
  event: z.string(),
  cycle: z.number().int(),
  attempts: z.number().int(),
  reason: z.string(),
  dead_at: z.string(),
});
export type DeadLetterMessage = z.infer<typeof DeadLetterMessageSchema>;

/** Header with the due time in epoch milliseconds, readable without parsing the value. */
export const DUE_AT_HEADER = 'lore-due-at';
export const TENANT_HEADER = 'lore-tenant-id';
/** The runtime's de-duplication header (`event-id`), here unique per attempt: delivery, cycle and step. */
export const EVENT_ID_HEADER = 'event-id';

export function attemptKey(m: { delivery_id: string; cycle: number; step: number }): string {
  return `${m.delivery_id}:${m.cycle}:${m.step}`;
}

/** Message keys carry the tenant (architecture §2) and spread one endpoint's deliveries over partitions. */
export function messageKey(tenantId: string, deliveryId: string): string {
  return `${tenantId}/${deliveryId}`;
}

/** The message of a delivery's first attempt (step 0) in a cycle: a new delivery's, or a replayed dead letter's. */
export function firstAttemptMessage(
  tenantId: string,
  d: { id: string; subscriptionId: string; eventId: string; cycle: number },
  dueAt: string,
): DeliveryMessage {
  return { v: 1, tenant_id: tenantId, delivery_id: d.id, subscription_id: d.subscriptionId, event_id: d.eventId, cycle: d.cycle, step: 0, due_at: dueAt };
}

export function encodeDeliveryMessage(m: DeliveryMessage): { key: string; value: string; headers: Record<string, string> } {
  return {
    key: messageKey(m.tenant_id, m.delivery_id),
    value: JSON.stringify(m),
    headers: { [DUE_AT_HEADER]: String(Date.parse(m.due_at)), [TENANT_HEADER]: m.tenant_id, [EVENT_ID_HEADER]: attemptKey(m) },
  };
}

export function decodeDeliveryMessage(value: Buffer): DeliveryMessage | null {
  try {
    const parsed = DeliveryMessageSchema.safeParse(JSON.parse(value.toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
