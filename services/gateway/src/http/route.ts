import type Koa from 'koa';
import { errorEnvelopeView, routeFor, type ResponseSpec } from '@lore/runtime';
import type { Access } from '../domain/scope';
import type { ApiKeyRule } from './guards';
import type { GatewayRequestState } from './state';

/** Typed route definitions of the public listener (services/runtime/src/http/routes.ts). */
export const route = routeFor<GatewayRequestState>();

/** A guard: middleware in front of a handler (authentication, scope, limits). */
export type Guard = Koa.Middleware<GatewayRequestState>;
/** x-api-key credential (keys and OAuth access tokens), scope, IP allowlist, rate limit; sets `principal`. */
export type KeyGuard = (rule: ApiKeyRule) => Guard;
/** A signed-in user's session (portal routes); `admin` narrows to administrators; sets `user`. */
export type SessionGuard = (opts: { admin: boolean }) => Guard;

/**
 * The gateway's own `/api/manage` routes (user groups): any credential `/api/manage` takes, of an administrator;
 * `access` is what a key's scope must allow. Sets `principal`; refusals in spec 2's `{ detail }` shape.
 */
export type ManageGuard = (access: Access) => Guard;

/** OpenAPI security requirements of the four kinds of public route. */
export const KEY: Array<Record<string, string[]>> = [{ apiKey: [] }, { oauth2: [] }];
export const SESSION: Array<Record<string, string[]>> = [{ portalSession: [] }];
/** Spec 2's `/api/manage` credentials: a session JWT or key as the bearer, the API-key cookie, or x-api-key. */
export const MANAGE: Array<Record<string, string[]>> = [{ bearerCredential: [] }, { apiKeyCookie: [] }, { apiKey: [] }];
export const NONE: Array<Record<string, string[]>> = [];

/** The gateway's error envelope. */
export const errorView = errorEnvelopeView;

export const err = (description: string): ResponseSpec => ({ description, schema: errorView });

const header = (description: string) => ({ description, schema: { type: 'string' } });

/** What every answer of a rate-limited credential carries (IETF RateLimit fields, draft 7). */
export const RATE_HEADERS = {
  'RateLimit-Limit': header('requests allowed in the window'),
  'RateLimit-Remaining': header('requests left in the window'),
  'RateLimit-Reset': header('seconds until the window is full again'),
  'RateLimit-Policy': header('limit and window, e.g. `200;w=2`'),
};

/** The 429 of a rate-limited credential: `Retry-After` plus the RateLimit fields. */
export const RATE_LIMITED_HEADERS = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } }, ...RATE_HEADERS };
