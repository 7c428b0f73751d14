import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { KafkaBus } from '@lore/runtime';
import {
  assertSigned,
  createTestPki,
  envelope,
  eventually,
  kafkaBus,
  publishEvent,
  startReceiver,
  subscribe,
  tenantId,
  TEST_ENCRYPTION_KEYS,
  uniqueGroupPrefix,
  webhooksDatabase,
  type Receiver,
  type TestPki,
  type WebhooksDb,
} from './support';
import { requireEnv } from '../support/infra';

/**
 * The webhooks worker as a real process, killed with SIGKILL while it holds a scheduled retry: a second process
 * resumes the schedule from Kafka's committed offsets and PostgreSQL, nothing is lost, and every repeat carries the
 * same event id. The second process waits for the dead member's Kafka session to expire (9 s here). And killed while
 * an attempt is in flight: the attempt is made again once its lease has run out (the sweep of expired leases).
 */
jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..');

interface WorkerProcess {
  child: ChildProcess;
  output: string[];
  ready: Promise<void>;
}

function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/gateway/src/webhooks-main.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready in time:\n${output.join('')}`)), 90_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join('').includes('"msg":"webhooks worker ready"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${code ?? signal}) before it was ready:\n${output.join('')}`));
    });
  });
  ready.catch(() => undefined);
  return { child, output, ready };
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

let pki: TestPki;
let store: WebhooksDb;
let bus: KafkaBus;
let receiver: Receiver;
const children: ChildProcess[] = [];

beforeAll(async () => {
  pki = createTestPki();
  store = await webhooksDatabase();
  bus = kafkaBus('crash');
  // Attempts 1-3 fail, the fourth is acknowledged.
  receiver = await startReceiver(pki, (i) => (i < 3 ? { status: 500 } : { status: 200 }));
});

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited(child);
    }
  }
  await bus?.close();
  await receiver?.close();
  await store?.close();
  pki?.cleanup();
});

