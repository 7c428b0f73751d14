import { TRUST_HEADERS } from '@lore/runtime';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, jwtClaims, signSessionJwt, http, makeKey, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest, type TenantFixture } from './harness';
import { PASSWORD, WEBHOOK_URL, basic, credentialHeaders, credentialOf, mistype, otherModule, publicRoutes, wrongHeader, type Credentials, type PublicRoute, type WorldIds } from './routes';

interface World {
  tenant: TenantFixture;
  projectId: string;
  ids: WorldIds;
  creds: Credentials;
  /** The administrator behind `creds.session`. */
  admin: { email: string; userId: string };
  routes: PublicRoute[];
}

jest.setTimeout(180_000);

describe('gateway security suite (every public route)', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;
  let a: World;
  let b: World;
  /** Credentials of tenant a that are dead, per kind. */
  let dead: {
    expiredKey: string;
    revokedKey: string;
    revokedToken: string;
    expiredSession: string;
    endedSession: string;
    revokedClient: { id: string; secret: string };
  };

  const asSession = (session: string) => ({ authorization: `Bearer ${session}` });

  async function login(email: string, password = PASSWORD): Promise<{ token: string; userId: string }> {
    const r = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
    expect(r.status).toBe(200);
    return { token: r.json.token, userId: r.json.user.user_id };
  }

  async function user(tenantId: string, role: 'admin' | 'member'): Promise<{ email: string; token: string; userId: string }> {
    const email = `${role}-${uid()}@example.test`;
    expect((await adminCall(g, 'POST', `/internal/v1/tenants/${tenantId}/users`, { email, password: PASSWORD, role })).status).toBe(201);
    return { email, ...(await login(email)) };
  }

  async function oauthClient(session: string, body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
    const r = await http(g.publicUrl, 'POST', '/api/v1/oauth-clients', { headers: asSession(session), body: { name: `c-${uid()}`, ...body } });
    expect(r.status).toBe(201);
    return { id: r.json.client_id, secret: r.json.client_secret };
  }

  async function token(client: { id: string; secret: string }, scope?: string): Promise<string> {
    const r = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', {
      headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
      raw: `grant_type=client_credentials${scope ? `&scope=${encodeURIComponent(scope)}` : ''}`,
    });
    expect(r.status).toBe(200);
    return r.json.access_token;
  }

  async function webhook(key: string): Promise<string> {
    const r = await http(g.publicUrl, 'POST', '/api/v1/webhooks', { headers: { 'x-api-key': key }, body: { url: WEBHOOK_URL, events: ['memory.ingest.completed'] } });
    expect(r.status).toBe(201);
    return r.json.webhook_id;
  }

  async function userGroup(key: string): Promise<number> {
    const r = await http(g.publicUrl, 'POST', '/api/manage/admin/user-group', { headers: { authorization: `Bearer ${key}` }, body: { name: `g-${uid()}` } });
    expect(r.status).toBe(201);
    return r.json.id;
  }

  async function world(): Promise<World> {
    const tenant = await makeTenant(g);
    const p = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': tenant.key }, body: { name: `Project ${uid()}` } });
    expect(p.status).toBe(201);
    const admin = await user(tenant.tenantId, 'admin');
    const webhookId = await webhook(tenant.key);
    // A dead-lettered delivery, as the worker leaves one after the last retry (no worker runs in this suite).
    const deliveryId = `dlv_${uid()}${uid()}`;
    await g.db.withTenant(tenant.tenantId, (sql) =>
      sql.query(
        `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, attempts, dead_reason, dead_at)
         VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', 'dead', 6, 'retries_exhausted', now())`,
        [deliveryId, tenant.tenantId, webhookId, `evt_${uid()}`],
      ),
    );
    const ids: WorldIds = {
      projectId: p.json.project_id,
      workspaceId: tenant.workspaceId,
      webhookId,
      spareWebhookId: await webhook(tenant.key),
      deliveryId,
      spareKeyIds: { rotate: (await makeKey(g, tenant.tenantId, { name: 'spare' })).keyId, revoke: (await makeKey(g, tenant.tenantId, { name: 'spare' })).keyId },
      spareOauthClientId: (await oauthClient(admin.token, { scopes: ['pages:read'] })).id,
      resettableEmail: (await user(tenant.tenantId, 'member')).email,
      groupId: await userGroup(tenant.key),
      spareGroupId: await userGroup(tenant.key),
    };
    const client = await oauthClient(admin.token, { scopes: ['*:write'] });
    return {
      tenant,
      projectId: ids.projectId,
      ids,
      creds: { key: tenant.key, session: admin.token, client },
      admin: { email: admin.email, userId: admin.userId },
      routes: publicRoutes(ids),
    };
  }

  const call = (route: PublicRoute, headers: Record<string, string>, path = route.path) =>
    route.raw
      ? http(g.publicUrl, route.method, path, { headers: { 'content-type': route.raw.contentType, ...headers }, raw: route.raw.text })
      : http(g.publicUrl, route.method, path, { headers, body: route.body });

  beforeAll(async () => {
    database = await freshDatabase('lore_gwsec');
    echo = await startEcho();
    g = await startGateway(
      database,
      // Many sign-ins from one address: the login throttle's default would refuse some.
      { upstreams: { graph: echo.url, core: echo.url, agents: echo.url, mcp: echo.url }, rateLimit: { perSecond: 10_000, burst: 10_000 }, loginRateLimit: { perSecond: 100, burst: 200 } },
      { redisPrefix: `gwsec:${uid()}:` },
    );
    a = await world();
    b = await world();
    const expiredKey = (await makeKey(g, a.tenant.tenantId, { expires_at: new Date(Date.now() + 1500).toISOString() })).key;
    const revoked = await makeKey(g, a.tenant.tenantId, {});
    // Used once so every replica cache could hold it, then revoked.
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': revoked.key } })).status).toBe(200);
    expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${a.tenant.tenantId}/keys/${revoked.keyId}`)).status).toBe(204);
    // An OAuth token whose client was revoked.
    const revokedClient = await oauthClient(a.creds.session, { scopes: ['*:write'] });
    const revokedToken = await token(revokedClient);
    expect((await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': revokedToken } })).status).toBe(200);
    expect((await http(g.publicUrl, 'DELETE', `/api/v1/oauth-clients/${revokedClient.id}`, { headers: asSession(a.creds.session) })).status).toBe(200);
    // A session that is right in every respect (signature, account, generation) except that it has expired.
    const nowS = Math.floor(Date.now() / 1000);
    const expiredSession = signSessionJwt({ ...jwtClaims(a.creds.session), iat: nowS - 3600, exp: nowS - 60 });
    // A session ended by a password change of its account (an administrator, so only the ending refuses it).
    const ended = await user(a.tenant.tenantId, 'admin');
    const change = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: asSession(ended.token), body: { old_password: PASSWORD, new_password: 'the next long password' } });
    expect(change.status).toBe(200);
    dead = { expiredKey, revokedKey: revoked.key, revokedToken, expiredSession, endedSession: ended.token, revokedClient };
    await new Promise((r) => setTimeout(r, 1600));
  });

  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await database?.drop();
  });

  it('covers every route the gateway registers on its public listener', () => {
    // The router's own table (koa-router hangs itself on the middleware it returns). Login, logout and
    // spec 2's refresh route are not in the matrix: they take a password or the refresh cookie, no credential
    // (credentials suite); nor is the served OpenAPI document, open to anyone (openapi suite).
    type Layer = { path: string; methods: string[] };
    const mounted = g.gateway.publicApp.middleware.find((m) => 'router' in m) as unknown as { router: { stack: Layer[] } } | undefined;
    const registered = (mounted?.router.stack ?? [])
      .filter((l) => !l.path.startsWith('/api/auth/') && l.path !== '/api/v1/openapi.json')
      .flatMap((l) => l.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${l.path.replace(/:[a-z_]+/g, ':id')}`));
    const ownIds = new Set([
      a.ids.projectId, a.ids.workspaceId, a.ids.webhookId, a.ids.spareWebhookId, a.ids.deliveryId, a.ids.spareKeyIds.rotate, a.ids.spareKeyIds.revoke, a.ids.spareOauthClientId,
      String(a.ids.groupId), String(a.ids.spareGroupId),
    ]);
    const covered = new Set(a.routes.filter((r) => !r.forwarded).map((r) => `${r.method} ${r.path.split('/').map((seg) => (ownIds.has(seg) ? ':id' : seg)).join('/')}`));
    expect(registered.length).toBeGreaterThan(20);
    for (const r of registered) expect({ route: r, covered: covered.has(r) }).toEqual({ route: r, covered: true });
  });

  it('accepts the right credential on every route (sanity for the refusals below)', async () => {
    for (const route of a.routes) {
      // Changing a password ends the account's sessions: that call gets a user of its own.
      const credential = route.name === 'change password' ? (await user(a.tenant.tenantId, 'member')).token : credentialOf(route, a.creds);
      const r = await call(route, credentialHeaders(route, credential));
      expect({ route: route.name, ok: r.status < 300, status: r.status }).toEqual({ route: route.name, ok: true, status: r.status });
    }
  });

  it('answers 401 without a credential, in the wrong header, mistyped, expired or revoked', async () => {
    for (const route of a.routes) {
      let cases: Array<[string, Record<string, string>]>;
      if (route.via === 'session') {
        cases = [
          ['none', {}],
          ['wrong header', wrongHeader(route, a.creds.session)],
          ['mistyped', credentialHeaders(route, mistype(a.creds.session))],
          ['garbage', credentialHeaders(route, 'not-a-key')],
          ['expired', credentialHeaders(route, dead.expiredSession)],
          ['revoked (password changed since)', credentialHeaders(route, dead.endedSession)],
        ];
      } else if (route.via === 'client') {
        // Client secrets do not expire; the client is revoked instead (the "revoked" case).
        const c = a.creds.client;
        cases = [
          ['none', {}],
          ['wrong header', wrongHeader(route, basic(c))],
          ['mistyped', credentialHeaders(route, basic({ id: c.id, secret: mistype(c.secret) }))],
          ['garbage', credentialHeaders(route, basic({ id: c.id, secret: 'not-a-key' }))],
          ['another client\'s secret', credentialHeaders(route, basic({ id: c.id, secret: b.creds.client.secret }))],
          ['revoked', credentialHeaders(route, basic(dead.revokedClient))],
        ];
      } else {
        cases = [
          ['none', {}],
          ['wrong header', wrongHeader(route, a.creds.key)],
          ['mistyped', credentialHeaders(route, mistype(a.creds.key))],
          ['garbage', credentialHeaders(route, 'not-a-key')],
          ['expired', credentialHeaders(route, dead.expiredKey)],
          ['revoked', credentialHeaders(route, dead.revokedKey)],
          ['revoked OAuth client\'s token', credentialHeaders(route, dead.revokedToken)],
        ];
      }
      for (const [label, headers] of cases) {
        const r = await call(route, headers);
        expect({ route: route.name, label, status: r.status }).toEqual({ route: route.name, label, status: 401 });
        if (route.forwarded) continue;
        if (route.via === 'client') {
          expect(r.json.error).toBe('invalid_client');
          continue;
        }
        if (route.detailErrors) {
          expect(typeof r.json.detail).toBe('string');
          continue;
        }
        expect(r.json.error.code).toBe('UNAUTHORIZED');
        expect(typeof r.json.error.request_id).toBe('string');
      }
    }
  });

  it('answers 403 for a credential whose scope, IP allowlist or role does not cover the route', async () => {
    const readOnly = await makeKey(g, a.tenant.tenantId, { scopes: { access: 'read' } });
    const writeOnly = await makeKey(g, a.tenant.tenantId, { scopes: { access: 'write' } });
    const fenced = await makeKey(g, a.tenant.tenantId, { ip_allowlist: ['10.0.0.0/8', '2001:db8::/32'] });
    const apps = await makeKey(g, a.tenant.tenantId, { app_permissions: { pages: true } });
    const fencedToken = await token(await oauthClient(a.creds.session, { scopes: ['*:write'], ip_allowlist: ['10.0.0.0/8'] }));
    const readToken = await token(await oauthClient(a.creds.session, { scopes: ['*:write'] }), '*:read');
    const tokenFor = new Map<string, string>();
    for (const m of ['pages', 'projects']) tokenFor.set(m, await token(await oauthClient(a.creds.session, { scopes: [`${m}:write`] })));
    const member = await user(a.tenant.tenantId, 'member');
    const writeToken = await token(a.creds.client);
    for (const route of a.routes) {
      if (route.name === 'change password') {
        // Every signed-in user may change their own password: no role, scope or allowlist narrows it.
        continue;
      }
      if (route.via === 'session') {
        // Sessions carry no key scope and no IP allowlist: what narrows a user is the role, and these routes are
        // for administrators.
        const r = await call(route, credentialHeaders(route, member.token));
        expect({ route: route.name, label: 'member', status: r.status }).toEqual({ route: route.name, label: 'member', status: 403 });
        continue;
      }
      if (route.via === 'client') {
        // RFC 6749 §5.2: a scope beyond the client's is 400 invalid_scope at the token endpoint (not 403); the
        // client's IP allowlist binds the tokens where they are used (the fenced token below, on every route).
        const narrow = await oauthClient(a.creds.session, { scopes: ['pages:read'] });
        const r = await http(g.publicUrl, 'POST', route.path, {
          headers: { authorization: basic(narrow), 'content-type': 'application/x-www-form-urlencoded' },
          raw: 'grant_type=client_credentials&scope=projects:write',
        });
        expect({ status: r.status, error: r.json.error }).toEqual({ status: 400, error: 'invalid_scope' });
        continue;
      }
      const scoped = await makeKey(g, a.tenant.tenantId, { scopes: { modules: [otherModule(route.module)] } });
      const cases: Array<[string, string]> = [
        ['module scope', scoped.key],
        ['ip allowlist', fenced.key],
        ['OAuth scope', tokenFor.get(otherModule(route.module))!],
        ['OAuth client ip allowlist', fencedToken],
      ];
      if (route.module !== 'pages') cases.push(['app_permissions', apps.key]);
      // Administrators only: a member's session and an unrestricted OAuth token (an integration) are no administrators.
      if (route.adminOnly) cases.push(['member', member.token], ['OAuth integration', writeToken]);
      // POST routes that only read (search, retrieval, chat questions) are open to read-only keys, and the MCP
      // surface to every access level (below).
      if (route.method !== 'GET' && route.module !== 'mcp' && !/search|retrieve|chat/.test(route.path)) cases.push(['read-only', readOnly.key]);
      for (const [label, key] of cases) {
        const r = await call(route, credentialHeaders(route, key));
        expect({ route: route.name, label, status: r.status }).toEqual({ route: route.name, label, status: 403 });
      }
      if (route.module === 'mcp') {
        // Any access level may open, use and close (DELETE) its MCP sessions: the server lists the tools the key's
        // scope allows, and each tool call is authorised again when the server calls the API back with the key.
        for (const [label, key] of [['read-only', readOnly.key], ['write-only', writeOnly.key]] as const) {
          const r = await call(route, credentialHeaders(route, key));
          expect({ route: route.name, label, status: r.status }).toEqual({ route: route.name, label, status: 200 });
        }
      }
      // An unrestricted token is accepted where the narrowed ones were refused (read routes: the others change
      // state, and the sanity test has exercised them).
      // (An administrator's read-only key, where the route is for administrators only.)
      if (route.method === 'GET') {
        const r = await call(route, credentialHeaders(route, route.adminOnly ? readOnly.key : readToken));
        expect({ route: route.name, label: 'unrestricted token', ok: r.status < 300 }).toEqual({ route: route.name, label: 'unrestricted token', ok: true });
      }
    }
  });

  it('believes X-Forwarded-For only from configured proxies', async () => {
    const k = await makeKey(g, a.tenant.tenantId, { ip_allowlist: ['203.0.113.0/24'] });
    const spoofed = { 'x-api-key': k.key, 'x-forwarded-for': '203.0.113.9' };
    // This gateway trusts no proxy: a client cannot talk its way into the allowlist.
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: spoofed })).status).toBe(403);
    const behindProxy = await startGateway(database, { trustedProxies: ['127.0.0.0/8'] }, { redisPrefix: `gwsec2:${uid()}:`, migrate: false });
    try {
      expect((await http(behindProxy.publicUrl, 'GET', '/api/v1/pages/ping', { headers: spoofed })).status).toBe(200);
      // The proxy appends the real peer: a forged first hop does not help an outsider.
      const forgedFirst = { 'x-api-key': k.key, 'x-forwarded-for': '203.0.113.9, 198.51.100.7' };
      expect((await http(behindProxy.publicUrl, 'GET', '/api/v1/pages/ping', { headers: forgedFirst })).status).toBe(403);
    } finally {
      await behindProxy.close();
    }
  });

  it('narrows app_permissions to named operations of an app', async () => {
    const k = await makeKey(g, a.tenant.tenantId, { app_permissions: { memory: ['ingest'], pages: true } });
    const h = { 'x-api-key': k.key };
    expect((await http(g.publicUrl, 'POST', '/api/v1/memory/ingest', { headers: h, body: {} })).status).toBe(200);
    expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: h, body: {} })).status).toBe(403);
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: h })).status).toBe(200);
    expect((await http(g.publicUrl, 'GET', '/api/v1/projects', { headers: h })).status).toBe(403);
  });

  it('accepts a signed-in user\'s session on the bearer surfaces and forwards the user as the identity', async () => {
    const email = `u-${uid()}@example.test`;
    await adminCall(g, 'POST', `/internal/v1/tenants/${a.tenant.tenantId}/users`, { email, password: 'a long enough password', role: 'member' });
    const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password: 'a long enough password' } });
    const r = await http(g.publicUrl, 'GET', '/api/chat/get-user-chat-sessions', { headers: { authorization: `Bearer ${login.json.token}` } });
    expect(r.status).toBe(200);
    const identity = await g.signer.verify(r.json.headers['x-lore-identity']);
    expect(identity).toMatchObject({ tenant_id: a.tenant.tenantId, credential: 'session', role: 'member', subject: login.json.user.user_id });
    // Sessions are not API keys: the x-api-key surfaces do not take them.
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': login.json.token } })).status).toBe(401);
  });

  it('answers 404 for another tenant\'s resources on every route', async () => {
    // The same routes built from tenant b's resources, called with tenant a's credentials.
    const foreign = new Map(b.routes.map((r) => [r.name, r]));
    for (const route of a.routes) {
      const credential = credentialHeaders(route, credentialOf(route, a.creds));
      const attempts: Array<[string, PublicRoute, string]> = [];
      if (route.namesResource) attempts.push(['b\'s resource', foreign.get(route.name)!, foreign.get(route.name)!.path]);
      if (route.via === 'x-api-key' || route.via === 'bearer') {
        // Every API-key and bearer route acts in a workspace and memory: naming b's is 404 too.
        const sep = route.path.includes('?') ? '&' : '?';
        for (const q of [`workspace_id=${b.tenant.workspaceId}`, `memory_id=${b.tenant.memoryId}`]) attempts.push([q, route, `${route.path}${sep}${q}`]);
      }
      if (attempts.length === 0) {
        // Nothing to name: the session's or client's tenant is the only one these routes can see. The list
        // routes take no workspace, memory or resource parameter (the tenant always comes from the session),
        // and the token endpoint issues tokens of the authenticated client's own tenant; a foreign client's
        // secret is a 401 (above).
        // Changing a password acts on the signed-in user's own account only.
        expect(['list api keys', 'list oauth clients', 'oauth token', 'change password']).toContain(route.name);
        continue;
      }
      for (const [label, r, path] of attempts) {
        const res = await call(r, credential, path);
        expect({ route: route.name, label, status: res.status }).toEqual({ route: route.name, label, status: 404 });
      }
    }
    // Nothing of b's was touched by those attempts.
    const bKey = { 'x-api-key': b.creds.key };
    expect((await http(g.publicUrl, 'GET', `/api/v1/webhooks/${b.ids.spareWebhookId}`, { headers: bKey })).status).toBe(200);
    const hook = await http(g.publicUrl, 'GET', `/api/v1/webhooks/${b.ids.webhookId}`, { headers: bKey });
    expect(hook.json).toMatchObject({ description: null, previous_secret_expires_at: null });
    const delivery = await http(g.publicUrl, 'GET', `/api/v1/webhooks/${b.ids.webhookId}/deliveries/${b.ids.deliveryId}`, { headers: bKey });
    expect(delivery.json.status).toBe('dead');
    for (const keyId of [b.ids.spareKeyIds.rotate, b.ids.spareKeyIds.revoke]) {
      const k = await http(g.publicUrl, 'GET', `/api/v1/api-keys/${keyId}`, { headers: asSession(b.creds.session) });
      expect({ keyId, status: k.json.status, replaced_by: k.json.replaced_by }).toEqual({ keyId, status: 'active', replaced_by: null });
    }
    expect((await login(b.ids.resettableEmail)).token).toBeTruthy();
    for (const id of [b.ids.groupId, b.ids.spareGroupId]) {
      const r = await http(g.publicUrl, 'GET', `/api/manage/admin/user-group/${id}`, { headers: { authorization: `Bearer ${b.creds.key}` } });
      expect({ id, status: r.status, renamed: String(r.json.name).startsWith('matrix') }).toEqual({ id, status: 200, renamed: false });
    }
    const clients = await http(g.publicUrl, 'GET', '/api/v1/oauth-clients', { headers: asSession(b.creds.session) });
    expect(clients.json.oauth_clients.find((c: { client_id: string }) => c.client_id === b.ids.spareOauthClientId)).toMatchObject({ revoked_at: null });
    expect(clients.json.oauth_clients.map((c: { workspace_id: string | null }) => c.workspace_id)).not.toContain(a.tenant.workspaceId);
  });

  it('lets none of thousands of randomized cross-tenant attempts succeed', async () => {
    const worlds = [a, b, await world(), await world()];
    for (const w of worlds) {
      const p2 = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': w.tenant.key }, body: { name: `Second ${uid()}` } });
      expect(p2.status).toBe(201);
    }
    const hosts = new Map<string, string>();
    for (const w of worlds) {
      const host = `mem-${uid()}.example.test`;
      const put = await adminCall(g, 'PUT', `/internal/v1/tenants/${w.tenant.tenantId}/memories/m-${uid()}`, { name: 'edge', hostname: host });
      expect(put.status).toBe(200);
      hosts.set(w.tenant.tenantId, host);
    }
    let successes = 0;
    let attempts = 0;
    const statuses = new Map<number, number>();
    const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
    const tasks: Array<() => Promise<number>> = [];
    for (let i = 0; i < 2400; i++) {
      const attacker = pick(worlds);
      const victim = pick(worlds.filter((w) => w !== attacker));
      const h = { 'x-api-key': attacker.tenant.key };
      const kind = i % 6;
      tasks.push(async () => {
        if (kind === 0) return (await http(g.publicUrl, 'GET', `/api/v1/projects/${victim.projectId}`, { headers: h })).status;
        if (kind === 1) return (await http(g.publicUrl, 'POST', `/api/v1/workspaces/${victim.tenant.workspaceId}/activate`, { headers: h })).status;
        if (kind === 2) return (await http(g.publicUrl, 'POST', `/api/v1/memory/search?workspace_id=${victim.tenant.workspaceId}`, { headers: h, body: { query: 'q' } })).status;
        if (kind === 3) return (await http(g.publicUrl, 'POST', `/api/v1/memory/search?memory_id=${victim.tenant.memoryId}`, { headers: h, body: { query: 'q' } })).status;
        if (kind === 4) return (await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { ...h, host: hosts.get(victim.tenant.tenantId)! }, body: { query: 'q' } })).status;
        return (await http(g.publicUrl, 'GET', `/api/v1/projects?workspace_id=${victim.tenant.workspaceId}`, { headers: h })).status;
      });
    }
    for (let i = 0; i < tasks.length; i += 24) {
      const batch = await Promise.all(tasks.slice(i, i + 24).map((t) => t()));
      for (const s of batch) {
        attempts++;
        statuses.set(s, (statuses.get(s) ?? 0) + 1);
        if (s < 400) successes++;
      }
    }
    expect(attempts).toBe(2400);
    expect(successes).toBe(0);
    expect([...statuses.keys()]).toEqual([404]);
  });

  it('never lets a client trust header reach an upstream; the upstream gets a verifiable identity instead', async () => {
    const spoofed: Record<string, string> = {};
    for (const h of TRUST_HEADERS) spoofed[h] = `spoofed-${b.tenant.tenantId}`;
    spoofed['x-lore-tenant-override'] = b.tenant.tenantId;
    for (const route of a.routes.filter((r) => r.forwarded)) {
      const before = echo.received.length;
      const r = await call(route, { ...spoofed, ...credentialHeaders(route, a.tenant.key) });
      expect(r.status).toBe(200);
      const seen = echo.received.slice(before);
      expect(seen.length).toBe(1);
      const headers = seen[0]!.headers;
      for (const h of [...TRUST_HEADERS, 'x-lore-tenant-override']) {
        if (h === 'x-lore-identity') continue;
        expect({ route: route.name, h, v: headers[h] }).toEqual({ route: route.name, h, v: undefined });
      }
      const identity = await g.signer.verify(String(headers['x-lore-identity']));
      expect(identity.tenant_id).toBe(a.tenant.tenantId);
      expect(identity.workspace_id).toBe(a.tenant.workspaceId);
      if (route.module !== 'mcp') expect(headers['x-api-key']).toBeUndefined();
      expect(headers.authorization).toBeUndefined();
    }
  });

  it('hides key management from API keys: a ck_ key, an mk_ key or an OAuth token gets 404 there, in any header', async () => {
    const mem = await adminCall(g, 'PUT', `/internal/v1/tenants/${a.tenant.tenantId}/memories/m-${uid()}`, { name: 'm', hostname: `h-${uid()}.example.test` });
    const mk = await makeKey(g, a.tenant.tenantId, { type: 'memory', memory_id: mem.json.memory_id });
    const oat = await token(a.creds.client);
    const routes: Array<readonly [string, string]> = [
      ['GET', '/api/v1/api-keys'], ['POST', '/api/v1/api-keys'], ['GET', `/api/v1/api-keys/${a.tenant.keyId}`],
      ['POST', `/api/v1/api-keys/${a.tenant.keyId}/rotate`], ['DELETE', `/api/v1/api-keys/${a.tenant.keyId}`],
      ['GET', '/api/v1/oauth-clients'], ['POST', '/api/v1/oauth-clients'], ['DELETE', `/api/v1/oauth-clients/${a.creds.client.id}`],
      // Methods those paths do not declare: 404 too, not a 405 whose Allow would show them.
      ['PATCH', '/api/v1/api-keys'], ['PUT', `/api/v1/api-keys/${a.tenant.keyId}`], ['GET', `/api/v1/api-keys/${a.tenant.keyId}/rotate`], ['PUT', '/api/v1/oauth-clients'],
    ];
    for (const key of [a.tenant.key, mk.key, oat]) {
      const placements: Array<Record<string, string>> = [{ 'x-api-key': key }, { authorization: `Bearer ${key}` }, { 'x-api-key': key, authorization: `Bearer ${a.creds.session}` }];
      for (const headers of placements) {
        for (const [method, path] of routes) {
          const r = await http(g.publicUrl, method, path, { headers, body: method === 'POST' ? {} : undefined });
          const label = `${key.slice(0, 4)} in ${Object.keys(headers).join('+')}`;
          expect({ method, path, label, status: r.status }).toEqual({ method, path, label, status: 404 });
        }
      }
    }
    // A session's wrong method is still 405 with Allow.
    const wrong = await http(g.publicUrl, 'PATCH', '/api/v1/api-keys', { headers: asSession(a.creds.session) });
    expect([wrong.status, wrong.headers.allow]).toEqual([405, expect.stringContaining('GET')]);
    // Nothing was rotated or revoked.
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': a.tenant.key } })).status).toBe(200);
    expect((await http(g.publicUrl, 'GET', `/api/v1/api-keys/${a.tenant.keyId}`, { headers: asSession(a.creds.session) })).json.status).toBe('active');
  });

  it('answers 404 for unversioned and internal routes', async () => {
    for (const [method, path] of [
      ['POST', '/internal/v1/tenants'], ['GET', '/internal/v1/tenants/x/keys/y'], ['GET', '/api/workspaces'], ['GET', '/v1/projects'],
      ['GET', '/livez'], ['GET', '/readyz'], ['GET', '/metrics'], ['GET', '/api/v2/projects'], ['GET', '/api/v1/memory/../projects'],
      ['GET', '/api/v1//projects'], ['GET', '/api/v1/%2e%2e/internal'],
    ] as const) {
      const r = await http(g.publicUrl, method, path, { headers: { 'x-api-key': a.tenant.key } });
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
    }
  });
});
