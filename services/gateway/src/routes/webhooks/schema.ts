import { EVENT_KINDS } from '@lore/contracts';
import { isoInstant, queryInteger } from '@lore/runtime';
import { z } from 'zod';
import { DEFAULT_OVERLAP_SECONDS, MAX_OVERLAP_SECONDS } from '../../webhooks/subscriptions';
import type { AttemptRow, DeliveryRow } from '../../webhooks/store/deliveries';
import type { SubscriptionRow } from '../../webhooks/store/subscriptions';

/**
 * Request and response shapes of `/api/v1/webhooks...`. Spec 1 fixes `url` (HTTPS) and `events` (its seven kinds)
 * and says the secret is returned once; everything else here is our design (docs/webhooks.md).
 */

const eventKinds = z.array(z.enum(EVENT_KINDS)).min(1).max(EVENT_KINDS.length * 2);
const webhookUrl = z.string().trim().min(1).max(2048);
const description = z.string().trim().max(500).nullable();

export const createWebhookBody = z
  .object({
    url: webhookUrl,
    events: eventKinds,
    description: description.optional(),
    enabled: z.boolean().optional(),
  })
  .strict();

export const updateWebhookBody = z
  .object({
    url: webhookUrl.optional(),
    events: eventKinds.optional(),
    description: description.optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'name at least one of url, events, description, enabled' });

export const rotateSecretBody = z
  .object({
    overlap_seconds: z.number().int().min(0).max(MAX_OVERLAP_SECONDS).default(DEFAULT_OVERLAP_SECONDS),
  })
  .strict();

const isoDate = isoInstant('must be an ISO timestamp with a time zone').transform((s) => new Date(s));

/**
 * Whether a range's bounds are in order. Only two bounds that are both good times are compared: a bound refused on its
 * own (not a time, or out of the years 1 to 9999) is told so at its field, not also "from must be before to".
 */
const inOrder = (from: unknown, to: unknown) => !(from instanceof Date && to instanceof Date) || from < to;

/**
 * Dead letters to replay: `delivery_ids` (1–100), or a time range (`from` and/or `to`), never both. One object, so a
 * refusal names the field it is about (a list of 101 ids is "too big" at `delivery_ids`, not an unknown key).
 */
export const replayBody = z
  .object({ delivery_ids: z.array(z.string().min(1).max(64)).min(1).max(100).optional(), from: isoDate.optional(), to: isoDate.optional() })
  .strict()
  .superRefine((b, ctx) => {
    const range = b.from !== undefined || b.to !== undefined;
    if (b.delivery_ids !== undefined && range) ctx.addIssue({ code: 'custom', path: ['delivery_ids'], message: 'give delivery_ids, or from and/or to, not both' });
    if (b.delivery_ids === undefined && !range) ctx.addIssue({ code: 'custom', path: [], message: 'give delivery_ids, or from and/or to' });
    if (!inOrder(b.from, b.to)) ctx.addIssue({ code: 'custom', path: ['from'], message: 'from must be before to' });
  });

const limit = (max: number, dflt: number) => queryInteger('limit', { min: 1, max, default: dflt });

/**
 * A page's `next_cursor` is the id of its last item (`wh_…`, `dlv_…`): anything else is no cursor Lore gave, and is
 * refused (400) rather than read as a place past the end, which would answer an empty last page.
 */
const cursor = (prefix: 'wh' | 'dlv') =>
  z.string().regex(new RegExp(`^${prefix}_[0-9a-f]{24}$`), `a next_cursor of an earlier page (${prefix}_ and 24 hex digits)`).optional();

export const listWebhooksQuery = z.object({ limit: limit(200, 50), cursor: cursor('wh') });

export const listDeliveriesQuery = z.object({
  limit: limit(200, 50),
  cursor: cursor('dlv'),
  status: z.enum(['pending', 'retrying', 'succeeded', 'dead']).optional(),
});

export const listDeadLettersQuery = z
  .object({ limit: limit(200, 50), cursor: cursor('dlv'), from: isoDate.optional(), to: isoDate.optional() })
  .refine((q) => inOrder(q.from, q.to), { message: 'from must be before to' });

