import type Koa from 'koa';
import { AppError, detailError } from '@lore/runtime';
import { isAdminRole } from '@lore/contracts';
import { authenticate, rateHeaders, type RequestFacts, type RouteRule } from '../auth/authenticate';
import type { Access } from '../domain/scope';
import { parseCredential } from '../domain/credentials';
import type { GatewayContext } from '../context';
import { EARLIER_SESSION, resolveSession, sessionRefusal } from '../application/identity';
import type { User } from '../store/users';
import type { GatewayRequestState } from './state';

type Ctx = Koa.ParameterizedContext<GatewayRequestState>;

/** Shared by requests without a query string; never mutated. */
const EMPTY_QUERY = new URLSearchParams();

export function requestFacts(ctx: Koa.ParameterizedContext<GatewayRequestState>, hostMemory: RequestFacts['hostMemory']): RequestFacts {
  return {
    host: ctx.get('host'),
    headers: ctx.req.headers,
    remoteAddress: ctx.req.socket.remoteAddress,
    query: ctx.querystring === '' ? EMPTY_QUERY : new URLSearchParams(ctx.querystring),
    requestId: ctx.state.requestId,
    hostMemory,
  };
}

/** Host → memory, resolved once per request by the public app and kept on the Koa context. */
export const HOST_MEMORY = Symbol('hostMemory');
type WithHost = { [HOST_MEMORY]?: RequestFacts['hostMemory'] };

export function hostMemoryOf(ctx: Koa.ParameterizedContext<GatewayRequestState>): RequestFacts['hostMemory'] {
  return (ctx as unknown as WithHost)[HOST_MEMORY] ?? null;
}

export function setHostMemory(ctx: Koa.ParameterizedContext<GatewayRequestState>, value: RequestFacts['hostMemory']): void {
  (ctx as unknown as WithHost)[HOST_MEMORY] = value;
}

export type ApiKeyRule = Pick<RouteRule, 'module' | 'access' | 'operation'> & { metered?: boolean };

/** Control-plane routes: a credential in `x-api-key` only (keys and OAuth tokens). */
export function requireApiKey(context: GatewayContext, rule: ApiKeyRule) {
  const full: RouteRule = { ...rule, metered: rule.metered ?? false, sources: ['x-api-key'], allowSessions: false };
  return async (ctx: Ctx, next: Koa.Next) => {
    const outcome = await authenticate(context, requestFacts(ctx, hostMemoryOf(ctx)), full).catch((err: unknown) => {
      if (err instanceof AppError) for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
      throw err;
    });
    for (const [k, v] of Object.entries(outcome.headers)) ctx.set(k, v);
    ctx.state.principal = outcome.principal;
    await next();
  };
}

/**
 * One request of a signed-in user against the shared state: revocation of the user, then the per-user rate
 * limit. Returns the `RateLimit-*` headers every answer carries; a 429 (built by `limited`, so routes with a
 * spec-fixed error shape keep it) carries them too, with `Retry-After`. Counted as the credential pipeline counts
 * a session (`lore_gateway_auth_decisions_total`, `lore_gateway_rate_limit_decisions_total`).
 */
export async function admitSession(
  context: GatewayContext,
  user: User,
  limited: (headers: Record<string, string>) => AppError = (headers) => new AppError('RATE_LIMITED', 'too many requests; retry later', { headers }),
): Promise<Record<string, string> | null> {
  const admitted = await context.state.admit({ subject: user.user_id, consume: true, rate: context.config.rateLimit, quota: null });
  if (admitted.revoked) {
    invalidSession(context);
    return null;
  }
  const headers = rateHeaders(admitted.rate, context.config.rateLimit.perSecond);
  if (admitted.rate && !admitted.rate.allowed) {
    context.gatewayMetrics.rateLimitDecisions.inc({ decision: 'limited' });
    throw limited(headers);
  }
  context.gatewayMetrics.rateAllowed.inc();
  context.gatewayMetrics.authOk.inc();
  return headers;
}

/** A session token that names no valid session, counted as the credential pipeline counts one. */
function invalidSession(context: GatewayContext): void {
  context.gatewayMetrics.authDecisions.inc({ outcome: 'invalid_session' });
}

/**
 * Portal routes (key and OAuth-client management): a signed-in user's session JWT in `Authorization: Bearer`.
 * An API key or OAuth token makes these routes invisible (404), as spec 1 says, wherever it is sent: in
 * x-api-key, or as the bearer credential instead of a session.
 */
