import { hash as argonHash, verify as argonVerify } from '@node-rs/argon2';
import { SignJWT, jwtVerify, type JWTPayload } from 'jose';
import { AppError } from '@lore/runtime';
import { REFRESH_TOKEN_PREFIX, hasValidChecksum, mintSecret, newId, randomBase62, sha256Hex, digestsEqual } from '../domain/credentials';
import type { GatewayContext } from '../context';
import { getPasswordHash, getSessionUser, getUserByEmail, insertUser, replacePassword, userForLogin, type SessionUser, type User } from '../store/users';
import { insertRefreshTokenIfPassword, refreshTokenByHash, revokeRefreshToken, userOfLiveRefreshToken } from '../store/refresh-tokens';

const ISSUER = 'lore-gateway';
const AUDIENCE = 'lore-portal';

/** Passwords: at least 12 characters (long passphrases beat composition rules), at most 256 (hashing cost). */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;

/** A fixed hash verified when no account matches, so a wrong e-mail costs the same time as a wrong password. */
let dummyHash: Promise<string> | null = null;
function timingDummy(): Promise<string> {
  dummyHash ??= argonHash(randomBase62(24));
  return dummyHash;
}

export function hashPassword(password: string): Promise<string> {
  return argonHash(password);
}

export async function createUser(ctx: GatewayContext, tenantId: string, input: { email: string; password: string; role: User['role'] }): Promise<User> {
  const created = await insertUser(ctx.db, tenantId, {
    user_id: newId('usr'),
    email: input.email.trim(),
    password_hash: await hashPassword(input.password),
    role: input.role,
  });
  if (created === 'email_taken') throw new AppError('CONFLICT', 'a user with this e-mail address exists');
  return created;
}

export interface SessionClaims {
  userId: string;
  tenantId: string;
  role: User['role'];
  /** The account's session generation when the token was issued (`User.sessions_valid_after_ms`). */
  generation: number;
  /** The sign-in this token belongs to: the id of the refresh token that sign-in stored (`sid`). */
  sessionId: string;
}

function sessionKey(ctx: GatewayContext): Uint8Array {
  return new TextEncoder().encode(ctx.config.sessions.secret);
}

/**
 * A session JWT for `user` as read together with the password it signed in with (or the refresh token it
 * presented): the token carries the account's session generation and dies with it, and the id of its sign-in's
 * refresh token (`sid`), and dies when that sign-in is signed out.
 */
export async function issueSessionToken(ctx: GatewayContext, user: Pick<User, 'user_id' | 'tenant_id' | 'role' | 'sessions_valid_after_ms'>, sessionId: string): Promise<string> {
  const now = Date.now();
  return new SignJWT({ tid: user.tenant_id, role: user.role, gen: user.sessions_valid_after_ms, sid: sessionId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(user.user_id)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(now / 1000) + ctx.config.sessions.ttlSeconds)
    .setJti(randomBase62(16))
    .sign(sessionKey(ctx));
}

/** The claims of a session JWT whose signature, issuer, audience and lifetime are good; null otherwise. */
async function verifiedPayload(ctx: GatewayContext, token: string): Promise<JWTPayload | null> {
  if (token.length > 4096 || token.split('.').length !== 3) return null;
  try {
    return (await jwtVerify(token, sessionKey(ctx), { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] })).payload;
  } catch {
    return null;
  }
}

/** Verifies a session JWT's signature and lifetime; null when it is not one of ours or has expired. */
export async function verifySessionToken(ctx: GatewayContext, token: string): Promise<SessionClaims | null> {
  const payload = await verifiedPayload(ctx, token);
  if (!payload) return null;
  if (typeof payload.sub !== 'string' || typeof payload.tid !== 'string' || (payload.role !== 'admin' && payload.role !== 'member')) return null;
  if (typeof payload.gen !== 'number' || typeof payload.sid !== 'string') return null;
  return { userId: payload.sub, tenantId: payload.tid, role: payload.role, generation: payload.gen, sessionId: payload.sid };
}

