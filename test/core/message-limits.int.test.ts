/**
 * Spec 2's message rate limits, enforced by the gateway in its shared state: per caller and per tenant, 429 with
 * the gateway's rate headers and core's `{ detail }` body; other routes and other tenants unaffected.
 */
import { closeIdleHttpConnections } from '../support/http';
import { startCoreStack, type CoreStack } from './harness';

describe('core: chat message rate limits at the gateway', () => {
  let s: CoreStack;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    s = await startCoreStack({ gateway: { chatMessageLimits: { perUserPerMinute: 2, perTenantPerMinute: 3 } } });
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

    // Another caller of the tenant has its own allowance, until the tenant's three are spent.
    const otherSession = await session(other);
    expect((await ask(other, otherSession)).status).toBe(200);
    const tenantFull = await ask(other, otherSession);
    expect(tenantFull.status).toBe(429);
    expect(tenantFull.json.detail).toContain('the tenant\'s chat message rate limit');

    // Another tenant is untouched.
    expect((await ask(b.key, await session(b.key))).status).toBe(200);
  });
});
