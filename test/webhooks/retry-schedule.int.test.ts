import { TOPICS } from '@lore/contracts';
import { OutboxRelay, type KafkaBus } from '@lore/runtime';
import type { WebhooksWorker } from '../../services/gateway/src/webhooks/worker';
import {
  assertSigned,
  collectTopic,
  createTestPki,
  envelope,
  eventually,
  kafkaBus,
  publishEvent,
  silentLogger,
  startReceiver,
  startWorker,
  subscribe,
  tenantId,
  uniqueGroupPrefix,
  webhookService,
  webhooksDatabase,
  type Receiver,
  type TestPki,
  type WebhooksDb,
} from './support';

/**
 * The retry row of spec 1 against real PostgreSQL and Kafka, through one worker: an always-failing receiver, one
 * that fails twice, and one that answers too late. All three run at once, so the suite lasts one schedule (~45 s).
 */
jest.setTimeout(180_000);

const TIMEOUT_MS = 1000;
const SCHEDULE = [1000, 2000, 4000, 8000, 30000];

let pki: TestPki;
let store: WebhooksDb;
let bus: KafkaBus;
let worker: WebhooksWorker;
let dead: Awaited<ReturnType<typeof collectTopic>>;
const tenant = tenantId();
let failingHealed = false;

let failing: Receiver;
let flaky: Receiver;
let slow: Receiver;
const subs: Record<string, { id: string; secret: string }> = {};
const events: Record<string, ReturnType<typeof envelope>> = {};

beforeAll(async () => {
  pki = createTestPki();
  store = await webhooksDatabase();
  bus = kafkaBus('schedule');
  await bus.ensureTopics([TOPICS.webhookDead]);
  dead = await collectTopic(bus, TOPICS.webhookDead);
  worker = await startWorker(store.db, bus, pki, {
    groupIdPrefix: uniqueGroupPrefix('schedule'),
    deliveryTimeoutMs: TIMEOUT_MS,
    disableAfterDeadLetters: 1,
  });

  failing = await startReceiver(pki, () => (failingHealed ? { status: 204 } : { status: 500, body: 'x'.repeat(5000) }));
  flaky = await startReceiver(pki, (i) => (i < 2 ? { status: 503 } : { status: 200 }));
  // The first answer is a 200, but only after the deadline: it must not count.
  slow = await startReceiver(pki, (i) => (i === 0 ? { status: 200, delayMs: TIMEOUT_MS + 700 } : { status: 200 }));

  // One event per receiver; each subscription reacts only to its own kind from the start, so every receiver gets
  // exactly one (a subscription still wanting every kind while the first event fans out would get that one too).
  const kinds = { failing: 'memory.ingest.completed', flaky: 'memory.entity.created', slow: 'memory.health.assessed' } as const;
  for (const [name, receiver] of [['failing', failing], ['flaky', flaky], ['slow', slow]] as const) {
    subs[name] = await subscribe(store.db, tenant, `${receiver.url}/${name}`, [kinds[name]]);
  }
  for (const [name, kind] of Object.entries(kinds)) {
    events[name] = envelope(tenant, kind);
    await publishEvent(bus, events[name]!);
  }
});

afterAll(async () => {
  await worker?.stop();
  await dead?.stop();
  await bus?.close();
  await Promise.all([failing?.close(), flaky?.close(), slow?.close()]);
  await store?.close();
  pki?.cleanup();
});

function deliveryRow(subscriptionId: string) {
  return store.db.withTenant(tenant, async (sql) => {
    const r = await sql.query<{ id: string; status: string; attempts: number; cycle: number; dead_reason: string | null }>(
      `SELECT id, status, attempts, cycle, dead_reason FROM gateway.webhook_deliveries WHERE subscription_id = $1`,
      [subscriptionId],
    );
    return r.rows[0] ?? null;
  });
}

function attemptRows(subscriptionId: string) {
  return store.db.withTenant(tenant, async (sql) => {
    const r = await sql.query<{ attempt: number; step: number; outcome: string; status_code: number | null; latency_ms: number; response_snippet: string | null; started_at: Date; scheduled_for: Date }>(
      `SELECT attempt, step, outcome, status_code, latency_ms, response_snippet, started_at, scheduled_for FROM gateway.webhook_attempts WHERE subscription_id = $1 ORDER BY attempt`,
      [subscriptionId],
    );
    return r.rows;
  });
}

function expectWithinTenPercent(actualMs: number, expectedMs: number): void {
  expect(Math.abs(actualMs - expectedMs)).toBeLessThanOrEqual(expectedMs * 0.1);
}