export function requireSession(context: GatewayContext, opts: { admin: boolean }) {
  return async (ctx: Ctx, next: Koa.Next) => {
    if (ctx.get('x-api-key') !== '') throw AppError.notFound('route');
    const auth = ctx.get('authorization');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!m) throw sessionRequired('a signed-in session is required (Authorization: Bearer <session token>)');
    if (parseCredential(m[1]!) !== null) throw AppError.notFound('route');
    const user = await resolveSession(context, m[1]!);
    if (!user) {
      invalidSession(context);
      throw sessionRequired(await sessionRefusal(context, m[1]!));
    }
    const headers = await admitSession(context, user);
    if (!headers) throw sessionRequired('the session is not valid');
    ctx.set(headers);
    if (opts.admin && user.role !== 'admin') throw AppError.forbidden('this needs an administrator');
    ctx.state.user = user;
    await next();
  };
}

/** A 401 of a route that reads a session token from `Authorization: Bearer`, naming that challenge (RFC 9110). */
const SESSION_CHALLENGE = { 'www-authenticate': 'Bearer realm="lore"' };
const sessionRequired = (message: string) => new AppError('UNAUTHORIZED', message, { headers: { ...SESSION_CHALLENGE } });
const notSignedIn = (detail = 'a valid session token is required') => new AppError('UNAUTHORIZED', 'not signed in', { headers: { ...SESSION_CHALLENGE }, body: { detail } });

/**
 * Spec 2's password routes: a session bearer token, rate-limited per user like every portal route, with errors in
 * spec 2's `detail` shape.
 */
export function requireDetailSession(context: GatewayContext) {
  return async (ctx: Ctx, next: Koa.Next) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
    const user = m ? await resolveSession(context, m[1]!) : null;
    if (!user) {
      if (!m) throw notSignedIn();
      invalidSession(context);
      // A session of an earlier version says so; any other stays the route's usual answer.
      const why = await sessionRefusal(context, m[1]!);
      throw why === EARLIER_SESSION ? notSignedIn(why) : notSignedIn();
    }
    const headers = await admitSession(context, user, (h) => new AppError('RATE_LIMITED', 'too many requests', { headers: h, body: { detail: 'too many requests; retry later' } }));
    if (!headers) throw notSignedIn();
    ctx.set(headers);
    ctx.state.user = user;
    await next();
  };
}

/**
 * The gateway's own routes under spec 2's `/api/manage` (user groups): the credentials every `/api/manage` route
 * takes — a session JWT or an API key as `Authorization: Bearer`, the API-key cookie, or `x-api-key` — through the
 * same pipeline as the forwarded ones (key scope module `connectors`, operation `admin`, IP allowlist, rate limit,
 * quota), for administrators only (`isAdminRole`: an administrator's session or a tenant key), as core's manage
 * routes are, and never for a credential narrowed to a workspace, a project or some memories. The control plane is not metered. Every refusal is in spec 2's `{ detail }` shape, with the status
 * and rate headers the pipeline gave it, except the quota's 402, which keeps the gateway's envelope as it does on
 * every `/api/manage` path (docs/core.md, "Errors"). Sets `principal`.
 */
export function requireManageAdmin(context: GatewayContext) {
  return (access: Access) => {
    const rule: RouteRule = { module: 'connectors', access, operation: 'admin', sources: ['bearer', 'cookie', 'x-api-key'], allowSessions: true, metered: false };
    return async (ctx: Ctx, next: Koa.Next) => {
      const outcome = await authenticate(context, requestFacts(ctx, hostMemoryOf(ctx)), rule).catch((err: unknown) => {
        // The 402s keep the gateway's envelope, as on the rest of `/api/manage`: `error.details.reason` tells them apart.
        if (err instanceof AppError && err.status !== 402) throw detailError(err);
        throw err;
      });
      ctx.set(outcome.headers);
      if (!isAdminRole(outcome.principal.role)) throw new AppError('FORBIDDEN', 'administrators only', { body: { detail: 'administrators only' } });
      // User groups are the whole tenant's (they open private connector documents in every workspace): a credential
      // narrowed to a workspace, a project or some memories does not manage them.
      const p = outcome.principal;
      if (p.pinnedWorkspaceId !== null || (p.keyScope?.memories?.length ?? 0) > 0) {
        const detail = "user groups are the whole tenant's: a credential bound to a workspace, a project or some memories cannot manage them";
        throw new AppError('FORBIDDEN', detail, { body: { detail } });
      }
      ctx.state.principal = outcome.principal;
      await next();
    };
  };
}
