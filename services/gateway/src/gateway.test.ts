import { IdentitySigner, PgliteDb, createLogger, createMetricsRegistry, generateEncryptionKey, listen, parseEncryptionKeys, type StartedServer } from '@lore/runtime';
import { createGateway, type Gateway } from './gateway';
import { DEFAULT_PLANS, gatewayConfig } from './config';
import { setBilling } from './application/billing';
import { createWorkspace, deleteMemory, upsertMemory } from './application/tenancy';
import { MemoryGatewayState } from './state/memory-state';
import { ensureDevTenant } from './application/dev-tenant';
import { createUser, resolveSession } from './application/identity';

/** The embedded composition: PGlite, in-process state, the same apps the cluster runs. */
describe('gateway on embedded PostgreSQL (embedded mode)', () => {
  let db: PgliteDb;
  let gateway: Gateway;
  let server: StartedServer;

  beforeAll(async () => {
    db = await PgliteDb.open();
    gateway = await createGateway({
      db,
      state: new MemoryGatewayState(),
      logger: createLogger({ level: 'silent', service: 'gateway-unit' }),
      metrics: createMetricsRegistry('gateway-unit', { defaultMetrics: false }),
      signer: new IdentitySigner('unit-identity-secret-0123456789abcdef'),
      config: gatewayConfig({
        sessions: { secret: 'unit-session-secret-0123456789abcdef' },
        encryptionKeys: parseEncryptionKeys(generateEncryptionKey('unit')),
        plans: { ...DEFAULT_PLANS, tiny: { requests_per_month: 2 } },
      }),
    });
    server = await listen(gateway.publicApp, 0, '127.0.0.1');
  }, 60_000);

  afterAll(async () => {
    await server?.close(100);
    await gateway?.close();
    await db?.close();
  });

  it('creates a dev tenant with a ck_test_ key that answers the ping', async () => {
    const dev = await ensureDevTenant(gateway.context);
    expect(dev.api_key.startsWith('ck_test_')).toBe(true);
    const r = await fetch(`${server.url}/api/v1/pages/ping`, { headers: { 'x-api-key': dev.api_key } });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok', service: 'gateway', tenant_id: dev.tenant_id, role: 'tenant_admin' });
    const again = await ensureDevTenant(gateway.context);
    expect(again).toMatchObject({ tenant_id: dev.tenant_id, created: false });
  });

  it('lists the default workspace with its primary memory', async () => {
    const dev = await ensureDevTenant(gateway.context, { tenantId: 'dev-ws' });
    const r = await fetch(`${server.url}/api/v1/workspaces`, { headers: { 'x-api-key': dev.api_key } });
    const body = (await r.json()) as { workspaces: Array<{ is_default: boolean; primary_memory_id: string }>; active_workspace_id: string; default_workspace_id: string };
    expect(body.workspaces).toHaveLength(1);
    expect(body.workspaces[0]!.is_default).toBe(true);
    expect(body.workspaces[0]!.primary_memory_id).toMatch(/^mem_/);
    expect(body.active_workspace_id).toBe(body.default_workspace_id);
  });

  it('keeps row-level security on for the application role', async () => {
    const dev = await ensureDevTenant(gateway.context, { tenantId: 'dev-rls' });
    const visible = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM gateway.api_keys`);
    expect(visible.rows[0]!.n).toBe(0);
    const own = await db.withTenant(dev.tenant_id, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM gateway.api_keys`));
    expect(own.rows[0]!.n).toBe(1);
  });

  it('keeps user groups with their members, and reads a signed-in user\'s groups with the account', async () => {
    const dev = await ensureDevTenant(gateway.context, { tenantId: 'dev-groups' });
    const member = await createUser(gateway.context, dev.tenant_id, { email: 'member@groups.example', password: 'a long enough password', role: 'member' });
    const created = await fetch(`${server.url}/api/manage/admin/user-group`, {
      method: 'POST',
      headers: { 'x-api-key': dev.api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Readers', user_ids: [member.user_id] }),
    });
    expect(created.status).toBe(201);
    const group = (await created.json()) as { id: number; users: Array<{ email: string }> };
    expect(group.users).toEqual([{ user_id: member.user_id, email: 'member@groups.example', role: 'member' }]);
    const login = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'member@groups.example', password: 'a long enough password' }),
    });
    const { token } = (await login.json()) as { token: string };
    expect((await resolveSession(gateway.context, token))?.groups).toEqual([group.id]);
    // Row-level security: nothing of the groups outside the tenant's transaction.
    expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM gateway.user_group_members`)).rows[0]!.n).toBe(0);
  });

  it('answers the used-up monthly quota on the user-group routes in the envelope, as on all of /api/manage', async () => {
    const dev = await ensureDevTenant(gateway.context, { tenantId: 'dev-quota' });
    await setBilling(gateway.context, dev.tenant_id, { plan: 'tiny' });
    const groups = (method: string) =>
      fetch(`${server.url}/api/manage/admin/user-group`, { method, headers: { 'x-api-key': dev.api_key, 'content-type': 'application/json' }, body: method === 'POST' ? JSON.stringify({ name: 'Late' }) : undefined });
    for (let i = 0; i < 2; i++) expect((await groups('GET')).status).toBe(200);
    for (const method of ['GET', 'POST']) {
      const r = await groups(method);
      expect({ method, status: r.status, body: await r.json() }).toEqual({
        method,
        status: 402,
        body: { error: expect.objectContaining({ code: 'PLAN_LIMIT_EXCEEDED', details: expect.objectContaining({ reason: 'plan_limit', limit: 'requests_per_month' }) }) },
      });
    }
  });

  it('gives a workspace whose primary memory is deleted its oldest remaining memory as primary, and a workspace with none the next one', async () => {
    const dev = await ensureDevTenant(gateway.context, { tenantId: 'dev-primary' });
    const listed = async () => {
      const r = await fetch(`${server.url}/api/v1/workspaces`, { headers: { 'x-api-key': dev.api_key } });
      return (await r.json()) as { default_workspace_id: string; workspaces: Array<{ workspace_id: string; primary_memory_id: string }> };
    };
    const primaries = async () => Object.fromEntries((await listed()).workspaces.map((w) => [w.workspace_id, w.primary_memory_id]));
    const ws = (await listed()).default_workspace_id;
    const first = (await primaries())[ws]!;
    const put = (id: string, workspaceId = ws) => upsertMemory(gateway.context, dev.tenant_id, id, { name: id, hostname: `${id.replace(/_/g, '-')}.primary.example`, workspace_id: workspaceId });
    await put('mem_second');
    await put('mem_third');
    // Adding a memory leaves the primary as it is.
    expect((await primaries())[ws]).toBe(first);
    await deleteMemory(gateway.context, dev.tenant_id, first, false);
    expect((await primaries())[ws]).toBe('mem_second');
    await deleteMemory(gateway.context, dev.tenant_id, 'mem_second', true);
    expect((await primaries())[ws]).toBe('mem_third');
    // The last memory gone, the workspace has none; the next memory put there becomes its primary.
    await deleteMemory(gateway.context, dev.tenant_id, 'mem_third', false);
    expect((await primaries())[ws]).toBe('');
    await put('mem_fourth');
    expect((await primaries())[ws]).toBe('mem_fourth');
    // A primary memory moved to another workspace leaves its own the oldest one it has left.
    const other = await createWorkspace(gateway.context, dev.tenant_id, 'Other');
    await put('mem_fifth');
    await put('mem_fourth', other.workspace_id);
    expect(await primaries()).toEqual({ [ws]: 'mem_fifth', [other.workspace_id]: other.primary_memory_id });
  });

  it('answers 401 for a missing key and 404 for routes it does not own', async () => {
    expect((await fetch(`${server.url}/api/v1/pages/ping`)).status).toBe(401);
    const r = await fetch(`${server.url}/api/v1/memory/search`, { method: 'POST' });
    expect(r.status).toBe(404);
  });
});
