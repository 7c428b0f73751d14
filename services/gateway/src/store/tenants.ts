import type { Db, Sql } from '@lore/runtime';
import { isoRequired, numOrNull } from './rows';

export interface Tenant {
  tenant_id: string;
  name: string;
  plan: string;
  credit_balance: number | null;
  /** Grows with every change of credit_balance (migration 0005): the order of the balance events. */
  credit_version: number;
  default_workspace_id: string | null;
  active_workspace_id: string | null;
  created_at: string;
}

function toTenant(r: Record<string, unknown>): Tenant {
  return {
    tenant_id: String(r.tenant_id),
    name: String(r.name),
    plan: String(r.plan),
    credit_balance: numOrNull(r.credit_balance),
    credit_version: Number(r.credit_version ?? 0),
    default_workspace_id: (r.default_workspace_id as string | null) ?? null,
    active_workspace_id: (r.active_workspace_id as string | null) ?? null,
    created_at: isoRequired(r.created_at),
  };
}

const COLS = 'tenant_id, name, plan, credit_balance, credit_version, default_workspace_id, active_workspace_id, created_at';

/** Inserts the tenant unless it exists; `created` tells which. Runs inside the caller's tenant transaction. */
export async function insertTenant(sql: Sql, tenantId: string, input: { name: string; plan: string }): Promise<{ tenant: Tenant; created: boolean }> {
  const ins = await sql.query(
    `INSERT INTO gateway.tenants (tenant_id, name, plan) VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING RETURNING ${COLS}`,
    [tenantId, input.name, input.plan],
  );
  if (ins.rows[0]) return { tenant: toTenant(ins.rows[0]), created: true };
  const existing = await sql.query(`SELECT ${COLS} FROM gateway.tenants WHERE tenant_id = $1`, [tenantId]);
  return { tenant: toTenant(existing.rows[0]!), created: false };
}

export async function setWorkspacePointers(sql: Sql, tenantId: string, pointers: { default?: string; active?: string }): Promise<void> {
  await sql.query(
    `UPDATE gateway.tenants SET default_workspace_id = COALESCE($2, default_workspace_id),
            active_workspace_id = COALESCE($3, active_workspace_id), updated_at = now() WHERE tenant_id = $1`,
    [tenantId, pointers.default ?? null, pointers.active ?? null],
  );
}

export async function getTenantIn(sql: Sql, tenantId: string): Promise<Tenant | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.tenants WHERE tenant_id = $1`, [tenantId]);
  return r.rows[0] ? toTenant(r.rows[0]) : null;
}

/**
 * Reads the tenant and locks its row until the caller's transaction ends: creates that a plan limits (keys,
 * projects, webhook subscriptions) take it before counting, so two of them cannot both see room for one more. NO KEY UPDATE does not
 * block the key-share locks that inserts referencing the tenant take.
 */
export async function lockTenantIn(sql: Sql, tenantId: string): Promise<Tenant | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.tenants WHERE tenant_id = $1 FOR NO KEY UPDATE`, [tenantId]);
  return r.rows[0] ? toTenant(r.rows[0]) : null;
}

export async function getTenant(db: Db, tenantId: string): Promise<Tenant | null> {
  return db.withTenant(tenantId, (sql) => getTenantIn(sql, tenantId));
}

/**
 * Sets the plan and/or the credit balance in the caller's transaction; a balance given (null included) counts as a
 * change of the balance (credit_version + 1). Null when the tenant does not exist.
 */
export async function updateBillingIn(sql: Sql, tenantId: string, input: { plan?: string; credit_balance?: number | null }): Promise<Tenant | null> {
  const r = await sql.query(
    `UPDATE gateway.tenants SET plan = COALESCE($2, plan),
            credit_balance = CASE WHEN $3::boolean THEN $4::bigint ELSE credit_balance END,
            credit_version = credit_version + CASE WHEN $3::boolean THEN 1 ELSE 0 END, updated_at = now()
      WHERE tenant_id = $1 RETURNING ${COLS}`,
    [tenantId, input.plan ?? null, input.credit_balance !== undefined, input.credit_balance ?? null],
  );
  return r.rows[0] ? toTenant(r.rows[0]) : null;
}

/**
 * Takes `credits` off a metered tenant's balance (a null balance is left alone) in the caller's transaction, which
 * already holds the tenant's row (lockTenantIn). The balance and its version afterwards.
 */
export async function debitCreditsIn(sql: Sql, tenantId: string, credits: number): Promise<{ credit_balance: number; credit_version: number } | null> {
  const r = await sql.query<{ credit_balance: string; credit_version: string }>(
    `UPDATE gateway.tenants SET credit_balance = credit_balance - $2::bigint, credit_version = credit_version + 1, updated_at = now()
      WHERE tenant_id = $1 AND credit_balance IS NOT NULL RETURNING credit_balance, credit_version`,
    [tenantId, credits],
  );
  const row = r.rows[0];
  return row ? { credit_balance: Number(row.credit_balance), credit_version: Number(row.credit_version) } : null;
}
