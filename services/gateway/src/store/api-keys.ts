import type { Db, Sql } from '@lore/runtime';
import type { KeyType } from '../domain/credentials';
import type { AppPermissions, KeyScope } from '../domain/scope';
import { iso, isoRequired, json, millisOrNull, textArray } from './rows';

export interface RateLimitSetting {
  per_second: number;
  burst: number;
}

/** A stored key. The plaintext is never stored; `key_hash` is its SHA-256. */
export interface ApiKeyRecord {
  key_id: string;
  tenant_id: string;
  type: KeyType;
  name: string;
  key_hash: string;
  prefix: string;
  memory_id: string | null;
  workspace_id: string | null;
  project_id: string | null;
  scopes: KeyScope;
  ip_allowlist: string[];
  app_permissions: AppPermissions;
  rate_limit: RateLimitSetting | null;
  expires_at: string | null;
  revoked_at: string | null;
  replaced_by: string | null;
  rotated_from: string | null;
  created_by: string;
  created_at: string;
  /** The caller's idempotency token of the create or rotate call that made the key (admin API), if any. */
  client_token: string | null;
}

const COLS = `tenant_id, key_id, type, name, key_hash, prefix, memory_id, workspace_id, project_id, scopes, ip_allowlist,
  app_permissions, rate_limit, expires_at, revoked_at, replaced_by, rotated_from, created_by, created_at, client_token`;

/** The unique index that makes a client token name at most one key per tenant (migration 0002). */
export const CLIENT_TOKEN_INDEX = 'api_keys_client_token';

/** What a key may reach and from where: the same in the stored record and in the authentication row. */
export type KeyGrant = Pick<ApiKeyRecord, 'memory_id' | 'workspace_id' | 'project_id' | 'scopes' | 'ip_allowlist' | 'app_permissions' | 'rate_limit'>;

function grantOf(r: Record<string, unknown>): KeyGrant {
  return {
    memory_id: (r.memory_id as string | null) ?? null,
    workspace_id: (r.workspace_id as string | null) ?? null,
    project_id: (r.project_id as string | null) ?? null,
    scopes: json<KeyScope>(r.scopes, {}),
    ip_allowlist: textArray(r.ip_allowlist),
    app_permissions: json<AppPermissions>(r.app_permissions, {}),
    rate_limit: json<RateLimitSetting | null>(r.rate_limit, null),
  };
}

function toKey(r: Record<string, unknown>): ApiKeyRecord {
  return {
    key_id: String(r.key_id),
    tenant_id: String(r.tenant_id),
    type: r.type as KeyType,
    name: String(r.name),
    key_hash: String(r.key_hash),
    prefix: String(r.prefix),
    ...grantOf(r),
    expires_at: iso(r.expires_at),
    revoked_at: iso(r.revoked_at),
    replaced_by: (r.replaced_by as string | null) ?? null,
    rotated_from: (r.rotated_from as string | null) ?? null,
    created_by: String(r.created_by),
    created_at: isoRequired(r.created_at),
    client_token: (r.client_token as string | null) ?? null,
  };
}

export type NewApiKey = Omit<ApiKeyRecord, 'revoked_at' | 'replaced_by' | 'created_at' | 'client_token'> & { client_token?: string | null };

export async function insertKeyIn(sql: Sql, k: NewApiKey): Promise<ApiKeyRecord> {
  const r = await sql.query(
    `INSERT INTO gateway.api_keys (tenant_id, key_id, type, name, key_hash, prefix, memory_id, workspace_id, project_id, scopes,
        ip_allowlist, app_permissions, rate_limit, expires_at, rotated_from, created_by, client_token, lineage_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11::text[], $12::jsonb, $13::jsonb, $14, $15, $16, $17,
             -- A replacement keeps the lineage of the key it replaces (migration 0007): it owns what they made.
             CASE WHEN $15::text IS NULL THEN NULL
                  ELSE COALESCE((SELECT o.lineage_id FROM gateway.api_keys o WHERE o.tenant_id = $1 AND o.key_id = $15), $15) END)
     RETURNING ${COLS}`,
    [
      k.tenant_id, k.key_id, k.type, k.name, k.key_hash, k.prefix, k.memory_id, k.workspace_id, k.project_id,
      JSON.stringify(k.scopes), k.ip_allowlist, JSON.stringify(k.app_permissions),
      k.rate_limit === null ? null : JSON.stringify(k.rate_limit), k.expires_at, k.rotated_from, k.created_by,
      k.client_token ?? null,
    ],
  );
  return toKey(r.rows[0]!);
}

export async function insertKey(db: Db, k: NewApiKey): Promise<ApiKeyRecord> {
  return db.withTenant(k.tenant_id, (sql) => insertKeyIn(sql, k));
}

export async function getKeyIn(sql: Sql, tenantId: string, keyId: string): Promise<ApiKeyRecord | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.api_keys WHERE tenant_id = $1 AND key_id = $2`, [tenantId, keyId]);
  return r.rows[0] ? toKey(r.rows[0]) : null;
}

export async function getKey(db: Db, tenantId: string, keyId: string): Promise<ApiKeyRecord | null> {
  return db.withTenant(tenantId, (sql) => getKeyIn(sql, tenantId, keyId));
}

/** The key a create or rotate call with this client token made, if any (at most one per tenant). */
export async function getKeyByClientTokenIn(sql: Sql, tenantId: string, clientToken: string): Promise<ApiKeyRecord | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.api_keys WHERE tenant_id = $1 AND client_token = $2`, [tenantId, clientToken]);
  return r.rows[0] ? toKey(r.rows[0]) : null;
}

export async function getKeyByClientToken(db: Db, tenantId: string, clientToken: string): Promise<ApiKeyRecord | null> {
  return db.withTenant(tenantId, (sql) => getKeyByClientTokenIn(sql, tenantId, clientToken));
}

