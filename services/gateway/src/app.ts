import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { AppError, RouteTable, openApiDocumentRoute, createHttpApp, createHttpMetrics, detailError, envelopeError, errorBody, isAppError, nameServerSpan, recordingSpan, writeAccessLine, type LoreApp, createRouter } from '@lore/runtime';
import type { GatewayContext } from './context';
import { authenticate, identityOf, type RequestFacts } from './auth/authenticate';
import { clientAddress, clientProto } from './domain/network';
import { admitChatMessage, isChatMessage } from './application/chat-limits';
import { parseCredential } from './domain/credentials';
import { FORWARD_ROUTES, errorBodyOf, isAmbiguousPath, matchForward, type ForwardMatch } from './forward/route-table';
import { parseUpstream, proxyHttp, proxyUpgrade, upstreamHeaders, upstreamPath, writeRawResponse, type ProxyFailure, type UpstreamTarget } from './forward/proxy';
import { hostMemoryOf, requestFacts, requireApiKey, requireDetailSession, requireManageAdmin, requireSession, setHostMemory } from './http/guards';
import type { GatewayKoaContext, GatewayRequestState, GatewayRouter } from './http/state';
import { fromAnotherOrigin } from './http/origin';
import { activateWorkspace, createWorkspace, memoryForHost, tenantContext, tenantMemory } from './application/tenancy';
import { countKeys, createKey, getKey, listKeys, revokeKey, rotateKey } from './application/keys';
import { createOauthClient, issueClientToken, listClients, revokeOauthClient } from './application/oauth';
import { changePassword, login, logout, refresh, resetPassword } from './application/identity';
import { WebhookService } from './webhooks/subscriptions';
import { gatewayOpenApi, publicResponses, publicSuccessHeaders } from './openapi';
import { pageRoutes, type PageRouteDeps } from './routes/pages/routes';
import { workspaceRoutes, type WorkspaceRouteDeps } from './routes/workspaces/routes';
import { apiKeyRoutes, type ApiKeyRouteDeps } from './routes/api-keys/routes';
import { oauthRoutes, type OauthRouteDeps } from './routes/oauth/routes';
import { authRoutes, type AuthRouteDeps } from './routes/auth/routes';
import { passwordRoutes, type PasswordRouteDeps } from './routes/password/routes';
import { webhookRoutes, type WebhookRouteDeps } from './routes/webhooks/routes';
import { projectRoutes, type ProjectRouteDeps } from './routes/projects/routes';
import { userGroupRoutes, type UserGroupRouteDeps } from './routes/user-groups/routes';
import { projectService } from './application/projects';
import { createGroup, deleteGroup, getGroup, listGroups, updateGroup } from './application/user-groups';
import type { UpstreamName } from './config';

export interface PublicApp {
  app: LoreApp;
  /** Attach to the HTTP server's `upgrade` event: websockets are authenticated and spliced to the upstream. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  upstreams: Map<UpstreamName, UpstreamTarget>;
  /** Ends every open websocket (shutdown: the HTTP server does not track upgraded sockets). */
  closeUpgraded(): void;
}

const MEMORY_PREFIX = '/api/v1/memory';

function isMemoryPath(path: string): boolean {
  return path === MEMORY_PREFIX || path.startsWith(`${MEMORY_PREFIX}/`);
}

function failureError(f: ProxyFailure): AppError {
  if (f.kind === 'timeout') return new AppError('GATEWAY_TIMEOUT', f.message);
  if (f.kind === 'too_large') return new AppError('PAYLOAD_TOO_LARGE', f.message);
  return new AppError('BAD_GATEWAY', f.message);
}

export interface PublicAppOptions {
  /** Routes registered by hand after the table's (the benchmark's unauthenticated twin of the ping): undocumented. */
  extraRoutes?: (router: GatewayRouter, context: GatewayContext) => void;
  /** Check every success body against its declared schema (tests): a drift is a 500 naming it. */
  checkResponses?: boolean;
}

/** What the public listener's route modules call, each module given only its own part. */
export interface PublicRouteDeps {
  pages: PageRouteDeps;
  workspaces: WorkspaceRouteDeps;
  projects: ProjectRouteDeps;
  apiKeys: ApiKeyRouteDeps;
  oauth: OauthRouteDeps;
  auth: AuthRouteDeps;
  password: PasswordRouteDeps;
  webhooks: WebhookRouteDeps;
  userGroups: UserGroupRouteDeps;
}

