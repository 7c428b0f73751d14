import type { Module, RouteAccess } from '../domain/scope';
import type { CredentialSource, RouteRule } from '../auth/authenticate';
import type { UpstreamName } from '../config';

/**
 * One public surface that the gateway forwards to an internal service (ARCHITECTURE.md §1). The gateway owns
 * authentication, scope, limits and the identity header; the upstream owns everything else.
 */
export interface ForwardRoute {
  name: string;
  upstream: UpstreamName;
  /** Path prefixes (matched on segment boundaries) and exact paths that belong to the surface. */
  prefixes: readonly string[];
  exact?: readonly string[];
  /** Prefixes inside `prefixes` that the gateway serves itself and never forwards (a method it does not serve: 404). */
  except?: readonly string[];
  /** Exact paths served without a credential (health, service descriptions). */
  open?: readonly string[];
  /**
   * Paths served without a credential because the upstream checks a token of its own in them (deep search's live
   * page: a browser cannot send the key, the link carries a signed token; docs/agents.md, "Live session page").
   */
  openPatterns?: readonly RegExp[];
  module: (path: string) => Module;
  sources: readonly CredentialSource[];
  allowSessions: boolean;
  /**
   * Billable use: the surface needs credits when the tenant is metered, and every request counts against the
   * plan's monthly request quota. Not metered never means unlimited: the per-key rate limit applies to every
   * authenticated request (docs/gateway.md, "Rate limits, plans and credits").
   */
  metered: boolean;
  /** POST routes that only read (search, chat questions): a read-only key may call them. */
  readPosts?: readonly RegExp[];
  /**
   * Every access level of a key (read, write, read_write) may use the surface, whatever the method: it changes
   * nothing by itself, and each thing it does is authorised again where it happens. The module check, app
   * permissions, memory scope, IP allowlist and rate limit apply as on any surface.
   */
  anyAccess?: boolean;
  /** Index of the path segment naming the operation, for `app_permissions` (index 0 is the empty segment before the first slash). */
  operationSegment: number;
  /** The operation of a path whose place differs from `operationSegment`'s (it wins when it answers a name). */
  operationOf?: (segments: readonly string[]) => string | undefined;
  /** The MCP server calls the public API back with the caller's own key (spec 3), so it keeps x-api-key. */
  keepApiKey?: boolean;
  /** Body to answer a request without credential (spec 3 fixes the MCP server's). */
  missingCredentialBody?: unknown;
  /**
   * Requests a browser sends from another origin (`fromAnotherOrigin`) are refused with 403 and this body before the
   * credential is read: MCP's Streamable HTTP transport requires it of a server (against DNS rebinding).
   */
  sameOriginOnly?: { body: unknown };
  /** Only served on a memory's own hostname (and on the gateway host). */
  memoryRoute?: boolean;
  /**
   * The body of the gateway's own answers on a path of this surface (a refused credential, scope or rate limit, a
   * body too large, an upstream that failed), as the upstream itself answers there: `detail` is spec 2's
   * `{ "detail": "<message>" }`, `status_code` spec 3's envelope `{status_code, message, errors: [], data: null}`;
   * unset, the gateway's error envelope. The 402s keep the gateway's envelope everywhere: its
   * `error.details.reason` tells the credit balance from the plan's limit (docs/gateway.md).
   */
  errorBody?: (path: string) => 'detail' | 'status_code';
  /**
   * Prefixes the surface's error body covers beyond `prefixes`: the gateway forwards none of their other paths, but
   * answers them (404) in `errorBody`, because the spec gives the whole prefix that family (spec 2's `/memory`).
   */
  errorScope?: readonly string[];
}

