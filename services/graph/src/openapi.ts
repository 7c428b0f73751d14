import { openApiDocument, type AnyRoute, type ResponseSpec, type RouteTable } from '@lore/runtime';
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

const KEY_ERRORS: Record<number, ResponseSpec> = {
  401: err('no valid credential (the gateway\'s signed identity is missing, invalid or expired)'),
  404: err('unknown id, another tenant\'s, no memory selected for the credential, or the memory was deleted'),
};

const BODY_ERRORS: Record<number, ResponseSpec> = {
  413: err('body larger than the limit'),
  415: err('body is not application/json'),
};

/**
 * What every memory route may answer besides its own statuses: 401 and 404 from the identity guard, and the body
 * reader's 413 and 415 on every route that reads a JSON body. A route's own declaration of a status wins.
 */
export function graphResponses(route: AnyRoute<GraphState>): Record<number, ResponseSpec> {
  return {
    ...(sameSecurity(route.security, KEY) || sameSecurity(route.security, BEARER_OR_KEY) ? KEY_ERRORS : {}),
    ...(route.body && route.bodyKind !== 'stream' ? BODY_ERRORS : {}),
  };
}

/** The graph listener's OpenAPI 3.1 document: exactly the table's routes. */
export function graphOpenApi(table: RouteTable<GraphState>): Json {
  return openApiDocument(GRAPH_INFO, table.openApiPaths(), { components: COMPONENTS, security: KEY });
}