/** Binds the application layer and the guards to one gateway's context, resource by resource. */
export function publicRouteDeps(context: GatewayContext): PublicRouteDeps {
  const guard = (rule: Parameters<typeof requireApiKey>[1]) => requireApiKey(context, rule);
  const session = (opts: { admin: boolean }) => requireSession(context, opts);
  return {
    pages: { guard },
    workspaces: {
      guard,
      workspaces: {
        create: (tenantId, name) => createWorkspace(context, tenantId, name),
        activate: (tenantId, id) => activateWorkspace(context, tenantId, id),
        tenant: (tenantId) => tenantContext(context, tenantId),
        memoryWorkspace: async (tenantId, memoryId) => (await tenantMemory(context, tenantId, memoryId))?.workspace_id ?? null,
      },
    },
    projects: { guard, projects: projectService(context) },
    apiKeys: {
      session,
      keys: {
        create: (tenantId, input, by) => createKey(context, tenantId, input, by),
        list: (tenantId, limit) => listKeys(context.db, tenantId, limit),
        count: (tenantId) => countKeys(context.db, tenantId),
        get: (tenantId, id) => getKey(context.db, tenantId, id),
        rotate: (tenantId, id, overlap, by) => rotateKey(context, tenantId, id, overlap, by),
        revoke: (tenantId, id) => revokeKey(context, tenantId, id),
      },
    },
    oauth: {
      session,
      clients: {
        create: (tenantId, input, by) => createOauthClient(context, tenantId, input, by),
        list: (tenantId, limit) => listClients(context.db, tenantId, limit),
        revoke: (tenantId, id) => revokeOauthClient(context, tenantId, id),
      },
      tokens: {
        issue: (id, secret, scope) => issueClientToken(context, id, secret, scope),
      },
    },
    auth: {
      sessions: { login: (email, password, address) => login(context, email, password, address), refresh: (token) => refresh(context, token), logout: (token) => logout(context, token) },
      clientAddress: (req) => clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], context.trustedProxies),
      cookie: { secure: context.config.sessions.cookieSecure, refreshTtlSeconds: context.config.sessions.refreshTtlSeconds },
    },
    password: {
      session: requireDetailSession(context),
      passwords: { change: (user, oldPassword, newPassword) => changePassword(context, user, oldPassword, newPassword), reset: (tenantId, email) => resetPassword(context, tenantId, email) },
    },
    webhooks: {
      guard,
      webhooks: new WebhookService(context.db, context.secretBox, { logger: context.logger, allowLoopbackTargets: context.config.webhooks.allowLoopback }),
    },
    userGroups: {
      manage: requireManageAdmin(context),
      groups: {
        list: (tenantId) => listGroups(context, tenantId),
        get: (tenantId, id) => getGroup(context, tenantId, id),
        create: (tenantId, input) => createGroup(context, tenantId, input),
        update: (tenantId, id, input) => updateGroup(context, tenantId, id, input),
        remove: (tenantId, id) => deleteGroup(context, tenantId, id),
      },
    },
  };
}

/**
 * Every route the gateway serves itself on its public listener, from the route modules, plus the document of
 * exactly those routes at `GET /api/v1/openapi.json` (no credential: it describes the API, it holds nothing of a
 * tenant's; docs/gateway.md).
 */
export function publicRouteTable(deps: PublicRouteDeps, options: { bodyLimitBytes: number; checkResponses?: boolean }): RouteTable<GatewayRequestState> {
  const table = new RouteTable<GatewayRequestState>({
    bodyLimitBytes: options.bodyLimitBytes,
    checkResponses: options.checkResponses,
    commonResponses: publicResponses,
    successHeaders: publicSuccessHeaders,
  });
  table.add(
    pageRoutes(deps.pages),
    workspaceRoutes(deps.workspaces),
    projectRoutes(deps.projects),
    apiKeyRoutes(deps.apiKeys),
    oauthRoutes(deps.oauth),
    authRoutes(deps.auth),
    passwordRoutes(deps.password),
    webhookRoutes(deps.webhooks),
    userGroupRoutes(deps.userGroups),
    openApiDocumentRoute('/api/v1/openapi.json', "the OpenAPI 3.1 document of the gateway's own public routes", () => gatewayOpenApi(table)),
  );
  return table;
}