/** Whether an error is the unique index on client tokens refusing a second key with the same token. */
export function isClientTokenTaken(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return !!e && e.code === '23505' && e.constraint === CLIENT_TOKEN_INDEX;
}

export async function listKeys(db: Db, tenantId: string, limit: number): Promise<ApiKeyRecord[]> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(`SELECT ${COLS} FROM gateway.api_keys WHERE tenant_id = $1 ORDER BY created_at DESC, key_id LIMIT $2`, [tenantId, limit]);
    return r.rows.map(toKey);
  });
}

/** Every key of the tenant, revoked and expired ones included: the `count` of the portal's key list. */
export async function countKeys(db: Db, tenantId: string): Promise<number> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM gateway.api_keys WHERE tenant_id = $1`, [tenantId]);
    return Number(r.rows[0]?.n ?? 0);
  });
}

/** Keys that still authenticate (not revoked, not expired): what `max_keys` counts. */
export async function countUsableKeysIn(sql: Sql, tenantId: string): Promise<number> {
  const r = await sql.query<{ n: string }>(
    `SELECT count(*) AS n FROM gateway.api_keys WHERE tenant_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
    [tenantId],
  );
  return Number(r.rows[0]?.n ?? 0);
}

/** Locks one key row for the rest of the transaction (rotation); false when the tenant has no such key. */
export async function lockKeyIn(sql: Sql, tenantId: string, keyId: string): Promise<boolean> {
  const r = await sql.query(`SELECT key_id FROM gateway.api_keys WHERE tenant_id = $1 AND key_id = $2 FOR UPDATE`, [tenantId, keyId]);
  return r.rowCount > 0;
}

/** The old key of a rotation: expires after the overlap and points at its replacement. */
export async function markReplacedIn(sql: Sql, tenantId: string, keyId: string, replacedBy: string, expiresAt: string): Promise<void> {
  await sql.query(
    `UPDATE gateway.api_keys SET replaced_by = $3, expires_at = LEAST(COALESCE(expires_at, $4::timestamptz), $4::timestamptz)
      WHERE tenant_id = $1 AND key_id = $2`,
    [tenantId, keyId, replacedBy, expiresAt],
  );
}

/** Revokes one key; returns the record (also when it was revoked already), or null when it is not this tenant's. */
export async function revokeKeyIn(sql: Sql, tenantId: string, keyId: string): Promise<ApiKeyRecord | null> {
  await sql.query(`UPDATE gateway.api_keys SET revoked_at = now() WHERE tenant_id = $1 AND key_id = $2 AND revoked_at IS NULL`, [tenantId, keyId]);
  return getKeyIn(sql, tenantId, keyId);
}

/**
 * Revokes every key bound to a memory — its `mk_` keys, and keys whose `scopes.memories` names that memory alone —
 * and takes the memory out of the scope of keys that name others too (an id created again later is a new memory,
 * which no old key may reach; an emptied list would mean every memory). Returns the revoked ids (already revoked
 * ones too, so markers are re-written).
 */
export async function revokeKeysOfMemoryIn(sql: Sql, tenantId: string, memoryId: string): Promise<string[]> {
  const onlyThis = `(coalesce(memory_id = $2, false) OR (jsonb_typeof(scopes->'memories') = 'array' AND scopes->'memories' @> jsonb_build_array($2::text)
                      AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(scopes->'memories') e WHERE e <> $2)))`;
  await sql.query(`UPDATE gateway.api_keys SET revoked_at = now() WHERE tenant_id = $1 AND revoked_at IS NULL AND ${onlyThis}`, [tenantId, memoryId]);
  await sql.query(
    `UPDATE gateway.api_keys
        SET scopes = jsonb_set(scopes, '{memories}', (SELECT jsonb_agg(e) FROM jsonb_array_elements_text(scopes->'memories') e WHERE e <> $2))
      WHERE tenant_id = $1 AND jsonb_typeof(scopes->'memories') = 'array' AND scopes->'memories' @> jsonb_build_array($2::text) AND NOT ${onlyThis}`,
    [tenantId, memoryId],
  );
  const r = await sql.query<{ key_id: string }>(`SELECT key_id FROM gateway.api_keys WHERE tenant_id = $1 AND ${onlyThis} LIMIT 100000`, [tenantId, memoryId]);
  return r.rows.map((x) => x.key_id);
}

/** The authentication lookup: by hash, across tenants, through the SECURITY DEFINER function. */
export interface KeyAuthRow extends KeyGrant {
  tenant_id: string;
  key_id: string;
  key_hash: string;
  type: KeyType;
  name: string;
  expires_at_ms: number | null;
  revoked_at_ms: number | null;
  /** Set on the old key of a rotation: once `expires_at` passes, it is revoked (not merely expired). */
  replaced_by: string | null;
  /** The id of the first key of its rotation chain (its own id when it replaced none): what services own data by. */
  lineage_id: string;
}

export async function keyByHash(db: Db, hash: string): Promise<KeyAuthRow | null> {
  const r = await db.query(`SELECT * FROM gateway.auth_key($1)`, [hash]);
  const row = r.rows[0];
  if (!row) return null;
  return {
    tenant_id: String(row.tenant_id),
    key_id: String(row.key_id),
    key_hash: String(row.key_hash),
    type: row.type as KeyType,
    name: String(row.name),
    ...grantOf(row),
    expires_at_ms: millisOrNull(row.expires_at),
    revoked_at_ms: millisOrNull(row.revoked_at),
    replaced_by: (row.replaced_by as string | null | undefined) ?? null,
    lineage_id: typeof row.lineage_id === 'string' ? row.lineage_id : String(row.key_id),
  };
}
