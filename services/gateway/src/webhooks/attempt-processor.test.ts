import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { TOPICS } from '@lore/contracts';
import { PgliteDb, SecretBox, createMetricsRegistry, generateEncryptionKey, parseEncryptionKeys, runRuntimeMigrations, type Logger, type OutgoingMessage } from '@lore/runtime';
import { migrateGateway } from '../gateway';
import { AbortedError, AttemptProcessor, holdController, holdUntil } from './attempt-processor';
import type { WebhookHttpClient } from './delivery-client';
import { encodeDeliveryMessage } from './messages';
import { leaseRemainingMs } from './store/deliveries';
import { announceExpiredLeases } from './worker';
import { webhookMetrics } from './metrics';

/**
 * Node prints its warnings from the real process, which a Jest test does not see (its `process` is a copy), so the
 * holds run in a child process that reports every `warning` event it gets.
 */
const CHILD = `
const loaded = await import(${JSON.stringify(join(__dirname, 'attempt-processor.ts'))});
const { holdController, holdUntil } = loaded.holdController ? loaded : loaded.default;
const warnings = [];
process.on('warning', (w) => warnings.push(w.name + ': ' + w.message));
const controller = holdController();
const due = Date.now() + 50;
await Promise.all(Array.from({ length: 20 }, () => holdUntil(due, controller.signal)));
await new Promise((resolve) => setImmediate(resolve));
// The child's answer to the test, on its stdout (not a log line).
process.stdout.write(JSON.stringify({ warnings }));
`;

describe('holding retries until they are due', () => {
  it('holds 20 messages on the worker signal at once without a MaxListenersExceededWarning', () => {
    const r = spawnSync(process.execPath, ['--conditions=lore-src', '--import', 'tsx', '--input-type=module', '-e', CHILD], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).not.toMatch(/MaxListenersExceededWarning/);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual({ warnings: [] });
  });

  it('ends every hold when the worker stops', async () => {
    const controller = holdController();
    const holds = Array.from({ length: 20 }, () => holdUntil(Date.now() + 60_000, controller.signal));
    controller.abort();
    for (const h of holds) await expect(h).rejects.toBeInstanceOf(AbortedError);
  });
});

/** A logger that keeps the message of every line, whatever its level. */
function recordingLogger(lines: string[]): Logger {
  const log = (a: unknown, b?: unknown) => void lines.push(typeof a === 'string' ? a : String(b));
  const logger = { info: log, debug: log, warn: log, error: log, trace: log, fatal: log, child: () => logger };
  return logger as unknown as Logger;
}