/**
 * The document without a running gateway (the committed openapi.json and its test): the same route modules with
 * dependencies that are never called, since documenting a route only reads its declaration.
 */
export function documentedGatewayOpenApi(): Record<string, unknown> {
  const never = (): never => {
    throw new Error('a route of the documentation-only table was called');
  };
  const inert: unknown = new Proxy(never, { get: () => inert, apply: () => inert });
  return gatewayOpenApi(publicRouteTable(inert as PublicRouteDeps, { bodyLimitBytes: 1 }));
}

/** The public listener: the gateway's own routes, then the forwarding table, then 404 for everything else. */
export function createPublicApp(context: GatewayContext, options: PublicAppOptions = {}): PublicApp {
  // Clients talk to this listener directly: it names its spans, but tells no route template (x-lore-route).
  const app = createHttpApp({ service: 'gateway', logger: context.logger, metrics: context.metrics, parseBodies: false, bodyLimitBytes: context.config.bodyLimitBytes, routeHeader: false });
  const upstreams = new Map<UpstreamName, UpstreamTarget>();
  for (const [name, spec] of Object.entries(context.config.upstreams) as Array<[UpstreamName, string | undefined]>) {
    if (spec) upstreams.set(name, parseUpstream(name, spec));
  }

  app.use(async (ctx, next) => {
    ctx.set('x-content-type-options', 'nosniff');
    await next();
  });
  // Paths an upstream could read differently from the gateway never get past this point.
  app.use(async (ctx, next) => {
    if (isAmbiguousPath(ctx.path)) throw inSurfaceBody(ctx.path, AppError.notFound('route'));
    const hostMemory = await memoryForHost(context, ctx.get('host'));
    // A memory's own hostname serves that memory's /api/v1/memory routes and nothing else.
    if (hostMemory && !isMemoryPath(ctx.path)) throw AppError.notFound('route');
    setHostMemory(ctx, hostMemory);
    await next();
  });

  const router = createRouter<GatewayRequestState>();
  const table = publicRouteTable(publicRouteDeps(context), { bodyLimitBytes: context.config.bodyLimitBytes, checkResponses: options.checkResponses });
  table.mount(router);
  options.extraRoutes?.(router, context);
  app.use(router.routes());

  app.use(async (ctx: Koa.ParameterizedContext<GatewayRequestState>, next) => {
    if ((ctx as unknown as { _matchedRoute?: string })._matchedRoute) return next();
    const match = matchForward(ctx.method, ctx.path);
    const target = match ? upstreams.get(match.route.upstream) : undefined;
    if (!match || !target) return next();
    // Counted and logged under its surface (the upstream counts it under its own route).
    ctx.state.routeLabel = `forward ${match.route.name}`;
    await forward(context, ctx as GatewayKoaContext, match, target);
  });
  // Key and OAuth-client management is invisible to an API key or OAuth token (spec 1: 404): a method those paths do
  // not declare is 404 to such a caller too, not a 405 whose Allow would show they exist.
  app.use(async (ctx: Koa.ParameterizedContext<GatewayRequestState>, next) => {
    if (PORTAL_PATHS.test(ctx.path) && carriesKey(ctx.get('authorization'), ctx.get('x-api-key'))) throw AppError.notFound('route');
    await next();
  });
  // A path of the gateway's own with a method it does not declare (and nothing forwards): 405 with Allow
  // (docs/fuzzing.md).
  app.use(table.methodNotAllowed() as Koa.Middleware<GatewayRequestState>);
  // Nothing serves the path: 404, in the error body of the surface whose prefix it is under (spec 2's `/memory`
  // answers `{detail}` for its unserved paths too), else the envelope.
  app.use(async (ctx) => {
    throw inSurfaceBody(ctx.path, AppError.notFound('route'));
  });

  const upgraded = new Set<Duplex>();
  const handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    void upgrade(context, upstreams, req, socket, head);
  };
  const closeUpgraded = () => {
    for (const s of upgraded) s.destroy();
    upgraded.clear();
    openStreams(context).stop();
  };
  return { app, handleUpgrade, upstreams, closeUpgraded };
}

