import { TOPICS, creditsExhausted, isoMillis, type CreditBalanceEvent, type CreditUsageEvent } from '@lore/contracts';
import { enqueueOutbox, type Db, type Sql } from '@lore/runtime';
import { newId } from '../domain/credentials';
import { insertChargeIn } from '../store/credit-charges';
import { debitCreditsIn, lockTenantIn } from '../store/tenants';

/**
 * Credits (docs/gateway.md, "Credits"). The gateway owns a tenant's `credit_balance`: the billing system sets it
 * through the admin API (billing.ts), the metering services' charges take credits off it (here), and the metered
 * routes refuse a tenant whose balance is at or below zero with 402 INSUFFICIENT_CREDITS (auth/authenticate.ts).
 */

/**
 * Says what a tenant's balance became on `lore.credits.balance`, in the caller's transaction (the outbox): the
 * message exists if and only if the change committed. Keyed by tenant, carrying the balance's version.
 */
export async function announceBalance(sql: Sql, tenantId: string, balance: number | null, version: number): Promise<void> {
  const message: CreditBalanceEvent = { event_id: newId('cbe'), type: 'credits.balance', tenant_id: tenantId, credit_balance: balance, version, occurred_at: isoMillis() };
  await enqueueOutbox(sql, { topic: TOPICS.creditsBalance, key: tenantId, eventId: message.event_id, value: message });
}

/**
 * `charged`: taken off the balance; `not_metered`: the tenant's balance is null, the charge is recorded and nothing
 * is taken off; `duplicate`: this event was applied before; `unknown_tenant`: no such tenant (deleted since).
 */
export type ChargeOutcome = 'charged' | 'not_metered' | 'duplicate' | 'unknown_tenant';

/**
 * Applies one charge, once: under the tenant's row lock, the charge's row (the processed-events record, keyed by
 * event id) and the debit are written in one transaction, so a redelivered charge finds its row and changes nothing,
 * and two charges of one tenant never read the same balance. A charge that leaves the balance at or below zero is
 * announced, so running workflows end (docs/agents.md, "Credits").
 */
export async function applyCharge(db: Db, event: CreditUsageEvent): Promise<{ outcome: ChargeOutcome; balance: number | null }> {
  return db.withTenant(event.tenant_id, async (sql) => {
    const tenant = await lockTenantIn(sql, event.tenant_id);
    if (!tenant) return { outcome: 'unknown_tenant' as const, balance: null };
    const before = tenant.credit_balance;
    const recorded = await insertChargeIn(sql, event.tenant_id, {
      event_id: event.event_id,
      source: event.source,
      service_id: event.service_id,
      workflow_id: event.workflow_id,
      workflow_kind: event.workflow_kind,
      charge: event.charge,
      credits: event.credits,
      usage: event.usage,
      applied: before !== null,
      balance_after: before === null ? null : before - event.credits,
      occurred_at: event.occurred_at,
    });
    if (!recorded) return { outcome: 'duplicate' as const, balance: before };
    if (before === null) return { outcome: 'not_metered' as const, balance: null };
    const after = await debitCreditsIn(sql, event.tenant_id, event.credits);
    if (!after) return { outcome: 'not_metered' as const, balance: null };
    if (creditsExhausted(after.credit_balance)) await announceBalance(sql, event.tenant_id, after.credit_balance, after.credit_version);
    return { outcome: 'charged' as const, balance: after.credit_balance };
  });
}