describe('an attempt whose subscription is deleted while it is in flight', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await migrateGateway(db);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('records nothing, publishes nothing and counts no dead letter, even when it was the last retry and failed', async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const subscriptionId = `wh_${randomBytes(12).toString('hex')}`;
    const deliveryId = `dlv_${randomBytes(12).toString('hex')}`;
    await db.withTenant(tenant, async (sql) => {
      await sql.query(
        `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, url, events, secret) VALUES ($1, $2, 'https://hooks.example.com/x', ARRAY['memory.ingest.completed'], $3)`,
        [subscriptionId, tenant, `whsec_${randomBytes(32).toString('base64')}`],
      );
      await sql.query(
        `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, cycle, next_step, attempts, next_attempt_at)
         VALUES ($1, $2, $3, 'evt_1', 'memory.ingest.completed', '{}', 'retrying', 1, 5, 5, now())`,
        [deliveryId, tenant, subscriptionId],
      );
    });
    // The receiver fails the last retry; meanwhile the subscription (and with it the delivery) is deleted.
    const client = {
      send: async () => {
        await db.withTenant(tenant, (sql) => sql.query(`DELETE FROM gateway.webhook_subscriptions WHERE tenant_id = $1 AND id = $2`, [tenant, subscriptionId]));
        return { outcome: 'http_error', statusCode: 503, latencyMs: 5, responseSnippet: null, error: 'HTTP 503' };
      },
    } as unknown as WebhookHttpClient;
    const registry = createMetricsRegistry('attempt-gone-test', { defaultMetrics: false });
    const published: Array<{ topic: string; messages: OutgoingMessage[] }> = [];
    const lines: string[] = [];
    const processor = new AttemptProcessor({
      db,
      publish: async (topic, messages) => void published.push({ topic, messages }),
      client,
      limits: { perEndpoint: 4 },
      logger: recordingLogger(lines),
      metrics: webhookMetrics(registry),
      deliveryTimeoutMs: 1000,
      disableAfterDeadLetters: 10,
      secrets: new SecretBox(parseEncryptionKeys(generateEncryptionKey('k1'))),
    });
    const message = encodeDeliveryMessage({
      v: 1, tenant_id: tenant, delivery_id: deliveryId, subscription_id: subscriptionId, event_id: 'evt_1', cycle: 1, step: 5, due_at: new Date().toISOString(),
    });
    await processor.handle({ topic: TOPICS.webhookRetry30s, partition: 0, offset: '0', key: message.key, value: Buffer.from(message.value), headers: message.headers }, holdController().signal);
    await processor.settled();

    expect(published).toEqual([]);
    const dead = (await registry.getSingleMetric('lore_webhooks_dead_letters_total')?.get())?.values ?? [];
    expect(dead.reduce((n, v) => n + v.value, 0)).toBe(0);
    expect(lines).toContain('delivery deleted with its subscription during the attempt; nothing recorded');
    expect(lines).not.toContain('attempt already recorded by another worker');
  });
});

describe('the times of an attempt that waited for its endpoint', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await migrateGateway(db);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('starts, signs, leases and schedules the retry from when the request really went out and ended', async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const subscriptionId = `wh_${randomBytes(12).toString('hex')}`;
    const deliveryIds = [`dlv_${randomBytes(12).toString('hex')}`, `dlv_${randomBytes(12).toString('hex')}`];
    await db.withTenant(tenant, async (sql) => {
      await sql.query(
        `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, url, events, secret) VALUES ($1, $2, 'https://hooks.example.com/x', ARRAY['memory.ingest.completed'], $3)`,
        [subscriptionId, tenant, `whsec_${randomBytes(32).toString('base64')}`],
      );
      for (const [i, id] of deliveryIds.entries()) {
        await sql.query(
          `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, next_attempt_at)
           VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', 'pending', now())`,
          [id, tenant, subscriptionId, `evt_${i}`],
        );
      }
    });
    const DELIVERY_TIMEOUT_MS = 1000;
    const ANSWER_MS = 1200;
    // Each request: when it went out, the lease left on the delivery then, its signature time, and when it ended.
    const sends = new Map<string, { at: number; leaseLeftMs: number; signedAt: number; endedAt: number }>();
    const client = {
      send: async (input: { headers: Record<string, string> }) => {
        const at = Date.now();
        const id = input.headers['x-lore-delivery-id']!;
        const leaseLeftMs = await db.withTenant(tenant, (sql) => leaseRemainingMs(sql, tenant, id));
        await new Promise((r) => setTimeout(r, ANSWER_MS));
        sends.set(id, { at, leaseLeftMs, signedAt: Number(input.headers['webhook-timestamp']) * 1000, endedAt: Date.now() });
        return { outcome: 'http_error', statusCode: 503, latencyMs: ANSWER_MS, responseSnippet: null, error: 'HTTP 503' };
      },
    } as unknown as WebhookHttpClient;
    const registry = createMetricsRegistry('attempt-times-test', { defaultMetrics: false });
    const processor = new AttemptProcessor({
      db,
      publish: async () => undefined,
      client,
      // One attempt at a time against the endpoint: the second delivery waits a whole answer for its slot.
      limits: { perEndpoint: 1 },
      logger: recordingLogger([]),
      metrics: webhookMetrics(registry),
      deliveryTimeoutMs: DELIVERY_TIMEOUT_MS,
      disableAfterDeadLetters: 10,
      secrets: new SecretBox(parseEncryptionKeys(generateEncryptionKey('k1'))),
    });
    const dueAt = new Date();
    const handled = deliveryIds.map((id, i) => {
      const message = encodeDeliveryMessage({
        v: 1, tenant_id: tenant, delivery_id: id, subscription_id: subscriptionId, event_id: `evt_${i}`, cycle: 1, step: 0, due_at: dueAt.toISOString(),
      });
      return processor.handle({ topic: TOPICS.webhookDeliveries, partition: i, offset: '0', key: message.key, value: Buffer.from(message.value), headers: message.headers }, holdController().signal);
    });
    await Promise.all(handled);
    // Attempts may be recorded after the handler returned: wait for both records.
    const rows = await waitForRows(db, tenant, deliveryIds, 20_000);

    const checks = deliveryIds.map((id) => {
      const sent = sends.get(id)!;
      const row = rows.get(id)!;
      return {
        // Recorded start and signature time: when the request went out, not when its message arrived.
        startedWhenSent: row.startedAt >= sent.at - 100,
        signedWhenSent: sent.signedAt >= Math.floor((sent.at - 100) / 1000) * 1000,
        // The lease covered the whole attempt from its start: the delivery timeout plus the grace for the record.
        leaseCoversAttempt: sent.leaseLeftMs >= DELIVERY_TIMEOUT_MS + 5_000 - 300,
        // Spec 1: the retry is due one second after the failed attempt ended, never sooner.
        retryAfterEnd: row.nextAttemptAt >= sent.endedAt + 1_000 - 5,
      };
    });
    const all = { startedWhenSent: true, signedWhenSent: true, leaseCoversAttempt: true, retryAfterEnd: true };
    expect(checks).toEqual([all, all]);
    // The second delivery waited a whole answer for its slot, which its lateness shows.
    const lateness = (await registry.getSingleMetric('lore_webhooks_schedule_lateness_seconds')!.get()).values.find((v) => (v as { metricName?: string }).metricName === 'lore_webhooks_schedule_lateness_seconds_sum');
    expect(lateness!.value).toBeGreaterThanOrEqual((ANSWER_MS - 200) / 1000);
  }, 30_000);
});