describe('webhook retry schedule', () => {
  it('retries an always-failing receiver after 1, 2, 4, 8 and 30 s (±10%), then dead-letters and disables it', async () => {
    const seen = await failing.waitFor(6, 60_000);
    const gaps = seen.slice(1).map((r, i) => r.at - seen[i]!.answeredAt!);
    process.stdout.write(`webhook retry gaps after each failure (ms): ${gaps.map((g) => g.toFixed(0)).join(', ')} (expected ${SCHEDULE.join(', ')})\n`);
    gaps.forEach((gap, i) => expectWithinTenPercent(gap, SCHEDULE[i]!));

    // Every attempt carries the same event, signed, and verifiable both ways.
    for (const r of seen) {
      const body = assertSigned(r, subs.failing!.secret);
      expect(body.event_id).toBe(events.failing!.event_id);
      expect(r.headers['webhook-id']).toBe(events.failing!.event_id);
    }

    const row = await eventually('the dead letter', async () => {
      const d = await deliveryRow(subs.failing!.id);
      return d?.status === 'dead' ? d : null;
    }, 10_000);
    expect(row).toMatchObject({ attempts: 6, dead_reason: 'retries_exhausted' });

    const attempts = await attemptRows(subs.failing!.id);
    expect(attempts.map((a) => a.step)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const a of attempts) {
      expect(a).toMatchObject({ outcome: 'http_error', status_code: 500 });
      // The 5000-byte answer is kept only up to the bounded snippet.
      expect(a.response_snippet!.length).toBeLessThanOrEqual(1024);
      expect(a.latency_ms).toBeGreaterThanOrEqual(0);
    }

    await eventually('the message on lore.webhook.dead', async () =>
      dead.messages.some((m) => JSON.parse(m.value.toString()).delivery_id === row.id), 10_000);

    // One dead letter reaches the threshold of this worker (1): the endpoint is disabled automatically.
    const service = webhookService(store.db);
    const viewer = { tenantId: tenant, workspaceId: null };
    const disabled = await service.get(viewer, subs.failing!.id);
    expect(disabled).toMatchObject({ enabled: false, disabledReason: 'dead_letters' });

    // Re-enabled and replayed by id: the same event arrives again, now acknowledged, in a second cycle.
    failingHealed = true;
    await service.update(viewer, subs.failing!.id, { enabled: true });
    await expect(service.deadLetters(viewer, subs.failing!.id, { limit: 10 })).resolves.toHaveLength(1);
    const replayed = await service.replay(viewer, subs.failing!.id, { deliveryIds: [row.id] });
    expect(replayed.map((d) => d.id)).toEqual([row.id]);
    // The replay travels through the outbox; publish it here as a relay would.
    await new OutboxRelay({ db: store.db, bus, logger: silentLogger }).drainOnce();
    const again = await failing.waitFor(7, 20_000);
    expect(assertSigned(again[6]!, subs.failing!.secret).event_id).toBe(events.failing!.event_id);
    const final = await eventually('the replayed delivery to succeed', async () => {
      const d = await deliveryRow(subs.failing!.id);
      return d?.status === 'succeeded' ? d : null;
    }, 10_000);
    expect(final).toMatchObject({ cycle: 2, attempts: 7 });
    await expect(service.deadLetters(viewer, subs.failing!.id, { limit: 10 })).resolves.toHaveLength(0);
  });

  it('makes exactly three attempts for a receiver that fails twice, and dead-letters nothing', async () => {
    const seen = await flaky.waitFor(3, 30_000);
    expectWithinTenPercent(seen[1]!.at - seen[0]!.answeredAt!, 1000);
    expectWithinTenPercent(seen[2]!.at - seen[1]!.answeredAt!, 2000);
    for (const r of seen) expect(assertSigned(r, subs.flaky!.secret).event_id).toBe(events.flaky!.event_id);
    const row = await eventually('the acknowledged delivery', async () => {
      const d = await deliveryRow(subs.flaky!.id);
      return d?.status === 'succeeded' ? d : null;
    }, 10_000);
    expect(row.attempts).toBe(3);
    // Long enough for a fourth attempt (the next step is 4 s) to have shown up if one were scheduled.
    await new Promise((r) => setTimeout(r, 5000));
    expect(flaky.requests).toHaveLength(3);
    expect(dead.messages.filter((m) => JSON.parse(m.value.toString()).subscription_id === subs.flaky!.id)).toHaveLength(0);
  });

  it('counts a 2xx that arrives after the delivery timeout as a failure', async () => {
    const seen = await slow.waitFor(2, 30_000);
    // The first attempt failed when the deadline passed; the retry came 1 s after that.
    expectWithinTenPercent(seen[1]!.at - (seen[0]!.at + TIMEOUT_MS), 1000);
    const attempts = await eventually('two recorded attempts', async () => {
      const a = await attemptRows(subs.slow!.id);
      return a.length === 2 ? a : null;
    }, 10_000);
    expect(attempts[0]).toMatchObject({ step: 0, outcome: 'timeout' });
    expect(attempts[0]!.latency_ms).toBeGreaterThanOrEqual(TIMEOUT_MS);
    expect(attempts[1]).toMatchObject({ step: 1, outcome: 'succeeded', status_code: 200 });
    const row = await deliveryRow(subs.slow!.id);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
  });
});
