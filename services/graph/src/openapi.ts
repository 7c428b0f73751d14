import { errorEnvelopeView, openApiDocument, withGatewayRefusal, type AnyRoute, type ResponseSpec, type RouteTable } from '@lore/runtime';
import { detailStringView } from './routes/knowledge-graphs/schema';
import { BEARER_OR_KEY, KEY, err, type GraphState } from './routes/route';

type Json = Record<string, unknown>;

export const GRAPH_INFO = {
  title: 'Lore memory API',
  version: '1.0.0',
  description:
    'Memory data plane (graph service), reached through the gateway with x-api-key. Operations tagged `internal` are graph-internal ' +
    '(core\'s connectors): the gateway never forwards them. See docs/memory.md.',
};

const COMPONENTS = {
  securitySchemes: {
    apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'a ck_ key of the tenant, or the mk_ key of the memory on its own hostname' },
    bearer: { type: 'http', scheme: 'bearer', description: 'spec 2\'s knowledge-graph routes (`/memory/*`): `Authorization: Bearer <API_KEY>` (or a session token) at the gateway' },
    loreIdentity: {
      type: 'apiKey',
      in: 'header',
      name: 'x-lore-identity',
      description: 'graph-internal routes (tag `internal`): the signed identity another Lore service sends; the gateway never forwards these routes',
    },
  },
};

const sameSecurity = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } };
const QUOTA: ResponseSpec = {
  description:
    'the tenant\'s credits are spent, or its plan\'s monthly request quota is used up: the gateway\'s error envelope, whose `error.details.reason` (`credit_balance`, `plan_limit`) tells the two apart (docs/gateway.md)',
  schema: errorEnvelopeView,
};

/**
 * What the gateway refuses in front of spec 1's memory routes (`x-api-key`), in the platform envelope, and what the
 * graph's identity guard answers.
 */
const KEY_ERRORS: Record<number, ResponseSpec> = {
  401: err('no valid credential: a missing, mistyped or revoked key (the gateway), or a signed identity that is missing, invalid or expired (the graph)'),
  402: QUOTA,
  403: err('the key\'s scope does not include the memory module or this memory, a read-only key on a write, or the credential\'s IP allowlist'),
  404: err('unknown id, another tenant\'s, no memory selected for the credential, or the memory was deleted'),
  429: { description: 'the credential\'s rate limit; see Retry-After', schema: errorEnvelopeView, headers: RETRY_AFTER },
};

const detail = (description: string): ResponseSpec => ({ description, schema: detailStringView });

/**
 * The same refusals in front of spec 2's knowledge-graph routes (`/memory/*`), which the gateway answers in their
 * `{detail}` (docs/memory.md, "Knowledge graphs"); the 402 keeps the envelope.
 */
const GRAPH_ERRORS: Record<number, ResponseSpec> = {
  401: detail('no valid credential: a missing, mistyped or revoked key or session'),
  402: QUOTA,
  403: detail('the key\'s scope does not include the graph module, a read-only key on a write or a write-only key on a read, or the credential\'s IP allowlist'),
  429: { description: 'the credential\'s rate limit; see Retry-After', schema: detailStringView, headers: RETRY_AFTER },
};

const BODY_ERRORS: Record<number, ResponseSpec> = {
  413: err('body larger than the limit'),
  415: err('body is not application/json'),
};
const GRAPH_BODY_ERRORS: Record<number, ResponseSpec> = {
  413: detail('body larger than the limit'),
  415: detail('body is not application/json'),
};

/**
 * What every memory route may answer besides its own statuses: the gateway's refusals and the identity guard's, and
 * the body reader's 413 and 415 on every route that reads a JSON body, each in its surface's body. A route's own
 * declaration of a status wins.
 */
export function graphResponses(route: AnyRoute<GraphState>): Record<number, ResponseSpec> {
  const spec2 = sameSecurity(route.security, BEARER_OR_KEY);
  return {
    ...(sameSecurity(route.security, KEY) ? KEY_ERRORS : spec2 ? GRAPH_ERRORS : {}),
    ...(route.body && route.bodyKind !== 'stream' ? (spec2 ? GRAPH_BODY_ERRORS : BODY_ERRORS) : {}),
  };
}

/** The graph listener's OpenAPI 3.1 document: exactly the table's routes. */
export function graphOpenApi(table: RouteTable<GraphState>): Json {
  const paths = withGatewayRefusal(table.openApiPaths(), 404, 'at the gateway, a path it does not forward (one an upstream could read differently)', (path) =>
    path.startsWith('/memory/') ? detailStringView : errorEnvelopeView,
  );
  return openApiDocument(GRAPH_INFO, paths, { components: COMPONENTS, security: KEY });
}
