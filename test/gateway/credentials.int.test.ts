import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, jwtClaims, signSessionJwt, http, makeKey, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest, type TenantFixture } from './harness';

jest.setTimeout(120_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('gateway credentials: rotation, expiry, memory keys, sessions, OAuth', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;
  let t: TenantFixture;
  const ping = (key: string) => http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': key } });

  beforeAll(async () => {
    database = await freshDatabase('lore_gwcred');
    echo = await startEcho();
    // Many sign-ins from one address: the login throttle (10 at once, then 1/s) would refuse some of them.
    g = await startGateway(database, { upstreams: { graph: echo.url }, loginRateLimit: { perSecond: 50, burst: 100 } }, { redisPrefix: `gwcred:${uid()}:` });
    t = await makeTenant(g);
  });
  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await database?.drop();
  });

  describe('key format', () => {
    it('returns the plaintext once, with a type prefix and a checksum, and never again', async () => {
      const created = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys`, { type: 'test', name: 'fmt' });
      expect(created.status).toBe(201);
      expect(created.json.key).toMatch(/^ck_test_[0-9A-Za-z]{46}$/);
      expect(created.json.prefix).toBe(created.json.key.slice(0, 12));
      const shown = await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${created.json.key_id}`);
      expect(shown.status).toBe(200);
      expect(JSON.stringify(shown.json)).not.toContain(created.json.key);
      expect(shown.json.revoked_at).toBeNull();
      const stored = await g.db.asOwner((sql) => sql.query<{ key_hash: string }>(`SELECT key_hash FROM gateway.api_keys WHERE key_id = $1`, [created.json.key_id]));
      expect(stored.rows[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(stored.rows[0]!.key_hash).not.toContain(created.json.key.slice(8));
    });
  });

  describe('authentication outcomes', () => {
    it('counts every refusal under its outcome, the ones found before any lookup included', async () => {
      const decisions = async () =>
        Object.fromEntries((await g.gateway.context.gatewayMetrics.authDecisions.get()).values.map((v) => [String(v.labels.outcome), v.value]));
      const before = await decisions();
      const counted = (after: Record<string, number>, outcome: string) => (after[outcome] ?? 0) - (before[outcome] ?? 0);
      expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping')).status).toBe(401);
      expect((await ping(`${t.key.slice(0, -1)}${t.key.endsWith('A') ? 'B' : 'A'}`)).status).toBe(401);
      expect((await ping('ck_test_bogus')).status).toBe(401);
      const forged = { authorization: `Bearer ${signSessionJwt({ sub: 'nobody', tid: 'none', exp: 1 })}` };
      const badSession = await http(g.publicUrl, 'GET', '/memory/departments', { headers: forged });
      expect(badSession.status).toBe(401);
      // The portal's and the password routes' sessions are counted too (a stolen token is tried there first).
      expect((await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: forged })).status).toBe(401);
      expect((await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: forged, body: { old_password: 'a', new_password: 'b' } })).status).toBe(401);
      expect((await ping(t.key)).status).toBe(200);
      // A revoked key is counted as revoked, an expired one as dead.
      const revoked = await makeKey(g, t.tenantId, {});
      expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${t.tenantId}/keys/${revoked.keyId}`)).status).toBe(204);
      expect((await ping(revoked.key)).status).toBe(401);
      const after = await decisions();
      expect({
        missing: counted(after, 'missing_credential'),
        malformed: counted(after, 'malformed_credential'),
        session: counted(after, 'invalid_session'),
        revoked: counted(after, 'revoked'),
        dead: counted(after, 'dead_credential'),
        ok: counted(after, 'ok'),
      }).toEqual({ missing: 1, malformed: 2, session: 3, revoked: 1, dead: 0, ok: 1 });
      // A forwarded request is counted under its surface, not as an unmatched one.
      const http401 = (await g.gateway.context.metrics.getSingleMetric('lore_http_requests_total')!.get()).values.filter((v) => String(v.labels.status) === '401');
      expect(http401.find((v) => v.labels.route === 'forward graph')?.value).toBe(1);
    });
  });

  describe('challenges', () => {
    it('names on every 401 the schemes its surface reads a credential from (WWW-Authenticate)', async () => {
      const challengeOf = async (path: string, headers: Record<string, string> = {}) => {
        const r = await http(g.publicUrl, 'GET', path, { headers });
        expect(r.status).toBe(401);
        return r.headers['www-authenticate'];
      };
      expect(await challengeOf('/api/v1/pages/ping')).toBe('ApiKey realm="lore", header="x-api-key"');
      expect(await challengeOf('/api/v1/pages/ping', { 'x-api-key': 'ck_test_bogus' })).toBe('ApiKey realm="lore", header="x-api-key"');
      expect(await challengeOf('/memory/departments')).toBe('Bearer realm="lore", ApiKey realm="lore", header="x-api-key"');
      expect(await challengeOf('/api/manage/admin/user-group', { authorization: 'Bearer nonsense' })).toBe('Bearer realm="lore", ApiKey realm="lore", header="x-api-key", cookie="lore_api_key"');
      // The portal's and the password routes read a session token only.
      expect(await challengeOf('/api/v1/api-keys')).toBe('Bearer realm="lore"');
      expect(await challengeOf('/api/v1/oauth-clients', { authorization: `Bearer ${signSessionJwt({ sub: 'nobody', tid: 'none', exp: 1 })}` })).toBe('Bearer realm="lore"');
      const password = await http(g.publicUrl, 'POST', '/api/password/change-password', { body: { old_password: 'a', new_password: 'b' } });
      expect([password.status, password.headers['www-authenticate']]).toEqual([401, 'Bearer realm="lore"']);
    });
  });

  describe('rotation', () => {
    it('keeps the old key working for the overlap, then only the new one', async () => {
      const old = await makeKey(g, t.tenantId, {});
      expect((await ping(old.key)).status).toBe(200);
      const r = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${old.keyId}/rotate`, { overlap_seconds: 2 });
      expect(r.status).toBe(201);
      expect(r.json.replaced_key_id).toBe(old.keyId);
      expect(Date.parse(r.json.replaced_key_expires_at)).toBeGreaterThan(Date.now());
      expect((await ping(old.key)).status).toBe(200);
      expect((await ping(r.json.key)).status).toBe(200);
      await sleep(2300);
      // Spec 1: the original is revoked once the overlap ends (not merely expired).
      const after = await ping(old.key);
      expect(after.status).toBe(401);
      expect(after.json.error.message).toMatch(/revoked/);
      expect((await ping(r.json.key)).status).toBe(200);
      const record = await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${old.keyId}`);
      expect(record.json).toMatchObject({ status: 'revoked', revoked_at: r.json.replaced_key_expires_at, replaced_by: r.json.key_id });
      const again = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${old.keyId}/rotate`, {});
      expect(again.status).toBe(409);
    });

    it('lets a replacement own what the keys before it made: the identity\'s subject is the first key of the chain', async () => {
      const subjectOf = async (key: string) => {
        const r = await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': key }, body: { query: 'q' } });
        expect(r.status).toBe(200);
        return (await g.signer.verify(String(r.json.headers['x-lore-identity']))).subject;
      };
      const first = await makeKey(g, t.tenantId, {});
      expect(await subjectOf(first.key)).toBe(first.keyId);
      const second = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${first.keyId}/rotate`, { overlap_seconds: 60 });
      expect(second.status).toBe(201);
      expect(await subjectOf(second.json.key)).toBe(first.keyId);
      expect(await subjectOf(first.key)).toBe(first.keyId);
      const third = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${second.json.key_id}/rotate`, { overlap_seconds: 0 });
      expect(third.status).toBe(201);
      expect(await subjectOf(third.json.key)).toBe(first.keyId);
      // Another key, and a key made afresh, are their own.
      const other = await makeKey(g, t.tenantId, {});
      expect(await subjectOf(other.key)).toBe(other.keyId);
      // Revocation still follows the key itself: the second is revoked, the third goes on.
      expect((await ping(second.json.key)).status).toBe(401);
      expect((await ping(third.json.key)).status).toBe(200);
    });

    it('ends the overlap of the key a rotated replacement replaced: at most two keys of a chain work at once', async () => {
      const first = await makeKey(g, t.tenantId, {});
      const second = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${first.keyId}/rotate`, { overlap_seconds: 3600 });
      expect([(await ping(first.key)).status, (await ping(second.json.key)).status]).toEqual([200, 200]);
      const third = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${second.json.key_id}/rotate`, { overlap_seconds: 3600 });
      expect(third.status).toBe(201);
      // The first's hour of overlap ended with the second rotation; the second keeps its own.
      const firstAfter = await ping(first.key);
      expect([firstAfter.status, firstAfter.json.error?.message]).toEqual([401, expect.stringMatching(/revoked/)]);
      expect([(await ping(second.json.key)).status, (await ping(third.json.key)).status]).toEqual([200, 200]);
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${first.keyId}`)).json.status).toBe('revoked');
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${second.json.key_id}`)).json.status).toBe('active');
    });

    it('answers the same reason on every replica at once: a rotated key\'s, a revoked key\'s, not the one the other replica had cached', async () => {
      const prefix = `gwcred-replicas:${uid()}:`;
      const first = await startGateway(database, { upstreams: { graph: echo.url } }, { redisPrefix: prefix, migrate: false });
      const second = await startGateway(database, { upstreams: { graph: echo.url } }, { redisPrefix: prefix, migrate: false });
      try {
        const on = (gw: typeof first, key: string) => http(gw.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': key } });
        const rotated = await makeKey(first, t.tenantId, {});
        const revoked = await makeKey(first, t.tenantId, {});
        // Both replicas know both keys (cached as live).
        for (const gw of [first, second]) for (const k of [rotated, revoked]) expect((await on(gw, k.key)).status).toBe(200);
        expect((await adminCall(first, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${rotated.keyId}/rotate`, { overlap_seconds: 0 })).status).toBe(201);
        expect((await adminCall(first, 'DELETE', `/internal/v1/tenants/${t.tenantId}/keys/${revoked.keyId}`)).status).toBe(204);
        // Until 2026-11-30 the replica that had them cached said "the credential has been revoked" until its cache expired.
        for (const gw of [second, first]) {
          const a = await on(gw, rotated.key);
          expect([a.status, a.json.error.message]).toEqual([401, 'the key has been revoked: it was rotated and its overlap has ended']);
          const b = await on(gw, revoked.key);
          expect([b.status, b.json.error.message]).toEqual([401, 'the key has been revoked']);
        }
      } finally {
        await first.close();
        await second.close();
      }
    });

    it('with no overlap stops the old key at once', async () => {
      const old = await makeKey(g, t.tenantId, {});
      expect((await ping(old.key)).status).toBe(200);
      const r = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${old.keyId}/rotate`, { overlap_seconds: 0 });
      expect(r.status).toBe(201);
      const after = await ping(old.key);
      expect(after.status).toBe(401);
      expect(after.json.error.message).toMatch(/revoked/);
      expect((await ping(r.json.key)).status).toBe(200);
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${old.keyId}`)).json.status).toBe('revoked');
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${r.json.key_id}`)).json.status).toBe('active');
      // Rotating the revoked original again names its replacement.
      const again = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${old.keyId}/rotate`, {});
      expect(again.status).toBe(409);
      expect(again.json.error.message).toContain(r.json.key_id);
    });
  });

  describe('expiry', () => {
    it('gives ephemeral keys 24 hours by default and refuses longer', async () => {
      const eph = await makeKey(g, t.tenantId, { type: 'ephemeral' });
      expect(eph.key.startsWith('ck_eph_')).toBe(true);
      const ttl = Date.parse(eph.expiresAt!) - Date.now();
      expect(ttl).toBeGreaterThan(24 * 3600_000 - 60_000);
      expect(ttl).toBeLessThanOrEqual(24 * 3600_000);
      const tooLong = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys`, { type: 'ephemeral', name: 'x', expires_at: new Date(Date.now() + 25 * 3600_000).toISOString() });
      expect(tooLong.status).toBe(400);
    });

    it('stops an ephemeral key when it expires', async () => {
      const eph = await makeKey(g, t.tenantId, { type: 'ephemeral', expires_at: new Date(Date.now() + 3000).toISOString() });
      expect((await ping(eph.key)).status).toBe(200);
      await sleep(Date.parse(eph.expiresAt!) - Date.now() + 200);
      const r = await ping(eph.key);
      expect(r.status).toBe(401);
      expect(r.json.error.message).toMatch(/expired/);
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${eph.keyId}`)).json).toMatchObject({ status: 'expired', revoked_at: null });
    });
  });

  describe('memory keys (mk_)', () => {
    it('work on their memory\'s own hostname and nowhere else', async () => {
      const host = `edge-${uid()}.example.test`;
      const put = await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/mem-${uid()}`, { name: 'Edge', hostname: host });
      expect(put.status).toBe(200);
      const other = await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/mem-${uid()}`, { name: 'Other', hostname: `other-${uid()}.example.test` });
      const mk = await makeKey(g, t.tenantId, { type: 'memory', memory_id: put.json.memory_id });
      expect(mk.key.startsWith('mk_')).toBe(true);
      const search = (headers: Record<string, string>) => http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': mk.key, ...headers }, body: { query: 'q' } });
      const own = await search({ host });
      expect(own.status).toBe(200);
      const identity = await g.signer.verify(own.json.headers['x-lore-identity']);
      expect(identity).toMatchObject({ tenant_id: t.tenantId, memory_id: put.json.memory_id, credential: 'mk', workspace_id: put.json.workspace_id });
      expect((await search({ host: other.json.hostname })).status).toBe(404);
      expect((await search({})).status).toBe(403);
      expect((await ping(mk.key)).status).toBe(403);
      // The memory host serves only that memory's routes.
      expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': mk.key, host } })).status).toBe(404);
      // A ck_ key of the same tenant may use the memory host; another tenant's may not.
      expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': t.key, host }, body: {} })).status).toBe(200);
      const stranger = await makeTenant(g);
      expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': stranger.key, host }, body: {} })).status).toBe(404);
    });

    it('are the only keys a memory_id binds: another type of key naming one is refused, before it could look bound', async () => {
      for (const type of ['live', 'test', 'ephemeral']) {
        const r = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys`, { type, name: 'looks bound', memory_id: t.memoryId });
        expect({ type, status: r.status, message: r.json.error?.message }).toEqual({ type, status: 400, message: expect.stringMatching(/memory_id is only for memory \(mk_\) keys/) });
      }
    });

    it('are revoked with their memory', async () => {
      const host = `gone-${uid()}.example.test`;
      const put = await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/mem-${uid()}`, { name: 'Gone', hostname: host });
      const mk = await makeKey(g, t.tenantId, { type: 'memory', memory_id: put.json.memory_id });
      expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': mk.key, host }, body: {} })).status).toBe(200);
      for (const query of ['', '?retain_data=yes']) {
        const refused = await adminCall(g, 'DELETE', `/internal/v1/tenants/${t.tenantId}/memories/${put.json.memory_id}${query}`);
        expect(refused.status).toBe(400);
      }
      // A refused delete changed nothing.
      expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': mk.key, host }, body: {} })).status).toBe(200);
      expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${t.tenantId}/memories/${put.json.memory_id}?retain_data=true`)).status).toBe(204);
      expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': mk.key, host }, body: {} })).status).toBe(401);
      expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${t.tenantId}/memories/${put.json.memory_id}?retain_data=false`)).status).toBe(204);
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${mk.keyId}`)).json.revoked_at).not.toBeNull();
    });

    it('scoped to a deleted memory alone are revoked with it; scoped to others too, they lose it, and a memory made again under its id is not theirs', async () => {
      const memoryId = `mem-${uid()}`;
      const host = `scoped-${uid()}.example.test`;
      expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/${memoryId}`, { name: 'Scoped', hostname: host })).status).toBe(200);
      const alone = await makeKey(g, t.tenantId, { scopes: { memories: [memoryId] } });
      const both = await makeKey(g, t.tenantId, { scopes: { memories: [memoryId, t.memoryId] } });
      const search = (key: string, query = `?memory_id=${memoryId}`) => http(g.publicUrl, 'POST', `/api/v1/memory/search${query}`, { headers: { 'x-api-key': key }, body: {} });
      expect((await search(alone.key)).status).toBe(200);
      expect((await search(both.key)).status).toBe(200);
      expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${t.tenantId}/memories/${memoryId}?retain_data=false`)).status).toBe(204);
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${alone.keyId}`)).json.revoked_at).not.toBeNull();
      expect((await search(alone.key, '')).status).toBe(401);
      const narrowed = await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${both.keyId}`);
      expect(narrowed.json).toMatchObject({ revoked_at: null, scopes: { memories: [t.memoryId] } });
      expect((await search(both.key, `?memory_id=${t.memoryId}`)).status).toBe(200);
      // The id made again is a new memory: neither key reaches it.
      expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/${memoryId}`, { name: 'Someone else\'s', hostname: `again-${uid()}.example.test` })).status).toBe(200);
      expect((await search(alone.key)).status).toBe(401);
      expect((await search(both.key)).status).toBe(403);
    });
  });

  describe('admin API contract', () => {
    it('is idempotent on tenant and memory, and refuses a hostname held by another memory', async () => {
      const id = `t-${uid()}`;
      expect((await adminCall(g, 'POST', '/internal/v1/tenants', { tenant_id: id, name: 'A' })).status).toBe(201);
      const again = await adminCall(g, 'POST', '/internal/v1/tenants', { tenant_id: id, name: 'A' });
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({ tenant_id: id, name: 'A' });
      const host = `dup-${uid()}.example.test`;
      const m1 = await adminCall(g, 'PUT', `/internal/v1/tenants/${id}/memories/m1-${id}`, { name: 'one', hostname: host });
      expect(m1.status).toBe(200);
      expect(m1.json).toEqual({ memory_id: `m1-${id}`, hostname: host, workspace_id: expect.any(String) });
      expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${id}/memories/m1-${id}`, { name: 'one renamed', hostname: host })).status).toBe(200);
      const clash = await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/m2-${id}`, { name: 'two', hostname: host });
      expect(clash.status).toBe(409);
      expect(clash.json.error.code).toBe('CONFLICT');
      expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/m1-${id}`, { name: 'steal', hostname: `x-${uid()}.example.test` })).status).toBe(409);
      expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${id}/memories/never-${uid()}?retain_data=false`)).status).toBe(204);
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${id}/keys/key_missing`)).status).toBe(404);
      const k = await makeKey(g, id, {});
      expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${id}/keys/${k.keyId}`)).status).toBe(204);
      expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${id}/keys/${k.keyId}`)).status).toBe(204);
      expect((await adminCall(g, 'GET', `/internal/v1/tenants/${t.tenantId}/keys/${k.keyId}`)).status).toBe(404);
    });
  });

  describe('admin API client tokens (idempotent key issuance)', () => {
    const keysOf = (tenantId: string) => `/internal/v1/tenants/${tenantId}/keys`;
    const rowsWithToken = async (tenantId: string, token: string) =>
      (await g.db.asOwner((sql) => sql.query<{ key_id: string }>(`SELECT key_id FROM gateway.api_keys WHERE tenant_id = $1 AND client_token = $2`, [tenantId, token]))).rows.map((r) => r.key_id);
    const keyCount = async (tenantId: string) =>
      Number((await g.db.asOwner((sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM gateway.api_keys WHERE tenant_id = $1`, [tenantId]))).rows[0]!.n);

    it('accepts 1 to 128 characters of [A-Za-z0-9._:-] and refuses anything else with VALIDATION_FAILED, creating nothing', async () => {
      const before = await keyCount(t.tenantId);
      const bad: unknown[] = ['', 'a'.repeat(129), 'has space', 'slash/y', 'ü', 'semi;colon', 'nul\u0001', 42, null, ['a']];
      for (const client_token of bad) {
        const r = await adminCall(g, 'POST', keysOf(t.tenantId), { type: 'live', name: 'tok', client_token });
        expect([client_token, r.status, r.json.error?.code]).toEqual([client_token, 400, 'VALIDATION_FAILED']);
        expect(r.json.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'client_token' })]));
      }
      const rot = await adminCall(g, 'POST', `${keysOf(t.tenantId)}/${t.keyId}/rotate`, { overlap_seconds: 60, client_token: 'no spaces allowed' });
      expect(rot.status).toBe(400);
      expect(rot.json.error.code).toBe('VALIDATION_FAILED');
      expect(await keyCount(t.tenantId)).toBe(before);
      expect((await adminCall(g, 'GET', `${keysOf(t.tenantId)}/${t.keyId}`)).json.replaced_by).toBeNull();

      for (const client_token of ['a'.repeat(128), 'A', `Op.tok_en:${uid()}-9`]) {
        const ok = await adminCall(g, 'POST', keysOf(t.tenantId), { type: 'test', name: 'tok', client_token });
        expect(ok.status).toBe(201);
        expect(await rowsWithToken(t.tenantId, client_token)).toEqual([ok.json.key_id]);
      }
    });

    it('answers a second create with the same token 409 CONFLICT naming the first key, per tenant, without a new key', async () => {
      const token = `tok-${uid()}`;
      const first = await adminCall(g, 'POST', keysOf(t.tenantId), { type: 'live', name: 'once', client_token: token });
      expect(first.status).toBe(201);
      const before = await keyCount(t.tenantId);
      // Also with other options: the token alone decides.
      for (const body of [{ type: 'live', name: 'once', client_token: token }, { type: 'test', name: 'other', client_token: token }]) {
        const again = await adminCall(g, 'POST', keysOf(t.tenantId), body);
        expect(again.status).toBe(409);
        expect(again.json.error).toMatchObject({ code: 'CONFLICT', details: { key_id: first.json.key_id } });
        expect(again.json.key).toBeUndefined();
        expect(again.text).not.toContain(first.json.key);
      }
      expect(await keyCount(t.tenantId)).toBe(before);
      expect(await rowsWithToken(t.tenantId, token)).toEqual([first.json.key_id]);
      // The first key is untouched and works.
      expect((await ping(first.json.key)).status).toBe(200);
      // Tokens are the caller's, per tenant: another tenant may use the same one.
      const other = await makeTenant(g);
      const elsewhere = await adminCall(g, 'POST', keysOf(other.tenantId), { type: 'live', name: 'once', client_token: token });
      expect(elsewhere.status).toBe(201);
      expect(elsewhere.json.key_id).not.toBe(first.json.key_id);
      // A replay is a replay even once the key is revoked.
      expect((await adminCall(g, 'DELETE', `${keysOf(t.tenantId)}/${first.json.key_id}`)).status).toBe(204);
      const afterRevoke = await adminCall(g, 'POST', keysOf(t.tenantId), { type: 'live', name: 'once', client_token: token });
      expect(afterRevoke.status).toBe(409);
      expect(afterRevoke.json.error.details).toEqual({ key_id: first.json.key_id });
    });

    it('looks a key up by its token: the record without plaintext, or an empty list', async () => {
      const token = `look:${uid()}`;
      const created = await adminCall(g, 'POST', keysOf(t.tenantId), { type: 'live', name: 'lookup', client_token: token, scopes: { modules: ['pages'] } });
      expect(created.status).toBe(201);
      const found = await adminCall(g, 'GET', `${keysOf(t.tenantId)}?client_token=${encodeURIComponent(token)}`);
      expect(found.status).toBe(200);
      const one = await adminCall(g, 'GET', `${keysOf(t.tenantId)}/${created.json.key_id}`);
      expect(found.json).toEqual({ api_keys: [one.json] });
      expect(found.json.api_keys[0]).toMatchObject({ key_id: created.json.key_id, status: 'active', name: 'lookup' });
      expect(found.text).not.toContain(created.json.key);
      expect(found.json.api_keys[0].key_hash).toBeUndefined();

      const none = await adminCall(g, 'GET', `${keysOf(t.tenantId)}?client_token=never-${uid()}`);
      expect(none.status).toBe(200);
      expect(none.json).toEqual({ api_keys: [] });
      // Per tenant: another tenant does not see it.
      const other = await makeTenant(g);
      expect((await adminCall(g, 'GET', `${keysOf(other.tenantId)}?client_token=${encodeURIComponent(token)}`)).json).toEqual({ api_keys: [] });
      expect((await adminCall(g, 'GET', `${keysOf(`t-missing-${uid()}`)}?client_token=x`)).status).toBe(404);

      // Revoked keys are still found, with their status.
      await adminCall(g, 'DELETE', `${keysOf(t.tenantId)}/${created.json.key_id}`);
      const revoked = await adminCall(g, 'GET', `${keysOf(t.tenantId)}?client_token=${encodeURIComponent(token)}`);
      expect(revoked.json.api_keys).toEqual([expect.objectContaining({ key_id: created.json.key_id, status: 'revoked' })]);

      for (const q of ['', '?client_token=', '?client_token=bad%20token', '?client_token=a&client_token=b', `?client_token=${'x'.repeat(129)}`, '?client_token=a&other=1']) {
        const r = await adminCall(g, 'GET', `${keysOf(t.tenantId)}${q}`);
        expect([q, r.status, r.json.error?.code]).toEqual([q, 400, 'VALIDATION_FAILED']);
      }
      expect((await http(g.adminUrl, 'GET', `${keysOf(t.tenantId)}?client_token=${encodeURIComponent(token)}`)).status).toBe(401);
    });

    it('lets exactly one of many simultaneous creates with one token through; the others get 409 naming it', async () => {
      for (let round = 0; round < 5; round++) {
        const token = `race-${round}-${uid()}`;
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) => adminCall(g, 'POST', keysOf(t.tenantId), { type: 'live', name: `race ${i}`, client_token: token })),
        );
        const created = answers.filter((a) => a.status === 201);
        const refused = answers.filter((a) => a.status === 409);
        expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
        expect(created).toHaveLength(1);
        for (const r of refused) expect(r.json.error).toMatchObject({ code: 'CONFLICT', details: { key_id: created[0]!.json.key_id } });
        expect(await rowsWithToken(t.tenantId, token)).toEqual([created[0]!.json.key_id]);
      }
    });

    it('makes rotation idempotent too: a replay or a simultaneous twin names the replacement', async () => {
      const original = await makeKey(g, t.tenantId, { name: 'rot-tok' });
      const token = `rot-${uid()}`;
      const path = `${keysOf(t.tenantId)}/${original.keyId}/rotate`;
      const answers = await Promise.all(Array.from({ length: 4 }, () => adminCall(g, 'POST', path, { overlap_seconds: 60, client_token: token })));
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
      const rotated = answers.find((a) => a.status === 201)!;
      expect(rotated.json.replaced_key_id).toBe(original.keyId);
      for (const r of answers.filter((a) => a.status === 409)) expect(r.json.error).toMatchObject({ code: 'CONFLICT', details: { key_id: rotated.json.key_id } });
      const replay = await adminCall(g, 'POST', path, { client_token: token });
      expect(replay.status).toBe(409);
      expect(replay.json.error.details).toEqual({ key_id: rotated.json.key_id });
      const found = await adminCall(g, 'GET', `${keysOf(t.tenantId)}?client_token=${token}`);
      expect(found.json.api_keys).toEqual([expect.objectContaining({ key_id: rotated.json.key_id, rotated_from: original.keyId, status: 'active' })]);
      expect(await rowsWithToken(t.tenantId, token)).toEqual([rotated.json.key_id]);
      // Rotating another key with a token a create already used makes nothing either.
      const other = await makeKey(g, t.tenantId, { name: 'rot-tok-2' });
      const reuse = await adminCall(g, 'POST', `${keysOf(t.tenantId)}/${other.keyId}/rotate`, { client_token: token });
      expect(reuse.status).toBe(409);
      expect((await adminCall(g, 'GET', `${keysOf(t.tenantId)}/${other.keyId}`)).json.replaced_by).toBeNull();
      // Without a token, rotation behaves as before.
      expect((await adminCall(g, 'POST', `${keysOf(t.tenantId)}/${other.keyId}/rotate`, { overlap_seconds: 60 })).status).toBe(201);
    });
  });

  describe('portal sessions and key management', () => {
    const email = `admin-${uid()}@example.test`;
    const password = 'correct horse battery staple';
    let session = '';
    let cookie = '';

    beforeAll(async () => {
      const u = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password, role: 'admin' });
      expect(u.status).toBe(201);
      const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
      expect(login.status).toBe(200);
      expect(login.json.expiresIn).toBe(1296000);
      session = login.json.token;
      const setCookie = String(login.headers['set-cookie']);
      expect(setCookie).toMatch(/refresh_token=rt_/);
      expect(setCookie).toMatch(/HttpOnly/);
      expect(setCookie).toMatch(/Max-Age=2592000/);
      cookie = setCookie.split(';')[0]!;
    });

    it('refuses a wrong password with the same 401 as an unknown account', async () => {
      const wrong = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password: 'nope nope nope' } });
      const unknown = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: `x-${uid()}@example.test`, password: 'nope nope nope' } });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(wrong.json.error.message).toBe(unknown.json.error.message);
    });

    it('refuses NUL characters in bodies as a client error, on public and admin routes', async () => {
      const r = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: 'a\u0000b@example.test', password: 'x' } });
      expect(r.status).toBe(400);
      const token = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', { headers: { 'content-type': 'application/json' }, raw: '\u0000' });
      expect(token.status).toBe(400);
      expect(token.json.error).toBe('invalid_request');
      const admin = await adminCall(g, 'POST', '/internal/v1/tenants', { name: 'nul\u0000name' });
      expect(admin.status).toBe(400);
    });

    it('refreshes exactly as spec 2 says', async () => {
      const ok = await http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie } });
      expect(ok.status).toBe(200);
      expect(ok.json).toEqual({ token: expect.any(String), expiresIn: 1296000 });
      const missing = await http(g.publicUrl, 'POST', '/api/auth/refresh');
      expect(missing.status).toBe(400);
      const invalid = await http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie: 'refresh_token=rt_bogus' } });
      expect(invalid.status).toBe(401);
      expect(invalid.json).toEqual({ error: { code: 'INVALID_REFRESH_TOKEN', message: expect.any(String), status: 401 } });
    });

    it('creates, lists, rotates and revokes keys for a signed-in admin', async () => {
      const auth = { authorization: `Bearer ${session}` };
      const created = await http(g.publicUrl, 'POST', '/api/v1/api-keys', { headers: auth, body: { type: 'live', name: 'portal', scopes: { modules: ['pages'] } } });
      expect(created.status).toBe(201);
      expect((await ping(created.json.key)).status).toBe(200);
      const list = await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: auth });
      expect(list.status).toBe(200);
      expect(list.json.api_keys.map((k: { key_id: string }) => k.key_id)).toContain(created.json.key_id);
      expect(JSON.stringify(list.json)).not.toContain(created.json.key);
      const rotated = await http(g.publicUrl, 'POST', `/api/v1/api-keys/${created.json.key_id}/rotate`, { headers: auth, body: { overlap_seconds: 60 } });
      expect(rotated.status).toBe(201);
      expect((await ping(created.json.key)).status).toBe(200);
      expect((await ping(rotated.json.key)).status).toBe(200);
      const revoked = await http(g.publicUrl, 'DELETE', `/api/v1/api-keys/${created.json.key_id}`, { headers: auth });
      expect(revoked.status).toBe(200);
      expect(revoked.json.status).toBe('revoked');
      expect((await ping(created.json.key)).status).toBe(401);
      expect((await http(g.publicUrl, 'DELETE', `/api/v1/api-keys/key_${uid()}`, { headers: auth })).status).toBe(404);
      expect((await http(g.publicUrl, 'GET', '/api/v1/api-keys')).status).toBe(401);
      expect((await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: { authorization: 'Bearer not.a.jwt' } })).status).toBe(401);
    });

    it('does not let a member manage keys, nor an admin touch another tenant\'s keys', async () => {
      const memberEmail = `member-${uid()}@example.test`;
      await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: memberEmail, password, role: 'member' });
      const m = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: memberEmail, password } });
      expect((await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: { authorization: `Bearer ${m.json.token}` } })).status).toBe(403);
      const other = await makeTenant(g);
      const r = await http(g.publicUrl, 'DELETE', `/api/v1/api-keys/${other.keyId}`, { headers: { authorization: `Bearer ${session}` } });
      expect(r.status).toBe(404);
      expect((await ping(other.key)).status).toBe(200);
    });

    it('lists the 1000 newest keys with the tenant\'s whole count (spec 1 names no paging for the list)', async () => {
      const many = await makeTenant(g);
      const adminEmail = `many-${uid()}@example.test`;
      expect((await adminCall(g, 'POST', `/internal/v1/tenants/${many.tenantId}/users`, { email: adminEmail, password, role: 'admin' })).status).toBe(201);
      const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: adminEmail, password } });
      // 1000 old revoked keys beside the tenant's own: a long history of rotations.
      await g.db.asOwner((sql) =>
        sql.query(
          `INSERT INTO gateway.api_keys (tenant_id, key_id, type, name, key_hash, prefix, created_by, created_at, revoked_at)
           SELECT $1, 'key_old_' || $2 || '_' || n, 'live', 'old ' || n, md5($2 || n), 'ck_live_', 'test', now() - interval '1 day' - n * interval '1 second', now()
           FROM generate_series(1, 1000) AS n`,
          [many.tenantId, uid()],
        ),
      );
      const list = await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: { authorization: `Bearer ${login.json.token}` } });
      expect(list.status).toBe(200);
      expect(list.json.api_keys).toHaveLength(1000);
      expect(list.json.api_keys.map((k: { key_id: string }) => k.key_id)).toContain(many.keyId);
      const total = await g.db.asOwner((sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM gateway.api_keys WHERE tenant_id = $1`, [many.tenantId]));
      expect(Number(total.rows[0]!.n)).toBeGreaterThan(1000);
      expect(list.json.count).toBe(Number(total.rows[0]!.n));
    });

    it('changes and resets passwords (spec 2), ending old sessions', async () => {
      const userEmail = `user-${uid()}@example.test`;
      await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: userEmail, password, role: 'member' });
      const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password } });
      const userAuth = { authorization: `Bearer ${login.json.token}` };
      const invalid = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: userAuth, body: { old_password: password, new_password: 'short' } });
      expect(invalid.status).toBe(422);
      expect(invalid.json.detail[0]).toMatchObject({ loc: ['body', 'new_password'], msg: expect.any(String), type: expect.any(String) });
      // The same password again changes nothing and would end every session: refused, the session kept.
      const same = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: userAuth, body: { old_password: password, new_password: password } });
      expect(same.status).toBe(422);
      expect(same.json.detail).toEqual([{ loc: ['body', 'new_password'], msg: 'the new password must differ from the current one', type: 'value_error' }]);
      // With a wrong current password, the answer is that one, whatever the new one.
      const sameButWrong = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: userAuth, body: { old_password: 'not the password at all', new_password: 'not the password at all' } });
      expect([sameButWrong.status, sameButWrong.json.detail]).toEqual([400, 'the current password is wrong']);
      const wrong = await http(g.publicUrl, 'POST', '/api/password/change-password?tenant_id=someone-else', { headers: userAuth, body: { old_password: 'wrong password!', new_password: 'another long passphrase' } });
      expect(wrong.status).toBe(400);
      const changed = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: userAuth, body: { old_password: password, new_password: 'another long passphrase' } });
      expect(changed.status).toBe(200);
      expect(changed.json).toEqual({});
      expect((await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: userAuth, body: { old_password: 'x', new_password: 'yet another passphrase' } })).status).toBe(401);
      const relogin = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password: 'another long passphrase' } });
      expect(relogin.status).toBe(200);

      // A member with a live session (the one before the change has ended) is refused as a member: 403.
      const memberAuth = { authorization: `Bearer ${relogin.json.token}` };
      expect((await http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie: String(relogin.headers['set-cookie']).split(';')[0]! } })).status).toBe(200);
      const memberReset = await http(g.publicUrl, 'POST', '/api/password/reset_password', { headers: memberAuth, body: { user_email: email } });
      expect(memberReset.status).toBe(403);
      expect(memberReset.json).toEqual({ detail: expect.any(String) });
      // The member could not reset the administrator's password: it still signs in.
      expect((await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password } })).status).toBe(200);
      const reset = await http(g.publicUrl, 'POST', '/api/password/reset_password', { headers: { authorization: `Bearer ${session}` }, body: { user_email: userEmail } });
      expect(reset.status).toBe(200);
      expect(reset.json.new_password).toMatch(/^[0-9A-Za-z]{20}$/);
      expect((await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password: reset.json.new_password } })).status).toBe(200);
      const other = await makeTenant(g);
      const foreignEmail = `foreign-${uid()}@example.test`;
      await adminCall(g, 'POST', `/internal/v1/tenants/${other.tenantId}/users`, { email: foreignEmail, password, role: 'member' });
      expect((await http(g.publicUrl, 'POST', '/api/password/reset_password', { headers: { authorization: `Bearer ${session}` }, body: { user_email: foreignEmail } })).status).toBe(404);
    });

    it('ends every session and refresh token issued before a password change or reset', async () => {
      const userEmail = `refresh-${uid()}@example.test`;
      await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: userEmail, password, role: 'member' });
      const signIn = async (pw: string) => {
        const r = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password: pw } });
        expect(r.status).toBe(200);
        return { token: r.json.token as string, cookie: String(r.headers['set-cookie']).split(';')[0]! };
      };
      const refreshWith = (cookieHeader: string) => http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie: cookieHeader } });
      const usable = async (token: string) =>
        (await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${token}` }, body: { old_password: 'not the password', new_password: 'irrelevant passphrase' } })).status;
      const first = await signIn(password);
      const second = await signIn(password);
      const refreshed = await refreshWith(first.cookie);
      expect(refreshed.status).toBe(200);
      // 400 = the session was accepted and the (deliberately wrong) current password refused.
      expect(await usable(refreshed.json.token)).toBe(400);

      const changed = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${first.token}` }, body: { old_password: password, new_password: 'a changed passphrase' } });
      expect(changed.status).toBe(200);
      for (const cookieHeader of [first.cookie, second.cookie]) {
        const r = await refreshWith(cookieHeader);
        expect(r.status).toBe(401);
        expect(r.json).toEqual({ error: { code: 'INVALID_REFRESH_TOKEN', message: expect.any(String), status: 401 } });
      }
      for (const token of [first.token, second.token, refreshed.json.token]) expect(await usable(token)).toBe(401);
      // A session of the new password works, and so does its refresh token.
      const third = await signIn('a changed passphrase');
      const again = await refreshWith(third.cookie);
      expect(again.status).toBe(200);
      expect(await usable(again.json.token)).toBe(400);

      // An administrator's reset ends them the same way.
      const reset = await http(g.publicUrl, 'POST', '/api/password/reset_password', { headers: { authorization: `Bearer ${session}` }, body: { user_email: userEmail } });
      expect(reset.status).toBe(200);
      expect((await refreshWith(third.cookie)).status).toBe(401);
      expect(await usable(third.token)).toBe(401);
      expect(await usable(again.json.token)).toBe(401);
      expect(await usable((await signIn(reset.json.new_password)).token)).toBe(400);
    });

    it('never leaves a sign-in with the old password alive when it races a password change', async () => {
      // The sign-in starts at offsets spanning the change's own run (two argon2 computations and a commit), so
      // in some rounds it reads the old hash before the change commits and finishes after it. The first rounds
      // start the sign-in a little before the change, so that on a loaded machine too some sign-in wins the race.
      let signedInWithOldPassword = 0;
      for (let offset = -60; offset <= 160; offset += 10) {
        const userEmail = `race-${offset}-${uid()}@example.test`;
        await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: userEmail, password, role: 'member' });
        const own = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password } });
        const change = sleep(Math.max(0, -offset)).then(() =>
          http(g.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${own.json.token}` }, body: { old_password: password, new_password: 'a changed passphrase' } }),
        );
        const racer = sleep(Math.max(0, offset)).then(() => http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password } }));
        const [changed, raced] = await Promise.all([change, racer]);
        expect(changed.status).toBe(200);
        if (raced.status !== 200) {
          expect(raced.status).toBe(401);
          continue;
        }
        signedInWithOldPassword++;
        const cookieHeader = String(raced.headers['set-cookie']).split(';')[0]!;
        const refreshed = await http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie: cookieHeader } });
        expect({ offset, refresh: refreshed.status }).toEqual({ offset, refresh: 401 });
        const used = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${raced.json.token}` }, body: { old_password: 'x', new_password: 'irrelevant passphrase' } });
        expect({ offset, session: used.status }).toEqual({ offset, session: 401 });
      }
      // The early rounds sign in before the change commits: the property above was exercised.
      expect(signedInWithOldPassword).toBeGreaterThan(0);
    });

    it('ends a sign-in\'s sessions when it signs out, and only that sign-in\'s', async () => {
      const userEmail = `logout-${uid()}@example.test`;
      await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: userEmail, password, role: 'admin' });
      const signIn = async () => {
        const r = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password } });
        expect(r.status).toBe(200);
        return { token: r.json.token as string, cookie: String(r.headers['set-cookie']).split(';')[0]! };
      };
      const laptop = await signIn();
      const phone = await signIn();
      const refreshed = await http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie: laptop.cookie } });
      expect(refreshed.status).toBe(200);
      const keys = (token: string) => http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: { authorization: `Bearer ${token}` } });
      expect((await keys(laptop.token)).status).toBe(200);
      expect((await keys(refreshed.json.token)).status).toBe(200);
      const out = await http(g.publicUrl, 'POST', '/api/auth/logout', { headers: { cookie: laptop.cookie } });
      expect(out.status).toBe(204);
      expect(String(out.headers['set-cookie'])).toMatch(/refresh_token=;.*Max-Age=0/);
      // The signed-out sign-in's session JWTs end at once, the refreshed one too, on every surface that takes them.
      expect((await keys(laptop.token)).status).toBe(401);
      expect((await keys(refreshed.json.token)).status).toBe(401);
      const search = await http(g.publicUrl, 'GET', '/api/manage/admin/user-group', { headers: { authorization: `Bearer ${laptop.token}` } });
      expect(search.status).toBe(401);
      expect((await http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie: laptop.cookie } })).status).toBe(401);
      // The other sign-in of the same account goes on.
      expect((await keys(phone.token)).status).toBe(200);
      expect((await http(g.publicUrl, 'GET', '/api/manage/admin/user-group', { headers: { authorization: `Bearer ${phone.token}` } })).status).toBe(200);
      // A token naming another sign-in of the account (or none) is not accepted.
      const { sid: _sid, ...withoutSid } = jwtClaims(phone.token);
      expect((await keys(signSessionJwt(withoutSid))).status).toBe(401);
      expect((await keys(signSessionJwt({ ...jwtClaims(phone.token), sid: jwtClaims(laptop.token).sid }))).status).toBe(401);
      expect((await keys(signSessionJwt({ ...jwtClaims(phone.token), sid: 'rtk_unknown' }))).status).toBe(401);
      expect((await keys(signSessionJwt(jwtClaims(phone.token)))).status).toBe(200);
    });

    it('tells a session issued by an earlier version (no sid) to refresh or sign in, on every surface, and its refresh cookie still serves', async () => {
      const userEmail = `earlier-${uid()}@example.test`;
      await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: userEmail, password, role: 'admin' });
      const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password } });
      expect(login.status).toBe(200);
      // What the version before sign-ins were carried in the JWT issued: the same claims without `sid`.
      const { sid: _sid, ...claims } = jwtClaims(login.json.token);
      const auth = { authorization: `Bearer ${signSessionJwt(claims)}` };
      const why = 'the session was issued by an earlier version of Lore: refresh it or sign in again';
      const portal = await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: auth });
      expect(portal.status).toBe(401);
      expect(portal.json.error).toMatchObject({ code: 'UNAUTHORIZED', message: why });
      expect(portal.headers['www-authenticate']).toBe('Bearer realm="lore"');
      const manage = await http(g.publicUrl, 'GET', '/api/manage/admin/user-group', { headers: auth });
      expect({ status: manage.status, body: manage.json }).toEqual({ status: 401, body: { detail: why } });
      const change = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: auth, body: { old_password: password, new_password: 'irrelevant passphrase' } });
      expect({ status: change.status, body: change.json }).toEqual({ status: 401, body: { detail: why } });
      expect(change.headers['www-authenticate']).toBe('Bearer realm="lore"');
      // Any other refusal keeps its words: a forged or ended session is simply not valid.
      const forged = { authorization: `Bearer ${signSessionJwt({ ...claims, sid: 'rtk_unknown' })}` };
      expect((await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: forged })).json.error.message).toBe('the session is not valid');
      expect((await http(g.publicUrl, 'GET', '/api/manage/admin/user-group', { headers: forged })).json).toEqual({ detail: 'the session is not valid' });
      expect((await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: forged, body: { old_password: password, new_password: 'irrelevant passphrase' } })).json).toEqual({ detail: 'a valid session token is required' });
      // The sign-in's refresh cookie gets a session of this version.
      const refreshed = await http(g.publicUrl, 'POST', '/api/auth/refresh', { headers: { cookie: String(login.headers['set-cookie']).split(';')[0]! } });
      expect(refreshed.status).toBe(200);
      expect((await http(g.publicUrl, 'GET', '/api/v1/api-keys', { headers: { authorization: `Bearer ${refreshed.json.token}` } })).status).toBe(200);
    });

    it('ties a session to the password generation it was issued under, not to clocks', async () => {
      const userEmail = `clock-${uid()}@example.test`;
      await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: userEmail, password, role: 'member' });
      const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: userEmail, password } });
      // What a replica whose clock runs a minute ahead would have issued just before the change.
      const ahead = Math.floor(Date.now() / 1000) + 60;
      const fromTheFuture = signSessionJwt({ ...jwtClaims(login.json.token), iat: ahead, iat_ms: ahead * 1000, exp: ahead + 3600 });
      const probe = (token: string) =>
        http(g.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${token}` }, body: { old_password: 'not the password', new_password: 'irrelevant passphrase' } });
      expect((await probe(fromTheFuture)).status).toBe(400);
      const changed = await http(g.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${login.json.token}` }, body: { old_password: password, new_password: 'a changed passphrase' } });
      expect(changed.status).toBe(200);
      expect((await probe(fromTheFuture)).status).toBe(401);
      expect((await probe(login.json.token)).status).toBe(401);
    });

    it('issues OAuth client-credentials tokens that act within their scopes', async () => {
      const auth = { authorization: `Bearer ${session}` };
      const client = await http(g.publicUrl, 'POST', '/api/v1/oauth-clients', { headers: auth, body: { name: 'integration', scopes: ['projects:read', 'pages:read'] } });
      expect(client.status).toBe(201);
      const basic = Buffer.from(`${client.json.client_id}:${client.json.client_secret}`).toString('base64');
      const tok = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', {
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
        raw: 'grant_type=client_credentials&scope=projects:read',
      });
      expect(tok.status).toBe(200);
      expect(tok.json).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'projects:read' });
      // One authentication method a request (RFC 6749 §2.3): Basic beside a body secret is refused, even a right one.
      const both = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', {
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
        raw: `grant_type=client_credentials&client_id=${client.json.client_id}&client_secret=${client.json.client_secret}`,
      });
      expect(both.status).toBe(400);
      expect(both.json.error).toBe('invalid_request');
      // An Authorization header the endpoint cannot read as Basic is the client's failed authentication (RFC 6749 §5.2):
      // 401 invalid_client with the Basic challenge, and the right credentials in the body are not tried instead.
      const b64 = (text: string) => Buffer.from(text).toString('base64');
      for (const [name, authorization] of [
        ['no colon', `Basic ${b64('nocolon')}`],
        ['bad %-encoding', `Basic ${b64(`${client.json.client_id}%zz:${client.json.client_secret}`)}`],
        ['not base64', 'Basic !!!not-base64!!!'],
        ['base64 with junk', `Basic ${b64('a:b')}?x`],
        ['no token', 'Basic'],
        ['not UTF-8', `Basic ${Buffer.from([0xff, 0x3a, 0xfe]).toString('base64')}`],
        ['another scheme', `Bearer ${client.json.client_secret}`],
      ] as const) {
        const r = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', {
          headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
          raw: `grant_type=client_credentials&client_id=${client.json.client_id}&client_secret=${client.json.client_secret}`,
        });
        expect([name, r.status, r.json.error, r.headers['www-authenticate']]).toEqual([name, 401, 'invalid_client', 'Basic realm="lore"']);
        expect(r.json.access_token).toBeUndefined();
      }
      expect((await http(g.publicUrl, 'GET', '/api/v1/projects', { headers: { 'x-api-key': tok.json.access_token } })).status).toBe(200);
      expect((await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': tok.json.access_token }, body: { name: 'n' } })).status).toBe(403);
      expect((await ping(tok.json.access_token)).status).toBe(403);
      const tooMuch = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.json.client_id, client_secret: client.json.client_secret, scope: 'projects:write' } });
      expect(tooMuch.status).toBe(400);
      expect(tooMuch.json.error).toBe('invalid_scope');
      const bad = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.json.client_id, client_secret: 'ocs_wrong' } });
      expect(bad.status).toBe(401);
      expect(bad.json.error).toBe('invalid_client');
      const gone = await http(g.publicUrl, 'DELETE', `/api/v1/oauth-clients/${client.json.client_id}`, { headers: auth });
      expect(gone.status).toBe(200);
      expect((await http(g.publicUrl, 'GET', '/api/v1/projects', { headers: { 'x-api-key': tok.json.access_token } })).status).toBe(401);
    });

    it('keeps an OAuth client of one project in that project\'s workspace, as a key of that project', async () => {
      const auth = { authorization: `Bearer ${session}` };
      const project = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': t.key }, body: { name: `Scoped ${uid()}` } });
      expect(project.status).toBe(201);
      const elsewhere = await http(g.publicUrl, 'POST', '/api/v1/workspaces', { headers: { 'x-api-key': t.key }, body: { name: `Elsewhere ${uid()}` } });
      expect(elsewhere.status).toBe(201);
      // Another workspace beside the project: refused as for a key.
      const mismatched = await http(g.publicUrl, 'POST', '/api/v1/oauth-clients', { headers: auth, body: { name: 'mismatched', scopes: ['projects:read'], project_id: project.json.project_id, workspace_id: elsewhere.json.workspace_id } });
      expect(mismatched.status).toBe(404);
      const client = await http(g.publicUrl, 'POST', '/api/v1/oauth-clients', { headers: auth, body: { name: 'one project', scopes: ['projects:read'], project_id: project.json.project_id } });
      expect(client.status).toBe(201);
      expect(client.json.workspace_id).toBe(project.json.workspace_id);
      const tok = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.json.client_id, client_secret: client.json.client_secret } });
      expect(tok.status).toBe(200);
      const bearer = { 'x-api-key': tok.json.access_token as string };
      expect((await http(g.publicUrl, 'GET', `/api/v1/projects/${project.json.project_id}`, { headers: bearer })).status).toBe(200);
      // Another workspace is not the client's to name.
      expect((await http(g.publicUrl, 'GET', `/api/v1/projects?workspace_id=${elsewhere.json.workspace_id}`, { headers: bearer })).status).toBe(404);
    });
  });

  describe('project scope', () => {
    it('keeps a project-scoped key inside its project', async () => {
      const p1 = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': t.key }, body: { name: `One ${uid()}` } });
      const p2 = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': t.key }, body: { name: `Two ${uid()}` } });
      const scoped = await makeKey(g, t.tenantId, { project_id: p1.json.project_id });
      const list = await http(g.publicUrl, 'GET', '/api/v1/projects', { headers: { 'x-api-key': scoped.key } });
      expect(list.json).toEqual({ projects: [expect.objectContaining({ project_id: p1.json.project_id })], count: 1 });
      expect((await http(g.publicUrl, 'GET', `/api/v1/projects/${p1.json.project_id}`, { headers: { 'x-api-key': scoped.key } })).status).toBe(200);
      expect((await http(g.publicUrl, 'GET', `/api/v1/projects/${p2.json.project_id}`, { headers: { 'x-api-key': scoped.key } })).status).toBe(404);
      expect((await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': scoped.key }, body: { name: 'x' } })).status).toBe(403);
      const full = await http(g.publicUrl, 'GET', '/api/v1/projects', { headers: { 'x-api-key': t.key } });
      expect(full.json.count).toBeGreaterThanOrEqual(2);
    });
  });
});
