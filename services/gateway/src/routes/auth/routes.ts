import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import { AppError } from '@lore/runtime';
import type { LoginResult, RefreshOutcome } from '../../application/identity';
import type { GatewayRequestState } from '../../http/state';
import { NONE, err, route } from '../../http/route';
import { loginBody, loginView, presentLogin, presentRefresh, refreshErrorView, refreshView } from './schema';

export const REFRESH_COOKIE = 'refresh_token';
/** The refresh cookie travels only to the auth routes. */
const COOKIE_PATH = '/api/auth';
/** Sign-in bodies are two short strings; anyone may send one, so the limit is small. */
const AUTH_BODY_LIMIT = 16 * 1024;

export interface AuthRouteDeps {
  sessions: {
    /** Throttled per e-mail address and client address (RATE_LIMITED with Retry-After). */
    login(email: string, password: string, clientAddress: string | null): Promise<LoginResult>;
    refresh(refreshToken: string): Promise<RefreshOutcome>;
    logout(refreshToken: string): Promise<void>;
  };
  /** The client's address as the gateway believes it (trusted proxies). */
  clientAddress(req: IncomingMessage): string | null;
  cookie: { secure: boolean; refreshTtlSeconds: number };
}

type Ctx = Koa.ParameterizedContext<GatewayRequestState>;

function readCookie(ctx: Ctx, name: string): string | undefined {
  const raw = ctx.get('cookie');
  if (!raw || raw.length > 16_384) return undefined;
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Spec 2's refresh error object: `{ error: { code, message, status } }`. */
function refreshError(code: 'MISSING_REFRESH_TOKEN' | 'INVALID_REFRESH_TOKEN', message: string): AppError {
  const status = code === 'MISSING_REFRESH_TOKEN' ? 400 : 401;
  return new AppError(code === 'MISSING_REFRESH_TOKEN' ? 'BAD_REQUEST' : 'INVALID_REFRESH_TOKEN', message, { body: { error: { code, message, status } } });
}

const REFRESH_COOKIE_PARAM = { name: REFRESH_COOKIE, in: 'cookie', required: false, schema: { type: 'string' }, description: 'the refresh token set by sign-in' };

export function authRoutes(deps: AuthRouteDeps) {
  const setRefreshCookie = (ctx: Ctx, value: string, maxAgeSeconds: number) => {
    const attrs = [`${REFRESH_COOKIE}=${value}`, `Path=${COOKIE_PATH}`, 'HttpOnly', 'SameSite=Strict', `Max-Age=${maxAgeSeconds}`];
    if (deps.cookie.secure) attrs.push('Secure');
    ctx.append('Set-Cookie', attrs.join('; '));
  };
  return [
    /**
     * Login (our design): `{ email, password }` → `{ token, expiresIn, user }` and the httpOnly refresh cookie.
     * Attempts are throttled per e-mail address and per client address.
     */
    route({
      method: 'post', path: '/api/auth/login', operationId: 'login', summary: 'Sign in with e-mail address and password',
      security: NONE,
      body: loginBody, bodyLimitBytes: AUTH_BODY_LIMIT,
      ok: { status: 200, description: 'session JWT; the refresh_token cookie is set', schema: loginView, headers: { 'Set-Cookie': { description: 'refresh_token (HttpOnly, SameSite=Strict, Path=/api/auth)', schema: { type: 'string' } } } },
      responses: { 401: err('wrong e-mail address or password'), 429: { ...err('too many attempts'), headers: { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } } } },
      handler: async (ctx, { body }) => {
        const result = await deps.sessions.login(body.email, body.password, deps.clientAddress(ctx.req));
        setRefreshCookie(ctx, result.refreshToken, deps.cookie.refreshTtlSeconds);
        ctx.set('cache-control', 'no-store');
        return presentLogin(result);
      },
    }),
    /** Spec 2: no body; the refresh token comes in the `refresh_token` cookie. */
    route({
      method: 'post', path: '/api/auth/refresh', operationId: 'refresh', summary: 'A new session JWT for the refresh cookie (spec 2)',
      security: NONE, parameters: [REFRESH_COOKIE_PARAM],
      ok: { status: 200, description: 'a new session JWT', schema: refreshView },
      responses: {
        400: { description: 'no refresh_token cookie (MISSING_REFRESH_TOKEN)', schema: refreshErrorView },
        401: { description: 'INVALID_REFRESH_TOKEN: expired, revoked or unknown', schema: refreshErrorView },
        500: { description: 'server fault; retry with backoff', schema: refreshErrorView },
      },
      handler: async (ctx) => {
        const token = readCookie(ctx, REFRESH_COOKIE);
        if (!token) throw refreshError('MISSING_REFRESH_TOKEN', 'the refresh_token cookie is missing');
        const r = await deps.sessions.refresh(token).catch((e: unknown) => {
          // Spec 2: a server fault is a 500 the client retries with backoff; same error object as the other failures.
          ctx.state.log.error({ err: e }, 'refresh failed');
          const message = 'the session could not be refreshed; retry with backoff';
          throw new AppError('INTERNAL', message, { body: { error: { code: 'INTERNAL', message, status: 500 } } });
        });
        if (!r.ok) throw refreshError('INVALID_REFRESH_TOKEN', 'the refresh token is expired or invalid');
        ctx.set('cache-control', 'no-store');
        return presentRefresh(r);
      },
    }),
    /** Ends the refresh token of this browser and clears the cookie; 204 either way. */
    route({
      method: 'post', path: '/api/auth/logout', operationId: 'logout', summary: 'Sign out: revoke the refresh token, clear the cookie',
      security: NONE, parameters: [REFRESH_COOKIE_PARAM],
      ok: { status: 204, description: 'refresh token revoked, cookie cleared' },
      handler: async (ctx) => {
        const token = readCookie(ctx, REFRESH_COOKIE);
        if (token) await deps.sessions.logout(token);
        setRefreshCookie(ctx, '', 0);
        ctx.status = 204;
      },
    }),
  ];
}