export const FORWARD_ROUTES: readonly ForwardRoute[] = [
  {
    name: 'memory',
    upstream: 'graph',
    prefixes: ['/api/v1/memory'],
    module: () => 'memory',
    sources: ['x-api-key'],
    allowSessions: false,
    metered: true,
    readPosts: [/^\/api\/v1\/memory\/(search(\/stream)?|retrieve)$/],
    operationSegment: 4,
    memoryRoute: true,
  },
  {
    name: 'graph',
    upstream: 'graph',
    // `/memory/jobs` is the graph's own: the status of a knowledge-graph job (docs/memory.md, "Knowledge graphs").
    prefixes: ['/memory/departments', '/memory/upload', '/memory/ingest/connectors', '/memory/generate', '/memory/chat', '/memory/jobs'],
    open: ['/openapi.json'],
    module: () => 'graph',
    sources: ['bearer', 'x-api-key'],
    allowSessions: true,
    metered: true,
    readPosts: [/^\/memory\/chat$/],
    operationSegment: 2,
    // The knowledge-graph routes answer spec 2's `{detail}` (docs/memory.md, "Knowledge graphs"), the gateway's
    // refusals too, as on core's paths; the 402s keep the envelope. So does a path under `/memory` that no route
    // serves (`/memory`, `/memory/nope`): 404 `{detail}` (before 2026-11-30 the envelope).
    errorBody: () => 'detail',
    errorScope: ['/memory'],
  },
  {
    name: 'core',
    upstream: 'core',
    // Personas are core's own design (docs/core.md); chat and connector paths are spec 2's.
    prefixes: ['/api/chat', '/api/manage', '/api/persona'],
    // User groups are the gateway's own (it owns users; docs/gateway.md, "User groups").
    except: ['/api/manage/admin/user-group'],
    open: ['/api/openapi.json'],
    module: (path) => (path.startsWith('/api/manage') ? 'connectors' : 'chat'),
    sources: ['bearer', 'cookie', 'x-api-key'],
    allowSessions: true,
    metered: true,
    operationSegment: 3,
    // `/api/chat/<operation>`, `/api/manage/<operation>`, but `/api/persona[/<id>]` is the operation `persona`: its
    // third segment is an id, and an id is no operation a key could be granted (before 2026-11-30 it was taken as one).
    operationOf: (segments) => (segments[2] === 'persona' ? 'persona' : undefined),
    // Every answer of a spec 2 core path is `{detail}`, the gateway's too (docs/core.md, "Errors").
    errorBody: () => 'detail',
  },
  {
    name: 'agents',
    upstream: 'agents',
    prefixes: [
      '/company-search', '/people-search', '/service-deep-search', '/webandreasearch', '/agentic-crawler', '/research',
      '/api/workflow', '/api/lists/csv', '/api/service-routing', '/api/stream', '/api/company', '/api/seed',
      // Websockets (spec 3): deep search's progress socket and the web-research and crawler sockets.
      '/api/service-deep-search', '/api/agent',
    ],
    // The agents service's own OpenAPI document (docs/agents.md) is open like the others, and so is the AsyncAPI
    // document of its session sockets.
    open: ['/api/health', '/api/service-routing/health', '/', '/api/agents/openapi.json', '/api/agents/asyncapi.json'],
    // Any one segment, UUID or not: the agents service answers its one 404 for every link that opens nothing (until
    // 2026-11-30 only a UUID's form was open, and any other id was asked for a key, 401, or with one refused 422).
    openPatterns: [/^\/service-deep-search\/live\/[^/]+(?:\/events)?$/],
    module: () => 'agents',
    sources: ['bearer', 'cookie', 'x-api-key', 'query'],
    allowSessions: true,
    metered: true,
    // The directory's database searches only read (docs/agents.md, "Directory and database search"); so do service
    // routing and company overview (docs/agents.md, "Service routing", "Company overview").
    readPosts: [/^\/(company|people)-search\/database-search$/, /^\/api\/service-routing\/route$/, /^\/api\/company\/companyOverview(\/html)?$/],
    operationSegment: 1,
    // The agents' two error families, by path (docs/agents.md, "Errors"): `/api/...` answers `{detail}`, the others
    // spec 3's envelope; the gateway's refusals there too.
    errorBody: (path) => (path.startsWith('/api/') ? 'detail' : 'status_code'),
  },
  {
    name: 'mcp',
    upstream: 'mcp',
    prefixes: ['/mcp'],
    open: ['/health'],
    module: () => 'mcp',
    sources: ['x-api-key'],
    allowSessions: false,
    // A tool call's billable request is the one the tool makes back to the API with the caller's key (metered and
    // counted there); metering /mcp as well would count every tool call twice. /mcp keeps the per-key rate limit,
    // and the server its per-key session limit.
    metered: false,
    // Any key may open, use and close (DELETE) its sessions: the server lists the tools the key's signed scope
    // allows (read tools to a read-only key, write tools to a write-only one), and every tool call is authorised
    // again by this gateway when the server calls the API back with the key (docs/mcp.md, "Who sees which tool").
    anyAccess: true,
    operationSegment: 1,
    keepApiKey: true,
    missingCredentialBody: { success: false, error: 'Missing x-api-key header' },
    sameOriginOnly: { body: { success: false, error: 'the tool server answers no request a browser sends from another origin (Origin header)' } },
  },
];

