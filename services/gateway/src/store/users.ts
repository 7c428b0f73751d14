import type { Db } from '@lore/runtime';
import { iso, isoRequired, isUniqueViolation, millisOrNull } from './rows';
import { intArray } from './user-groups';

export interface User {
  user_id: string;
  tenant_id: string;
  email: string;
  role: 'admin' | 'member';
  sessions_valid_after_ms: number;
  disabled_at: string | null;
  created_at: string;
}

/** The columns `toUser` reads (unqualified: only for queries where `gateway.users` is the only table). */
export const USER_COLS = 'user_id, tenant_id, email, role, sessions_valid_after, disabled_at, created_at';
const COLS = USER_COLS;

export function toUser(r: Record<string, unknown>): User {
  return {
    user_id: String(r.user_id),
    tenant_id: String(r.tenant_id),
    email: String(r.email),
    role: r.role as User['role'],
    sessions_valid_after_ms: millisOrNull(r.sessions_valid_after) ?? 0,
    disabled_at: iso(r.disabled_at),
    created_at: isoRequired(r.created_at),
  };
}

export async function insertUser(
  db: Db,
  tenantId: string,
  u: { user_id: string; email: string; password_hash: string; role: User['role'] },
): Promise<User | 'email_taken'> {
  try {
    return await db.withTenant(tenantId, async (sql) => {
      const r = await sql.query(
        `INSERT INTO gateway.users (tenant_id, user_id, email, password_hash, role) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLS}`,
        [tenantId, u.user_id, u.email, u.password_hash, u.role],
      );
      return toUser(r.rows[0]!);
    });
  } catch (err) {
    if (isUniqueViolation(err)) return 'email_taken';
    throw err;
  }
}

/** A user as a session request sees it: the account and the ids of its user groups, ascending. */
export interface SessionUser extends User {
  groups: number[];
}

/**
 * The account a session names with its user groups, in one statement: the session check reads the account on
 * every request anyway, so the groups cost no round trip of their own (an index-only scan of
 * `user_group_members_user`), and a membership change is seen by the next request on every replica.
 */
/** Every request of a signed-in user reads this: one statement, so one round trip (`statementAsTenant`). */
/**
 * The user of a session JWT with their groups, in one statement; null unless the sign-in the token belongs to
 * (`sessionId`, its refresh token's id) is the user's and not revoked. Its expiry is not asked: the JWT has its own.
 */
export async function getSessionUser(db: Db, tenantId: string, userId: string, sessionId: string): Promise<SessionUser | null> {
  const r = await db.statementAsTenant(
    tenantId,
    `SELECT ${COLS},
            ARRAY(SELECT m.group_id FROM gateway.user_group_members m WHERE m.tenant_id = $1 AND m.user_id = $2 ORDER BY m.group_id) AS groups
       FROM gateway.users WHERE tenant_id = $1 AND user_id = $2
        AND EXISTS (SELECT 1 FROM gateway.refresh_tokens r
                     WHERE r.tenant_id = $1 AND r.token_id = $3 AND r.user_id = $2 AND r.revoked_at IS NULL)`,
    [tenantId, userId, sessionId],
  );
  const row = r.rows[0];
  return row ? { ...toUser(row), groups: intArray(row.groups) } : null;
}

export async function getUserByEmail(db: Db, tenantId: string, email: string): Promise<User | null> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(`SELECT ${COLS} FROM gateway.users WHERE tenant_id = $1 AND lower(email) = lower($2)`, [tenantId, email]);
    return r.rows[0] ? toUser(r.rows[0]) : null;
  });
}

export async function getPasswordHash(db: Db, tenantId: string, userId: string): Promise<string | null> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query<{ password_hash: string }>(`SELECT password_hash FROM gateway.users WHERE tenant_id = $1 AND user_id = $2`, [tenantId, userId]);
    return r.rows[0]?.password_hash ?? null;
  });
}

/**
 * Sets a new password hash and ends every session and refresh token issued so far, in one transaction: the
 * refresh tokens are revoked and `sessions_valid_after` moves on. That column is the account's session
 * generation: session JWTs carry the value they were issued under and are accepted only while it is current.
 * It is taken from the database clock and always moves by at least 2 ms (whole milliseconds, so the value a
 * client reads back is exact), so two changes never share a generation.
 */
export async function replacePassword(db: Db, tenantId: string, userId: string, passwordHash: string): Promise<boolean> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(
      `UPDATE gateway.users
          SET password_hash = $3,
              sessions_valid_after = date_trunc('milliseconds', greatest(clock_timestamp(), sessions_valid_after + interval '2 milliseconds'))
        WHERE tenant_id = $1 AND user_id = $2`,
      [tenantId, userId, passwordHash],
    );
    await sql.query(`UPDATE gateway.refresh_tokens SET revoked_at = now() WHERE tenant_id = $1 AND user_id = $2 AND revoked_at IS NULL`, [tenantId, userId]);
    return r.rowCount > 0;
  });
}

/** Login lookup across tenants by e-mail (SECURITY DEFINER). */
export async function userForLogin(db: Db, email: string): Promise<{ tenant_id: string; user_id: string; password_hash: string; role: string; disabled: boolean } | null> {
  const r = await db.query(`SELECT * FROM gateway.login_user($1)`, [email]);
  const row = r.rows[0];
  if (!row) return null;
  return {
    tenant_id: String(row.tenant_id),
    user_id: String(row.user_id),
    password_hash: String(row.password_hash),
    role: String(row.role),
    disabled: row.disabled_at !== null && row.disabled_at !== undefined,
  };
}
