/**
 * Spec 2's message rate limits, enforced by the gateway in its shared state: per caller, per user group and per
 * tenant, 429 with the gateway's rate headers and core's `{ detail }` body; other routes and other tenants unaffected.
 */
import { closeIdleHttpConnections } from '../support/http';
import { startCoreStack, type CoreStack } from './harness';

describe('core: chat message rate limits at the gateway', () => {
  let s: CoreStack;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    s = await startCoreStack({ gateway: { chatMessageLimits: { perUserPerMinute: 2, perGroupPerMinute: 3, perTenantPerMinute: 5 } } });
  });
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  const ask = (key: string, id: string) => s.call('POST', '/api/chat/send-chat-message', as(key), { message: 'anything about the fog horn?', chat_session_id: id, stream: false });
  const session = async (key: string) => (await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: 0 })).json.chat_session_id as string;

  it('limits each caller, then the tenant, and never another tenant or the other routes', async () => {
    const a = await s.tenant();
    const other = await s.key(a.tenantId);
    const thirdKey = await s.key(a.tenantId);
    const b = await s.tenant();
    const id = await session(a.key);

    const first = await ask(a.key, id);
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-limit']).toBeDefined();
    expect((await ask(a.key, id)).status).toBe(200);
    const third = await ask(a.key, id);
    expect(third.status).toBe(429);
    expect(third.json).toEqual({ detail: expect.stringContaining('your chat message rate limit') });
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(third.headers['ratelimit-remaining']).toBe('0');
    // A refused message stored nothing: two questions and two answers under the root.
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(d.json.messages).toHaveLength(5);

    // Other routes of the same caller are not message-limited.
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key))).status).toBe(200);

    // Other callers of the tenant have their own allowances, until the tenant's five are spent (keys are in no group).
    const otherSession = await session(other);
    expect((await ask(other, otherSession)).status).toBe(200);
    expect((await ask(other, otherSession)).status).toBe(200);
    const thirdSession = await session(thirdKey);
    expect((await ask(thirdKey, thirdSession)).status).toBe(200);
    const tenantFull = await ask(thirdKey, thirdSession);
    expect(tenantFull.status).toBe(429);
    expect(tenantFull.json.detail).toContain('the tenant\'s chat message rate limit');

    // Another tenant is untouched.
    expect((await ask(b.key, await session(b.key))).status).toBe(200);
  });

  it('counts a signed-in user\'s message against each of their groups\' budgets', async () => {
    const c = await s.tenant();
    const admin = await s.user(c.tenantId, 'admin');
    const [m1, m2, m3] = [await s.user(c.tenantId, 'member'), await s.user(c.tenantId, 'member'), await s.user(c.tenantId, 'member')];
    const group = async (name: string, userIds: string[]) => {
      const r = await s.call('POST', '/api/manage/admin/user-group', as(admin.token), { name, user_ids: userIds });
      expect(r.status).toBe(201);
      return r.json.id as number;
    };
    const g = await group('Support', [m1.userId, m2.userId]);
    await group('Sales', [m3.userId]);
    const [s1, s2, s3] = [await session(m1.token), await session(m2.token), await session(m3.token)];

    // m1 spends two of the group's three (then its own two are gone); m2 the third, then the group refuses m2.
    expect((await ask(m1.token, s1)).status).toBe(200);
    expect((await ask(m1.token, s1)).status).toBe(200);
    expect((await ask(m1.token, s1)).json.detail).toContain('your chat message rate limit');
    const ok = await ask(m2.token, s2);
    expect(ok.status).toBe(200);
    expect(ok.headers['ratelimit-remaining']).toBe('0');
    const groupFull = await ask(m2.token, s2);
    expect(groupFull.status).toBe(429);
    expect(groupFull.json).toEqual({ detail: `user group ${g}'s chat message rate limit is reached; retry later` });
    expect(groupFull.headers['ratelimit-limit']).toBe('3');
    expect(groupFull.headers['ratelimit-remaining']).toBe('0');
    expect(Number(groupFull.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    // Another group's member and a key (in no group) spend only their own and the tenant's, until its five are gone.
    expect((await ask(m3.token, s3)).status).toBe(200);
    expect((await ask(c.key, await session(c.key))).status).toBe(200);
    const tenantFull = await ask(m3.token, s3);
    expect(tenantFull.status).toBe(429);
    expect(tenantFull.json.detail).toContain('the tenant\'s chat message rate limit');
  });
});
