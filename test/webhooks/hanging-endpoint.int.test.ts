import { migrateGateway } from '@lore/gateway';
import { MemoryBus, PgliteDb, runRuntimeMigrations, type Db, type EventBus } from '@lore/runtime';
import type { WebhooksWorker } from '../../services/gateway/src/webhooks/worker';
import {
  createTestPki,
  envelope,
  kafkaBus,
  publishEvent,
  startReceiver,
  startWorker,
  subscribe,
  tenantId,
  uniqueGroupPrefix,
  webhooksDatabase,
  type Receiver,
  type TestPki,
} from './support';

/**
 * One endpoint that never answers must not delay anyone else's deliveries (docs/webhooks.md, "Concurrency and
 * ordering"): its attempts wait for its slots inside the worker, not in a bus handler, so no partition waits for it.
 * Until 2026-12-01 a hanging endpoint's attempts waited for its slot inside the handler, holding the partition, and
 * the healthy endpoint's first attempts came 5 to 65 s late. Run on both buses: embedded mode's in-memory bus (on
 * PGlite, as `npm start`) and Kafka (on PostgreSQL, as the cluster).
 */
jest.setTimeout(180_000);

const EVENTS = 24;
/** "About a second or two": the healthy endpoint's first attempts, measured from each event's publish. */
const HEALTHY_WITHIN_MS = 2_000;

let pki: TestPki;
let hanging: Receiver;
let healthy: Receiver;

beforeAll(async () => {
  pki = createTestPki();
  // Reads the request, then never answers (the worker gives up after its 5 s delivery timeout).
  hanging = await startReceiver(pki, () => ({ status: 200, delayMs: 600_000 }));
  healthy = await startReceiver(pki, () => ({ status: 200 }));
});

afterAll(async () => {
  await hanging?.close();
  await healthy?.close();
  pki?.cleanup();
});

/**
 * Both subscriptions want every event of one tenant; events come a few at a time, so the hanging endpoint's attempts
 * pile up in every partition ahead of and among the healthy one's. Returns each healthy first attempt's delay.
 */
async function delaysBehindHangingEndpoint(db: Db, bus: EventBus): Promise<{ delays: number[]; hangingSeen: number }> {
  const tenant = tenantId();
  await subscribe(db, tenant, `${hanging.url}/${tenant}`, ['memory.ingest.completed']);
  await subscribe(db, tenant, `${healthy.url}/${tenant}`, ['memory.ingest.completed']);
  const publishedAt = new Map<string, number>();
  for (let i = 0; i < EVENTS; i++) {
    const e = envelope(tenant);
    publishedAt.set(e.event_id, await publishEvent(bus, e));
    if (i % 4 === 3) await new Promise((r) => setTimeout(r, 100));
  }
  const seen = await waitForPath(healthy, `/hooks/${tenant}`, EVENTS, 60_000);
  const delays = seen.map((r) => r.at - publishedAt.get(String(r.headers['webhook-id']))!);
  return { delays, hangingSeen: hanging.requests.filter((r) => r.path === `/hooks/${tenant}`).length };
}

async function waitForPath(receiver: Receiver, path: string, n: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const mine = receiver.requests.filter((r) => r.path === path);
    if (mine.length >= n) return mine.slice(0, n);
    if (Date.now() > deadline) throw new Error(`${path} saw ${mine.length} of ${n} requests within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function describeDelays(delays: number[]): string {
  const sorted = [...delays].sort((a, b) => a - b);
  return `p50 ${Math.round(sorted[Math.floor(sorted.length / 2)]!)} ms, max ${Math.round(sorted[sorted.length - 1]!)} ms`;
}

/** The delays' summary and whether the slowest is within the bound (a failure shows the figures). */
function verdict(delays: number[]): string {
  return `${describeDelays(delays)}: ${Math.max(...delays) <= HEALTHY_WITHIN_MS ? 'within' : 'beyond'} ${HEALTHY_WITHIN_MS} ms`;
}

describe('a hanging endpoint, embedded mode (in-memory bus, PGlite)', () => {
  let db: PgliteDb;
  let bus: MemoryBus;
  let worker: WebhooksWorker;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await migrateGateway(db);
    bus = new MemoryBus();
    worker = await startWorker(db, bus, pki, { groupIdPrefix: uniqueGroupPrefix('hang-mem'), startFrom: 'earliest', recoverOnStart: true });
  });

  afterAll(async () => {
    await worker?.stop();
    await bus?.close();
    await db?.close();
  });

  it(`delays no other subscription's first attempts beyond ${HEALTHY_WITHIN_MS} ms`, async () => {
    const { delays, hangingSeen } = await delaysBehindHangingEndpoint(db, bus);
    // The hanging endpoint got its bound of attempts at once (the rest wait for them, 5 s each), all while the
    // healthy one was served.
    expect(hangingSeen).toBeGreaterThanOrEqual(1);
    expect(hangingSeen).toBeLessThanOrEqual(4);
    expect(verdict(delays)).toBe(`${describeDelays(delays)}: within ${HEALTHY_WITHIN_MS} ms`);
  });
});

describe('a hanging endpoint, cluster (Kafka, PostgreSQL)', () => {
  let store: Awaited<ReturnType<typeof webhooksDatabase>>;
  let bus: ReturnType<typeof kafkaBus>;
  let worker: WebhooksWorker;

  beforeAll(async () => {
    store = await webhooksDatabase();
    bus = kafkaBus('hang');
    worker = await startWorker(store.db, bus, pki, { groupIdPrefix: uniqueGroupPrefix('hang-kafka') });
  });

  afterAll(async () => {
    await worker?.stop();
    await bus?.close();
    await store?.close();
  });

  it(`delays no other subscription's first attempts beyond ${HEALTHY_WITHIN_MS} ms`, async () => {
    const { delays, hangingSeen } = await delaysBehindHangingEndpoint(store.db, bus);
    expect(hangingSeen).toBeGreaterThanOrEqual(1);
    expect(hangingSeen).toBeLessThanOrEqual(4);
    expect(verdict(delays)).toBe(`${describeDelays(delays)}: within ${HEALTHY_WITHIN_MS} ms`);
  });
});
