import type { Sql } from '@lore/runtime';

/** A charge the credits consumer applied (gateway.credit_charges, migration 0005). */
export interface NewCreditCharge {
  event_id: string;
  source: string;
  service_id: string | null;
  workflow_id: string;
  workflow_kind: string;
  charge: number;
  credits: number;
  usage: Record<string, number>;
  /** False when the tenant is not metered: recorded, nothing taken off. */
  applied: boolean;
  balance_after: number | null;
  occurred_at: string;
}

/**
 * Records a charge in the caller's transaction; false when a charge with this event id was recorded before (a
 * redelivery), in which case the caller changes nothing.
 */
export async function insertChargeIn(sql: Sql, tenantId: string, c: NewCreditCharge): Promise<boolean> {
  const r = await sql.query(
    `INSERT INTO gateway.credit_charges (tenant_id, event_id, source, service_id, workflow_id, workflow_kind, charge, credits, usage, applied, balance_after, occurred_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12::timestamptz)
     ON CONFLICT (tenant_id, event_id) DO NOTHING`,
    [tenantId, c.event_id, c.source, c.service_id, c.workflow_id, c.workflow_kind, c.charge, c.credits, JSON.stringify(c.usage), c.applied, c.balance_after, c.occurred_at],
  );
  return r.rowCount === 1;
}

export interface CreditChargeRow {
  event_id: string;
  service_id: string | null;
  workflow_id: string;
  credits: number;
  applied: boolean;
  balance_after: number | null;
}

/** The tenant's charges of one workflow, oldest first (tests and support look here). */
export async function chargesOfWorkflowIn(sql: Sql, tenantId: string, workflowId: string): Promise<CreditChargeRow[]> {
  const r = await sql.query<{ event_id: string; service_id: string | null; workflow_id: string; credits: string; applied: boolean; balance_after: string | null }>(
    `SELECT event_id, service_id, workflow_id, credits, applied, balance_after FROM gateway.credit_charges
      WHERE tenant_id = $1 AND workflow_id = $2 ORDER BY charge, created_at`,
    [tenantId, workflowId],
  );
  return r.rows.map((x) => ({ ...x, credits: Number(x.credits), balance_after: x.balance_after === null ? null : Number(x.balance_after) }));
}
