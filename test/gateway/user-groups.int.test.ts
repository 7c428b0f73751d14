/**
 * User groups (docs/gateway.md, "User groups") on real PostgreSQL and Redis: the routes under spec 2's
 * `/api/manage/admin/user-group` that the gateway serves itself, their refusals in spec 2's shapes, and the groups
 * a signed-in user's identity carries to the services behind the gateway (an echo upstream shows what it got).
 */
import { MAX_GROUPS_PER_USER } from '@lore/contracts';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeKey, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest, type TenantFixture } from './harness';

jest.setTimeout(120_000);

type Json = Record<string, any>;
const PASSWORD = 'a long enough password';
const PATH = '/api/manage/admin/user-group';

describe('gateway: user groups', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;
  let a: TenantFixture;
  let b: TenantFixture;
  let admin: { token: string; userId: string };
  let bAdmin: { token: string; userId: string };

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) => http(g.publicUrl, method, path, { headers, body });

  async function user(tenantId: string, role: 'admin' | 'member'): Promise<{ token: string; userId: string; email: string }> {
    const email = `${role}-${uid()}@example.test`;
    const u = await adminCall(g, 'POST', `/internal/v1/tenants/${tenantId}/users`, { email, password: PASSWORD, role });
    expect(u.status).toBe(201);
    const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } });
    expect(login.status).toBe(200);
    return { token: login.json.token, userId: u.json.user_id, email };
  }

  /** The identity the gateway signed for a forwarded request of this credential (core is the echo upstream here). */
  async function identityOf(headers: Record<string, string>): Promise<Json> {
    const r = await call('GET', '/api/chat/get-user-chat-sessions', headers);
    expect(r.status).toBe(200);
    return (await g.signer.verify(r.json.headers['x-lore-identity'])) as Json;
  }

  async function group(headers: Record<string, string>, body: Json): Promise<Json> {
    const r = await call('POST', PATH, headers, body);
    expect({ status: r.status, body: r.json }).toEqual({ status: 201, body: expect.anything() });
    return r.json as Json;
  }

  beforeAll(async () => {
    database = await freshDatabase('lore_gwgroups');
    echo = await startEcho();
    g = await startGateway(
      database,
      {
        upstreams: { core: echo.url },
        rateLimit: { perSecond: 10_000, burst: 10_000 },
        loginRateLimit: { perSecond: 100, burst: 200 },
        // Every tenant is unlimited but one the quota test moves to `tiny`.
        plans: { unlimited: {}, tiny: { requests_per_month: 3 } },
        defaultPlan: 'unlimited',
      },
      { redisPrefix: `gwgroups:${uid()}:` },
    );
    a = await makeTenant(g);
    b = await makeTenant(g);
    admin = await user(a.tenantId, 'admin');
    bAdmin = await user(b.tenantId, 'admin');
  });

  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await database?.drop();
  });

  it('lets an administrator create, list, read, rename, re-member and delete groups, in spec 2\'s manage style', async () => {
    const m1 = await user(a.tenantId, 'member');
    const m2 = await user(a.tenantId, 'member');
    const created = await call('POST', PATH, bearer(admin.token), { name: `  Research ${uid()} `, user_ids: [m2.userId, m1.userId, m1.userId] });
    expect(created.status).toBe(201);
    expect(created.headers['ratelimit-limit']).toBeDefined();
    const ids = [m1.userId, m2.userId].sort();
    const byId = new Map([[m1.userId, m1], [m2.userId, m2]]);
    expect(created.json).toEqual({
      id: expect.any(Number),
      name: expect.stringMatching(/^Research [0-9a-f]+$/),
      user_ids: ids,
      users: ids.map((id) => ({ user_id: id, email: byId.get(id)!.email, role: 'member' })),
      time_created: expect.any(String),
      time_updated: expect.any(String),
    });
    const id = created.json.id as number;

    // A tenant key administers groups too, in each place /api/manage takes a key.
    const other = await group({ 'x-api-key': a.key }, { name: `Empty ${uid()}` });
    expect(other.user_ids).toEqual([]);
    expect((await call('GET', `${PATH}/${id}`, { cookie: `lore_api_key=${a.key}` })).json).toEqual(created.json);
    const list = await call('GET', `${PATH}?tenant_id=ignored`, bearer(a.key));
    expect(list.status).toBe(200);
    expect((list.json as Json[]).map((x) => x.id)).toEqual([id, other.id]);

    const renamed = await call('PATCH', `${PATH}/${id}`, bearer(admin.token), { name: 'Research (renamed)' });
    expect(renamed.json).toMatchObject({ id, name: 'Research (renamed)', user_ids: ids });
    const remembered = await call('PATCH', `${PATH}/${id}`, bearer(admin.token), { user_ids: [m2.userId, admin.userId] });
    expect(remembered.status).toBe(200);
    expect(remembered.json.user_ids).toEqual([m2.userId, admin.userId].sort());
    expect(remembered.json.users.find((u: Json) => u.user_id === admin.userId).role).toBe('admin');

    expect((await call('DELETE', `${PATH}/${other.id}`, bearer(admin.token))).status).toBe(204);
    expect((await call('GET', `${PATH}/${other.id}`, bearer(admin.token))).status).toBe(404);
    expect((await call('DELETE', `${PATH}/${other.id}`, bearer(admin.token))).json).toEqual({ detail: 'user group not found' });
    // Ids are never reused: the next group gets a new one.
    expect((await group(bearer(admin.token), { name: `Next ${uid()}` })).id).toBeGreaterThan(other.id as number);
  });

  it('refuses, in spec 2\'s shapes: non-administrators, bad input, taken names, another tenant\'s users and groups', async () => {
    const member = await user(a.tenantId, 'member');
    const g1 = await group(bearer(admin.token), { name: `Ops ${uid()}`, user_ids: [member.userId] });
    const bGroup = await group(bearer(bAdmin.token), { name: `B ${uid()}` });
    const bMember = await user(b.tenantId, 'member');

    // Who: members, OAuth integrations and memory keys are not administrators; a key's scope still applies.
    const client = await call('POST', '/api/v1/oauth-clients', bearer(admin.token), { name: `c-${uid()}`, scopes: ['*:write'] });
    const token = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.json.client_id, client_secret: client.json.client_secret } });
    const pagesOnly = await makeKey(g, a.tenantId, { scopes: { modules: ['pages'] } });
    const readOnly = await makeKey(g, a.tenantId, { scopes: { access: 'read' } });
    // Keys narrowed to a workspace, a project or some memories: groups are the whole tenant's, never theirs.
    const pinned = await makeKey(g, a.tenantId, { workspace_id: a.workspaceId });
    const project = await call('POST', '/api/v1/projects', { 'x-api-key': a.key }, { name: `P ${uid()}` });
    const projectKey = await makeKey(g, a.tenantId, { project_id: project.json.project_id });
    const memoryScoped = await makeKey(g, a.tenantId, { scopes: { memories: [a.memoryId] } });
    for (const [label, headers] of [
      ['key bound to a workspace', bearer(pinned.key)],
      ['key of a project', bearer(projectKey.key)],
      ['key scoped to a memory', bearer(memoryScoped.key)],
    ] as Array<[string, Record<string, string>]>) {
      for (const [method, path] of [['GET', PATH], ['POST', PATH], ['PATCH', `${PATH}/${g1.id}`]] as const) {
        const r = await call(method, path, headers, method === 'GET' ? undefined : { name: `X ${uid()}`, user_ids: [] });
        expect({ label, method, status: r.status, detail: r.json?.detail }).toEqual({ label, method, status: 403, detail: expect.stringMatching(/^user groups are the whole tenant's/) });
      }
    }
    for (const [label, headers, status] of [
      ['member', bearer(member.token), 403],
      ['OAuth token', bearer(token.json.access_token), 403],
      ['key scoped to pages', bearer(pagesOnly.key), 403],
      ['read-only key writing', bearer(readOnly.key), 403],
      ['no credential', {}, 401],
      ['garbage', bearer('not-a-key'), 401],
    ] as Array<[string, Record<string, string>, number]>) {
      const r = await call('POST', PATH, headers, { name: `X ${uid()}` });
      expect({ label, status: r.status, detail: typeof r.json?.detail }).toEqual({ label, status, detail: 'string' });
    }
    expect((await call('GET', PATH, bearer(member.token))).json).toEqual({ detail: 'administrators only' });
    expect((await call('GET', PATH, bearer(readOnly.key))).status).toBe(200);

    // What: every issue listed with its place, 422.
    const bad = await call('POST', PATH, bearer(admin.token), { name: ' ', user_ids: 'all', cc_pair_ids: [1] });
    expect(bad.status).toBe(422);
    expect((bad.json.detail as Json[]).map((d) => d.loc)).toEqual(expect.arrayContaining([['body', 'name'], ['body', 'user_ids'], ['body']]));
    for (const path of [`${PATH}/abc`, `${PATH}/-1`, `${PATH}/99999999999`]) {
      const r = await call('GET', path, bearer(admin.token));
      expect({ path, status: r.status, loc: r.json.detail?.[0]?.loc }).toEqual({ path, status: 422, loc: ['path', 'group_id'] });
    }
    const notJson = await http(g.publicUrl, 'POST', PATH, { headers: { ...bearer(admin.token), 'content-type': 'application/json' }, raw: '{"name":' });
    expect({ status: notJson.status, detail: typeof notJson.json.detail }).toEqual({ status: 400, detail: 'string' });

    // A name is taken once per tenant, whatever its case; another tenant may use it.
    const taken = await call('POST', PATH, bearer(admin.token), { name: (g1.name as string).toUpperCase() });
    expect(taken).toMatchObject({ status: 409, json: { detail: 'a user group with this name exists' } });
    expect((await call('PATCH', `${PATH}/${g1.id}`, bearer(admin.token), { name: (bGroup.name as string) })).status).toBe(200);
    expect((await call('POST', PATH, bearer(bAdmin.token), { name: g1.name })).status).toBe(201);

    // Members are users of the tenant: another tenant's user or an unknown id is 400, and nothing changes.
    for (const ids of [[bMember.userId], [member.userId, 'usr_nobody']]) {
      const r = await call('PATCH', `${PATH}/${g1.id}`, bearer(admin.token), { user_ids: ids });
      expect({ status: r.status, detail: r.json.detail }).toEqual({ status: 400, detail: expect.stringContaining('not users of this tenant') });
    }
    expect((await call('POST', PATH, bearer(admin.token), { name: `Y ${uid()}`, user_ids: [bMember.userId] })).status).toBe(400);
    expect((await call('GET', `${PATH}/${g1.id}`, bearer(admin.token))).json.user_ids).toEqual([member.userId]);

    // Another tenant's group is absent, whatever the method; a workspace of another tenant named in the query too.
    for (const [method, body] of [['GET', undefined], ['PATCH', { name: 'stolen' }], ['DELETE', undefined]] as const) {
      const r = await call(method, `${PATH}/${bGroup.id}`, bearer(admin.token), body);
      expect({ method, status: r.status, body: r.json }).toEqual({ method, status: 404, body: { detail: 'user group not found' } });
    }
    expect((await call('GET', `${PATH}?workspace_id=${b.workspaceId}`, bearer(admin.token))).status).toBe(404);
    expect((await call('GET', `${PATH}/${bGroup.id}`, bearer(bAdmin.token))).json).toMatchObject({ name: bGroup.name });
    expect((await call('GET', PATH, bearer(admin.token))).json.map((x: Json) => x.id)).not.toContain(bGroup.id);

    // A method the path does not declare is 405 with the methods it does (docs/gateway.md), an unknown path 404;
    // neither reaches core.
    const before = echo.received.length;
    const put = await call('PUT', `${PATH}/${g1.id}`, bearer(admin.token), { name: 'x' });
    expect(put.status).toBe(405);
    expect(String(put.headers.allow).split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'HEAD', 'PATCH']);
    expect((await call('GET', `${PATH}/${g1.id}/members`, bearer(admin.token))).status).toBe(404);
    expect(echo.received.length).toBe(before);
  });

  it('signs a signed-in user\'s groups into the identity, read on every request, and none for keys', async () => {
    const member = await user(a.tenantId, 'member');
    expect(await identityOf(bearer(member.token))).toMatchObject({ credential: 'session', role: 'member', groups: [], email: member.email });
    const x = await group(bearer(admin.token), { name: `X ${uid()}`, user_ids: [member.userId] });
    const y = await group(bearer(admin.token), { name: `Y ${uid()}`, user_ids: [member.userId, admin.userId] });
    // The same session, no new sign-in: the next request carries the new memberships.
    expect((await identityOf(bearer(member.token))).groups).toEqual([x.id, y.id]);
    expect((await identityOf(bearer(admin.token))).groups).toEqual(expect.arrayContaining([y.id]));

    expect((await call('PATCH', `${PATH}/${x.id}`, bearer(admin.token), { user_ids: [] })).status).toBe(200);
    expect((await identityOf(bearer(member.token))).groups).toEqual([y.id]);
    expect((await call('DELETE', `${PATH}/${y.id}`, bearer(admin.token))).status).toBe(204);
    expect((await identityOf(bearer(member.token))).groups).toEqual([]);

    // Keys and OAuth tokens belong to no group: their identity names none.
    expect(await identityOf(bearer(a.key))).not.toHaveProperty('groups');
    expect(await identityOf(bearer(a.key))).not.toHaveProperty('email');

    // Deleting a user removes their memberships.
    const z = await group(bearer(admin.token), { name: `Z ${uid()}`, user_ids: [member.userId, admin.userId] });
    await g.db.withTenant(a.tenantId, (sql) => sql.query(`DELETE FROM gateway.users WHERE tenant_id = $1 AND user_id = $2`, [a.tenantId, member.userId]));
    expect((await call('GET', `${PATH}/${z.id}`, bearer(admin.token))).json.user_ids).toEqual([admin.userId]);
    expect((await call('GET', '/api/chat/get-user-chat-sessions', bearer(member.token))).status).toBe(401);
  });

  it('answers a used-up monthly quota in the gateway\'s envelope on every /api/manage route, its own and core\'s alike', async () => {
    const t = await makeTenant(g);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { plan: 'tiny' })).status).toBe(200);
    let spent = 0;
    while ((await call('GET', PATH, bearer(t.key))).status === 200) expect(++spent).toBeLessThanOrEqual(3);
    const planLimit = { error: expect.objectContaining({ code: 'PLAN_LIMIT_EXCEEDED', details: expect.objectContaining({ reason: 'plan_limit', limit: 'requests_per_month' }) }) };
    for (const [method, path, body] of [
      ['GET', PATH],
      ['POST', PATH, { name: `Late ${uid()}` }],
      ['DELETE', `${PATH}/1`],
      ['GET', '/api/manage/credential'],
      ['POST', '/api/manage/admin/connector', { name: 'x' }],
    ] as Array<[string, string, unknown?]>) {
      for (const headers of [bearer(t.key), { 'x-api-key': t.key }]) {
        const r = await call(method, path, headers, body);
        expect({ method, path, status: r.status, body: r.json }).toEqual({ method, path, status: 402, body: planLimit });
      }
    }
  });

  it(`keeps a user in at most ${MAX_GROUPS_PER_USER} groups, even when changes race`, async () => {
    const busy = await user(a.tenantId, 'member');
    const room = 3;
    for (let i = 0; i < MAX_GROUPS_PER_USER - room; i++) await group(bearer(a.key), { name: `Many ${i} ${uid()}`, user_ids: [busy.userId] });
    const spares = await Promise.all(Array.from({ length: 12 }, (_, i) => group(bearer(a.key), { name: `Spare ${i} ${uid()}` })));
    // Twelve changes at once, each adding the user to another group, with room for three: exactly three get through.
    const answers = await Promise.all([
      ...spares.slice(0, 10).map((s) => call('PATCH', `${PATH}/${s.id}`, bearer(a.key), { user_ids: [busy.userId] })),
      ...[0, 1].map(() => call('POST', PATH, bearer(a.key), { name: `Race ${uid()}`, user_ids: [busy.userId] })),
    ]);
    expect(answers.filter((r) => r.status < 300)).toHaveLength(room);
    for (const r of answers.filter((x) => x.status >= 300)) {
      expect({ status: r.status, detail: r.json.detail }).toEqual({ status: 400, detail: expect.stringContaining(`at most ${MAX_GROUPS_PER_USER} groups`) });
    }
    const identity = await identityOf(bearer(busy.token));
    expect(identity.groups).toHaveLength(MAX_GROUPS_PER_USER);
    // Replacing a group's members with the same user again is not a new membership.
    const mine = identity.groups[0] as number;
    expect((await call('PATCH', `${PATH}/${mine}`, bearer(a.key), { user_ids: [busy.userId] })).status).toBe(200);
  });
});