/** The recorded start of each delivery's first attempt and the delivery's next due time, once both are recorded. */
async function waitForRows(db: PgliteDb, tenant: string, ids: string[], timeoutMs: number): Promise<Map<string, { startedAt: number; nextAttemptAt: number }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await db.withTenant(tenant, (sql) =>
      sql.query<{ id: string; started_at: Date; next_attempt_at: Date | null }>(
        `SELECT d.id, a.started_at, d.next_attempt_at FROM gateway.webhook_deliveries d JOIN gateway.webhook_attempts a ON a.delivery_id = d.id AND a.attempt = 1
          WHERE d.id = ANY($1::text[])`,
        [ids],
      ),
    );
    if (r.rows.length === ids.length && r.rows.every((row) => row.next_attempt_at !== null)) {
      return new Map(r.rows.map((row) => [row.id, { startedAt: new Date(row.started_at).getTime(), nextAttemptAt: new Date(row.next_attempt_at!).getTime() }]));
    }
    if (Date.now() > deadline) throw new Error(`attempts not recorded within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('an endpoint whose attempts hang', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await migrateGateway(db);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('holds no bus handler: its attempts wait in the process under a lease, beyond its bound they go back to the bus, and other endpoints go on', async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const hanging = `wh_${randomBytes(12).toString('hex')}`;
    const healthy = `wh_${randomBytes(12).toString('hex')}`;
    const ids = { a1: '', a2: '', a3: '', b1: '' };
    await db.withTenant(tenant, async (sql) => {
      for (const [id, path] of [[hanging, 'a'], [healthy, 'b']] as const) {
        await sql.query(
          `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, url, events, secret) VALUES ($1, $2, $3, ARRAY['memory.ingest.completed'], $4)`,
          [id, tenant, `https://hooks.example.com/${path}`, `whsec_${randomBytes(32).toString('base64')}`],
        );
      }
      for (const name of Object.keys(ids) as Array<keyof typeof ids>) {
        ids[name] = `dlv_${randomBytes(12).toString('hex')}`;
        await sql.query(
          `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, next_attempt_at)
           VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', 'pending', now())`,
          [ids[name], tenant, name.startsWith('a') ? hanging : healthy, `evt_${name}`],
        );
      }
    });
    let release!: () => void;
    const hang = new Promise<void>((r) => (release = r));
    const sent: string[] = [];
    const client = {
      send: async (input: { url: string; headers: Record<string, string> }) => {
        sent.push(input.headers['x-lore-delivery-id']!);
        if (input.url.endsWith('/a')) await hang;
        return { outcome: 'succeeded', statusCode: 200, latencyMs: 5, responseSnippet: null, error: null };
      },
    } as unknown as WebhookHttpClient;
    const published: Array<{ topic: string; messages: OutgoingMessage[] }> = [];
    const registry = createMetricsRegistry('attempt-hang-test', { defaultMetrics: false });
    const processor = new AttemptProcessor({
      db,
      publish: async (topic, messages) => void published.push({ topic, messages }),
      client,
      // One attempt at a time per endpoint, and one more may wait for it.
      limits: { perEndpoint: 1, maxWaitingPerEndpoint: 1 },
      logger: recordingLogger([]),
      metrics: webhookMetrics(registry),
      deliveryTimeoutMs: 1000,
      disableAfterDeadLetters: 10,
      secrets: new SecretBox(parseEncryptionKeys(generateEncryptionKey('k1'))),
    });
    const handle = (name: keyof typeof ids, sub: string) => {
      const message = encodeDeliveryMessage({
        v: 1, tenant_id: tenant, delivery_id: ids[name], subscription_id: sub, event_id: `evt_${name}`, cycle: 1, step: 0, due_at: new Date().toISOString(),
      });
      const handled = processor.handle({ topic: TOPICS.webhookDeliveries, partition: 0, offset: '0', key: message.key, value: Buffer.from(message.value), headers: message.headers }, holdController().signal);
      // A handler that waits for the endpoint holds its partition: each must be done long before the hang ends.
      return Promise.race([handled.then(() => 'returned'), new Promise((r) => setTimeout(() => r('still waiting'), 2_000))]);
    };
    expect(await handle('a1', hanging)).toBe('returned');
    expect(await handle('a2', hanging)).toBe('returned');
    expect(await handle('a3', hanging)).toBe('returned');
    expect(await handle('b1', healthy)).toBe('returned');

    await waitUntil(() => sent.includes(ids.b1));
    expect(sent).toEqual([ids.a1, ids.b1]);
    const rows = await db.withTenant(tenant, async (sql) =>
      new Map(
        (await sql.query<{ id: string; status: string; attempts: number; leased: boolean }>(
          `SELECT id, status, attempts, coalesce(lease_until > now(), false) AS leased FROM gateway.webhook_deliveries WHERE tenant_id = $1`,
          [tenant],
        )).rows.map((r) => [r.id, r]),
      ),
    );
    // a2 waits here for a1's slot, under a lease and with no attempt counted; a3 went back to the bus.
    expect(rows.get(ids.a2)).toMatchObject({ status: 'pending', attempts: 0, leased: true });
    expect(rows.get(ids.a3)).toMatchObject({ status: 'pending', attempts: 0, leased: false });
    expect(processor.holds(ids.a2)).toBe(true);
    expect(processor.holds(ids.a3)).toBe(false);
    const handedBack = published.flatMap((p) => p.messages.map((m) => ({ topic: p.topic, m: JSON.parse(String(m.value)) as Record<string, unknown> })));
    expect(handedBack).toHaveLength(1);
    expect(handedBack[0]!.topic).toBe(TOPICS.webhookRetry1s);
    expect(handedBack[0]!.m).toMatchObject({ delivery_id: ids.a3, step: 0, deferrals: 1 });
    expect(Date.parse(String(handedBack[0]!.m.not_before)) - Date.now()).toBeGreaterThan(0);
    const deferred = (await registry.getSingleMetric('lore_webhooks_attempts_deferred_total')!.get()).values;
    expect(deferred).toEqual([expect.objectContaining({ labels: { reason: 'endpoint_busy' }, value: 1 })]);

    release();
    await processor.settled();
    expect(sent).toEqual([ids.a1, ids.b1, ids.a2]);
    const settled = await db.withTenant(tenant, async (sql) =>
      (await sql.query<{ id: string; status: string }>(`SELECT id, status FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND status = 'succeeded' ORDER BY id`, [tenant])).rows.map((r) => r.id),
    );
    expect(settled.sort()).toEqual([ids.a1, ids.a2, ids.b1].sort());
  }, 30_000);
});

