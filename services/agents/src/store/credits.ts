import type { Sql } from '@lore/runtime';
import type { Usage } from '../domain/credits';

/** Credits (migration 0008): a workflow's usage and charges, and the tenant's balance as the gateway announced it. */

/** Writes a workflow's usage columns; the caller holds the workflow's row (the checkpoint's lock). */
export async function setWorkflowUsageIn(
  sql: Sql,
  tenantId: string,
  threadId: string,
  u: { usage_total: Usage; usage_billed: Usage; credits_used: number; usage_charges: number },
): Promise<void> {
  await sql.query(
    `UPDATE agents.workflows SET usage_total = $3::jsonb, usage_billed = $4::jsonb, credits_used = $5, usage_charges = $6
      WHERE tenant_id = $1 AND thread_id = $2`,
    [tenantId, threadId, JSON.stringify(u.usage_total), JSON.stringify(u.usage_billed), u.credits_used, u.usage_charges],
  );
}

export interface NewUsageCharge {
  charge: number;
  event_id: string;
  kind: string;
  service_id: string | null;
  usage: Usage;
  usage_total: Usage;
  credits: number;
}

export async function insertUsageChargeIn(sql: Sql, tenantId: string, threadId: string, c: NewUsageCharge): Promise<void> {
  await sql.query(
    `INSERT INTO agents.usage_charges (tenant_id, thread_id, charge, event_id, kind, service_id, usage, usage_total, credits)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9)`,
    [tenantId, threadId, c.charge, c.event_id, c.kind, c.service_id, JSON.stringify(c.usage), JSON.stringify(c.usage_total), c.credits],
  );
}

/**
 * The tenant's balance as last announced, or null when none was; with `since`, only an announcement kept after that
 * instant (database time) counts.
 */
export async function tenantCreditsIn(sql: Sql, tenantId: string, since: Date | null = null): Promise<{ credit_balance: number | null; version: number } | null> {
  const r = await sql.query<{ credit_balance: string | null; version: string }>(
    `SELECT credit_balance, version FROM agents.tenant_credits WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR updated_at > $2::timestamptz)`,
    [tenantId, since],
    { prepare: true },
  );
  const row = r.rows[0];
  return row ? { credit_balance: row.credit_balance === null ? null : Number(row.credit_balance), version: Number(row.version) } : null;
}

/** The events of a workflow that the gateway admitted a request for (a start, continue, enrichment, answer). */
export const ADMISSION_EVENTS = ['started', 'continued', 'enrichment_started', 'clarification_answered'] as const;

/** When the gateway last admitted a request that set the workflow running (database time), or null. */
export async function lastAdmissionIn(sql: Sql, tenantId: string, threadId: string): Promise<Date | null> {
  const r = await sql.query<{ at: Date | null }>(
    `SELECT max(created_at) AS at FROM agents.workflow_events WHERE tenant_id = $1 AND thread_id = $2 AND type = ANY($3::text[])`,
    [tenantId, threadId, [...ADMISSION_EVENTS]],
  );
  const at = r.rows[0]?.at ?? null;
  return at === null ? null : new Date(at);
}

/** Keeps an announced balance unless a newer version is already kept; true when it was kept. */
export async function keepTenantCreditsIn(sql: Sql, tenantId: string, balance: number | null, version: number): Promise<boolean> {
  const r = await sql.query(
    `INSERT INTO agents.tenant_credits (tenant_id, credit_balance, version) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id) DO UPDATE SET credit_balance = EXCLUDED.credit_balance, version = EXCLUDED.version, updated_at = now()
      WHERE agents.tenant_credits.version < EXCLUDED.version`,
    [tenantId, balance, version],
  );
  return (r.rowCount ?? 0) > 0;
}