/** The refusal of a session JWT that `resolveSession` does not accept. */
export const INVALID_SESSION = 'the session is not valid';
/** The refusal of a session JWT issued before session JWTs carried their sign-in (`sid`). */
export const EARLIER_SESSION = 'the session was issued by an earlier version of Lore: refresh it or sign in again';

/**
 * Why a session JWT `resolveSession` refused is refused, in words its user can act on: one of ours, still within
 * its lifetime, without a `sid` was issued before the upgrade that made signing out end a sign-in's JWTs, and its
 * sign-in's refresh cookie still gets a new one (POST /api/auth/refresh); anything else is simply not valid.
 */
export async function sessionRefusal(ctx: GatewayContext, token: string): Promise<string> {
  const payload = await verifiedPayload(ctx, token);
  return payload && payload.sid === undefined && typeof payload.sub === 'string' ? EARLIER_SESSION : INVALID_SESSION;
}

/**
 * A signed-in user for one request: the JWT must verify, the account must exist and be enabled, the token
 * must belong to the account's current session generation, and its sign-in must not be signed out (its refresh
 * token not revoked), all checked against the database each time. A password change or reset starts a new
 * generation, so every session issued before it fails, whatever the clocks of the replicas that issued and
 * check it say; signing out revokes the sign-in's refresh token, so every session JWT of that sign-in fails.
 * The same statement reads the user's groups: they are never in the session JWT (which lives 15 days), so a
 * membership change counts from the next request.
 */
export async function resolveSession(ctx: GatewayContext, token: string): Promise<SessionUser | null> {
  const claims = await verifySessionToken(ctx, token);
  if (!claims) return null;
  const user = await getSessionUser(ctx.db, claims.tenantId, claims.userId, claims.sessionId);
  if (!user || user.disabled_at || claims.generation !== user.sessions_valid_after_ms) return null;
  return user;
}

export interface LoginResult {
  token: string;
  expiresIn: number;
  refreshToken: string;
  user: User;
}

/**
 * One account's sign-in attempts from all addresses together may run at this many times the per-address rate: one
 * address (which its own budgets hold to the rate) cannot spend the account's budget and lock its owner out; it takes
 * more addresses than this, each at its full rate, for as long as the lockout should last.
 */
export const LOGIN_ACCOUNT_FACTOR = 3;

/**
 * E-mail and password in, a session out; every failure is the same 401 so accounts cannot be enumerated. Sign-in
 * attempts are throttled before the password is looked at (in the shared state, so every replica counts the same
 * attempts): per client address (the login rate limit of the config), then per account at `LOGIN_ACCOUNT_FACTOR`
 * times that rate. An attempt its address may not make spends nothing of the account's budget.
 */
export async function login(ctx: GatewayContext, email: string, password: string, clientAddress: string | null): Promise<LoginResult> {
  // The account as it is looked up (trimmed), in one case: ` a@x.test` or `A@X.TEST` is no budget of its own.
  const account = email.trim().toLowerCase();
  const address = clientAddress ?? 'unknown';
  const rate = ctx.config.loginRateLimit;
  const budgets: Array<[string, { perSecond: number; burst: number }]> = [
    [`login:ip:${address}`, rate],
    [`login:email:${account}`, { perSecond: rate.perSecond * LOGIN_ACCOUNT_FACTOR, burst: rate.burst * LOGIN_ACCOUNT_FACTOR }],
  ];
  for (const [key, limit] of budgets) {
    const r = await ctx.state.hit(key, limit);
    if (!r.allowed) {
      throw new AppError('RATE_LIMITED', 'too many sign-in attempts; retry later', { headers: { 'Retry-After': String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) } });
    }
  }
  const wrong = () => AppError.unauthorized('the e-mail address or password is wrong');
  const found = await userForLogin(ctx.db, email.trim());
  const ok = await argonVerify(found?.password_hash ?? (await timingDummy()), password).catch(() => false);
  if (!found || !ok || found.disabled) throw wrong();
  // The password was checked outside any transaction (hashing is slow). The refresh token is written only if
  // that password is still the account's, and the session generation is read in the same statement: a password
  // change that commits while this login runs either ends this session too or makes the login fail.
  const refreshToken = mintSecret(REFRESH_TOKEN_PREFIX);
  const tokenId = newId('rtk');
  const user = await insertRefreshTokenIfPassword(ctx.db, found.tenant_id, found.user_id, found.password_hash, {
    token_id: tokenId,
    token_hash: sha256Hex(refreshToken),
    expires_at: new Date(Date.now() + ctx.config.sessions.refreshTtlSeconds * 1000).toISOString(),
  });
  if (!user) throw wrong();
  return { token: await issueSessionToken(ctx, user, tokenId), expiresIn: ctx.config.sessions.ttlSeconds, refreshToken, user };
}

