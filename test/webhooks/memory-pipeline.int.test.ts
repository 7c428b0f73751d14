import { migrateGateway } from '@lore/gateway';
import type { KafkaBus, PostgresDb } from '@lore/runtime';
import type { WebhooksWorker } from '../../services/gateway/src/webhooks/worker';
import { startHarness, waitIndexed, type Harness } from '../memory/support';
import {
  assertSigned,
  createTestPki,
  eventually,
  kafkaBus,
  ownTopicPrefix,
  startReceiver,
  startWorker,
  subscribe,
  tenantId,
  uniqueGroupPrefix,
  type Receiver,
  type TestPki,
} from './support';

/**
 * End to end: content ingested through the graph service's memory API (real PostgreSQL and Kafka) produces domain
 * events in its outbox; the relay publishes them to `lore.events`; the webhooks worker fans them out and a subscribed
 * HTTPS receiver gets them, signed, with the envelope spec 1 describes.
 */
jest.setTimeout(120_000);

let pki: TestPki;
let h: Harness & { database?: unknown };
let bus: KafkaBus;
let worker: WebhooksWorker;
let receiver: Receiver;

beforeAll(async () => {
  pki = createTestPki();
  // Both buses on topics of this suite's own: its worker reads only its events, no other suite's worker reads them.
  const prefix = ownTopicPrefix('pipeline');
  h = await startHarness({ backend: 'postgres', bus: 'kafka', kafkaPrefix: prefix });
  await migrateGateway(h.db);
  bus = kafkaBus('pipeline', { prefix });
  worker = await startWorker(h.db as PostgresDb, bus, pki, { groupIdPrefix: uniqueGroupPrefix('pipeline') });
  receiver = await startReceiver(pki, () => ({ status: 204 }));
});

afterAll(async () => {
  await worker?.stop();
  await bus?.close();
  await receiver?.close();
  await h?.close();
  pki?.cleanup();
});

describe('memory pipeline to webhook receiver', () => {
  it('delivers ingest.auto_routed, dlp_flagged and ingest.completed of an ingested document, signed', async () => {
    const tenant = tenantId();
    const who = h.identity(tenant);
    const sub = await subscribe(h.db as PostgresDb, tenant, `${receiver.url}/memory`);

    const content = 'Our supplier invoice is overdue. Contact jane.doe@example.com or call +1 415 555 0100 about the payment terms.';
    const ingested = await h.call('POST', '/api/v1/memory/ingest', who, { content, content_type: 'text', routing: { mode: 'auto' } });
    expect(ingested.status).toBe(200);
    const docId = ingested.body.doc_id as string;
    await waitIndexed(h, who, docId);

    const find = (kind: string) => receiver.requests.find((r) => JSON.parse(r.rawBody).event === kind && JSON.parse(r.rawBody).payload.doc_id === docId);
    const completed = await eventually('memory.ingest.completed at the receiver', async () => find('memory.ingest.completed'), 60_000);
    const envelope = assertSigned(completed, sub.secret);
    expect(envelope).toMatchObject({
      event: 'memory.ingest.completed',
      scope: { tenant_id: tenant, workspace_id: who.workspace_id, memory_id: who.memory_id },
      payload: { doc_id: docId, vault_id: ingested.body.vault_id },
    });
    expect(envelope.occurred_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(completed.headers['webhook-id']).toBe(envelope.event_id);

    const routed = await eventually('memory.ingest.auto_routed at the receiver', async () => find('memory.ingest.auto_routed'), 30_000);
    expect(assertSigned(routed, sub.secret).payload).toMatchObject({ doc_id: docId, needs_review: ingested.body.needs_review });

    // The content carries an e-mail address and a phone number: the perimeter masked them.
    expect(ingested.body.dlp_matches).toBeGreaterThan(0);
    const flagged = await eventually('memory.ingest.dlp_flagged at the receiver', async () => find('memory.ingest.dlp_flagged'), 30_000);
    expect(assertSigned(flagged, sub.secret).payload).toMatchObject({ doc_id: docId, dlp_matches: ingested.body.dlp_matches });
    // The receiver is told that something was masked, never the masked values.
    expect(flagged.rawBody).not.toContain('jane.doe@example.com');
    // Every event the receiver got belongs to this tenant and is unique by event id.
    const mine = receiver.requests.map((r) => JSON.parse(r.rawBody)).filter((e) => e.scope.tenant_id === tenant);
    expect(new Set(mine.map((e) => e.event_id)).size).toBe(mine.length);
  });
});