export interface ForwardMatch {
  route: ForwardRoute;
  /** Null for open paths. */
  rule: RouteRule | null;
}

function under(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** What a request on a surface asks of the key's access level: safe methods and `readPosts` read, the rest writes. */
function routeAccess(route: ForwardRoute, method: string, path: string): RouteAccess {
  if (route.anyAccess) return 'any';
  const safe = method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
  return safe || (method === 'POST' && route.readPosts?.some((re) => re.test(path))) ? 'read' : 'write';
}

/** The forward route for a path, with the rule the credential must satisfy; null when no surface owns it. */
export function matchForward(method: string, path: string, routes: readonly ForwardRoute[] = FORWARD_ROUTES): ForwardMatch | null {
  for (const route of routes) {
    if (route.open?.includes(path) || route.openPatterns?.some((re) => re.test(path))) return { route, rule: null };
    if (!route.prefixes.some((p) => under(path, p)) && !route.exact?.includes(path)) continue;
    if (route.except?.some((p) => under(path, p))) return null;
    const segments = path.split('/');
    const operation = route.operationOf?.(segments) ?? segments[route.operationSegment] ?? '';
    return {
      route,
      rule: {
        module: route.module(path), access: routeAccess(route, method, path), operation, sources: route.sources, allowSessions: route.allowSessions,
        metered: route.metered, countsQuota: route.metered,
      },
    };
  }
  return null;
}

/**
 * The error body of the surface a path belongs to (`errorBody`), for what the gateway answers there itself: the
 * refusals of the forwarded request, and those made before routing (an ambiguous path). A surface's paths the gateway
 * serves itself (`except`: user groups under core's `/api/manage`) answer in the surface's body too, and so do the
 * paths of its `errorScope` that nothing serves.
 */
export function errorBodyOf(path: string, routes: readonly ForwardRoute[] = FORWARD_ROUTES): 'detail' | 'status_code' | undefined {
  const route = routes.find((r) => r.prefixes.some((p) => under(path, p)) || r.exact?.includes(path) || r.errorScope?.some((p) => under(path, p)));
  return route?.errorBody?.(path);
}

/**
 * Paths an upstream might normalise into something else (`..`, `.`, empty or encoded separators, backslashes)
 * are refused before routing, so what the gateway authorised is exactly what the upstream serves.
 */
export function isAmbiguousPath(rawPath: string): boolean {
  if (!rawPath.startsWith('/') || rawPath.length > 4096) return true;
  if (rawPath.includes('//') || rawPath.includes('\\')) return true;
  if (/%2e|%2f|%5c|%00/i.test(rawPath)) return true;
  return rawPath.split('/').some((seg) => seg === '.' || seg === '..');
}