export type RefreshOutcome = { ok: true; token: string; expiresIn: number } | { ok: false };

/** Exchanges the refresh cookie for a new session JWT (spec 2). The refresh token itself stays as it is. */
export async function refresh(ctx: GatewayContext, refreshToken: string): Promise<RefreshOutcome> {
  if (!hasValidChecksum(refreshToken, REFRESH_TOKEN_PREFIX)) return { ok: false };
  const hash = sha256Hex(refreshToken);
  const row = await refreshTokenByHash(ctx.db, hash);
  if (!row || !digestsEqual(row.token_hash, hash) || row.revoked || row.expires_at_ms <= Date.now()) return { ok: false };
  // The token's validity and the account's session generation come from one statement: a refresh racing a
  // password change gets either nothing or a session of the old generation, which the change has ended.
  const user = await userOfLiveRefreshToken(ctx.db, row.tenant_id, row.token_id);
  if (!user || user.disabled_at) return { ok: false };
  return { ok: true, token: await issueSessionToken(ctx, user, row.token_id), expiresIn: ctx.config.sessions.ttlSeconds };
}

/** Signs a sign-in out: its refresh token is revoked, which ends every session JWT issued from it too. */
export async function logout(ctx: GatewayContext, refreshToken: string): Promise<void> {
  if (!hasValidChecksum(refreshToken, REFRESH_TOKEN_PREFIX)) return;
  const row = await refreshTokenByHash(ctx.db, sha256Hex(refreshToken));
  if (row) await revokeRefreshToken(ctx.db, row.tenant_id, row.token_id);
}

/**
 * Changing a password ends every session of the account, this one included: the user signs in again. Attempts are
 * throttled per account (the login rate limit, in the shared state) before the current password is checked, so a
 * stolen session cannot guess the password, nor keep the password hashing busy.
 */
export async function changePassword(ctx: GatewayContext, user: User, oldPassword: string, newPassword: string): Promise<'ok' | 'wrong_password' | 'same_password'> {
  const r = await ctx.state.hit(`password-change:user:${user.user_id}`, ctx.config.loginRateLimit);
  if (!r.allowed) {
    throw new AppError('RATE_LIMITED', 'too many password changes; retry later', {
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) },
      body: { detail: 'too many attempts to change the password; retry later' },
    });
  }
  const current = await getPasswordHash(ctx.db, user.tenant_id, user.user_id);
  if (!current || !(await argonVerify(current, oldPassword).catch(() => false))) return 'wrong_password';
  // Checked once the current password is known right (and the attempt counted): the same password again would end
  // every session and change nothing.
  if (newPassword === oldPassword) return 'same_password';
  await replacePassword(ctx.db, user.tenant_id, user.user_id, await hashPassword(newPassword));
  return 'ok';
}

/** Admin reset: a random temporary password, shown once; the account's sessions end. */
export async function resetPassword(ctx: GatewayContext, tenantId: string, email: string): Promise<{ user: User; password: string } | null> {
  const user = await getUserByEmail(ctx.db, tenantId, email);
  if (!user) return null;
  const password = randomBase62(20);
  await replacePassword(ctx.db, tenantId, user.user_id, await hashPassword(password));
  return { user, password };
}