describe('the sweep of expired attempt leases', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await migrateGateway(db);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('announces again a delivery whose lease ran out without a record, once, and leaves leased, unleased and held ones alone', async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const sub = `wh_${randomBytes(12).toString('hex')}`;
    const rows = {
      expired: { lease: `now() - interval '1 second'`, status: 'retrying', step: 2 },
      heldHere: { lease: `now() - interval '1 second'`, status: 'pending', step: 0 },
      leased: { lease: `now() + interval '20 seconds'`, status: 'pending', step: 0 },
      unleased: { lease: 'NULL', status: 'pending', step: 0 },
      settled: { lease: `now() - interval '1 second'`, status: 'succeeded', step: 0 },
    };
    const ids: Record<string, string> = {};
    await db.withTenant(tenant, async (sql) => {
      await sql.query(
        `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, url, events, secret) VALUES ($1, $2, 'https://hooks.example.com/x', ARRAY['memory.ingest.completed'], 'whsec_x')`,
        [sub, tenant],
      );
      for (const [name, r] of Object.entries(rows)) {
        ids[name] = `dlv_${name}_${randomBytes(6).toString('hex')}`;
        await sql.query(
          `INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, next_step, attempts, next_attempt_at, lease_until)
           VALUES ($1, $2, $3, $4, 'memory.ingest.completed', '{}', $5, $6, $6, now() - interval '3 seconds', ${r.lease})`,
          [ids[name], tenant, sub, `evt_${name}`, r.status, r.step],
        );
      }
    });
    const published: Array<{ topic: string; messages: OutgoingMessage[] }> = [];
    const publish = async (topic: string, messages: OutgoingMessage[]) => void published.push({ topic, messages });
    expect(await announceExpiredLeases(db, publish, (id) => id === ids.heldHere)).toBe(1);
    expect(published).toHaveLength(1);
    expect(published[0]!.topic).toBe(TOPICS.webhookRetry2s);
    expect(JSON.parse(String(published[0]!.messages[0]!.value))).toMatchObject({ delivery_id: ids.expired, tenant_id: tenant, step: 2, cycle: 1 });
    // The lease was given back, so the next sweep does not announce it again; the message takes a new one.
    expect(await announceExpiredLeases(db, publish, (id) => id === ids.heldHere)).toBe(0);
    const leases = await db.withTenant(tenant, async (sql) =>
      Object.fromEntries((await sql.query<{ id: string; lease_until: Date | null }>(`SELECT id, lease_until FROM gateway.webhook_deliveries WHERE tenant_id = $1`, [tenant])).rows.map((r) => [r.id, r.lease_until])),
    );
    expect(leases[ids.expired!]).toBeNull();
    expect(leases[ids.heldHere!]).not.toBeNull();
    expect(leases[ids.leased!]).not.toBeNull();
  }, 30_000);
});

async function waitUntil(ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
