import { randomBytes } from 'node:crypto';
import { migrateGateway } from '@lore/gateway';
import { MemoryBus, PgliteDb, createMetricsRegistry, runRuntimeMigrations, type Db } from '@lore/runtime';
import { createWebhooksWorker } from '../../services/gateway/src/webhooks/worker';
import { eventually, silentLogger, tenantId, testEncryptionKeys, webhookService, webhooksDatabase } from './support';

/**
 * Delivery history is kept for `retentionDays`: the worker's sweep deletes settled deliveries (succeeded or dead)
 * last changed before then, with their attempts, in every tenant; a delivery still waiting for an attempt stays
 * whatever its age. Run on real PostgreSQL (the deployments) and on PGlite (embedded mode).
 */
jest.setTimeout(60_000);

type Status = 'pending' | 'retrying' | 'succeeded' | 'dead';

interface Seeded {
  id: string;
  tenant: string;
  status: Status;
  ageDays: number;
}

const DAY_MS = 86_400_000;

/** One delivery row with one recorded attempt, last changed `ageDays` ago. */
async function seedDelivery(db: Db, tenant: string, subscriptionId: string, status: Status, ageDays: number): Promise<Seeded> {
  const id = `dlv_${randomBytes(12).toString('hex')}`;
  const at = new Date(Date.now() - ageDays * DAY_MS);
  await db.withTenant(tenant, async (sql) => {
    await sql.query(
      `INSERT INTO gateway.webhook_deliveries
         (id, tenant_id, subscription_id, event_id, event, body, status, attempts, next_attempt_at, created_at, updated_at, succeeded_at, dead_at, dead_reason)
       VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', $5, 1, $6, $7, $7, $8, $9, $10)`,
      [
        id,
        tenant,
        subscriptionId,
        `evt_${id}`,
        status,
        status === 'pending' || status === 'retrying' ? at : null,
        at,
        status === 'succeeded' ? at : null,
        status === 'dead' ? at : null,
        status === 'dead' ? 'retries_exhausted' : null,
      ],
    );
    await sql.query(
      `INSERT INTO gateway.webhook_attempts
         (tenant_id, delivery_id, subscription_id, event_id, attempt, cycle, step, scheduled_for, started_at, latency_ms, outcome)
       VALUES ($1, $2, $3, $4, 1, 1, 0, $5, $5, 10, $6)`,
      [tenant, id, subscriptionId, `evt_${id}`, at, status === 'succeeded' ? 'succeeded' : 'http_error'],
    );
  });
  return { id, tenant, status, ageDays };
}

/** Which of `seeded` still have their delivery row and their attempt row. */
async function surviving(db: Db, seeded: Seeded[]): Promise<{ deliveries: Set<string>; attempts: Set<string> }> {
  const deliveries = new Set<string>();
  const attempts = new Set<string>();
  for (const s of seeded) {
    await db.withTenant(s.tenant, async (sql) => {
      const d = await sql.query(`SELECT 1 FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND id = $2`, [s.tenant, s.id]);
      if (d.rows.length > 0) deliveries.add(s.id);
      const a = await sql.query(`SELECT 1 FROM gateway.webhook_attempts WHERE tenant_id = $1 AND delivery_id = $2`, [s.tenant, s.id]);
      if (a.rows.length > 0) attempts.add(s.id);
    });
  }
  return { deliveries, attempts };
}

async function provesRetention(db: Db): Promise<void> {
  const seeded: Seeded[] = [];
  for (const tenant of [tenantId(), tenantId()]) {
    const { subscription } = await webhookService(db).create({ tenantId: tenant, workspaceId: null }, { url: 'https://127.0.0.1:9/hook', events: ['memory.ingest.completed'] });
    for (const [status, ageDays] of [
      ['succeeded', 45],
      ['dead', 31],
      ['succeeded', 29],
      ['dead', 2],
      ['pending', 60],
      ['retrying', 60],
    ] as Array<[Status, number]>) {
      seeded.push(await seedDelivery(db, tenant, subscription.id, status, ageDays));
    }
  }
  const expired = seeded.filter((s) => (s.status === 'succeeded' || s.status === 'dead') && s.ageDays > 30);
  const kept = seeded.filter((s) => !expired.includes(s));

  const bus = new MemoryBus({ logger: silentLogger });
  const worker = createWebhooksWorker({
    db,
    bus,
    logger: silentLogger,
    metrics: createMetricsRegistry('webhooks-retention-test', { defaultMetrics: false }),
    encryptionKeys: testEncryptionKeys(),
    config: { retentionDays: 30, allowLoopback: true },
  });
  await worker.start();
  try {
    const after = await eventually(
      'the settled deliveries past the retention are deleted',
      async () => {
        const now = await surviving(db, seeded);
        return expired.every((s) => !now.deliveries.has(s.id)) ? now : null;
      },
      20_000,
      200,
    );
    // Their attempts went with them; everything recent or still waiting for an attempt is there, attempts included.
    expect(expired.filter((s) => after.attempts.has(s.id))).toEqual([]);
    expect(kept.filter((s) => !after.deliveries.has(s.id) || !after.attempts.has(s.id))).toEqual([]);
  } finally {
    await worker.stop();
    await bus.close();
  }
}

describe('webhook delivery retention', () => {
  it('on PostgreSQL: deletes settled deliveries older than the retention with their attempts, in every tenant; keeps recent and waiting ones', async () => {
    const wdb = await webhooksDatabase(4);
    try {
      await provesRetention(wdb.db);
    } finally {
      await wdb.close();
    }
  });

  it('in embedded mode (PGlite): the same sweep', async () => {
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      await migrateGateway(db);
      await provesRetention(db);
    } finally {
      await db.close();
    }
  });
});
