import { z } from 'zod';

/** ISO 8601 UTC with exactly three fractional digits (`isoMillis`). */
const instant = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

/**
 * Credit metering between the agents and the gateway (docs/gateway.md, "Credits"; docs/agents.md, "Credits").
 * The gateway owns a tenant's `credit_balance`; the agents price what their workflows consume and say so on
 * `lore.credits.usage`; the gateway says on `lore.credits.balance` what the balance became when it was set or used up.
 * Both are written through the transactional outbox and keyed by tenant id.
 */

/** What a workflow consumed: the units its budgets count (docs/agents.md, "Workflows", budgets). */
export const CreditUsageSchema = z.object({
  /** Model tokens, as the budgets charge them (a call's completion limit plus its prompt's length / 4). */
  model_tokens: z.number().int().min(0),
  /** Web search result pages and pages read (and the one knowledge retrieval of a search run). */
  fetches: z.number().int().min(0),
  /** Rows (entities) added to the workflow's list. */
  rows: z.number().int().min(0),
});
export type CreditUsage = z.infer<typeof CreditUsageSchema>;

/**
 * One charge (`lore.credits.usage`): written by the agents in the checkpoint transaction that recorded the usage,
 * so it exists exactly once per unit of usage; the gateway applies it once per `event_id`.
 */
export const CreditUsageEventSchema = z.object({
  event_id: z.string().min(1).max(200),
  type: z.literal('credits.usage'),
  tenant_id: z.string().min(1).max(128),
  /** The service that metered it (`agents`). */
  source: z.string().min(1).max(64),
  /** The caller's `serviceId` the workflow was started or continued with (spec 3: "credit tracking"), or null. */
  service_id: z.string().max(128).nullable(),
  /** The workflow that consumed it: its thread id and kind (`company_search`, `people_search`, `deep_research`). */
  workflow_id: z.string().min(1).max(128),
  workflow_kind: z.string().min(1).max(64),
  /** The workflow's charges are numbered 1, 2, 3 … */
  charge: z.number().int().min(1),
  /** What this charge costs; always at least 1 (usage that costs nothing yet waits for the next charge). */
  credits: z.number().int().min(1),
  /** The usage since the workflow's previous charge. */
  usage: CreditUsageSchema,
  occurred_at: instant,
});
export type CreditUsageEvent = z.infer<typeof CreditUsageEventSchema>;

/**
 * A tenant's balance (`lore.credits.balance`): written by the gateway in the transaction that set it (the admin API)
 * or that used it up (a charge taking it to zero or below). `version` grows with every change of the balance, so
 * a reader keeps the highest it has seen whatever order messages arrive in. `credit_balance` null: not metered.
 */
export const CreditBalanceEventSchema = z.object({
  event_id: z.string().min(1).max(200),
  type: z.literal('credits.balance'),
  tenant_id: z.string().min(1).max(128),
  credit_balance: z.number().int().nullable(),
  version: z.number().int().min(0),
  occurred_at: instant,
});
export type CreditBalanceEvent = z.infer<typeof CreditBalanceEventSchema>;

/** Whether a balance is used up: metered (not null) and at or below zero. */
export const creditsExhausted = (balance: number | null): boolean => balance !== null && balance <= 0;
