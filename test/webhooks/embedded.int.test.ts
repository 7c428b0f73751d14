import { migrateGateway } from '@lore/gateway';
import { MemoryBus, OutboxRelay, PgliteDb, createMetricsRegistry, runRuntimeMigrations } from '@lore/runtime';
import { createWebhooksWorker, type WebhooksWorker } from '../../services/gateway/src/webhooks/worker';
import { assertSigned, commitEvent, createTestPki, envelope, eventually, silentLogger, startReceiver, tenantId, testEncryptionKeys, webhookService, type Receiver, type TestPki } from './support';

/**
 * Embedded mode: the same worker in-process on the in-memory bus and embedded PostgreSQL (PGlite), as
 * `npm start` runs it: an event committed through the outbox, a failed first attempt, the retry 1 s later.
 */
jest.setTimeout(60_000);

let pki: TestPki;
let db: PgliteDb;
let bus: MemoryBus;
let relay: OutboxRelay;
let worker: WebhooksWorker;
let receiver: Receiver;

beforeAll(async () => {
  pki = createTestPki();
  db = await PgliteDb.open();
  await runRuntimeMigrations(db);
  await migrateGateway(db);
  bus = new MemoryBus({ logger: silentLogger });
  worker = createWebhooksWorker({
    db,
    bus,
    logger: silentLogger,
    metrics: createMetricsRegistry('webhooks-embedded-test', { defaultMetrics: false }),
    encryptionKeys: testEncryptionKeys(),
    config: { allowLoopback: true, extraCaPem: pki.caPem, deliveryTimeoutMs: 2000 },
  });
  await worker.start();
  relay = new OutboxRelay({ db, bus, logger: silentLogger, pollIntervalMs: 20 });
  relay.start();
  receiver = await startReceiver(pki, (i) => (i === 0 ? { status: 500 } : { status: 200 }));
});

afterAll(async () => {
  await relay?.stop();
  await worker?.stop();
  await bus?.close();
  await receiver?.close();
  await db?.close();
  pki?.cleanup();
});

describe('webhooks in embedded mode (PGlite + in-memory bus)', () => {
  it('delivers, retries after 1 s, and lands in the right state', async () => {
    const tenant = tenantId();
    const service = webhookService(db);
    const { subscription, secret } = await service.create({ tenantId: tenant, workspaceId: null }, { url: `${receiver.url}/embedded`, events: ['memory.ingest.completed'] });
    const e = envelope(tenant);
    await commitEvent(db, e);

    const seen = await receiver.waitFor(2, 20_000);
    for (const r of seen) expect(assertSigned(r, secret).event_id).toBe(e.event_id);
    const gap = seen[1]!.at - seen[0]!.answeredAt!;
    expect(Math.abs(gap - 1000)).toBeLessThanOrEqual(100);

    const deliveries = await eventually('the acknowledged delivery', async () => {
      const rows = await service.deliveries({ tenantId: tenant, workspaceId: null }, subscription.id, { limit: 10 });
      return rows[0]?.status === 'succeeded' ? rows : null;
    }, 10_000);
    expect(deliveries[0]).toMatchObject({ attempts: 2, cycle: 1 });
  });
});