/** The portal's management paths (sessions only): key and OAuth-client management. */
const PORTAL_PATHS = /^\/api\/v1\/(?:api-keys|oauth-clients)(?:\/|$)/;

/** The request carries an API key or OAuth token: in `x-api-key`, or as the bearer credential. */
function carriesKey(authorization: string, apiKey: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return apiKey !== '' || (m !== null && parseCredential(m[1]!) !== null);
}

/** Whether the client's connection to the gateway itself is TLS. */
const isTls = (socket: unknown): boolean => (socket as { encrypted?: boolean }).encrypted === true;

/** A request's credential as forwarded: the identity to sign on, its subject, and when it expires (null: never). */
interface Authorised {
  token: string | null;
  headers: Record<string, string>;
  subject: string | null;
  expiresAtMs: number | null;
}

async function authorise(context: GatewayContext, facts: RequestFacts, match: ForwardMatch, method: string, path: string): Promise<Authorised> {
  if (!match.rule) return { token: null, headers: {}, subject: null, expiresAtMs: null };
  if (match.route.sameOriginOnly && fromAnotherOrigin(facts.headers)) {
    context.gatewayMetrics.authDecisions.inc({ outcome: 'denied_403' });
    throw new AppError('FORBIDDEN', 'request from another origin', { body: match.route.sameOriginOnly.body });
  }
  try {
    const outcome = await authenticate(context, facts, match.rule);
    // Spec 2's message rate limits, on top of the credential's own (docs/core.md).
    const chat = match.route.upstream === 'core' && isChatMessage(method, path) ? await admitChatMessage(context, outcome.principal) : {};
    const token = await context.signer.sign(identityOf(outcome.principal, facts.requestId));
    return { token, headers: { ...outcome.headers, ...chat }, subject: outcome.principal.subject, expiresAtMs: outcome.expiresAtMs };
  } catch (err) {
    const body = match.route.missingCredentialBody;
    if (body !== undefined && isAppError(err) && err.status === 401 && facts.headers['x-api-key'] === undefined) {
      throw new AppError('UNAUTHORIZED', err.message, { body, headers: err.headers });
    }
    throw err;
  }
}

/**
 * What the gateway itself answers on a path, in the error body of the path's surface (`errorBodyOf`): spec 2's
 * `{detail}`, spec 3's envelope, else the gateway's own. The 402s keep the gateway's envelope everywhere (its
 * `error.details.reason` tells the two apart).
 */
function inSurfaceBody(path: string, err: unknown): unknown {
  const shape = errorBodyOf(path);
  if (!shape || !isAppError(err) || err.body !== undefined || err.status === 402) return err;
  return shape === 'detail' ? detailError(err) : envelopeError(err);
}

/** Forwards a request, answering what the gateway itself refuses in the surface's error body. */
async function forward(context: GatewayContext, ctx: GatewayKoaContext, match: ForwardMatch, target: UpstreamTarget): Promise<void> {
  try {
    await forwardRequest(context, ctx, match, target);
  } catch (err) {
    throw inSurfaceBody(ctx.path, err);
  }
}

