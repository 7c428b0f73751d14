import { randomBytes } from 'node:crypto';
import { TOPICS } from '@lore/contracts';
import { MemoryBus, PgliteDb, createLogger, createMetricsRegistry, generateEncryptionKey, parseEncryptionKeys, runRuntimeMigrations, type OutgoingMessage } from '@lore/runtime';
import { migrateGateway } from '../gateway';
import { decodeDeliveryMessage, encodeDeliveryMessage } from './messages';
import { announceExpiredLeases, announceWaitingDeliveries, createWebhooksWorker, leaseKey } from './worker';

/** Start-up recovery (embedded mode, `recoverOnStart`) on embedded PostgreSQL, with the sweep of expired leases. */
describe('announcing waiting deliveries again at start', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await migrateGateway(db);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  const published: Array<{ topic: string; messages: OutgoingMessage[] }> = [];
  const publish = async (topic: string, messages: OutgoingMessage[]) => void published.push({ topic, messages });
  const announced = () => published.flatMap((p) => p.messages.map((m) => ({ topic: p.topic, m: decodeDeliveryMessage(Buffer.from(String(m.value)))! })));

  async function deliveries(rows: Record<string, { step: number; due: string; lease: string }>): Promise<{ tenant: string; ids: Record<string, string> }> {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const sub = `wh_${randomBytes(12).toString('hex')}`;
    const ids: Record<string, string> = {};
    await db.withTenant(tenant, async (sql) => {
      await sql.query(
        `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, url, events, secret) VALUES ($1, $2, 'https://hooks.example.com/x', ARRAY['memory.ingest.completed'], 'whsec_x')`,
        [sub, tenant],
      );
      for (const [name, r] of Object.entries(rows)) {
        ids[name] = `dlv_${randomBytes(12).toString('hex')}`;
        await sql.query(
          `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, next_step, attempts, next_attempt_at, lease_until)
           VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', $5, $6, $6, ${r.due}, ${r.lease})`,
          [ids[name], tenant, sub, `evt_${name}`, r.step === 0 ? 'pending' : 'retrying', r.step],
        );
      }
    });
    return { tenant, ids };
  }

  it('announces a delivery whose lease the ended process still held, due when the lease ends, and only once with the sweep', async () => {
    const { tenant, ids } = await deliveries({
      waiting: { step: 0, due: 'now()', lease: 'NULL' },
      expired: { step: 1, due: `now() - interval '2 seconds'`, lease: `now() - interval '1 second'` },
      held: { step: 2, due: `now() - interval '1 second'`, lease: `now() + interval '1500 milliseconds'` },
      heldHere: { step: 0, due: 'now()', lease: `now() + interval '20 seconds'` },
    });
    const leaseOf = async (id: string) =>
      db.withTenant(tenant, (sql) => sql.query<{ lease_until: Date | null }>(`SELECT lease_until FROM gateway.webhook_deliveries WHERE id = $1`, [id])).then((r) => r.rows[0]!.lease_until);
    const heldUntil = (await leaseOf(ids.held!))!.getTime();
    published.length = 0;
    const recovered = await announceWaitingDeliveries(db, publish, (id) => id === ids.heldHere);

    const byId = new Map(announced().map((a) => [a.m.delivery_id, a]));
    expect([...byId.keys()].sort()).toEqual([ids.waiting, ids.expired, ids.held].sort());
    expect(recovered.announced).toBe(3);
    expect(byId.get(ids.waiting!)).toMatchObject({ topic: TOPICS.webhookDeliveries, m: { step: 0 } });
    expect(byId.get(ids.expired!)).toMatchObject({ topic: TOPICS.webhookRetry1s, m: { step: 1 } });
    expect(byId.get(ids.expired!)!.m.not_before).toBeUndefined();
    // The held one: its step and schedule, not before its lease ends, on a topic whose delay covers that wait.
    const held = byId.get(ids.held!)!;
    expect(held).toMatchObject({ topic: TOPICS.webhookRetry2s, m: { step: 2 } });
    expect(Date.parse(held.m.not_before!)).toBeGreaterThanOrEqual(heldUntil);
    expect(recovered.leased.size).toBe(1);
    // The expired lease was given back: the sweep has nothing of it to announce again.
    expect(await leaseOf(ids.expired!)).toBeNull();

    // Once the held lease has run out, the sweep leaves the delivery recovery already announced alone.
    await new Promise((r) => setTimeout(r, Math.max(0, heldUntil - Date.now()) + 100));
    published.length = 0;
    const swept = await announceExpiredLeases(db, publish, (id, token) => id === ids.heldHere || recovered.leased.has(leaseKey(id, token)));
    expect(swept).toBe(0);
    expect(published).toEqual([]);
  }, 30_000);

  it("publishes each topic's deliveries in due order, whatever their ids, so none due later holds back one due sooner", async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const sub = `wh_${randomBytes(12).toString('hex')}`;
    const prefix = `dlv_${randomBytes(6).toString('hex')}`;
    // Ids in one order, due times (all on the 30 s topic) in another.
    const rows = [
      { id: `${prefix}_a`, dueInS: 20 },
      { id: `${prefix}_b`, dueInS: 5 },
      { id: `${prefix}_c`, dueInS: 12 },
      { id: `${prefix}_d`, dueInS: -3 },
    ];
    await db.withTenant(tenant, async (sql) => {
      await sql.query(
        `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, url, events, secret) VALUES ($1, $2, 'https://hooks.example.com/x', ARRAY['memory.ingest.completed'], 'whsec_x')`,
        [sub, tenant],
      );
      for (const r of rows) {
        await sql.query(
          `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, next_step, attempts, next_attempt_at)
           VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', 'retrying', 5, 5, now() + make_interval(secs => $5))`,
          [r.id, tenant, sub, `evt_${r.id}`, r.dueInS],
        );
      }
    });
    published.length = 0;
    await announceWaitingDeliveries(db, publish);
    const order = announced()
      .filter((a) => a.m.delivery_id.startsWith(prefix))
      .map((a) => ({ topic: a.topic, id: a.m.delivery_id }));
    expect(order).toEqual([`${prefix}_d`, `${prefix}_b`, `${prefix}_c`, `${prefix}_a`].map((id) => ({ topic: TOPICS.webhookRetry30s, id })));
  }, 30_000);

  it('lets the in-memory bus count as idle for the outbox relay while retries wait on it (they are rebuilt from their rows at start)', async () => {
    const bus = new MemoryBus({ logger: createLogger({ level: 'silent', service: 'recovery-test' }) });
    const worker = createWebhooksWorker({
      db,
      bus,
      logger: createLogger({ level: 'silent', service: 'recovery-test' }),
      metrics: createMetricsRegistry('recovery-idle-test', { defaultMetrics: false }),
      encryptionKeys: parseEncryptionKeys(generateEncryptionKey('k1')),
      config: { recoverOnStart: true, retentionDays: 0 },
    });
    await worker.start();
    try {
      // A retry due in 20 s: its topic's consumer holds it until then.
      const retry = encodeDeliveryMessage({
        v: 1, tenant_id: 't-idle', delivery_id: 'dlv_idle', subscription_id: 'wh_idle', event_id: 'evt_idle', cycle: 1, step: 5,
        due_at: new Date(Date.now() + 20_000).toISOString(),
      });
      await bus.publish(TOPICS.webhookRetry30s, [retry]);
      await new Promise((r) => setTimeout(r, 50));
      // Held, with what start-up recovery announced from the rows of the tests above.
      expect((await bus.browse(TOPICS.webhookRetry30s)).map((m) => m.key)).toContain('t-idle/dlv_idle');
      expect(bus.idle()).toBe(true);
    } finally {
      await worker.stop();
      await bus.close();
    }
  }, 30_000);
});
