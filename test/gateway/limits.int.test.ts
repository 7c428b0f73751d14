import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeKey, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest } from './harness';
import { freePort } from './processes';

jest.setTimeout(120_000);

describe('gateway limits: per-key rate limit, plan limits, credit balance', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;

  beforeAll(async () => {
    database = await freshDatabase('lore_gwlim');
    echo = await startEcho();
    g = await startGateway(
      database,
      {
        upstreams: { graph: echo.url, mcp: echo.url },
        plans: { tiny: { requests_per_month: 5, max_projects: 1, max_keys: 3 }, unlimited: {} },
        defaultPlan: 'unlimited',
      },
      { redisPrefix: `gwlim:${uid()}:` },
    );
  });
  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await database?.drop();
  });

  it('admits between 99% and 100% of the configured rate under concurrent load', async () => {
    const t = await makeTenant(g);
    // Low enough that 24 workers exceed it by half even on a loaded machine (at 150/s a busy run produced no 429
    // at all); a burst of a third of a second's worth rides out scheduling hiccups.
    const perSecond = 50;
    const burst = 17;
    const k = await makeKey(g, t.tenantId, { rate_limit: { per_second: perSecond, burst } });
    // Warm the caches, then let the bucket fill up again, so the timed run starts from a full bucket.
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': k.key } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1000));
    const durationMs = 5000;
    let admitted = 0;
    let limited = 0;
    let other = 0;
    const start = Date.now();
    // The limiter decides on the server, between a request's send and its answer, so the client brackets the
    // server's window: it opens between `start` and the first answer, and its last admission lies between the
    // last admitted request's send and its answer. Each bound is checked against the side of the bracket that
    // holds whatever the machine's load (a busy machine only widens the bracket, never flips a bound).
    let firstAnswer = 0;
    let lastAdmittedSend = start;
    let lastAdmittedAnswer = start;
    const worker = async () => {
      while (Date.now() - start < durationMs) {
        const sent = Date.now();
        const r = await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': k.key } });
        const answered = Date.now();
        if (firstAnswer === 0) firstAnswer = answered;
        if (r.status === 200) {
          admitted++;
          lastAdmittedSend = Math.max(lastAdmittedSend, sent);
          lastAdmittedAnswer = Math.max(lastAdmittedAnswer, answered);
        } else if (r.status === 429) limited++;
        else other++;
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    // At most what the widest possible server window allows, at least 99% of what the narrowest one does.
    const widest = burst + perSecond * ((lastAdmittedAnswer - start) / 1000);
    const narrowest = burst + perSecond * (Math.max(0, lastAdmittedSend - firstAnswer) / 1000);
    expect(other).toBe(0);
    // The load must exceed the rate, or the test proves nothing.
    expect(limited).toBeGreaterThan(admitted / 2);
    expect(admitted / narrowest).toBeGreaterThanOrEqual(0.99);
    expect(admitted / widest).toBeLessThanOrEqual(1.0);
  });

  it('answers 429 with Retry-After and RateLimit headers', async () => {
    const t = await makeTenant(g);
    const k = await makeKey(g, t.tenantId, { rate_limit: { per_second: 0.5, burst: 2 } });
    const ok = await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': k.key } });
    expect(ok.status).toBe(200);
    expect(ok.headers['ratelimit-limit']).toBe('2');
    expect(ok.headers['ratelimit-remaining']).toBe('1');
    expect(ok.headers['ratelimit-policy']).toBe('2;w=4');
    await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': k.key } });
    const r = await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': k.key } });
    expect(r.status).toBe(429);
    expect(r.json.error.code).toBe('RATE_LIMITED');
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(2);
    expect(r.headers['ratelimit-remaining']).toBe('0');
    expect(Number(r.headers['ratelimit-reset'])).toBeGreaterThan(0);
    // Limits are per key: another key of the tenant is unaffected.
    const k2 = await makeKey(g, t.tenantId, {});
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': k2.key } })).status).toBe(200);
  });

  it('throttles sign-in attempts per client address and per account, so that one address cannot lock an account out', async () => {
    // The suite's requests come from loopback: trusting it as a proxy lets each request name its client address.
    const strict = await startGateway(database, { loginRateLimit: { perSecond: 0.01, burst: 3 }, trustedProxies: ['127.0.0.1/32'] }, { redisPrefix: `gwlim3:${uid()}:`, migrate: false });
    try {
      const t = await makeTenant(strict);
      const email = `user-${uid()}@example.test`;
      const password = 'a long enough password';
      expect((await adminCall(strict, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password, role: 'member' })).status).toBe(201);
      const attempt = (address: string, pw: string, who = email) =>
        http(strict.publicUrl, 'POST', '/api/auth/login', { headers: { 'x-forwarded-for': address }, body: { email: who, password: pw } });
      // One address guesses until its budget is spent, and is then refused before the password is looked at.
      for (let i = 0; i < 3; i++) expect((await attempt('203.0.113.1', 'wrong password here')).status).toBe(401);
      const limited = await attempt('203.0.113.1', password);
      expect(limited.status).toBe(429);
      expect(limited.json.error.code).toBe('RATE_LIMITED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // The owner, from another address, still signs in: one address cannot lock the account out.
      expect((await attempt('203.0.113.2', password)).status).toBe(200);
      // The first address spent its own budget: another user is refused from there, not from elsewhere.
      const other = `other-${uid()}@example.test`;
      expect((await adminCall(strict, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email: other, password, role: 'member' })).status).toBe(201);
      expect((await attempt('203.0.113.1', password, other)).status).toBe(429);
      expect((await attempt('203.0.113.4', password, other)).status).toBe(200);
      // The account's own budget (three addresses' worth) ends guessing from many addresses: 4 + 3 + 2 of its 9 are
      // spent above and here; the tenth attempt, whatever its address, case or spaces, is refused.
      for (let i = 0; i < 3; i++) expect((await attempt('203.0.113.5', 'wrong password here')).status).toBe(401);
      for (let i = 0; i < 2; i++) expect((await attempt('203.0.113.6', 'wrong password here')).status).toBe(401);
      expect((await attempt('203.0.113.7', password, `  ${email.toUpperCase()} `)).status).toBe(429);
    } finally {
      await strict.close();
    }
  });

  it('throttles guesses of the current password on change-password, per account, before the password is checked', async () => {
    const strict = await startGateway(database, { loginRateLimit: { perSecond: 0.01, burst: 3 } }, { redisPrefix: `gwlim5:${uid()}:`, migrate: false });
    try {
      const t = await makeTenant(strict);
      const password = 'a long enough password';
      const session = async () => {
        const email = `guesser-${uid()}@example.test`;
        expect((await adminCall(strict, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password, role: 'member' })).status).toBe(201);
        return { authorization: `Bearer ${(await http(strict.publicUrl, 'POST', '/api/auth/login', { body: { email, password } })).json.token as string}` };
      };
      const guesser = await session();
      const change = (headers: Record<string, string>, old: string) => http(strict.publicUrl, 'POST', '/api/password/change-password', { headers, body: { old_password: old, new_password: 'a new passphrase here' } });
      for (let i = 0; i < 3; i++) expect((await change(guesser, `guess ${i}`)).status).toBe(400);
      const limited = await change(guesser, 'guess 3');
      expect([limited.status, limited.json]).toEqual([429, { detail: expect.stringMatching(/too many attempts/) }]);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Even the right password waits its turn: nothing is checked while the account is throttled.
      expect((await change(guesser, password)).status).toBe(429);
      // Another account has its own budget.
      expect((await change(await session(), password)).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('answers slow_down (RFC 6749) with Retry-After once a client asks the token endpoint too often', async () => {
    const strict = await startGateway(database, { loginRateLimit: { perSecond: 0.01, burst: 2 } }, { redisPrefix: `gwlim4:${uid()}:`, migrate: false });
    try {
      const body = { grant_type: 'client_credentials', client_id: `oac_${uid()}`, client_secret: 'ocs_wrong' };
      for (let i = 0; i < 2; i++) expect((await http(strict.publicUrl, 'POST', '/api/v1/oauth/token', { body })).status).toBe(401);
      const limited = await http(strict.publicUrl, 'POST', '/api/v1/oauth/token', { body });
      expect(limited.status).toBe(429);
      expect(limited.json).toMatchObject({ error: 'slow_down' });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Another client has its own budget.
      expect((await http(strict.publicUrl, 'POST', '/api/v1/oauth/token', { body: { ...body, client_id: `oac_${uid()}` } })).status).toBe(401);
    } finally {
      await strict.close();
    }
  });

  it('limits signed-in users per user on the portal and password routes, with RateLimit headers on every answer', async () => {
    const slow = await startGateway(database, { rateLimit: { perSecond: 0.5, burst: 2 } }, { redisPrefix: `gwlim2:${uid()}:`, migrate: false });
    try {
      const t = await makeTenant(slow);
      const password = 'a long enough password';
      const users: Record<'admin' | 'member', string> = { admin: '', member: '' };
      for (const role of ['admin', 'member'] as const) {
        const email = `${role}-${uid()}@example.test`;
        expect((await adminCall(slow, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password, role })).status).toBe(201);
        const login = await http(slow.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
        expect(login.status).toBe(200);
        users[role] = login.json.token;
      }
      const keys = (token: string) => http(slow.publicUrl, 'GET', '/api/v1/api-keys', { headers: { authorization: `Bearer ${token}` } });
      const first = await keys(users.admin);
      expect(first.status).toBe(200);
      expect(first.headers['ratelimit-limit']).toBe('2');
      expect(first.headers['ratelimit-remaining']).toBe('1');
      expect(first.headers['ratelimit-policy']).toBe('2;w=4');
      expect(first.headers['ratelimit-reset']).toBeDefined();
      expect(first.headers['retry-after']).toBeUndefined();
      expect((await keys(users.admin)).headers['ratelimit-remaining']).toBe('0');
      const limited = await keys(users.admin);
      expect(limited.status).toBe(429);
      expect(limited.json.error.code).toBe('RATE_LIMITED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(limited.headers['ratelimit-limit']).toBe('2');
      expect(limited.headers['ratelimit-remaining']).toBe('0');
      expect(Number(limited.headers['ratelimit-reset'])).toBeGreaterThan(0);
      // Spec 2's password routes share the user's bucket and keep their own error shape.
      const pw = await http(slow.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${users.admin}` }, body: { old_password: 'x', new_password: 'another long passphrase' } });
      expect(pw.status).toBe(429);
      expect(pw.json).toEqual({ detail: expect.any(String) });
      expect(pw.headers['ratelimit-remaining']).toBe('0');
      expect(Number(pw.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Per user: the member has a bucket of its own, and a refusal for the role carries the headers too.
      const member = await keys(users.member);
      expect(member.status).toBe(403);
      expect(member.headers['ratelimit-remaining']).toBe('1');
      const memberPw = await http(slow.publicUrl, 'POST', '/api/password/change-password', { headers: { authorization: `Bearer ${users.member}` }, body: { old_password: 'wrong password!', new_password: 'another long passphrase' } });
      expect(memberPw.status).toBe(400);
      expect(memberPw.headers['ratelimit-remaining']).toBe('0');
    } finally {
      await slow.close();
    }
  });

  it('tells a plan limit from a credit balance in the 402', async () => {
    const t = await makeTenant(g);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { plan: 'tiny' })).status).toBe(200);
    // A fresh key so the tenant cache of this replica is not involved in what the test sees.
    const project = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': t.key }, body: { name: 'only' } });
    expect(project.status).toBe(201);
    const second = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: { 'x-api-key': t.key }, body: { name: 'second' } });
    expect(second.status).toBe(402);
    expect(second.json.error).toMatchObject({ code: 'PLAN_LIMIT_EXCEEDED', details: { reason: 'plan_limit', limit: 'max_projects' } });
    let last = second;
    for (let i = 0; i < 6 && last.status !== 402 || i === 0; i++) {
      last = await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } });
    }
    expect(last.status).toBe(402);
    expect(last.json.error).toMatchObject({ code: 'PLAN_LIMIT_EXCEEDED', details: { reason: 'plan_limit', limit: 'requests_per_month' } });

    const c = await makeTenant(g);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${c.tenantId}/billing`, { credit_balance: 0 })).status).toBe(200);
    const search = await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': c.key }, body: { query: 'q' } });
    expect(search.status).toBe(402);
    expect(search.json.error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', details: { reason: 'credit_balance' } });
    // The control plane is not metered.
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': c.key } })).status).toBe(200);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${c.tenantId}/billing`, { credit_balance: 100 })).status).toBe(200);
    expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': c.key }, body: { query: 'q' } })).status).toBe(200);
  });

  it('spends rate on refused requests too: each refusal carries the RateLimit headers, and a flood of them is throttled', async () => {
    const t = await makeTenant(g);
    const k = await makeKey(g, t.tenantId, { scopes: { modules: ['memory'] }, rate_limit: { per_second: 0.5, burst: 2 } });
    const ping = () => http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': k.key } });
    for (let i = 0; i < 2; i++) {
      const r = await ping();
      expect({ i, status: r.status, limit: r.headers['ratelimit-limit'] !== undefined }).toEqual({ i, status: 403, limit: true });
    }
    const third = await ping();
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBeDefined();
    // Refusals spend no quota: a tiny plan's five requests are all still there.
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { plan: 'tiny' })).status).toBe(200);
    for (let i = 0; i < 5; i++) expect({ i, status: (await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } })).status }).toEqual({ i, status: 200 });
  });

  it('counts a signed-in user\'s requests against the monthly quota as a key\'s, and refuses them once it is used up', async () => {
    const t = await makeTenant(g);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { plan: 'tiny' })).status).toBe(200);
    const email = `quota-${uid()}@example.test`;
    expect((await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password: 'a long enough password', role: 'admin' })).status).toBe(201);
    const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password: 'a long enough password' } });
    expect(login.status).toBe(200);
    const asUser = () => http(g.publicUrl, 'GET', '/memory/departments', { headers: { authorization: `Bearer ${login.json.token}` } });
    // Five a month: three of the user's, two of the key's.
    for (let i = 0; i < 3; i++) expect({ i, status: (await asUser()).status }).toEqual({ i, status: 200 });
    for (let i = 0; i < 2; i++) expect({ i, status: (await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } })).status }).toEqual({ i, status: 200 });
    const over = await asUser();
    expect(over.status).toBe(402);
    expect(over.headers['ratelimit-limit']).toBeDefined();
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } })).status).toBe(402);
  });

  it('does not meter the MCP surface (the API calls its tools make are metered), but rate-limits it', async () => {
    const mcp = (key: string) => http(g.publicUrl, 'POST', '/mcp', { headers: { 'x-api-key': key }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    // The monthly quota: /mcp requests do not count, so a tool call counts once (its call back to the API).
    const t = await makeTenant(g);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { plan: 'tiny' })).status).toBe(200);
    for (let i = 0; i < 8; i++) expect({ i, status: (await mcp(t.key)).status }).toEqual({ i, status: 200 });
    for (let i = 0; i < 5; i++) expect({ i, status: (await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } })).status }).toEqual({ i, status: 200 });
    const over = await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } });
    expect(over.json.error).toMatchObject({ code: 'PLAN_LIMIT_EXCEEDED', details: { limit: 'requests_per_month' } });
    // A spent quota does not close /mcp either: the tools' calls back to the API are refused, as the API is.
    expect((await mcp(t.key)).status).toBe(200);
    // Credits: an exhausted balance refuses the metered API, not the MCP surface.
    const c = await makeTenant(g);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${c.tenantId}/billing`, { credit_balance: 0 })).status).toBe(200);
    expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': c.key }, body: { query: 'q' } })).status).toBe(402);
    expect((await mcp(c.key)).status).toBe(200);
    // The per-key rate limit still applies to every /mcp request: a client cannot flood it.
    const k = await makeKey(g, c.tenantId, { rate_limit: { per_second: 0.5, burst: 2 } });
    expect((await mcp(k.key)).status).toBe(200);
    expect((await mcp(k.key)).status).toBe(200);
    const limited = await mcp(k.key);
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('limits keys per plan with the same plan-limit 402', async () => {
    const t = await makeTenant(g);
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { plan: 'tiny' })).status).toBe(200);
    await makeKey(g, t.tenantId, {});
    await makeKey(g, t.tenantId, {});
    const r = await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/keys`, { type: 'live', name: 'one too many' });
    expect(r.status).toBe(402);
    expect(r.json.error.details.reason).toBe('plan_limit');
  });

  it('fails closed with 503 when the shared state is unreachable', async () => {
    const t = await makeTenant(g);
    const cut = await startGateway(database, {}, { redisPrefix: `gwlim2:${uid()}:`, migrate: false, redisUrl: `redis://127.0.0.1:${await freePort()}` });
    try {
      const r = await http(cut.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } });
      expect(r.status).toBe(503);
      expect(r.json.error.code).toBe('UNAVAILABLE');
      expect(r.headers['retry-after']).toBe('1');
      const revoke = await adminCall(cut, 'DELETE', `/internal/v1/tenants/${t.tenantId}/keys/${t.keyId}`);
      expect(revoke.status).toBe(503);
    } finally {
      await cut.close();
    }
    // The failed revoke is retried (as its 503 asks) through a gateway that reaches Redis: the key stops everywhere.
    expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${t.tenantId}/keys/${t.keyId}`)).status).toBe(204);
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': t.key } })).status).toBe(401);
  });
});
