import { EVENT_KINDS, EventEnvelopeSchema } from '@lore/contracts';
import type { KafkaBus, OutboxRelay } from '@lore/runtime';
import { Webhook } from 'standardwebhooks';
import { WebhookService } from '../../services/gateway/src/webhooks/subscriptions';
import type { WebhooksWorker } from '../../services/gateway/src/webhooks/worker';
import {
  assertSigned,
  commitEvent,
  createTestPki,
  envelope,
  kafkaBus,
  plainHmacMatches,
  startReceiver,
  startRelay,
  startWorker,
  subscribe,
  tenantId,
  uniqueGroupPrefix,
  webhooksDatabase,
  type Receiver,
  type ReceivedRequest,
  type TestPki,
  type WebhooksDb,
} from './support';

/**
 * Every delivery verifies with a plain HMAC check (spec 1 rule 7) and with the standardwebhooks package, before,
 * during and after a secret rotation. Events are committed through the outbox, as producers do.
 */
jest.setTimeout(120_000);

let pki: TestPki;
let store: WebhooksDb;
let bus: KafkaBus;
let relay: OutboxRelay;
let worker: WebhooksWorker;
let all: Receiver;
let entities: Receiver;
const tenant = tenantId();
const viewer = { tenantId: tenant, workspaceId: null };

beforeAll(async () => {
  pki = createTestPki();
  store = await webhooksDatabase();
  bus = kafkaBus('signatures');
  worker = await startWorker(store.db, bus, pki, { groupIdPrefix: uniqueGroupPrefix('signatures') });
  relay = startRelay(store.db, bus, 50);
  all = await startReceiver(pki, () => ({ status: 200 }));
  entities = await startReceiver(pki, () => ({ status: 202 }));
});

afterAll(async () => {
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
    const service = new WebhookService(store.db, { allowLoopbackTargets: true });
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
