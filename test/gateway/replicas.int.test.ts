import { Redis } from 'ioredis';
import { freshDatabase, requireEnv, type TestDatabase } from '../support/infra';
import { adminCall, http, makeKey, makeTenant, uid, type TenantFixture } from './harness';
import { spawnGateway, type GatewayProcess } from './processes';

jest.setTimeout(180_000);

describe('two gateway processes sharing PostgreSQL and Redis', () => {
  let database: TestDatabase;
  let one: GatewayProcess;
  let two: GatewayProcess;
  let t: TenantFixture;
  const prefix = `gwrep:${uid()}:`;
  const ping = (g: GatewayProcess, key: string) => http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': key } });

  beforeAll(async () => {
    database = await freshDatabase('lore_gwrep');
    // Long credential caches on purpose: revocation must not depend on a cache expiring.
    const env = { GATEWAY_REDIS_PREFIX: prefix, GATEWAY_CREDENTIAL_CACHE_MS: '300000', GATEWAY_TENANT_CACHE_MS: '300000' };
    one = await spawnGateway(database, env);
    two = await spawnGateway(database, { ...env, GATEWAY_RUN_MIGRATIONS: 'false' });
    t = await makeTenant(one);
  });
  afterAll(async () => {
    await one?.stop();
    await two?.stop();
    await database?.drop();
  });

  it('rejects a key revoked through one process on the other at once, every time', async () => {
    for (let i = 0; i < 20; i++) {
      const k = await makeKey(one, t.tenantId, {});
      expect((await ping(one, k.key)).status).toBe(200);
      expect((await ping(two, k.key)).status).toBe(200);
      const [via, other] = i % 2 === 0 ? [one, two] : [two, one];
      expect((await adminCall(via, 'DELETE', `/internal/v1/tenants/${t.tenantId}/keys/${k.keyId}`)).status).toBe(204);
      const after = await ping(other, k.key);
      expect({ i, status: after.status }).toEqual({ i, status: 401 });
      expect((await ping(via, k.key)).status).toBe(401);
    }
  });

  it('rejects a key revoked through the portal route on one process on the other at once, every time', async () => {
    const email = `admin-${uid()}@example.test`;
    const password = 'a long enough password';
    expect((await adminCall(one, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password, role: 'admin' })).status).toBe(201);
    const login = await http(one.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
    expect(login.status).toBe(200);
    const portal = { authorization: `Bearer ${login.json.token}` };
    for (let i = 0; i < 10; i++) {
      const created = await http(one.publicUrl, 'POST', '/api/v1/api-keys', { headers: portal, body: { type: 'live', name: `portal-${i}` } });
      expect(created.status).toBe(201);
      const key = created.json.key as string;
      // Both processes hold the key in their caches (long-lived on purpose in this suite).
      expect((await ping(one, key)).status).toBe(200);
      expect((await ping(two, key)).status).toBe(200);
      const [via, other] = i % 2 === 0 ? [one, two] : [two, one];
      const revoked = await http(via.publicUrl, 'DELETE', `/api/v1/api-keys/${created.json.key_id}`, { headers: portal });
      expect(revoked.status).toBe(200);
      expect(revoked.json.status).toBe('revoked');
      const after = await ping(other, key);
      expect({ i, status: after.status }).toEqual({ i, status: 401 });
      expect(after.json.error.message).toMatch(/revoked/);
      expect((await ping(via, key)).status).toBe(401);
    }
  });

  it('ends a rotated key without overlap on the other process at once', async () => {
    const k = await makeKey(one, t.tenantId, {});
    expect((await ping(two, k.key)).status).toBe(200);
    const r = await adminCall(one, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${k.keyId}/rotate`, { overlap_seconds: 0 });
    expect(r.status).toBe(201);
    expect((await ping(two, k.key)).status).toBe(401);
    expect((await ping(two, r.json.key)).status).toBe(200);
  });

  it('still rejects revoked keys after the shared state lost all its records (database second)', async () => {
    const k = await makeKey(one, t.tenantId, {});
    expect((await ping(two, k.key)).status).toBe(200);
    expect((await adminCall(one, 'DELETE', `/internal/v1/tenants/${t.tenantId}/keys/${k.keyId}`)).status).toBe(204);
    // Simulate a Redis restart without persistence: drop every record of this deployment's prefix.
    const redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'));
    try {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== '0');
    } finally {
      redis.disconnect();
    }
    expect((await ping(two, k.key)).status).toBe(401);
    expect((await ping(one, k.key)).status).toBe(401);
    expect((await ping(two, t.key)).status).toBe(200);
  });
});
