import { createPrivateKey, sign } from 'node:crypto';

/**
 * Google OAuth 2.0 for the `google_drive` source: the two credential forms `domain/sources.ts` accepts.
 *
 * - **A service account key**: an access token is minted with the JWT bearer grant (RFC 7523): an RS256-signed
 *   assertion (`iss` the key's `client_email`, `sub` the user it acts as — domain-wide delegation —, `aud` the token
 *   URL, `scope` Drive read-only, one hour) posted to the key's `token_uri`. Signed with Node's `crypto`; nothing
 *   else is hand-rolled.
 * - **OAuth tokens**: the stored access token is used until it expires or a call answers 401, then refreshed with
 *   the refresh token (`grant_type=refresh_token`) at the tokens' `token_uri`.
 *
 * The HTTP exchange itself is the source's (it goes through the shared outbound client); this file builds the
 * request bodies and reads the answers, so it is pure and tested beside the code.
 */

export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
export const DRIVE_READONLY_SCOPE = 'https://www.googleapis.com/auth/drive.readonly';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** An assertion's lifetime: Google accepts at most one hour. */
const ASSERTION_TTL_S = 3600;

export interface ServiceAccountKey {
  type: 'service_account';
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri?: string;
  [field: string]: string | undefined;
}

export interface OAuthTokens {
  client_id: string;
  client_secret: string;
  refresh_token: string;
  token?: string;
  token_uri?: string;
  scopes?: string[];
}

export type GoogleCredential =
  | { google_service_account_key: ServiceAccountKey; google_primary_admin: string }
  | { google_tokens: OAuthTokens; google_primary_admin: string };

export function isServiceAccount(credential: GoogleCredential): credential is Extract<GoogleCredential, { google_service_account_key: unknown }> {
  return 'google_service_account_key' in credential;
}

/** Where the credential's tokens come from: its own `token_uri`, else `fallback` (Google's, or a test's). */
export function tokenUrlOf(credential: GoogleCredential, fallback: string): string {
  const named = isServiceAccount(credential) ? credential.google_service_account_key.token_uri : credential.google_tokens.token_uri;
  return named && named.length > 0 ? named : fallback;
}

/**
 * The signed JWT bearer assertion (RFC 7523 §2.1) of a service account acting as `subject`. `nowS` is the issue
 * time in seconds.
 */
export function serviceAccountAssertion(key: ServiceAccountKey, audience: string, subject: string | null, nowS: number, scope = DRIVE_READONLY_SCOPE): string {
  const header: Record<string, string> = { alg: 'RS256', typ: 'JWT' };
  if (key.private_key_id) header.kid = key.private_key_id;
  const claims: Record<string, string | number> = { iss: key.client_email, scope, aud: audience, iat: nowS, exp: nowS + ASSERTION_TTL_S };
  if (subject) claims.sub = subject;
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  // Key files keep the PEM's line breaks as `\n` inside a JSON string; a copy pasted once too often keeps them escaped.
  const pem = key.private_key.includes('\\n') ? key.private_key.replace(/\\n/g, '\n') : key.private_key;
  const signature = sign('sha256', Buffer.from(input), createPrivateKey(pem));
  return `${input}.${signature.toString('base64url')}`;
}

/** The form body of a token request: the JWT bearer grant, or a refresh. */
export function tokenRequestBody(credential: GoogleCredential, audience: string, subject: string | null, nowS: number): string {
  if (isServiceAccount(credential)) {
    return new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion: serviceAccountAssertion(credential.google_service_account_key, audience, subject, nowS) }).toString();
  }
  const t = credential.google_tokens;
  return new URLSearchParams({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: t.client_id, client_secret: t.client_secret }).toString();
}

export interface AccessToken {
  token: string;
  /**
   * When to stop using it (ms since the epoch): its end less a margin (a minute, or half its lifetime when that is
   * shorter), so no call starts with a token about to lapse; null when not known (a stored OAuth token).
   */
  expiresAt: number | null;
}

/** What the token endpoint answered: a token, or why not (RFC 6749 §5.2 `error`, never the secret). */
export type TokenAnswer = { ok: true; token: AccessToken } | { ok: false; error: string };

export function readTokenAnswer(status: number, body: string, nowMs: number): TokenAnswer {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = null;
  }
  const obj = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
  if (status >= 200 && status < 300 && typeof obj.access_token === 'string' && obj.access_token.length > 0) {
    const expiresIn = typeof obj.expires_in === 'number' ? obj.expires_in : Number(obj.expires_in);
    if (!Number.isFinite(expiresIn) || expiresIn <= 0) return { ok: true, token: { token: obj.access_token, expiresAt: null } };
    const lifetimeMs = expiresIn * 1000;
    return { ok: true, token: { token: obj.access_token, expiresAt: nowMs + lifetimeMs - Math.min(60_000, lifetimeMs / 2) } };
  }
  const error = typeof obj.error === 'string' && /^[\w.-]{1,64}$/.test(obj.error) ? obj.error : `status ${status}`;
  return { ok: false, error };
}

/** A kept token that may still be used (its margin included in `expiresAt`). */
export function isFresh(token: AccessToken | undefined, nowMs: number): token is AccessToken {
  return token !== undefined && (token.expiresAt === null || token.expiresAt > nowMs);
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}
