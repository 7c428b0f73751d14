import { TRUST_HEADERS } from '@lore/runtime';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeKey, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest, type TenantFixture } from './harness';
import { credentialHeaders, mistype, otherModule, publicRoutes, wrongHeader, type PublicRoute } from './routes';

interface World {
  tenant: TenantFixture;
  projectId: string;
  routes: PublicRoute[];
}

jest.setTimeout(120_000);

describe('gateway security suite (every public route)', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;
  let a: World;
  let b: World;
  let expiredKey: string;
  let revokedKey: string;

  async function world(): Promise<World> {
    const tenant = await makeTenant(g);
    const p = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': tenant.key }, body: { name: `Project ${uid()}` } });
    expect(p.status).toBe(201);
    return { tenant, projectId: p.json.project_id, routes: publicRoutes({ projectId: p.json.project_id, workspaceId: tenant.workspaceId }) };
  }

  const call = (route: PublicRoute, headers: Record<string, string>, path = route.path) =>
    http(g.publicUrl, route.method, path, { headers, body: route.body });

  beforeAll(async () => {
    database = await freshDatabase('lore_gwsec');
    echo = await startEcho();
    g = await startGateway(
      database,
      { upstreams: { graph: echo.url, core: echo.url, agents: echo.url, mcp: echo.url }, rateLimit: { perSecond: 10_000, burst: 10_000 } },
      { redisPrefix: `gwsec:${uid()}:` },
    );
    a = await world();
    b = await world();
    expiredKey = (await makeKey(g, a.tenant.tenantId, { expires_at: new Date(Date.now() + 1500).toISOString() })).key;
    const revoked = await makeKey(g, a.tenant.tenantId, {});
    revokedKey = revoked.key;
    // Used once so every replica cache could hold it, then revoked.
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': revokedKey } })).status).toBe(200);
    expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${a.tenant.tenantId}/keys/${revoked.keyId}`)).status).toBe(204);
    await new Promise((r) => setTimeout(r, 1600));
  });

  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await database?.drop();
  });

  it('accepts the right credential on every route (sanity for the refusals below)', async () => {
    for (const route of a.routes) {
      const r = await call(route, credentialHeaders(route, a.tenant.key));
      expect({ route: route.name, status: r.status < 300 }).toEqual({ route: route.name, status: true });
    }
  });

  it('answers 401 without a credential, in the wrong header, mistyped, expired or revoked', async () => {
    for (const route of a.routes) {
      const cases: Array<[string, Record<string, string>]> = [
        ['none', {}],
        ['wrong header', wrongHeader(route, a.tenant.key)],
        ['mistyped', credentialHeaders(route, mistype(a.tenant.key))],
        ['garbage', credentialHeaders(route, 'not-a-key')],
        ['expired', credentialHeaders(route, expiredKey)],
        ['revoked', credentialHeaders(route, revokedKey)],
      ];
      for (const [label, headers] of cases) {
        const r = await call(route, headers);
        expect({ route: route.name, label, status: r.status }).toEqual({ route: route.name, label, status: 401 });
        if (route.forwarded) continue;
        expect(r.json.error.code).toBe('UNAUTHORIZED');
        expect(typeof r.json.error.request_id).toBe('string');
      }
    }
  });

  it('answers 403 for a key whose scope or IP allowlist does not cover the route', async () => {
    const readOnly = await makeKey(g, a.tenant.tenantId, { scopes: { access: 'read' } });
    const fenced = await makeKey(g, a.tenant.tenantId, { ip_allowlist: ['10.0.0.0/8', '2001:db8::/32'] });
    const apps = await makeKey(g, a.tenant.tenantId, { app_permissions: { pages: true } });
    for (const route of a.routes) {
      const scoped = await makeKey(g, a.tenant.tenantId, { scopes: { modules: [otherModule(route.module)] } });
      const cases: Array<[string, string]> = [
        ['module scope', scoped.key],
        ['ip allowlist', fenced.key],
      ];
      if (route.module !== 'pages') cases.push(['app_permissions', apps.key]);
      if (route.method !== 'GET' && !/search|chat|mcp/.test(route.path)) cases.push(['read-only', readOnly.key]);
      for (const [label, key] of cases) {
        const r = await call(route, credentialHeaders(route, key));
        expect({ route: route.name, label, status: r.status }).toEqual({ route: route.name, label, status: 403 });
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

  it('answers 404 for another tenant\'s resources on every route that names one', async () => {
    const key = a.tenant.key;
    expect((await http(g.publicUrl, 'GET', `/api/v1/projects/${b.projectId}`, { headers: { 'x-api-key': key } })).status).toBe(404);
    expect((await http(g.publicUrl, 'POST', `/api/v1/workspaces/${b.tenant.workspaceId}/activate`, { headers: { 'x-api-key': key } })).status).toBe(404);
    for (const route of a.routes) {
      const sep = route.path.includes('?') ? '&' : '?';
      for (const q of [`workspace_id=${b.tenant.workspaceId}`, `memory_id=${b.tenant.memoryId}`]) {
        const r = await call(route, credentialHeaders(route, key), `${route.path}${sep}${q}`);
        if (route.name === 'create workspace' || route.name === 'list webhooks') continue;
        expect({ route: route.name, q, status: r.status }).toEqual({ route: route.name, q, status: 404 });
      }
    }
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
      if (route.name !== 'mcp') expect(headers['x-api-key']).toBeUndefined();
      expect(headers.authorization).toBeUndefined();
    }
  });

  it('hides key management from API keys: a ck_ or mk_ key gets 404 there', async () => {
    const mem = await adminCall(g, 'PUT', `/internal/v1/tenants/${a.tenant.tenantId}/memories/m-${uid()}`, { name: 'm', hostname: `h-${uid()}.example.test` });
    const mk = await makeKey(g, a.tenant.tenantId, { type: 'memory', memory_id: mem.json.memory_id });
    for (const key of [a.tenant.key, mk.key]) {
      for (const [method, path] of [['GET', '/api/v1/api-keys'], ['POST', '/api/v1/api-keys'], ['POST', `/api/v1/api-keys/${a.tenant.keyId}/rotate`], ['DELETE', `/api/v1/api-keys/${a.tenant.keyId}`]] as const) {
        const r = await http(g.publicUrl, method, path, { headers: { 'x-api-key': key }, body: method === 'POST' ? {} : undefined });
        expect({ method, path, status: r.status }).toEqual({ method, path, status: 404 });
      }
    }
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': a.tenant.key } })).status).toBe(200);
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