export const WebhookViewSchema = z.object({
  webhook_id: z.string(),
  url: z.string(),
  events: z.array(z.enum(EVENT_KINDS)),
  description: z.string().nullable(),
  enabled: z.boolean(),
  /** `manual` or `dead_letters` while disabled, else null. */
  disabled_reason: z.enum(['manual', 'dead_letters']).nullable(),
  disabled_at: z.string().nullable(),
  /** Null for a tenant-wide subscription; set when a workspace-pinned key created it. */
  workspace_id: z.string().nullable(),
  /** While a rotation overlap lasts: until when the previous secret still signs. */
  previous_secret_expires_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WebhookView = z.input<typeof WebhookViewSchema>;

/** Creation and rotation answers: the view plus the signing secret, shown only in these two responses. */
export const WebhookWithSecretSchema = WebhookViewSchema.extend({ secret: z.string() });

export const DeliveryViewSchema = z.object({
  delivery_id: z.string(),
  event_id: z.string(),
  event: z.string(),
  status: z.enum(['pending', 'retrying', 'succeeded', 'dead']),
  attempt_count: z.number().int(),
  /** 1 for the original schedule, +1 per replay. */
  cycle: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_status_code: z.number().int().nullable(),
  last_outcome: z.string().nullable(),
  dead_reason: z.string().nullable(),
  created_at: z.string(),
  succeeded_at: z.string().nullable(),
  dead_at: z.string().nullable(),
});
export type DeliveryView = z.input<typeof DeliveryViewSchema>;

export const AttemptViewSchema = z.object({
  attempt: z.number().int(),
  cycle: z.number().int(),
  /** 0 for the first attempt of a cycle, 1..5 for the retries after 1, 2, 4, 8 and 30 s. */
  step: z.number().int(),
  scheduled_for: z.string(),
  started_at: z.string(),
  latency_ms: z.number().int(),
  status_code: z.number().int().nullable(),
  outcome: z.enum(['succeeded', 'http_error', 'redirect', 'timeout', 'network_error', 'refused']),
  error: z.string().nullable(),
  /** The first 1024 bytes of the response body at most. */
  response_snippet: z.string().nullable(),
});
export type AttemptView = z.input<typeof AttemptViewSchema>;

export const webhookListView = z.object({ webhooks: z.array(WebhookViewSchema), count: z.number().int(), next_cursor: z.string().nullable() });
export const deliveryListView = z.object({ deliveries: z.array(DeliveryViewSchema), count: z.number().int(), next_cursor: z.string().nullable() });
export const deliveryDetailView = DeliveryViewSchema.extend({ attempts: z.array(AttemptViewSchema) });
export const deadLetterListView = z.object({ dead_letters: z.array(DeliveryViewSchema), count: z.number().int(), next_cursor: z.string().nullable() });
export const replayView = z.object({ replayed: z.number().int(), delivery_ids: z.array(z.string()) });

export function presentWebhook(s: SubscriptionRow, now = new Date()): WebhookView {
  const overlap = s.storedPreviousSecret !== null && s.previousSecretExpiresAt !== null && s.previousSecretExpiresAt > now;
  return {
    webhook_id: s.id,
    url: s.url,
    events: s.events as WebhookView['events'],
    description: s.description,
    enabled: s.enabled,
    disabled_reason: s.disabledReason,
    disabled_at: s.disabledAt?.toISOString() ?? null,
    workspace_id: s.workspaceId,
    previous_secret_expires_at: overlap ? s.previousSecretExpiresAt!.toISOString() : null,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

export function presentDelivery(d: DeliveryRow): DeliveryView {
  return {
    delivery_id: d.id,
    event_id: d.eventId,
    event: d.event,
    status: d.status,
    attempt_count: d.attempts,
    cycle: d.cycle,
    next_attempt_at: d.status === 'pending' || d.status === 'retrying' ? (d.nextAttemptAt?.toISOString() ?? null) : null,
    last_status_code: d.lastStatusCode,
    last_outcome: d.lastOutcome,
    dead_reason: d.deadReason,
    created_at: d.createdAt.toISOString(),
    succeeded_at: d.succeededAt?.toISOString() ?? null,
    dead_at: d.deadAt?.toISOString() ?? null,
  };
}

export function presentAttempt(a: AttemptRow): AttemptView {
  return {
    attempt: a.attempt,
    cycle: a.cycle,
    step: a.step,
    scheduled_for: a.scheduledFor.toISOString(),
    started_at: a.startedAt.toISOString(),
    latency_ms: a.latencyMs,
    status_code: a.statusCode,
    outcome: a.outcome,
    error: a.error,
    response_snippet: a.responseSnippet,
  };
}

export function presentWebhookWithSecret(s: SubscriptionRow, secret: string): z.input<typeof WebhookWithSecretSchema> {
  return { ...presentWebhook(s), secret };
}
