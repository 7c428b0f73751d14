import type { KafkaBus } from '@lore/runtime';
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
  type WebhooksDb,
} from './support';

/** Attempts against one endpoint are bounded per worker, however many deliveries are due at once. */
jest.setTimeout(90_000);

const BOUND = 2;
let pki: TestPki;
let store: WebhooksDb;
let bus: KafkaBus;
let worker: WebhooksWorker;
let slow: Receiver;
let fast: Receiver;
let inFlight = 0;
let peak = 0;

beforeAll(async () => {
  pki = createTestPki();
  store = await webhooksDatabase();
  bus = kafkaBus('concurrency');
  worker = await startWorker(store.db, bus, pki, { groupIdPrefix: uniqueGroupPrefix('concurrency'), concurrencyPerEndpoint: BOUND });
  slow = await startReceiver(pki, () => {
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    setTimeout(() => (inFlight -= 1), 400);
    return { status: 200, delayMs: 400 };
  });
  fast = await startReceiver(pki, () => ({ status: 200 }));
});

afterAll(async () => {
  await worker?.stop();
  await bus?.close();
  await slow?.close();
  await fast?.close();
  await store?.close();
  pki?.cleanup();
});

describe('per-endpoint concurrency', () => {
  it(`never has more than ${BOUND} attempts in flight against one endpoint, and other endpoints are not held up`, async () => {
    const busy = tenantId();
    const other = tenantId();
    await subscribe(store.db, busy, `${slow.url}/slow`, ['memory.entity.created']);
    await subscribe(store.db, other, `${fast.url}/fast`, ['memory.entity.created']);
    const events = Array.from({ length: 12 }, () => envelope(busy, 'memory.entity.created'));
    const started = Date.now();
    await Promise.all(events.map((e) => publishEvent(bus, e)));
    await publishEvent(bus, envelope(other, 'memory.entity.created'));

    const [otherDelivery] = await fast.waitFor(1, 30_000);
    const seen = await slow.waitFor(12, 60_000);
    expect(new Set(seen.map((r) => r.headers['webhook-id'])).size).toBe(12);
    // Deliveries spread over several partitions, so the worker had more than two ready at once: the bound held them.
    expect(peak).toBe(BOUND);
    // Twelve 400 ms answers two at a time take at least 2.4 s; the other tenant's endpoint got its event meanwhile.
    expect(seen[11]!.at - started).toBeGreaterThanOrEqual(2400);
    expect(otherDelivery!.at).toBeLessThan(seen[11]!.at);
  });
});
