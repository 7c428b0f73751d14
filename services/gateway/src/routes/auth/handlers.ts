import type Koa from 'koa';
import { AppError, validate } from '@lore/runtime';
import type { GatewayContext } from '../../context';
import { clientAddress } from '../../domain/network';
import { readJson } from '../../http/body';
import type { GatewayKoaContext, GatewayRouter } from '../../http/state';
import { login, logout, refresh } from '../../application/identity';
import { loginBody } from './schema';

export const REFRESH_COOKIE = 'refresh_token';
/** The refresh cookie travels only to the auth routes. */
const COOKIE_PATH = '/api/auth';

function readCookie(ctx: Koa.Context | GatewayKoaContext, name: string): string | undefined {
  const raw = ctx.get('cookie');
  if (!raw || raw.length > 16_384) return undefined;
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function setRefreshCookie(ctx: GatewayKoaContext, context: GatewayContext, value: string, maxAgeSeconds: number): void {
  const attrs = [`${REFRESH_COOKIE}=${value}`, `Path=${COOKIE_PATH}`, 'HttpOnly', 'SameSite=Strict', `Max-Age=${maxAgeSeconds}`];
  if (context.config.sessions.cookieSecure) attrs.push('Secure');
  ctx.append('Set-Cookie', attrs.join('; '));
}

/** Spec 2's refresh error object: `{ error: { code, message, status } }`. */
function refreshError(code: 'MISSING_REFRESH_TOKEN' | 'INVALID_REFRESH_TOKEN', message: string): AppError {
  const status = code === 'MISSING_REFRESH_TOKEN' ? 400 : 401;
  return new AppError(code === 'MISSING_REFRESH_TOKEN' ? 'BAD_REQUEST' : 'INVALID_REFRESH_TOKEN', message, { body: { error: { code, message, status } } });
}

export function registerAuthRoutes(router: GatewayRouter, context: GatewayContext): void {
  /**
   * Login (our design): `{ email, password }` → `{ token, expiresIn, user }` and the httpOnly refresh cookie.
   * Attempts are throttled per e-mail address and per client address.
   */
  router.post('/api/auth/login', async (ctx) => {
    const body = validate(loginBody, await readJson(ctx.req, 16 * 1024));
    const address = clientAddress(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-for'], context.trustedProxies) ?? 'unknown';
    for (const key of [`login:email:${body.email.toLowerCase()}`, `login:ip:${address}`]) {
      const r = await context.state.hit(key, context.config.loginRateLimit);
      if (!r.allowed) {
        throw new AppError('RATE_LIMITED', 'too many sign-in attempts; retry later', { headers: { 'Retry-After': String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) } });
      }
    }
    const result = await login(context, body.email, body.password);
    setRefreshCookie(ctx, context, result.refreshToken, context.config.sessions.refreshTtlSeconds);
    ctx.set('cache-control', 'no-store');
    ctx.body = {
      token: result.token,
      expiresIn: result.expiresIn,
      user: { user_id: result.user.user_id, tenant_id: result.user.tenant_id, email: result.user.email, role: result.user.role },
    };
  });

  /** Spec 2: no body; the refresh token comes in the `refresh_token` cookie. */
  router.post('/api/auth/refresh', async (ctx) => {
    const token = readCookie(ctx, REFRESH_COOKIE);
    if (!token) throw refreshError('MISSING_REFRESH_TOKEN', 'the refresh_token cookie is missing');
    const r = await refresh(context, token).catch((err: unknown) => {
      // Spec 2: a server fault is a 500 the client retries with backoff; same error object as the other failures.
      ctx.state.log.error({ err }, 'refresh failed');
      throw new AppError('INTERNAL', 'the session could not be refreshed; retry with backoff', { body: { error: { code: 'INTERNAL', message: 'the session could not be refreshed; retry with backoff', status: 500 } } });
    });
    if (!r.ok) throw refreshError('INVALID_REFRESH_TOKEN', 'the refresh token is expired or invalid');
    ctx.set('cache-control', 'no-store');
    ctx.body = { token: r.token, expiresIn: r.expiresIn };
  });

  /** Ends the refresh token of this browser and clears the cookie; 204 either way. */
  router.post('/api/auth/logout', async (ctx) => {
    const token = readCookie(ctx, REFRESH_COOKIE);
    if (token) await logout(context, token);
    setRefreshCookie(ctx, context, '', 0);
    ctx.status = 204;
  });
}
