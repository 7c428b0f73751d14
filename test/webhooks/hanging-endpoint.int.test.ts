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
 * ordering"): its attempts wait for its slots inside the worker, not in a bus handler, so no partition waits for it,
 * and the worker's connections to a host are not capped at one subscription's bound, so another subscription on the
 * same host (here the same server, another path) does not wait for its sockets either.
 * Until 2026-12-01 a hanging endpoint's attempts waited for its slot inside the handler, holding the partition, and
 * the healthy endpoint's first attempts came 5 to 65 s late. Run on both buses: embedded mode's in-memory bus (on
 * PGlite, as `npm start`) and Kafka (on PostgreSQL, as the cluster).
 */
jest.setTimeout(180_000);

const EVENTS = 24;
/** "About a second or two": the healthy endpoint's first attempts, measured from each event's publish. */
const HEALTHY_WITHIN_MS = 2_000;

let pki: TestPki;
let receiver: Receiver;

beforeAll(async () => {
  pki = createTestPki();
  // One server, as when two subscriptions point at one host: under `/hang/` it reads the request and never answers
  // (the worker gives up after its 5 s delivery timeout), under `/ok/` it answers at once.
  receiver = await startReceiver(pki, (_, req) => (req.path.startsWith('/hooks/hang/') ? { status: 200, delayMs: 600_000 } : { status: 200 }));
});

afterAll(async () => {
  await receiver?.close();
  pki?.cleanup();
});

/**
 * Both subscriptions want every event of one tenant; events come a few at a time, so the hanging endpoint's attempts
 * pile up in every partition ahead of and among the healthy one's. Returns each healthy first attempt's delay.
 */
async function delaysBehindHangingEndpoint(db: Db, bus: EventBus): Promise<{ delays: number[]; hangingSeen: number }> {
  const tenant = tenantId();
  await subscribe(db, tenant, `${receiver.url}/hang/${tenant}`, ['memory.ingest.completed']);
  await subscribe(db, tenant, `${receiver.url}/ok/${tenant}`, ['memory.ingest.completed']);
  const publishedAt = new Map<string, number>();
  for (let i = 0; i < EVENTS; i++) {
    const e = envelope(tenant);
    publishedAt.set(e.event_id, await publishEvent(bus, e));
    if (i % 4 === 3) await new Promise((r) => setTimeout(r, 100));
  }
  const seen = await waitForPath(receiver, `/hooks/ok/${tenant}`, EVENTS, 60_000);
  const delays = seen.map((r) => r.at - publishedAt.get(String(r.headers['webhook-id']))!);
  return { delays, hangingSeen: receiver.requests.filter((r) => r.path === `/hooks/hang/${tenant}`).length };
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
    bus = kafkaBus('hang', { ownTopics: true });
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