describe('webhooks worker killed mid-schedule', () => {
  it('resumes the schedule in a new process without losing or re-keying the delivery', async () => {
    const env = {
      NODE_ENV: 'test',
      LOG_LEVEL: process.env.WC_LOG_LEVEL ?? 'info',
      LORE_DATABASE_URL: store.database.url,
      LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
      LORE_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
      WEBHOOKS_GROUP_ID_PREFIX: uniqueGroupPrefix('crash'),
      WEBHOOKS_START_FROM: 'latest',
      WEBHOOKS_OPS_PORT: '0',
      WEBHOOKS_OPS_HOST: '127.0.0.1',
      WEBHOOKS_DELIVERY_TIMEOUT_MS: '2000',
      // The second process joins each group once the killed member's session has expired: a short session keeps that
      // wait well inside the schedule's own delays on a loaded broker.
      WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS: '9000',
      WEBHOOKS_RUN_OUTBOX_RELAY: 'false',
      LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true',
      WEBHOOKS_TEST_CA_FILE: pki.caFile,
    };
    const tenant = tenantId();
    const sub = await subscribe(store.db, tenant, `${receiver.url}/crash`);

    const first = spawnWorker(env);
    children.push(first.child);
    await first.ready;
    const event = envelope(tenant);
    await publishEvent(bus, event);

    // Two failed attempts recorded: the worker now holds the 2 s retry in the retry topic's consumer.
    await receiver.waitFor(2, 30_000);
    await eventually('the second attempt to be recorded', () =>
      store.db.withTenant(tenant, async (sql) => {
        const r = await sql.query<{ attempts: number; next_step: number }>(`SELECT attempts, next_step FROM gateway.webhook_deliveries WHERE subscription_id = $1`, [sub.id]);
        return r.rows[0]?.attempts === 2 && r.rows[0].next_step === 2;
      }), 10_000, 20);
    first.child.kill('SIGKILL');
    await exited(first.child);
    const killedAt = Date.now();
    // The worker records its consumers' starts in the start journal (docs/runtime.md, "Crash loops"); a killed
    // process could not clear them.
    const recorded = await store.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM runtime.consumer_starts WHERE starts_with(consumer_group, $1)`, [env.WEBHOOKS_GROUP_ID_PREFIX]);
    expect(recorded.rows[0]!.n).toBeGreaterThan(0);
    expect(receiver.requests).toHaveLength(2);

    const second = spawnWorker(env);
    children.push(second.child);
    await second.ready;
    // On a timeout, both processes' logs say which consumer missed the retry.
    const seen = await receiver.waitFor(4, 90_000).catch((err: Error) => {
      throw new Error(`${err.message}\n--- first process ---\n${first.output.join('')}\n--- second process ---\n${second.output.join('')}`);
    });

    // Nothing lost: the retries that were due while no worker ran happened, then the schedule went on exactly.
    const dueOfThird = seen[1]!.answeredAt! + 2000;
    expect(seen[2]!.at).toBeGreaterThanOrEqual(dueOfThird - 50);
    expect(seen[2]!.at).toBeGreaterThan(killedAt);
    const gap = seen[3]!.at - seen[2]!.answeredAt!;
    expect(Math.abs(gap - 4000)).toBeLessThanOrEqual(400);
    for (const r of seen) {
      expect(assertSigned(r, sub.secret).event_id).toBe(event.event_id);
      expect(r.headers['webhook-id']).toBe(event.event_id);
    }

    const delivery = await eventually('the acknowledged delivery', () =>
      store.db.withTenant(tenant, async (sql) => {
        const r = await sql.query<{ status: string; attempts: number }>(`SELECT status, attempts FROM gateway.webhook_deliveries WHERE subscription_id = $1`, [sub.id]);
        return r.rows[0]?.status === 'succeeded' ? r.rows[0] : null;
      }), 10_000);
    expect(delivery.attempts).toBe(4);
    const steps = await store.db.withTenant(tenant, async (sql) =>
      (await sql.query<{ step: number }>(`SELECT step FROM gateway.webhook_attempts WHERE subscription_id = $1 ORDER BY attempt`, [sub.id])).rows.map((r) => r.step),
    );
    expect(steps).toEqual([0, 1, 2, 3]);
    // No extra attempt after the acknowledgement.
    await new Promise((r) => setTimeout(r, 2000));
    expect(receiver.requests).toHaveLength(4);

    second.child.kill('SIGTERM');
    await exited(second.child);
    expect(second.child.exitCode).toBe(0);
  });
});

describe('webhooks worker killed while an attempt is in flight', () => {
  it('makes the attempt again once its lease has run out: the bus message was committed when the attempt was handed over', async () => {
    // The first request hangs (the worker is killed meanwhile); every later one is acknowledged.
    const hangingOnce = await startReceiver(pki, (i) => (i === 0 ? { status: 200, delayMs: 60_000 } : { status: 200 }));
    try {
      const env = {
        NODE_ENV: 'test',
        LOG_LEVEL: process.env.WC_LOG_LEVEL ?? 'info',
        LORE_DATABASE_URL: store.database.url,
        LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
        LORE_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
        WEBHOOKS_GROUP_ID_PREFIX: uniqueGroupPrefix('crash-inflight'),
        WEBHOOKS_START_FROM: 'latest',
        WEBHOOKS_OPS_PORT: '0',
        WEBHOOKS_OPS_HOST: '127.0.0.1',
        WEBHOOKS_DELIVERY_TIMEOUT_MS: '2000',
        WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS: '9000',
        WEBHOOKS_RUN_OUTBOX_RELAY: 'false',
        LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true',
        WEBHOOKS_TEST_CA_FILE: pki.caFile,
      };
      const tenant = tenantId();
      const sub = await subscribe(store.db, tenant, `${hangingOnce.url}/inflight`, ['memory.ingest.completed']);
      const first = spawnWorker(env);
      children.push(first.child);
      await first.ready;
      const event = envelope(tenant);
      await publishEvent(bus, event);
      await hangingOnce.waitFor(1, 30_000);
      const leased = await store.db.withTenant(tenant, async (sql) =>
        (await sql.query<{ lease_until: Date | null; attempts: number }>(`SELECT lease_until, attempts FROM gateway.webhook_deliveries WHERE subscription_id = $1`, [sub.id])).rows[0]!,
      );
      expect(leased.attempts).toBe(0);
      expect(leased.lease_until).not.toBeNull();
      first.child.kill('SIGKILL');
      await exited(first.child);

      const second = spawnWorker(env);
      children.push(second.child);
      await second.ready;
      // Lease: the 2 s timeout plus 5 s, from the start of the killed attempt; then the next sweep (every 10 s).
      const seen = await hangingOnce.waitFor(2, 60_000).catch((err: Error) => {
        throw new Error(`${err.message}\n--- first process ---\n${first.output.join('')}\n--- second process ---\n${second.output.join('')}`);
      });
      expect(seen[1]!.at).toBeGreaterThanOrEqual(leased.lease_until!.getTime() - 50);
      for (const r of seen) expect(assertSigned(r, sub.secret).event_id).toBe(event.event_id);
      const delivery = await eventually('the acknowledged delivery', () =>
        store.db.withTenant(tenant, async (sql) => {
          const r = await sql.query<{ status: string; attempts: number }>(`SELECT status, attempts FROM gateway.webhook_deliveries WHERE subscription_id = $1`, [sub.id]);
          return r.rows[0]?.status === 'succeeded' ? r.rows[0] : null;
        }), 10_000);
      // The killed attempt left no record: the one made again is the delivery's first.
      expect(delivery.attempts).toBe(1);
      expect(second.output.join('')).toContain('deliveries whose attempt lease ran out without a record announced again');
      second.child.kill('SIGTERM');
      await exited(second.child);
      expect(second.child.exitCode).toBe(0);
    } finally {
      await hangingOnce.close();
    }
  });
});
