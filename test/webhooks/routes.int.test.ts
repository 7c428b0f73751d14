import { EVENT_KINDS } from '@lore/contracts';
import { runRuntimeMigrations } from '@lore/runtime';
import { Webhook } from 'standardwebhooks';
import { freshDatabase, http, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import type { TestDatabase } from '../support/infra';
import { AttemptViewSchema, DeliveryViewSchema, WebhookViewSchema, WebhookWithSecretSchema } from '../../services/gateway/src/routes/webhooks';

/**
 * `/api/v1/webhooks...` black-box over HTTP through the real gateway (real PostgreSQL and Redis): the contract of
 * spec 1 (HTTPS url, the seven event kinds, the secret shown once), our management routes, and the security rules
 * (no key, wrong key, other tenant, wrong scope).
 */
jest.setTimeout(60_000);

let database: TestDatabase;
let g: GatewayUnderTest;
let alice: TenantFixture;
let bob: TenantFixture;

const URL_OK = 'https://hooks.example.com/lore';

function call(t: { key: string }, method: string, path: string, body?: unknown) {
  return http(g.publicUrl, method, path, { headers: { 'x-api-key': t.key }, ...(body !== undefined ? { body } : {}) });
}

beforeAll(async () => {
  database = await freshDatabase('lore_wh_routes');
  g = await startGateway(database, {}, { redisPrefix: `lore:whr:${uid()}:` });
  await runRuntimeMigrations(g.db);
  alice = await makeTenant(g);
  bob = await makeTenant(g);
});

afterAll(async () => {
  await g?.close();
  await database?.drop();
});

describe('POST /api/v1/webhooks', () => {
  it('creates a subscription and returns its signing secret once', async () => {
    const created = await call(alice, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed', 'memory.entity.created'] });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.json).toMatchObject({ url: URL_OK, events: ['memory.ingest.completed', 'memory.entity.created'], enabled: true, disabled_reason: null });
    expect(created.json.webhook_id).toMatch(/^wh_[0-9a-f]{24}$/);
    // The answers are exactly the documented shapes.
    WebhookWithSecretSchema.strict().parse(created.json);
    expect(created.json.secret).toMatch(/^whsec_/);
    // The secret is a working Standard Webhooks secret.
    expect(() => new Webhook(created.json.secret)).not.toThrow();

    const fetched = await call(alice, 'GET', `/api/v1/webhooks/${created.json.webhook_id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.json.secret).toBeUndefined();
    WebhookViewSchema.strict().parse(fetched.json);
    expect(JSON.stringify(fetched.json)).not.toContain(created.json.secret);
    const listed = await call(alice, 'GET', '/api/v1/webhooks');
    expect(JSON.stringify(listed.json)).not.toContain(created.json.secret);
  });

  it.each([
    ['a plain http URL', { url: 'http://hooks.example.com/x', events: ['memory.ingest.completed'] }],
    ['a loopback URL', { url: 'https://127.0.0.1/x', events: ['memory.ingest.completed'] }],
    ['a metadata URL in decimal', { url: 'https://2852039166/latest', events: ['memory.ingest.completed'] }],
    ['a localhost name', { url: 'https://api.localhost/x', events: ['memory.ingest.completed'] }],
    ['credentials in the URL', { url: 'https://u:p@hooks.example.com/x', events: ['memory.ingest.completed'] }],
    ['an unknown event kind', { url: URL_OK, events: ['memory.ingest.deleted'] }],
    ['no events', { url: URL_OK, events: [] }],
    ['no url', { events: ['memory.ingest.completed'] }],
    ['an unknown field', { url: URL_OK, events: ['memory.ingest.completed'], tenant_id: 'someone-else' }],
  ])('refuses %s with 400', async (_what, body) => {
    const r = await call(alice, 'POST', '/api/v1/webhooks', body);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('VALIDATION_FAILED');
  });

  it('caps the number of subscriptions per tenant', async () => {
    const t = await makeTenant(g);
    for (let i = 0; i < 50; i++) {
      expect((await call(t, 'POST', '/api/v1/webhooks', { url: `${URL_OK}/${i}`, events: ['memory.ingest.completed'] })).status).toBe(201);
    }
    const over = await call(t, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed'] });
    expect(over.status).toBe(422);
    expect(over.json.error.message).toMatch(/at most 50/);
  });

  it('accepts every one of the seven event kinds', async () => {
    const r = await call(alice, 'POST', '/api/v1/webhooks', { url: URL_OK, events: [...EVENT_KINDS] });
    expect(r.status).toBe(201);
    expect(r.json.events).toEqual([...EVENT_KINDS]);
  });
});

describe('managing a subscription', () => {
  it('updates events, disables and re-enables, rotates the secret, deletes', async () => {
    const created = (await call(alice, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed'], description: 'crm sync' })).json;
    const id = created.webhook_id as string;

    const patched = await call(alice, 'PATCH', `/api/v1/webhooks/${id}`, { events: ['memory.health.assessed'], enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ events: ['memory.health.assessed'], enabled: false, disabled_reason: 'manual', description: 'crm sync' });
    expect(patched.json.disabled_at).not.toBeNull();
    const enabled = await call(alice, 'PATCH', `/api/v1/webhooks/${id}`, { enabled: true });
    expect(enabled.json).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null });
    expect((await call(alice, 'PATCH', `/api/v1/webhooks/${id}`, {})).status).toBe(400);
    expect((await call(alice, 'PATCH', `/api/v1/webhooks/${id}`, { url: 'https://10.0.0.1/x' })).status).toBe(400);

    const rotated = await call(alice, 'POST', `/api/v1/webhooks/${id}/rotate-secret`, { overlap_seconds: 600 });
    expect(rotated.status).toBe(200);
    expect(rotated.json.secret).toMatch(/^whsec_/);
    expect(rotated.json.secret).not.toBe(created.secret);
    const expires = Date.parse(rotated.json.previous_secret_expires_at);
    expect(expires).toBeGreaterThan(Date.now() + 590_000);
    expect(expires).toBeLessThan(Date.now() + 610_000);
    const immediate = await call(alice, 'POST', `/api/v1/webhooks/${id}/rotate-secret`, { overlap_seconds: 0 });
    expect(immediate.json.previous_secret_expires_at).toBeNull();
    // The default overlap applies to an empty body.
    expect((await call(alice, 'POST', `/api/v1/webhooks/${id}/rotate-secret`)).json.previous_secret_expires_at).not.toBeNull();

    expect((await call(alice, 'DELETE', `/api/v1/webhooks/${id}`)).status).toBe(204);
    expect((await call(alice, 'GET', `/api/v1/webhooks/${id}`)).status).toBe(404);
    expect((await call(alice, 'DELETE', `/api/v1/webhooks/${id}`)).status).toBe(404);
  });

  it('lists in pages with a cursor', async () => {
    const t = await makeTenant(g);
    for (let i = 0; i < 5; i++) await call(t, 'POST', '/api/v1/webhooks', { url: `${URL_OK}/${i}`, events: ['memory.entity.created'] });
    const first = await call(t, 'GET', '/api/v1/webhooks?limit=3');
    expect(first.json.count).toBe(3);
    const second = await call(t, 'GET', `/api/v1/webhooks?limit=3&cursor=${first.json.next_cursor}`);
    expect(second.json.count).toBe(2);
    expect(second.json.next_cursor).toBeNull();
    const ids = [...first.json.webhooks, ...second.json.webhooks].map((w: { webhook_id: string }) => w.webhook_id);
    expect(new Set(ids).size).toBe(5);
    expect((await call(t, 'GET', '/api/v1/webhooks?limit=0')).status).toBe(400);
    // A cursor no page gave is refused, not read as a place past the end (an empty "last" page).
    for (const path of ['/api/v1/webhooks?cursor=not-a-cursor', `/api/v1/webhooks/${ids[0]}/deliveries?cursor=zzz`, `/api/v1/webhooks/${ids[0]}/dead-letters?cursor=${ids[1]}`]) {
      const r = await call(t, 'GET', path);
      expect({ path, status: r.status, code: r.json.error?.code }).toEqual({ path, status: 400, code: 'VALIDATION_FAILED' });
    }
  });
});

describe('dead letters and replay', () => {
  async function seedDeadLetters(t: TenantFixture, webhookId: string, deadAt: string[]): Promise<string[]> {
    const ids = deadAt.map((_, i) => `dlv_${uid()}${uid()}${String(i).padStart(4, '0')}`);
    await g.db.withTenant(t.tenantId, async (sql) => {
      for (const [i, at] of deadAt.entries()) {
        await sql.query(
          `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, attempts, next_step, dead_at, dead_reason)
           VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', 'dead', 6, 5, $5, 'retries_exhausted')`,
          [ids[i], t.tenantId, webhookId, `evt_${uid()}`, at],
        );
      }
    });
    return ids;
  }

  it('lists dead letters by time range and replays them by id or by range through the outbox', async () => {
    const t = await makeTenant(g);
    const id = (await call(t, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed'] })).json.webhook_id as string;
    const ids = await seedDeadLetters(t, id, ['2030-01-01T10:00:00.000Z', '2030-01-01T11:00:00.000Z', '2030-01-01T12:00:00.000Z']);

    const all = await call(t, 'GET', `/api/v1/webhooks/${id}/dead-letters`);
    expect(all.json.dead_letters.map((d: { delivery_id: string }) => d.delivery_id)).toEqual(ids);
    const ranged = await call(t, 'GET', `/api/v1/webhooks/${id}/dead-letters?from=2030-01-01T10:30:00Z&to=2030-01-01T12:00:00Z`);
    expect(ranged.json.dead_letters.map((d: { delivery_id: string }) => d.delivery_id)).toEqual([ids[1]]);

    const byId = await call(t, 'POST', `/api/v1/webhooks/${id}/dead-letters/replay`, { delivery_ids: [ids[0]] });
    expect(byId.status).toBe(202);
    expect(byId.json).toEqual({ replayed: 1, delivery_ids: [ids[0]] });
    const byRange = await call(t, 'POST', `/api/v1/webhooks/${id}/dead-letters/replay`, { from: '2030-01-01T10:30:00Z' });
    expect(byRange.json.delivery_ids).toEqual([ids[1], ids[2]]);
    // Replaying again finds nothing: they are pending now, in a new cycle.
    expect((await call(t, 'POST', `/api/v1/webhooks/${id}/dead-letters/replay`, { delivery_ids: ids })).json.replayed).toBe(0);
    const detail = await call(t, 'GET', `/api/v1/webhooks/${id}/deliveries/${ids[0]}`);
    expect(detail.json).toMatchObject({ status: 'pending', cycle: 2, dead_at: null, attempts: [] });
    DeliveryViewSchema.extend({ attempts: AttemptViewSchema.array() }).strict().parse(detail.json);
    for (const d of all.json.dead_letters) DeliveryViewSchema.strict().parse(d);

    const outbox = await g.db.asOwner((sql) =>
      sql.query<{ topic: string; value: { delivery_id: string; cycle: number; step: number } }>(`SELECT topic, value FROM runtime.outbox WHERE key LIKE $1 ORDER BY id`, [`${t.tenantId}/%`]),
    );
    expect(outbox.rows.map((r) => [r.topic, r.value.delivery_id, r.value.cycle, r.value.step])).toEqual(ids.map((d) => ['lore.webhook.deliveries', d, 2, 0]));

    const pending = await call(t, 'GET', `/api/v1/webhooks/${id}/deliveries?status=pending`);
    expect(pending.json.count).toBe(3);
    expect((await call(t, 'POST', `/api/v1/webhooks/${id}/dead-letters/replay`, {})).status).toBe(400);
    expect((await call(t, 'POST', `/api/v1/webhooks/${id}/dead-letters/replay`, { from: '2030-01-02T00:00:00Z', to: '2030-01-01T00:00:00Z' })).status).toBe(400);
    // Each refusal names what is wrong, where: too many or no ids at `delivery_ids`, ids and a range at once.
    const refusals: Array<[unknown, string, RegExp]> = [
      [{ delivery_ids: Array.from({ length: 101 }, (_, i) => `dlv_${i}`) }, 'delivery_ids', /100/],
      [{ delivery_ids: [] }, 'delivery_ids', /1/],
      [{ delivery_ids: [ids[0]], from: '2020-01-01T00:00:00Z' }, 'delivery_ids', /not both/],
      // A time PostgreSQL cannot store is a refusal, not a 500.
      [{ from: '0000-06-01T00:00:00Z' }, 'from', /years 1 and 9999/],
      // A bad bound beside a good one is told what is wrong with it, not that from must be before to.
      [{ from: '0000-06-01T00:00:00Z', to: '2030-01-02T00:00:00Z' }, 'from', /years 1 and 9999/],
      [{ from: '2030-01-01T00:00:00Z', to: '0000-06-01T00:00:00Z' }, 'to', /years 1 and 9999/],
      [{ from: 'yesterday', to: '2030-01-02T00:00:00Z' }, 'from', /ISO timestamp/],
    ];
    for (const [body, path, message] of refusals) {
      const r = await call(t, 'POST', `/api/v1/webhooks/${id}/dead-letters/replay`, body);
      expect(r.status).toBe(400);
      expect(r.json.error.details).toEqual([expect.objectContaining({ path, message: expect.stringMatching(message) })]);
    }
  });

  it('refuses to replay into a disabled endpoint', async () => {
    const t = await makeTenant(g);
    const id = (await call(t, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed'], enabled: false })).json.webhook_id as string;
    const r = await call(t, 'POST', `/api/v1/webhooks/${id}/dead-letters/replay`, { from: '2020-01-01T00:00:00Z' });
    expect(r.status).toBe(409);
  });
});

describe('webhook route security', () => {
  let aliceHook: string;
  beforeAll(async () => {
    aliceHook = (await call(alice, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed'] })).json.webhook_id;
  });

  it('answers 401 without a key, with a wrong key, and with the key in Authorization', async () => {
    expect((await http(g.publicUrl, 'GET', '/api/v1/webhooks')).status).toBe(401);
    expect((await http(g.publicUrl, 'GET', '/api/v1/webhooks', { headers: { 'x-api-key': 'ck_live_wrong' } })).status).toBe(401);
    expect((await http(g.publicUrl, 'GET', '/api/v1/webhooks', { headers: { authorization: `Bearer ${alice.key}` } })).status).toBe(401);
    expect((await http(g.publicUrl, 'POST', '/api/v1/webhooks', { body: { url: URL_OK, events: ['memory.ingest.completed'] } })).status).toBe(401);
  });

  it("answers 404 for another tenant's subscription on every route", async () => {
    const paths: Array<[string, string, unknown?]> = [
      ['GET', `/api/v1/webhooks/${aliceHook}`],
      ['PATCH', `/api/v1/webhooks/${aliceHook}`, { enabled: false }],
      ['POST', `/api/v1/webhooks/${aliceHook}/rotate-secret`, {}],
      ['GET', `/api/v1/webhooks/${aliceHook}/deliveries`],
      ['GET', `/api/v1/webhooks/${aliceHook}/dead-letters`],
      ['POST', `/api/v1/webhooks/${aliceHook}/dead-letters/replay`, { from: '2020-01-01T00:00:00Z' }],
      ['DELETE', `/api/v1/webhooks/${aliceHook}`],
    ];
    for (const [method, path, body] of paths) {
      const r = await call(bob, method, path, body);
      expect([method, path, r.status]).toEqual([method, path, 404]);
    }
    const bobs = await call(bob, 'GET', '/api/v1/webhooks');
    expect(bobs.json.webhooks.map((w: { webhook_id: string }) => w.webhook_id)).not.toContain(aliceHook);
    expect((await call(alice, 'GET', `/api/v1/webhooks/${aliceHook}`)).status).toBe(200);
  });

  it('answers 403 to keys whose scope does not allow the route', async () => {
    const readOnly = await makeKey(g, alice.tenantId, { scopes: { access: 'read' } });
    expect((await call(readOnly, 'GET', '/api/v1/webhooks')).status).toBe(200);
    expect((await call(readOnly, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed'] })).status).toBe(403);
    expect((await call(readOnly, 'DELETE', `/api/v1/webhooks/${aliceHook}`)).status).toBe(403);
    const otherModule = await makeKey(g, alice.tenantId, { scopes: { modules: ['projects'] } });
    expect((await call(otherModule, 'GET', '/api/v1/webhooks')).status).toBe(403);
    const memoryScoped = await makeKey(g, alice.tenantId, { scopes: { memories: [alice.memoryId] } });
    expect((await call(memoryScoped, 'GET', '/api/v1/webhooks')).status).toBe(403);
    // Every event carries memory documents' ids and what was read from them (entity names, values): a key that may
    // use webhooks but not read the memory may not subscribe to them.
    const memoryDenied = await makeKey(g, alice.tenantId, { scopes: { modules: ['webhooks', 'projects'] } });
    const created = await call(memoryDenied, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.entity.created'] });
    expect([created.status, created.json.error.message]).toEqual([403, 'a credential that may not read the memory cannot manage webhooks: every event carries documents\' ids']);
    expect((await call(memoryDenied, 'GET', '/api/v1/webhooks')).status).toBe(403);
  });

  it('confines a workspace-pinned key to its workspace', async () => {
    const pinned = await makeKey(g, alice.tenantId, { workspace_id: alice.workspaceId });
    // Tenant-wide subscriptions are not the pinned key's to see.
    expect((await call(pinned, 'GET', `/api/v1/webhooks/${aliceHook}`)).status).toBe(404);
    const own = await call(pinned, 'POST', '/api/v1/webhooks', { url: URL_OK, events: ['memory.ingest.completed'] });
    expect(own.status).toBe(201);
    expect(own.json.workspace_id).toBe(alice.workspaceId);
    const visible = await call(pinned, 'GET', '/api/v1/webhooks');
    expect(visible.json.webhooks.map((w: { webhook_id: string }) => w.webhook_id)).toEqual([own.json.webhook_id]);
    // The tenant-wide key sees both.
    const everything = await call(alice, 'GET', '/api/v1/webhooks?limit=200');
    expect(everything.json.webhooks.map((w: { webhook_id: string }) => w.webhook_id)).toEqual(expect.arrayContaining([aliceHook, own.json.webhook_id]));
  });
});