async function forwardRequest(context: GatewayContext, ctx: GatewayKoaContext, match: ForwardMatch, target: UpstreamTarget): Promise<void> {
  const facts = requestFacts(ctx, hostMemoryOf(ctx));
  // `?api-key=` is a socket's credential only (spec 3, "Authentication" 2): a key in a plain request's URL would end
  // up in access logs and browser histories, so HTTP never reads it.
  const httpMatch = match.rule ? { ...match, rule: { ...match.rule, sources: match.rule.sources.filter((source) => source !== 'query') } } : match;
  let auth: Authorised;
  try {
    auth = await authorise(context, facts, httpMatch, ctx.method, ctx.path);
  } catch (err) {
    if (isAppError(err)) for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
    throw err;
  }
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > context.config.proxy.maxBodyBytes) throw new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${context.config.proxy.maxBodyBytes} bytes`);
  const headers = upstreamHeaders(ctx.req.headers, {
    identityToken: auth.token,
    requestId: ctx.state.requestId,
    clientAddress: clientAddress(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-for'], context.trustedProxies),
    clientProto: clientProto(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-proto'], isTls(ctx.req.socket), context.trustedProxies),
    keepApiKey: match.route.keepApiKey === true,
    apiKeyCookie: context.config.apiKeyCookie,
  });
  ctx.respond = false;
  // A stream (server-sent events, a long download) ends when its credential is revoked or expires, not only when it ends.
  if (auth.subject !== null) {
    const untrack = openStreams(context).track(auth.subject, () => ctx.res.destroy(), auth.expiresAtMs);
    ctx.res.once('close', untrack);
  }
  const extra = { ...auth.headers, 'x-request-id': ctx.state.requestId };
  const result = await proxyHttp(ctx.req, ctx.res, target, upstreamPath(target, ctx.originalUrl), headers, context.config.proxy, extra, spanNamer(ctx.method, target));
  if ('kind' in result) {
    context.gatewayMetrics.upstreamErrors.inc({ upstream: target.name, kind: result.kind });
    ctx.respond = true;
    throw failureError(result);
  }
}

/**
 * With the SDK recording, the forwarded request's server span takes the upstream's route template (told in its
 * response), in the public form (the upstream's base path removed): `POST /api/v1/memory/ingest`, not `POST`.
 */
function spanNamer(method: string, target: UpstreamTarget): ((route: string) => void) | undefined {
  const span = recordingSpan();
  if (!span) return undefined;
  return (route) => {
    const base = target.basePath;
    nameServerSpan(span, method, base && route.startsWith(`${base}/`) ? route.slice(base.length) : route);
  };
}

/** Node's timers wait at most this long (about 24.8 days); a longer wait is taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Runs `fn` at `at` (epoch ms), however far off; answers the function that cancels it. */
function timerAt(at: number, fn: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const wait = at - Date.now();
    if (wait <= 0) return fn();
    timer = setTimeout(arm, Math.min(wait, MAX_TIMER_MS));
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/**
 * The forwarded requests and sockets open now, by credential subject (docs/gateway.md, "Revocation"). A revoked
 * key's next request is refused at once; what it already has open — a workflow's event stream, a session socket, an
 * MCP stream — is closed on the next check (`proxy.revocationRecheckMs`), which reads each open subject's revocation
 * record (spending nothing). What a credential with an `expires_at` opened is closed at that instant, by a timer of
 * its own: an expired key is refused from then on as a revoked one is (until 2026-11-30 its open sockets and streams
 * went on until they ended by themselves).
 */
class OpenStreams {
  private readonly open = new Map<string, Set<() => void>>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly context: GatewayContext) {}

  track(subject: string, close: () => void, expiresAtMs: number | null = null): () => void {
    let set = this.open.get(subject);
    if (!set) this.open.set(subject, (set = new Set()));
    set.add(close);
    const cancelExpiry =
      expiresAtMs === null
        ? undefined
        : timerAt(expiresAtMs, () => {
            this.context.logger.info({ subject }, 'closed an open stream or socket of an expired credential');
            close();
          });
    if (!this.timer) {
      this.timer = setInterval(() => void this.check(), this.context.config.proxy.revocationRecheckMs ?? 10_000);
      this.timer.unref();
    }
    return () => {
      cancelExpiry?.();
      set.delete(close);
      if (set.size === 0 && this.open.get(subject) === set) this.open.delete(subject);
    };
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      for (const subject of [...this.open.keys()]) {
        const admitted = await this.context.state.admit({ subject, consume: false, rate: this.context.config.rateLimit, quota: null }).catch(() => null);
        const closers = this.open.get(subject);
        if (!admitted?.revoked || !closers) continue;
        this.open.delete(subject);
        this.context.logger.info({ subject, closed: closers.size }, 'closed the open streams and sockets of a revoked credential');
        for (const close of closers) close();
      }
    } finally {
      this.checking = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

const streamsOf = new WeakMap<GatewayContext, OpenStreams>();

function openStreams(context: GatewayContext): OpenStreams {
  let streams = streamsOf.get(context);
  if (!streams) streamsOf.set(context, (streams = new OpenStreams(context)));
  return streams;
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 413: 'Payload Too Large', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 504: 'Gateway Timeout' };

const pathOf = (url: string): string => {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
};

async function upgrade(context: GatewayContext, upstreams: Map<UpstreamName, UpstreamTarget>, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  const requestId = randomUUID();
  const began = performance.now();
  let route = 'unmatched';
  // One access line per handshake, as for a plain request: its answer (101 when the socket opened) and how long the
  // handshake took. What passes over the socket afterwards is the upstream's to log.
  let logged = false;
  const logAnswer = (status: number) => {
    if (logged) return;
    logged = true;
    const ms = performance.now() - began;
    // Counted as a plain request is (`lore_http_requests_total`, its duration), so a failing handshake reaches the
    // same alerts.
    createHttpMetrics(context.metrics).observe(req.method ?? 'GET', route, status, ms / 1000);
    writeAccessLine(context.logger, { request_id: requestId, method: req.method ?? 'GET', path: pathOf(req.url ?? '/'), route, status, duration_ms: Math.round(ms * 10) / 10 });
  };
  const refuse = (refused: AppError) => {
    // In the path's error family, as for a plain request (`forward`): the agents' sockets answer `{detail}`.
    const shaped = inSurfaceBody(pathOf(req.url ?? '/'), refused);
    const err = isAppError(shaped) ? shaped : refused;
    writeRawResponse(socket, err.status, REASONS[err.status] ?? 'Error', errorBody(err, requestId), { ...err.headers, 'x-request-id': requestId });
    logAnswer(err.status);
  };
  socket.on('error', () => socket.destroy());
  try {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (isAmbiguousPath(path)) throw AppError.notFound('route');
    const hostMemory = await memoryForHost(context, String(req.headers.host ?? ''));
    if (hostMemory && !isMemoryPath(path)) throw AppError.notFound('route');
    const match = matchForward(req.method ?? 'GET', path, FORWARD_ROUTES);
    const target = match ? upstreams.get(match.route.upstream) : undefined;
    if (!match || !target) throw AppError.notFound('route');
    route = `forward ${match.route.name}`;
    const facts: RequestFacts = {
      host: String(req.headers.host ?? ''),
      headers: req.headers,
      remoteAddress: req.socket.remoteAddress,
      query: new URLSearchParams(q < 0 ? '' : url.slice(q + 1)),
      requestId,
      hostMemory,
    };
    // Spec 3: a socket carries its key in `?api-key=` and nowhere else; a key in a header is refused.
    if (match.rule && facts.query.get('api-key') === null) {
      throw new AppError('UNAUTHORIZED', 'a websocket carries its key in the api-key query parameter (?api-key=<key>)', { headers: { 'www-authenticate': 'ApiKey realm="lore", query="api-key"' } });
    }
    const socketMatch = match.rule ? { ...match, rule: { ...match.rule, sources: match.rule.sources.filter((source) => source === 'query') } } : match;
    const auth = await authorise(context, facts, socketMatch, req.method ?? 'GET', path);
    const headers = upstreamHeaders(req.headers, {
      identityToken: auth.token,
      requestId,
      clientAddress: clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], context.trustedProxies),
      clientProto: clientProto(req.socket.remoteAddress, req.headers['x-forwarded-proto'], isTls(req.socket), context.trustedProxies),
      keepApiKey: match.route.keepApiKey === true,
      apiKeyCookie: context.config.apiKeyCookie,
      upgrade: true,
    });
    // The spliced socket ends when its credential is revoked or expires, as a forwarded stream does.
    if (auth.subject !== null) {
      const untrack = openStreams(context).track(auth.subject, () => socket.destroy(), auth.expiresAtMs);
      socket.once('close', untrack);
    }
    proxyUpgrade(req, socket, head, target, upstreamPath(target, url), headers, context.config.proxy, (failure) => {
      context.gatewayMetrics.upstreamErrors.inc({ upstream: target.name, kind: failure.kind });
      refuse(failureError(failure));
    }, logAnswer);
  } catch (err) {
    if (isAppError(err)) refuse(err);
    else {
      context.logger.error({ err, request_id: requestId }, 'websocket upgrade failed');
      refuse(new AppError('INTERNAL', 'internal error'));
    }
  }
}
