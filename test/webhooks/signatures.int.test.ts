import { EVENT_KINDS, EventEnvelopeSchema } from '@lore/contracts';
import { SecretBox, generateEncryptionKey, parseEncryptionKeys, type KafkaBus, type OutboxRelay } from '@lore/runtime';
import { Webhook } from 'standardwebhooks';
import { signingSecretContext } from '../../services/gateway/src/webhooks/secret-storage';
import { sealStoredSecrets } from '../../services/gateway/src/webhooks/seal-stored-secrets';
import { generateSigningSecret } from '../../services/gateway/src/webhooks/signing';
import type { HostLookup } from '@lore/outbound';
import { http, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import type { WebhooksWorker } from '../../services/gateway/src/webhooks/worker';
import {
  assertSigned,
  commitEvent,
  createTestPki,
  envelope,
  eventually,
  kafkaBus,
  plainHmacMatches,
  silentLogger,
  startReceiver,
  startRelay,
  startWorker,
  subscribe,
  tenantId,
  testEncryptionKeys,
  testSecretBox,
  uniqueGroupPrefix,
  webhookService,
  webhooksDatabase,
  type Receiver,
  type ReceivedRequest,
  type TestPki,
  type WebhooksDb,
} from './support';

/**
 * Every delivery verifies with a plain HMAC check (spec 1 rule 7) and with the standardwebhooks package, before,
 * during and after a secret rotation. Events are committed through the outbox, as producers do. Signing secrets are
 * stored sealed: the column never holds what the API returned, and deliveries still verify with it.
 */
jest.setTimeout(120_000);

let pki: TestPki;
let store: WebhooksDb;
let bus: KafkaBus;
let relay: OutboxRelay;
let worker: WebhooksWorker;
let all: Receiver;
let entities: Receiver;
let gateway: GatewayUnderTest;
let owner: TenantFixture;
const tenant = tenantId();
const viewer = { tenantId: tenant, workspaceId: null };

/** Subscriptions made through the public API point at this name (the API refuses loopback URLs); it is the receivers'. */
const RECEIVER_HOST = 'receiver.lore.test';
const lookup: HostLookup = async (hostname) => {
  if (hostname === RECEIVER_HOST) return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

beforeAll(async () => {
  pki = createTestPki();
  store = await webhooksDatabase();
  bus = kafkaBus('signatures', { ownTopics: true });
  worker = await startWorker(store.db, bus, pki, { groupIdPrefix: uniqueGroupPrefix('signatures') }, lookup);
  relay = startRelay(store.db, bus, 50);
  all = await startReceiver(pki, () => ({ status: 200 }));
  entities = await startReceiver(pki, () => ({ status: 202 }));
  // The real gateway on the same database, with the key ring the worker has.
  gateway = await startGateway(store.database, {}, { redisPrefix: `lore:whsig:${uid()}:`, migrate: false });
  owner = await makeTenant(gateway);
});

afterAll(async () => {
  await gateway?.close();
  await relay?.stop();
  await worker?.stop();
  await bus?.close();
  await all?.close();
  await entities?.close();
  await store?.close();
  pki?.cleanup();
});

function standardVerifies(secret: string, r: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(r.rawBody, {
      'webhook-id': String(r.headers['webhook-id']),
      'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    });
    return true;
  } catch {
    return false;
  }
}

describe('webhook signatures', () => {
  it('delivers the exact envelope of every subscribed event kind, signed both ways, and only what was subscribed', async () => {
    const everything = await subscribe(store.db, tenant, `${all.url}/all`);
    const onlyEntities = await subscribe(store.db, tenant, `${entities.url}/entities`, ['memory.entity.created']);
    const sent = EVENT_KINDS.map((kind) => {
      const e = envelope(tenant, kind, { doc_id: `doc-${kind}`, vault_id: 'v_1', needs_review: kind === 'memory.ingest.auto_routed' });
      // A field a producer adds beyond the envelope never reaches receivers.
      return { ...e, internal_note: 'not for receivers' };
    });
    for (const e of sent) await commitEvent(store.db, e);

    const got = await all.waitFor(EVENT_KINDS.length, 30_000);
    const byId = new Map(got.map((r) => [String(r.headers['webhook-id']), r]));
    for (const e of sent) {
      const r = byId.get(e.event_id);
      expect(r).toBeDefined();
      const verified = assertSigned(r!, everything.secret);
      expect(EventEnvelopeSchema.strict().parse(JSON.parse(r!.rawBody))).toEqual({
        event_id: e.event_id,
        event: e.event,
        occurred_at: e.occurred_at,
        scope: e.scope,
        payload: e.payload,
      });
      expect(verified.event_id).toBe(e.event_id);
      expect(r!.headers['x-service-signature-next']).toBeUndefined();
      expect(r!.headers['content-type']).toBe('application/json');
      expect(Number(r!.headers['webhook-timestamp'])).toBeGreaterThan(Date.now() / 1000 - 60);
    }

    const [entity] = await entities.waitFor(1, 30_000);
    assertSigned(entity!, onlyEntities.secret);
    expect(JSON.parse(entity!.rawBody).event).toBe('memory.entity.created');
    await new Promise((r) => setTimeout(r, 1000));
    expect(entities.requests).toHaveLength(1);
  });

  it('signs with both secrets during a rotation overlap, and with the new one only after an immediate rotation', async () => {
    const service = webhookService(store.db);
    const receiver = await startReceiver(pki, () => ({ status: 200 }));
    try {
      const { subscription, secret: first } = await service.create(viewer, { url: `${receiver.url}/rotating`, events: ['memory.health.assessed'] });

      await commitEvent(store.db, envelope(tenant, 'memory.health.assessed', { score: 0.9 }));
      const [before] = await receiver.waitFor(1, 30_000);
      assertSigned(before!, first);

      const { secret: second, subscription: rotated } = await service.rotateSecret(viewer, subscription.id, 3600);
      expect(second).not.toBe(first);
      expect(rotated.previousSecretExpiresAt!.getTime()).toBeGreaterThan(Date.now());
      await commitEvent(store.db, envelope(tenant, 'memory.health.assessed', { score: 0.8 }));
      const [, during] = await receiver.waitFor(2, 30_000);
      // x-service-signature keeps the secret receivers already have; -next carries the new one.
      assertSigned(during!, first, 'x-service-signature');
      assertSigned(during!, second, 'x-service-signature-next');
      expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
      expect(standardVerifies(first, during!)).toBe(true);
      expect(standardVerifies(second, during!)).toBe(true);

      // Overlap 0: the replaced secret stops at once (a leaked secret).
      const { secret: third } = await service.rotateSecret(viewer, subscription.id, 0);
      await commitEvent(store.db, envelope(tenant, 'memory.health.assessed', { score: 0.7 }));
      const [, , after] = await receiver.waitFor(3, 30_000);
      assertSigned(after!, third);
      expect(after!.headers['x-service-signature-next']).toBeUndefined();
      expect(plainHmacMatches(second, after!.rawBody, after!.headers['x-service-signature'])).toBe(false);
      expect(standardVerifies(second, after!)).toBe(false);
      expect(standardVerifies(first, after!)).toBe(false);
    } finally {
      await receiver.close();
    }
  });
});

/** The stored columns of one subscription, read inside its tenant as the gateway and the worker read them. */
async function storedSecrets(tenant: string, id: string): Promise<{ secret: string; previous: string | null }> {
  return store.db.withTenant(tenant, async (sql) => {
    const r = await sql.query<{ secret: string; previous_secret: string | null }>(
      `SELECT secret, previous_secret FROM gateway.webhook_subscriptions WHERE tenant_id = $1 AND id = $2`,
      [tenant, id],
    );
    return { secret: r.rows[0]!.secret, previous: r.rows[0]!.previous_secret };
  });
}

/** What a database dump would reveal: every row's columns, searched for a secret or its key part. */
async function dumpContains(secret: string): Promise<boolean> {
  const r = await store.db.asOwner((sql) =>
    sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM gateway.webhook_subscriptions s WHERE strpos(s::text, $1) > 0 OR strpos(s::text, $2) > 0`,
      [secret, secret.slice('whsec_'.length)],
    ),
  );
  return r.rows[0]!.n > 0;
}

describe('signing secrets at rest', () => {
  it('stores the secret the API returned only sealed, bound to its row; deliveries verify with it, across a rotation', async () => {
    const receiver = await startReceiver(pki, () => ({ status: 200 }));
    try {
      const api = (method: string, path: string, body?: unknown) => http(gateway.publicUrl, method, path, { headers: { 'x-api-key': owner.key }, ...(body !== undefined ? { body } : {}) });
      const created = await api('POST', '/api/v1/webhooks', { url: `https://${RECEIVER_HOST}:${receiver.port}/sealed`, events: ['memory.entity.created'] });
      expect(created.status).toBe(201);
      const id: string = created.json.webhook_id;
      const first: string = created.json.secret;
      expect(first).toMatch(/^whsec_/);

      const stored = await storedSecrets(owner.tenantId, id);
      expect(stored.secret.startsWith('enc:v1:test-k1:')).toBe(true);
      expect(stored.secret).not.toContain(first);
      expect(stored.secret).not.toContain(first.slice('whsec_'.length));
      expect(stored.previous).toBeNull();
      expect(await dumpContains(first)).toBe(false);
      // It is the returned secret, sealed for this row: it opens there and nowhere else.
      const box = testSecretBox();
      expect(box.open(stored.secret, signingSecretContext(owner.tenantId, id))).toBe(first);
      expect(() => box.open(stored.secret, signingSecretContext(owner.tenantId, 'wh_another'))).toThrow(/does not authenticate/);

      await commitEvent(store.db, envelope(owner.tenantId, 'memory.entity.created', { entity_id: 'e1' }));
      const [before] = await receiver.waitFor(1, 30_000);
      assertSigned(before!, first);

      const rotated = await api('POST', `/api/v1/webhooks/${id}/rotate-secret`, { overlap_seconds: 3600 });
      expect(rotated.status).toBe(200);
      const second: string = rotated.json.secret;
      const after = await storedSecrets(owner.tenantId, id);
      expect(after.secret.startsWith('enc:v1:test-k1:')).toBe(true);
      expect(after.previous!.startsWith('enc:v1:test-k1:')).toBe(true);
      expect(await dumpContains(first)).toBe(false);
      expect(await dumpContains(second)).toBe(false);
      expect(box.open(after.previous!, signingSecretContext(owner.tenantId, id))).toBe(first);

      await commitEvent(store.db, envelope(owner.tenantId, 'memory.entity.created', { entity_id: 'e2' }));
      const [, during] = await receiver.waitFor(2, 30_000);
      assertSigned(during!, first, 'x-service-signature');
      assertSigned(during!, second, 'x-service-signature-next');
    } finally {
      await receiver.close();
    }
  });

  it('keeps signing a row written before encryption, and a starting gateway seals it', async () => {
    const receiver = await startReceiver(pki, () => ({ status: 200 }));
    const legacyTenant = tenantId();
    try {
      const sub = await subscribe(store.db, legacyTenant, `${receiver.url}/legacy`, ['memory.ingest.dlp_flagged']);
      // What an older gateway wrote: the plaintext secret in the column.
      const legacy = generateSigningSecret();
      await store.db.withTenant(legacyTenant, (sql) => sql.query(`UPDATE gateway.webhook_subscriptions SET secret = $2 WHERE id = $1`, [sub.id, legacy]));

      await commitEvent(store.db, envelope(legacyTenant, 'memory.ingest.dlp_flagged', { doc_id: 'd1' }));
      const [plain] = await receiver.waitFor(1, 30_000);
      assertSigned(plain!, legacy);

      const restarted = await startGateway(store.database, {}, { redisPrefix: `lore:whsig:${uid()}:`, migrate: false });
      try {
        const sealed = await eventually('the legacy secret to be sealed', async () => {
          const s = await storedSecrets(legacyTenant, sub.id);
          return s.secret.startsWith('enc:v1:') ? s : null;
        }, 15_000);
        expect(testSecretBox().open(sealed.secret, signingSecretContext(legacyTenant, sub.id))).toBe(legacy);
        expect(await dumpContains(legacy)).toBe(false);
      } finally {
        await restarted.close();
      }

      await commitEvent(store.db, envelope(legacyTenant, 'memory.ingest.dlp_flagged', { doc_id: 'd2' }));
      const [, afterSealing] = await receiver.waitFor(2, 30_000);
      assertSigned(afterSealing!, legacy);
    } finally {
      await receiver.close();
    }
  });

  it('never signs with a sealed secret copied from another row: the delivery is dead-lettered unsent', async () => {
    const receiver = await startReceiver(pki, () => ({ status: 200 }));
    const t = tenantId();
    try {
      const source = await subscribe(store.db, t, `${receiver.url}/source`, ['memory.entity.contradiction_resolved']);
      const target = await subscribe(store.db, t, `${receiver.url}/target`, ['memory.entity.contradiction_detected']);
      await store.db.withTenant(t, (sql) =>
        sql.query(`UPDATE gateway.webhook_subscriptions SET secret = (SELECT secret FROM gateway.webhook_subscriptions WHERE id = $1) WHERE id = $2`, [source.id, target.id]),
      );
      await commitEvent(store.db, envelope(t, 'memory.entity.contradiction_detected', { entity_id: 'e9' }));
      const dead = await eventually('the delivery to be dead-lettered', () =>
        store.db.withTenant(t, async (sql) => {
          const r = await sql.query<{ status: string; dead_reason: string | null; attempts: number }>(
            `SELECT status, dead_reason, attempts FROM gateway.webhook_deliveries WHERE subscription_id = $1`,
            [target.id],
          );
          return r.rows[0]?.status === 'dead' ? r.rows[0] : null;
        }), 30_000);
      expect(dead).toMatchObject({ dead_reason: 'secret_unreadable', attempts: 0 });
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });
});

describe('the sealing pass (own database, no worker)', () => {
  let own: WebhooksDb;

  beforeAll(async () => {
    own = await webhooksDatabase(4);
  });

  afterAll(async () => {
    await own?.close();
  });

  it('seals plaintext, re-seals under a new primary key, drops ended overlaps, and leaves what it cannot open', async () => {
    const k1 = testEncryptionKeys();
    const k2 = parseEncryptionKeys(generateEncryptionKey('k2'));
    const stranger = parseEncryptionKeys(generateEncryptionKey('gone'));
    const [ta, tb] = [tenantId(), tenantId()];
    const update = (t: string, id: string, set: string, params: unknown[]) =>
      own.db.withTenant(t, (sql) => sql.query(`UPDATE gateway.webhook_subscriptions SET ${set} WHERE id = $1`, [id, ...params]));

    // a: plaintext current and a plaintext previous whose overlap has ended; b: sealed with k1 during an overlap;
    // c: sealed with a key nobody has any more.
    const a = await subscribe(own.db, ta, 'https://hooks.example.com/a');
    const legacy = generateSigningSecret();
    await update(ta, a.id, `secret = $2, previous_secret = $3, previous_secret_expires_at = now() - interval '1 hour'`, [legacy, generateSigningSecret()]);
    const b = await subscribe(own.db, tb, 'https://hooks.example.com/b');
    const bPrevious = generateSigningSecret();
    await update(tb, b.id, `previous_secret = $2, previous_secret_expires_at = now() + interval '1 hour'`, [new SecretBox(k1).seal(bPrevious, signingSecretContext(tb, b.id))]);
    const c = await subscribe(own.db, tb, 'https://hooks.example.com/c');
    const unreadable = new SecretBox(stranger).seal(generateSigningSecret(), signingSecretContext(tb, c.id));
    await update(tb, c.id, `secret = $2`, [unreadable]);

    // Rotation of the encryption key: k2 seals from now on, k1 still opens.
    const ring = new SecretBox([...k2, ...k1]);
    const report = await sealStoredSecrets(own.db, ring, silentLogger, { batchSize: 1 });
    expect(report).toEqual({ sealed: 2, unreadable: 1 });

    const read = (t: string, id: string) =>
      own.db.withTenant(t, async (sql) => (await sql.query<{ secret: string; previous_secret: string | null }>(`SELECT secret, previous_secret FROM gateway.webhook_subscriptions WHERE id = $1`, [id])).rows[0]!);
    const ra = await read(ta, a.id);
    expect(SecretBox.keyIdOf(ra.secret)).toBe('k2');
    expect(ring.open(ra.secret, signingSecretContext(ta, a.id))).toBe(legacy);
    expect(ra.previous_secret).toBeNull();
    const rb = await read(tb, b.id);
    expect(SecretBox.keyIdOf(rb.secret)).toBe('k2');
    expect(ring.open(rb.secret, signingSecretContext(tb, b.id))).toBe(b.secret);
    expect(SecretBox.keyIdOf(rb.previous_secret!)).toBe('k2');
    expect(ring.open(rb.previous_secret!, signingSecretContext(tb, b.id))).toBe(bPrevious);
    // Once everything is under k2, k1 alone no longer opens it and k2 alone does: k1 can be retired.
    expect(new SecretBox(k2).open(rb.secret, signingSecretContext(tb, b.id))).toBe(b.secret);
    expect((await read(tb, c.id)).secret).toBe(unreadable);

    // A second pass has nothing left but the value it cannot open.
    expect(await sealStoredSecrets(own.db, ring, silentLogger)).toEqual({ sealed: 0, unreadable: 1 });
  });
});
