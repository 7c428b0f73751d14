import { openApiDocument, withGatewayRefusal, type AnyRoute, type ResponseSpec, type RouteTable } from '@lore/runtime';
import { CORE_SECURITY, detail, detailView, gatewayErrorView, validationErrorView, type CoreState } from './routes/route';

type Json = Record<string, unknown>;

/** Spec 2: the core description declares version 0.0.0-dev and the API base path /api. */
export const CORE_INFO = {
  title: 'Lore core API',
  version: '0.0.0-dev',
  description: 'Chat over enterprise search, personas and connectors (core service), reached through the gateway. See docs/core.md.',
};

const COMPONENTS = {
  securitySchemes: {
    bearer: { type: 'http', scheme: 'bearer', description: 'a session JWT of a signed-in user, or an API key (ck_...)' },
    apiKeyCookie: { type: 'apiKey', in: 'cookie', name: 'lore_api_key', description: 'an API key in the lore_api_key cookie' },
    apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'an API key (ck_...)' },
  },
};

const sameSecurity = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } };

/**
 * What the gateway in front of core refuses before core sees the request (a credential, its scope, the tenant's
 * credits and quota, the credential's rate limit), in core's own `{detail}` (docs/core.md, "Errors"). A route that
 * words one of them itself keeps its own.
 */
const GUARDED: Record<number, ResponseSpec> = {
  401: detail('no valid credential: a missing, mistyped or revoked key or session (the gateway), or a signed identity that is missing, invalid or expired (core)'),
  402: {
    description: 'the tenant\'s credits are spent, or its plan\'s monthly request quota is used up: the gateway\'s error envelope, whose `error.details.reason` (`credit_balance`, `plan_limit`) tells the two apart (docs/gateway.md)',
    schema: gatewayErrorView,
  },
  403: detail('the key\'s scope does not include the module, or does not allow this change (a read-only key); the credential\'s IP allowlist; an administrator\'s route'),
  429: { description: 'the credential\'s rate limit (or the chat message limits); see Retry-After', schema: detailView, headers: RETRY_AFTER },
};

const BODY_ERRORS: Record<number, ResponseSpec> = {
  400: detail('a body that is not clean JSON'),
  413: detail('body larger than the limit'),
  415: detail('body is not application/json'),
};

/**
 * What every core route may answer besides its own statuses: 401 from the identity guard, 422 for invalid input
 * (spec 2's body), and the body reader's 413 and 415 on routes with a body. A route's own declaration wins.
 */
export function coreResponses(route: AnyRoute<CoreState>): Record<number, ResponseSpec> {
  const out: Record<number, ResponseSpec> = sameSecurity(route.security, CORE_SECURITY) ? { ...GUARDED } : {};
  if (route.params || route.query || route.body) out[422] = { description: 'invalid input: every issue in `detail`', schema: validationErrorView };
  if (route.body && route.bodyKind !== 'stream') Object.assign(out, BODY_ERRORS);
  return out;
}

/** The core listener's OpenAPI 3.1 document: exactly the table's routes. */
export function coreOpenApi(table: RouteTable<CoreState>): Json {
  const paths = withGatewayRefusal(table.openApiPaths(), 404, 'at the gateway, a path it does not forward (one an upstream could read differently)', detailView);
  return openApiDocument(CORE_INFO, paths, { components: COMPONENTS, security: CORE_SECURITY, servers: [{ url: '/', description: 'the gateway; every path starts with /api' }] });
}
