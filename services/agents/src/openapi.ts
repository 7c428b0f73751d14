import { openApiDocument, withGatewayRefusal, type AnyRoute, type ResponseSpec, type RouteTable } from '@lore/runtime';
import { AGENTS_SECURITY, familyOf, detailView, envelopeView, gatewayErrorView, validationDetailView, type AgentsState } from './routes/route';

type Json = Record<string, unknown>;

/** Spec 3: "the general interface is labelled version 1.0.0". */
export const AGENTS_INFO = {
  title: 'Lore agents API',
  version: '1.0.0',
  description: 'List building, enrichment, the generic workflow API, CSV import, utility and seed routes (agents service), reached through the gateway. See docs/agents.md.',
};

const COMPONENTS = {
  securitySchemes: {
    bearer: { type: 'http', scheme: 'bearer', description: 'an API key (ck_...) or a session JWT of a signed-in user' },
    apiKeyCookie: { type: 'apiKey', in: 'cookie', name: 'lore_api_key', description: 'an API key in the lore_api_key cookie' },
    apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'an API key (ck_...)' },
  },
};

const sameSecurity = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);


/**
 * What every agents route may answer besides its own statuses: 401 without a valid credential, 403 for a key that may
 * not (its scope, a read-only key on a write), 429 for the credential's rate limit — the gateway's refusals, which it
 * answers in the family's body as agents does (docs/agents.md, "Errors") — the gateway's 402 in its own envelope,
 * 422 for invalid input in the family's body, and the body reader's 400, 413 and 415. A route's own declaration
 * wins.
 */
export function agentsResponses(route: AnyRoute<AgentsState>): Record<number, ResponseSpec> {
  const family = familyOf(route.path);
  const schema = family === 'envelope' ? envelopeView : detailView;
  const out: Record<number, ResponseSpec> = {};
  if (sameSecurity(route.security, AGENTS_SECURITY) || route.security === undefined) {
    out[401] = { description: 'no valid credential: a missing, mistyped or revoked key or session (the gateway), or a signed identity that is missing, invalid or expired (agents)', schema };
    out[402] = {
      description: 'the tenant\'s credits are spent, or its plan\'s monthly request quota is used up: the gateway\'s error envelope, whose `error.details.reason` (`credit_balance`, `plan_limit`) tells the two apart (docs/gateway.md)',
      schema: gatewayErrorView,
    };
    out[403] = { description: route.method === 'get' ? 'the key\'s scope does not include the agents module, or its IP allowlist' : 'a read-only key, or the key\'s scope does not include the agents module, or its IP allowlist', schema };
    out[429] = { description: 'the credential\'s rate limit; see Retry-After', schema };
  }
  if (route.params || route.query || route.body) {
    out[422] = { description: family === 'envelope' ? 'invalid input: body (a), every issue in `errors`' : 'invalid input: body (c), every issue in `detail`', schema: family === 'envelope' ? envelopeView : validationDetailView };
  }
  if (route.body && route.bodyKind !== 'stream') {
    out[400] = { description: 'a body that is not clean JSON', schema };
    out[413] = { description: 'body larger than the limit', schema };
    out[415] = { description: 'body is not application/json', schema };
  }
  return out;
}

/** The agents listener's OpenAPI 3.1 document: exactly the table's routes. */
export function agentsOpenApi(table: RouteTable<AgentsState>): Json {
  const paths = withGatewayRefusal(table.openApiPaths(), 404, 'at the gateway, a path it does not forward (one an upstream could read differently)', (path) =>
    familyOf(path) === 'envelope' ? envelopeView : detailView,
  );
  return openApiDocument(AGENTS_INFO, paths, { components: COMPONENTS, security: AGENTS_SECURITY, servers: [{ url: '/', description: 'the gateway' }] });
}
