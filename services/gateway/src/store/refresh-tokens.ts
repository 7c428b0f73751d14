import type { Db } from '@lore/runtime';
import { millisOrNull } from './rows';
import { USER_COLS, toUser, type User } from './users';

/**
 * Stores a refresh token for a user whose password hash is still `passwordHash` (the one the login verified),
 * and returns the user as of that moment, session generation included; null when the password has changed
 * since (or the account is disabled). The user row is share-locked, so a password change running at the same
 * time either commits first (and this finds no row) or waits and then revokes the token written here.
 */
export async function insertRefreshTokenIfPassword(
  db: Db,
  tenantId: string,
  userId: string,
  passwordHash: string,
  t: { token_id: string; token_hash: string; expires_at: string },
): Promise<User | null> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(
      `WITH u AS (
         SELECT ${USER_COLS} FROM gateway.users
          WHERE tenant_id = $1 AND user_id = $2 AND password_hash = $3 AND disabled_at IS NULL
          FOR SHARE
       ), ins AS (
         INSERT INTO gateway.refresh_tokens (tenant_id, token_id, user_id, token_hash, expires_at)
         SELECT u.tenant_id, $4, u.user_id, $5, $6 FROM u
         RETURNING token_id
       )
       SELECT u.* FROM u, ins`,
      [tenantId, userId, passwordHash, t.token_id, t.token_hash, t.expires_at],
    );
    return r.rows[0] ? toUser(r.rows[0]) : null;
  });
}

/**
 * The owner of a refresh token that is neither revoked nor expired, read in one statement with the token, so
 * the session generation returned is the one the token belongs to.
 */
export async function userOfLiveRefreshToken(db: Db, tenantId: string, tokenId: string): Promise<User | null> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(
      `SELECT ${USER_COLS.split(', ').map((c) => `u.${c}`).join(', ')}
         FROM gateway.refresh_tokens r JOIN gateway.users u ON u.tenant_id = r.tenant_id AND u.user_id = r.user_id
        WHERE r.tenant_id = $1 AND r.token_id = $2 AND r.revoked_at IS NULL AND r.expires_at > now()`,
      [tenantId, tokenId],
    );
    return r.rows[0] ? toUser(r.rows[0]) : null;
  });
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
