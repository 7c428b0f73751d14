import { openApiDocument, type AnyRoute, type ResponseSpec, type RouteTable } from '@lore/runtime';
import { MODULES } from './domain/scope';
import { KEY, MANAGE, RATE_HEADERS, RATE_LIMITED_HEADERS, SESSION, err } from './http/route';
import type { GatewayRequestState } from './http/state';

type Json = Record<string, unknown>;

export const GATEWAY_INFO = {
  title: 'Lore gateway',
  version: '1.0.0',
  description: 'Control plane, credentials and identity of the Lore gateway (spec 1, spec 2\'s identity routes, and user groups). Forwarded surfaces are described by their own services. See docs/gateway.md.',
};

const COMPONENTS = {
  securitySchemes: {
    apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'ck_live_, ck_test_, ck_eph_ or mk_ key, or an oat_ OAuth access token' },
    oauth2: {
      type: 'oauth2',
      flows: { clientCredentials: { tokenUrl: '/api/v1/oauth/token', scopes: Object.fromEntries(MODULES.flatMap((m) => [[`${m}:read`, `read ${m}`], [`${m}:write`, `change ${m} (implies read)`]])) } },
      description: 'The access token is sent in x-api-key like any key.',
    },
    portalSession: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'session JWT from /api/auth/login or /api/auth/refresh' },
    bearerCredential: { type: 'http', scheme: 'bearer', description: 'spec 2\'s /api/manage routes: a session JWT, an API key or an OAuth access token as the bearer' },
    apiKeyCookie: { type: 'apiKey', in: 'cookie', name: 'lore_api_key', description: 'an API key in the cookie spec 2\'s routes read' },
  },
};

const sameSecurity = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const KEY_ERRORS: Record<number, ResponseSpec> = {
  401: err('credential missing, in the wrong header, mistyped, expired or revoked'),
  402: err('plan limit (`error.details.reason` = `plan_limit`) or credit balance (`credit_balance`)'),
  403: err('key scope, app_permissions, OAuth scope or IP allowlist'),
  404: err('unknown id, or another tenant\'s or workspace\'s resource'),
  429: { ...err('per-key rate limit'), headers: RATE_LIMITED_HEADERS },
};

const SESSION_ERRORS: Record<number, ResponseSpec> = {
  401: err('no valid portal session'),
  403: err('the signed-in user is not an administrator'),
  404: err('unknown id, another tenant\'s resource, or the route was called with an API key or OAuth token (in x-api-key or as the bearer)'),
  429: { ...err('per-user rate limit'), headers: RATE_LIMITED_HEADERS },
};

const BODY_ERRORS: Record<number, ResponseSpec> = {
  413: err('body larger than the limit'),
  415: err('body is not JSON (or, where accepted, a URL-encoded form)'),
};

/**
 * What every route of the public listener may answer besides its own statuses: the credential pipeline's answers
 * for the gateway API (`x-api-key`) and the portal (session) routes under `/api/v1`, and the body reader's 413 and
 * 415 on every route that reads a body. Routes with spec-fixed error shapes (spec 2's password routes, the OAuth
 * token endpoint) declare their own and win over these.
 */
export function publicResponses(route: AnyRoute<GatewayRequestState>): Record<number, ResponseSpec> {
  const versioned = route.path.startsWith('/api/v1/');
  return {
    ...(versioned && sameSecurity(route.security, KEY) ? KEY_ERRORS : {}),
    ...(versioned && sameSecurity(route.security, SESSION) ? SESSION_ERRORS : {}),
    ...(route.body && route.bodyKind !== 'stream' ? BODY_ERRORS : {}),
  };
}

/**
 * The RateLimit fields every answer of an established credential carries (the x-api-key pipeline, the portal
 * session and spec 2's password session all set them before the handler runs), declared on the success answer.
 */
export function publicSuccessHeaders(route: AnyRoute<GatewayRequestState>): Record<string, Json> | undefined {
  const limited = sameSecurity(route.security, KEY) || sameSecurity(route.security, SESSION) || sameSecurity(route.security, MANAGE);
  return limited ? RATE_HEADERS : undefined;
}

/** The public listener's OpenAPI 3.1 document: exactly the table's routes. */
export function gatewayOpenApi(table: RouteTable<GatewayRequestState>): Json {
  return openApiDocument(GATEWAY_INFO, table.openApiPaths(), { components: COMPONENTS });
}
