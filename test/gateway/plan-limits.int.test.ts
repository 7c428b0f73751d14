import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeTenant, startGateway, uid, type GatewayUnderTest, type HttpResult } from './harness';

jest.setTimeout(120_000);

/**
 * Plan limits hold under concurrency: `max_projects`, `max_keys` and the tenant caps (webhook subscriptions, workspaces,
 * OAuth clients) are counted inside the transaction that inserts, under the tenant's row lock, so N creates racing at a limit of L let exactly L through, whichever replica takes them.
 */
describe('plan limits under concurrent creates', () => {
  const RACERS = 20;
  const LIMIT = 3;
  let database: TestDatabase;
  let a: GatewayUnderTest;
  let b: GatewayUnderTest;

  beforeAll(async () => {
    database = await freshDatabase('lore_gwplan');
    const prefix = `gwplan:${uid()}:`;
    // The tenant's first key (made with the tenant) counts, so `max_keys` is one above the racers' share.
    const config = { plans: { race: { max_projects: LIMIT, max_keys: LIMIT + 1 }, unlimited: {} }, defaultPlan: 'unlimited' };
    a = await startGateway(database, config, { redisPrefix: prefix });
    b = await startGateway(database, config, { redisPrefix: prefix, migrate: false });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  /** A tenant on the `race` plan with its first key; half of the racers go through each replica. */
  async function racingTenant() {
    const t = await makeTenant(a);
    expect((await adminCall(a, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { plan: 'race' })).status).toBe(200);
    return t;
  }
  const replica = (i: number) => (i % 2 === 0 ? a : b);

  function expectExactlyLimit(results: HttpResult[], created: number, limit: string): void {
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === created)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 402)).toHaveLength(RACERS - LIMIT);
    for (const r of results.filter((x) => x.status === 402)) {
      expect(r.json.error).toMatchObject({ code: 'PLAN_LIMIT_EXCEEDED', details: { reason: 'plan_limit', limit } });
    }
  }

  it(`lets exactly ${LIMIT} of ${RACERS} concurrent project creates through (API key, two replicas)`, async () => {
    const t = await racingTenant();
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) => http(replica(i).publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': t.key }, body: { name: 'Race' } })),
    );
    expectExactlyLimit(results, 201, 'max_projects');
    // The same name raced: every winner got a slug of its own.
    const slugs = results.filter((r) => r.status === 201).map((r) => r.json.slug as string);
    expect(new Set(slugs).size).toBe(LIMIT);
    const list = await http(a.publicUrl, 'GET', '/api/v1/projects', { headers: { 'x-api-key': t.key } });
    expect(list.json.count).toBe(LIMIT);
  });

  it(`lets exactly ${LIMIT} of ${RACERS} concurrent key creates through the admin API (operator issuance)`, async () => {
    const t = await racingTenant();
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) => adminCall(replica(i), 'POST', `/internal/v1/tenants/${t.tenantId}/keys`, { type: 'live', name: `race-${i}`, client_token: `race-${i}` })),
    );
    expectExactlyLimit(results, 201, 'max_keys');
  });

  it(`lets exactly ${LIMIT} of ${RACERS} concurrent key creates through the portal`, async () => {
    const t = await racingTenant();
    const email = `admin-${uid()}@example.test`;
    const password = 'a long enough password';
    expect((await adminCall(a, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password, role: 'admin' })).status).toBe(201);
    const login = await http(a.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
    expect(login.status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) =>
        http(replica(i).publicUrl, 'POST', '/api/v1/api-keys', { headers: { authorization: `Bearer ${login.json.token}` }, body: { type: 'live', name: `race-${i}` } }),
      ),
    );
    expectExactlyLimit(results, 201, 'max_keys');
  });

  it('answers a replayed client token as a replay, not as the plan limit the first call reached', async () => {
    const t = await racingTenant();
    const token = `replay-${uid()}`;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => adminCall(replica(i), 'POST', `/internal/v1/tenants/${t.tenantId}/keys`, { type: 'live', name: 'same', client_token: token })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(7);
  });

  it('lets exactly the tenant cap of 50 webhook subscriptions through 70 concurrent creates on two replicas', async () => {
    const t = await makeTenant(a);
    const results = await Promise.all(
      Array.from({ length: 70 }, (_, i) =>
        http(replica(i).publicUrl, 'POST', '/api/v1/webhooks', { headers: { 'x-api-key': t.key }, body: { url: `https://hooks.example.com/race/${i}`, events: ['memory.ingest.completed'] } }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(50);
    expect(statuses.filter((s) => s === 422)).toHaveLength(20);
    const page = await http(a.publicUrl, 'GET', '/api/v1/webhooks?limit=100', { headers: { 'x-api-key': t.key } });
    expect(page.json.count).toBe(50);
  });

  it('lets exactly the tenant cap of 100 workspaces (the default one included) through 120 concurrent creates on two replicas', async () => {
    const t = await makeTenant(a);
    const results = await Promise.all(
      Array.from({ length: 120 }, (_, i) => http(replica(i).publicUrl, 'POST', '/api/v1/workspaces', { headers: { 'x-api-key': t.key }, body: { name: `Race ${i}` } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(99);
    expect(statuses.filter((s) => s === 409)).toHaveLength(21);
    for (const r of results.filter((x) => x.status === 409)) {
      expect(r.json.error).toMatchObject({ code: 'CONFLICT', message: 'the tenant has 100 workspaces, the most it may have', details: { limit: 'max_workspaces', value: 100 } });
    }
    const list = await http(b.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': t.key } });
    expect(list.json.workspaces).toHaveLength(100);
  });

  it('lets exactly the tenant cap of 100 OAuth clients through 120 concurrent creates on two replicas; a revoked one frees its place', async () => {
    const t = await makeTenant(a);
    const email = `admin-${uid()}@example.test`;
    const password = 'a long enough password';
    expect((await adminCall(a, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password, role: 'admin' })).status).toBe(201);
    const login = await http(a.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
    const auth = { authorization: `Bearer ${login.json.token}` };
    const create = (g: GatewayUnderTest, name: string) => http(g.publicUrl, 'POST', '/api/v1/oauth-clients', { headers: auth, body: { name, scopes: ['projects:read'] } });
    const results = await Promise.all(Array.from({ length: 120 }, (_, i) => create(replica(i), `race-${i}`)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(100);
    expect(statuses.filter((s) => s === 409)).toHaveLength(20);
    for (const r of results.filter((x) => x.status === 409)) {
      expect(r.json.error).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/^the tenant has 100 OAuth clients, the most it may have/), details: { limit: 'max_oauth_clients', value: 100 } });
    }
    const revoked = results.find((r) => r.status === 201)!.json.client_id as string;
    expect((await http(a.publicUrl, 'DELETE', `/api/v1/oauth-clients/${revoked}`, { headers: auth })).status).toBe(200);
    expect((await create(b, 'after revoking')).status).toBe(201);
    expect((await create(a, 'one more')).status).toBe(409);
  });
});
