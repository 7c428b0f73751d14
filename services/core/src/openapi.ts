import { openApiDocument, withGatewayRefusal, type AnyRoute, type ResponseSpec, type RouteTable } from '@lore/runtime';
import { z } from 'zod';
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

const GUARDED: Record<number, ResponseSpec> = {
  // The gateway answers a bad credential itself, in its envelope; core answers a missing identity with `detail`.
  401: {
    description: 'no valid credential: the gateway\'s error envelope (a missing, mistyped or revoked key), or `detail` when the gateway\'s signed identity is missing, invalid or expired',
    schema: z.union([gatewayErrorView, detailView]),
  },
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
  const paths = withGatewayRefusal(table.openApiPaths(), 404, 'at the gateway, a path it does not forward (one an upstream could read differently): its error envelope', gatewayErrorView);
  return openApiDocument(CORE_INFO, paths, { components: COMPONENTS, security: CORE_SECURITY, servers: [{ url: '/', description: 'the gateway; every path starts with /api' }] });
}
