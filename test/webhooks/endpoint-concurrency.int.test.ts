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

/**
 * Attempts against one endpoint are bounded per worker, however many deliveries are due at once.
 *
 * Every assertion states something the worker guarantees, never a race: the bound, every delivery made once, the
 * least time twelve slow answers two at a time can take, and the other endpoint served. That the other endpoint is
 * not delayed by the busy one (since 2026-12-01 an attempt waiting for a slot holds no partition) is proven with a
 * hanging endpoint in hanging-endpoint.int.test.ts.
 */
jest.setTimeout(120_000);

const BOUND = 2;
const ANSWER_MS = 400;
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
  bus = kafkaBus('concurrency', { ownTopics: true });
  worker = await startWorker(store.db, bus, pki, { groupIdPrefix: uniqueGroupPrefix('concurrency'), concurrencyPerEndpoint: BOUND });
  slow = await startReceiver(pki, () => {
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    setTimeout(() => (inFlight -= 1), ANSWER_MS);
    return { status: 200, delayMs: ANSWER_MS };
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
  it(`never has more than ${BOUND} attempts in flight against one endpoint and delivers every event once`, async () => {
    const busy = tenantId();
    const other = tenantId();
    await subscribe(store.db, busy, `${slow.url}/slow`, ['memory.entity.created']);
    await subscribe(store.db, other, `${fast.url}/fast`, ['memory.entity.created']);
    const events = Array.from({ length: 12 }, () => envelope(busy, 'memory.entity.created'));
    await Promise.all(events.map((e) => publishEvent(bus, e)));
    await publishEvent(bus, envelope(other, 'memory.entity.created'));

    const seen = await slow.waitFor(12, 90_000);
    const [otherDelivery] = await fast.waitFor(1, 60_000);
    expect(new Set(seen.map((r) => r.headers['webhook-id'])).size).toBe(12);
    expect(otherDelivery!.path).toBe('/hooks/fast');
    // Deliveries spread over several partitions, so the worker had more than two ready at once: the bound held them.
    expect(peak).toBe(BOUND);
    // Twelve answers of 400 ms, two at a time, cannot take less than six rounds from the first request on.
    expect(seen[11]!.at - seen[0]!.at).toBeGreaterThanOrEqual((12 / BOUND - 1) * ANSWER_MS);
    // Let the last answers go out, then nothing is retried: each endpoint saw each delivery exactly once.
    await new Promise((resolve) => setTimeout(resolve, 2 * ANSWER_MS + 1_500));
    expect(slow.requests).toHaveLength(12);
    expect(fast.requests).toHaveLength(1);
  });
});
