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

describe('webhooks in embedded mode across a restart', () => {
  it('announces a retry the ended process held again on start, so it is made and the delivery ends', async () => {
    const restartDb = await PgliteDb.open();
    await runRuntimeMigrations(restartDb);
    await migrateGateway(restartDb);
    const flaky = await startReceiver(pki, (i) => (i === 0 ? { status: 500 } : { status: 200 }));
    const start = async (recoverOnStart: boolean) => {
      const memoryBus = new MemoryBus({ logger: silentLogger });
      const w = createWebhooksWorker({
        db: restartDb,
        bus: memoryBus,
        logger: silentLogger,
        metrics: createMetricsRegistry('webhooks-restart-test', { defaultMetrics: false }),
        encryptionKeys: testEncryptionKeys(),
        config: { allowLoopback: true, extraCaPem: pki.caPem, deliveryTimeoutMs: 2000, recoverOnStart },
      });
      await w.start();
      const r = new OutboxRelay({ db: restartDb, bus: memoryBus, logger: silentLogger, pollIntervalMs: 20 });
      r.start();
      return {
        async end() {
          await r.stop();
          await w.stop();
          await memoryBus.close();
        },
      };
    };
    try {
      const tenant = tenantId();
      const service = webhookService(restartDb);
      const { subscription } = await service.create({ tenantId: tenant, workspaceId: null }, { url: `${flaky.url}/restart`, events: ['memory.ingest.completed'] });
      const first = await start(true);
      await commitEvent(restartDb, envelope(tenant));
      await flaky.waitFor(1, 20_000);
      const retrying = await eventually('the failed first attempt recorded', async () => {
        const rows = await service.deliveries({ tenantId: tenant, workspaceId: null }, subscription.id, { limit: 10 });
        return rows[0]?.status === 'retrying' ? rows[0] : null;
      }, 10_000);
      // The process ends while its bus holds the retry (due a second later): that message is gone with it.
      await first.end();
      expect(retrying).toMatchObject({ attempts: 1, status: 'retrying' });
      await new Promise((r) => setTimeout(r, 1_500));
      expect(flaky.requests).toHaveLength(1);

      const second = await start(true);
      try {
        await flaky.waitFor(2, 20_000);
        const done = await eventually('the delivery acknowledged after the restart', async () => {
          const rows = await service.deliveries({ tenantId: tenant, workspaceId: null }, subscription.id, { limit: 10 });
          return rows[0]?.status === 'succeeded' ? rows[0] : null;
        }, 10_000);
        expect(done).toMatchObject({ attempts: 2, cycle: 1 });
        // Announced once, made once: no third request.
        await new Promise((r) => setTimeout(r, 500));
        expect(flaky.requests).toHaveLength(2);
      } finally {
        await second.end();
      }
    } finally {
      await flaky.close();
      await restartDb.close();
    }
  });
});
