import { randomUUID } from 'node:crypto';
import { creditsExhausted, isoMillis, TOPICS, type CreditUsageEvent } from '@lore/contracts';
import { enqueueOutbox, type Db, type Sql } from '@lore/runtime';
import { addUsage, creditsDue, isNoUsage, readUsage, usageSince, type CreditPrices, type Usage } from '../domain/credits';
import { insertUsageChargeIn, keepTenantCreditsIn, lastAdmissionIn, setWorkflowUsageIn, tenantCreditsIn } from '../store/credits';
import type { WorkflowRow } from '../store/workflows';

/**
 * Credits (docs/agents.md, "Credits"): what a workflow consumed is recorded at its checkpoints and charged to the
 * tenant's balance, which the gateway owns, through `lore.credits.usage`; the gateway's announcements of the balance
 * (`lore.credits.balance`) tell running workflows when it is used up.
 */

/** The label of the budget a used-up balance spends (the run ends like any spent budget). */
export const CREDITS_BUDGET = "credits (the tenant's credit balance is used up)";

/**
 * Records `delta` (what the run consumed since its last checkpoint) on the workflow, inside the checkpoint's
 * transaction (the caller holds the workflow's row under lock and has checked its claim), and, when the price of
 * the workflow's totals exceeds what it was charged, writes the charge and its `lore.credits.usage` message. Both
 * commit with the work they price, or neither does: a worker killed before the commit leaves the usage unrecorded
 * and its work undone (the next run does it, and records it, once). Answers whether the tenant's credits are used
 * up, as announced after `admittedAt` (`creditsAtRunStart`).
 */
export async function meterUsage(
  sql: Sql,
  prices: CreditPrices,
  tenantId: string,
  w: WorkflowRow,
  delta: Usage,
  serviceId: string | null,
  admittedAt: Date | null,
): Promise<{ exhausted: boolean; charged: number }> {
  let charged = 0;
  if (!isNoUsage(delta)) {
    const total = addUsage(readUsage(w.usage_total), delta);
    const before = Number(w.credits_used);
    const due = creditsDue(total, before, prices);
    if (due > 0) {
      const charge = w.usage_charges + 1;
      const usage = usageSince(total, readUsage(w.usage_billed));
      const event: CreditUsageEvent = {
        event_id: `cu_${randomUUID()}`,
        type: 'credits.usage',
        tenant_id: tenantId,
        source: 'agents',
        service_id: serviceId,
        workflow_id: w.thread_id,
        workflow_kind: w.kind,
        charge,
        credits: due,
        usage,
        occurred_at: isoMillis(),
      };
      await insertUsageChargeIn(sql, tenantId, w.thread_id, { charge, event_id: event.event_id, kind: w.kind, service_id: serviceId, usage, usage_total: total, credits: due });
      await enqueueOutbox(sql, { topic: TOPICS.creditsUsage, key: tenantId, eventId: event.event_id, value: event });
      await setWorkflowUsageIn(sql, tenantId, w.thread_id, { usage_total: total, usage_billed: total, credits_used: before + due, usage_charges: charge });
      charged = due;
    } else {
      await setWorkflowUsageIn(sql, tenantId, w.thread_id, { usage_total: total, usage_billed: readUsage(w.usage_billed), credits_used: before, usage_charges: w.usage_charges });
    }
  }
  return { exhausted: await creditsUsedUpIn(sql, tenantId, admittedAt), charged };
}

/**
 * Whether the tenant's credits are used up, as the gateway announced after `since` (nothing announced: not used
 * up). An announcement older than the request that set the workflow running is not believed: the gateway admitted
 * that request with a positive balance, so a top-up was made since, whose own announcement may still be on its way.
 * Should the gateway have admitted it on a stale cache instead, the run's next charge is announced again and counts.
 */
export async function creditsUsedUpIn(sql: Sql, tenantId: string, since: Date | null): Promise<boolean> {
  const kept = await tenantCreditsIn(sql, tenantId, since);
  return kept !== null && creditsExhausted(kept.credit_balance);
}

/** At a run's start: when the gateway last admitted a request for the workflow, and whether credits are used up since. */
export async function creditsAtRunStart(db: Db, tenantId: string, threadId: string): Promise<{ admittedAt: Date | null; exhausted: boolean }> {
  return db.withTenant(tenantId, async (sql) => {
    const admittedAt = await lastAdmissionIn(sql, tenantId, threadId);
    return { admittedAt, exhausted: await creditsUsedUpIn(sql, tenantId, admittedAt) };
  });
}

/** Keeps a balance the gateway announced (the newest version wins); true when it was newer than what was kept. */
export async function keepAnnouncedBalance(db: Db, tenantId: string, balance: number | null, version: number): Promise<boolean> {
  return db.withTenant(tenantId, (sql) => keepTenantCreditsIn(sql, tenantId, balance, version));
}
