import type { Db } from '@lore/runtime';
import { millisOrNull } from './rows';

export async function insertRefreshToken(db: Db, tenantId: string, t: { token_id: string; user_id: string; token_hash: string; expires_at: string }): Promise<void> {
  await db.withTenant(tenantId, (sql) =>
    sql.query(`INSERT INTO gateway.refresh_tokens (tenant_id, token_id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5)`, [
      tenantId, t.token_id, t.user_id, t.token_hash, t.expires_at,
    ]),
  );
}

export interface RefreshTokenRow {
  tenant_id: string;
  token_id: string;
  user_id: string;
  token_hash: string;
  expires_at_ms: number;
  revoked: boolean;
}

/** By hash, across tenants (SECURITY DEFINER): the cookie is all the caller has. */
export async function refreshTokenByHash(db: Db, hash: string): Promise<RefreshTokenRow | null> {
  const r = await db.query(`SELECT * FROM gateway.refresh_token_owner($1)`, [hash]);
  const row = r.rows[0];
  if (!row) return null;
  return {
    tenant_id: String(row.tenant_id),
    token_id: String(row.token_id),
    user_id: String(row.user_id),
    token_hash: String(row.token_hash),
    expires_at_ms: millisOrNull(row.expires_at) ?? 0,
    revoked: row.revoked_at !== null && row.revoked_at !== undefined,
  };
}

export async function revokeRefreshToken(db: Db, tenantId: string, tokenId: string): Promise<void> {
  await db.withTenant(tenantId, (sql) =>
    sql.query(`UPDATE gateway.refresh_tokens SET revoked_at = now() WHERE tenant_id = $1 AND token_id = $2 AND revoked_at IS NULL`, [tenantId, tokenId]),
  );
}
