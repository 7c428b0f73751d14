import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest } from './harness';

jest.setTimeout(120_000);

describe('gateway smoke', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;

  beforeAll(async () => {
    database = await freshDatabase('lore_gw');
    echo = await startEcho();
    g = await startGateway(database, { upstreams: { graph: echo.url } }, { redisPrefix: `gwt:${uid()}:` });
  });
  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await database?.drop();
  });

  it('pings with a fresh key and reports the tenant', async () => {
    const t = await makeTenant(g);
    const r = await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok', service: 'gateway', tenant_id: t.tenantId, role: 'tenant_admin' });
    expect(r.headers['ratelimit-limit']).toBeDefined();
  });

  it('forwards memory routes with a signed identity', async () => {
    const t = await makeTenant(g);
    const r = await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': t.key, 'x-tenant-id': 'evil' }, body: { query: 'x' } });
    expect(r.status).toBe(200);
    const identity = await g.signer.verify(r.json.headers['x-lore-identity']);
    expect(identity.tenant_id).toBe(t.tenantId);
    expect(r.json.headers['x-tenant-id']).toBeUndefined();
    expect(r.json.headers['x-api-key']).toBeUndefined();
  });

  it('answers the admin API only with its token', async () => {
    const r = await http(g.adminUrl, 'POST', '/internal/v1/tenants', { body: { name: 'x' } });
    expect(r.status).toBe(401);
    const ok = await adminCall(g, 'POST', '/internal/v1/tenants', { name: 'x' });
    expect(ok.status).toBe(201);
  });
});
