import type { Sql } from '@lore/runtime';
import { countUpTo, lockCount } from './caps';

export interface CredentialRow {
  tenant_id: string;
  id: number;
  /** `<credential kind>:<subject>` of the principal that created it. */
  owner: string;
  user_email: string;
  source: string;
  name: string;
  /** Each value sealed (application/credential-secrets.ts); never presented as it is. */
  credential_json: Record<string, string>;
  admin_public: boolean;
  curator_public: boolean;
  groups: number[];
  /** Where it belongs: the workspace and memory of the credential that made it ('' when unknown: made before). */
  workspace_id: string;
  memory_id: string;
  time_created: Date;
  time_updated: Date;
}

export interface CredentialFields {
  owner: string;
  user_email: string;
  source: string;
  name: string;
  admin_public: boolean;
  curator_public: boolean;
  groups: number[];
}

const COLS = 'tenant_id, id, owner, user_email, source, name, credential_json, admin_public, curator_public, groups, workspace_id, memory_id, time_created, time_updated';

/** The tenant's credentials (counted up to `limit`), after taking the lock every credential create of the tenant takes. */
export async function countCredentialsLocked(sql: Sql, tenantId: string, limit: number): Promise<number> {
  await lockCount(sql, 'core.credentials', tenantId);
  return countUpTo(sql, 'FROM core.credentials WHERE tenant_id = $1', [tenantId], limit);
}

/** Inserts the credential without its secret (its id binds the sealed values): `setCredentialJson` follows. */
export async function insertCredential(sql: Sql, tenantId: string, f: CredentialFields, place: { workspace_id: string; memory_id: string }): Promise<CredentialRow> {
  const r = await sql.query<CredentialRow>(
    `INSERT INTO core.credentials (tenant_id, owner, user_email, source, name, admin_public, curator_public, groups, workspace_id, memory_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLS}`,
    [tenantId, f.owner, f.user_email, f.source, f.name, f.admin_public, f.curator_public, f.groups, place.workspace_id, place.memory_id],
  );
  return r.rows[0]!;
}

/** Stores the sealed values (never plaintext). */
export async function setCredentialJson(sql: Sql, tenantId: string, id: number, sealed: Record<string, string>): Promise<CredentialRow> {
  const r = await sql.query<CredentialRow>(
    `UPDATE core.credentials SET credential_json = $3::jsonb, time_updated = now() WHERE tenant_id = $1 AND id = $2 RETURNING ${COLS}`,
    [tenantId, id, JSON.stringify(sealed)],
  );
  return r.rows[0]!;
}

/** The tenant's first `limit` credentials, oldest first. */
export async function listCredentials(sql: Sql, tenantId: string, limit: number): Promise<CredentialRow[]> {
  const r = await sql.query<CredentialRow>(`SELECT ${COLS} FROM core.credentials WHERE tenant_id = $1 ORDER BY id LIMIT $2`, [tenantId, limit]);
  return r.rows;
}

/**
 * One credential of the tenant. `lock`: `share` while a pair is made with it (it cannot be deleted meanwhile),
 * `update` while it is deleted.
 */
export async function getCredential(sql: Sql, tenantId: string, id: number, lock?: 'share' | 'update'): Promise<CredentialRow | null> {
  const suffix = lock === 'share' ? ' FOR SHARE' : lock === 'update' ? ' FOR UPDATE' : '';
  const r = await sql.query<CredentialRow>(`SELECT ${COLS} FROM core.credentials WHERE tenant_id = $1 AND id = $2${suffix}`, [tenantId, id]);
  return r.rows[0] ?? null;
}

export async function credentialsByIds(sql: Sql, tenantId: string, ids: number[]): Promise<CredentialRow[]> {
  if (ids.length === 0) return [];
  const r = await sql.query<CredentialRow>(`SELECT ${COLS} FROM core.credentials WHERE tenant_id = $1 AND id = ANY($2::integer[])`, [tenantId, ids]);
  return r.rows;
}

export async function deleteCredential(sql: Sql, tenantId: string, id: number): Promise<void> {
  await sql.query(`DELETE FROM core.credentials WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
}

/**
 * Rewrites the sealed values of one credential (re-sealed under another key: the same secret), leaving
 * `time_updated` as it is, since nothing the credential says has changed.
 */
export async function replaceSealedCredentialJson(sql: Sql, tenantId: string, id: number, sealed: Record<string, unknown>): Promise<boolean> {
  const r = await sql.query(`UPDATE core.credentials SET credential_json = $3::jsonb WHERE tenant_id = $1 AND id = $2`, [tenantId, id, JSON.stringify(sealed)]);
  return r.rowCount > 0;
}

/**
 * Across tenants, in id order after `after`: credentials with a `credential_json` value not sealed by the key whose
 * sealed values start with `sealedPrefix` (security-definer function `core.credentials_to_seal`; ids only, never a
 * value).
 */
export async function credentialsToSeal(db: Sql, sealedPrefix: string, after: number | null, limit: number): Promise<Array<{ tenantId: string; id: number }>> {
  const r = await db.query<{ tenant_id: string; id: number }>(`SELECT tenant_id, id FROM core.credentials_to_seal($1, $2, $3)`, [sealedPrefix, after, limit]);
  return r.rows.map((row) => ({ tenantId: String(row.tenant_id), id: Number(row.id) }));
}
