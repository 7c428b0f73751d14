/**
 * Webhook delivery latency: from the commit of a domain event (outbox row in the producer's transaction) to the
 * first delivery attempt arriving at an HTTPS receiver, at a steady 100 events/s, on real PostgreSQL and Kafka.
 * Path: outbox → relay → lore.events → fan-out → lore.webhook.deliveries → attempt → receiver.
 *
 * Baseline, measured in the same run and at the same rate: a raw Kafka produce → consume round on one topic.
 * Prints p50/p95/p99 of both and the ratio of the p95s. Target: p95 ≤ 500 ms.
 *
 *   bash test/infra/up.sh && set -a && . ~/.cache/lore/run/env && set +a && npm run bench:webhooks
 *   (BENCH_EVENTS=1500 BENCH_RATE=100 BENCH_TENANTS=10 to change the load; BENCH_TENANTS=1 is the worst case:
 *   one tenant's events share one partition of lore.events, so its fan-out is sequential)
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { cpus, loadavg } from 'node:os';
import { TOPICS } from '@lore/contracts';
import { KafkaBus, OutboxRelay, createMetricsRegistry } from '@lore/runtime';
import { Kafka, logLevel } from 'kafkajs';
import { RETRY_TOPICS } from '../../services/gateway/src/webhooks/schedule';
import {
  commitEvent,
  createTestPki,
  envelope,
  now,
  silentLogger,
  startWorker,
  subscribe,
  tenantId,
  uniqueGroupPrefix,
  webhooksDatabase,
} from '../../test/webhooks/support';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1500);
const RATE = Number(process.env.BENCH_RATE ?? 100);
/** Events are spread round-robin over this many tenants (lore.events is keyed by tenant). */
const TENANTS = Number(process.env.BENCH_TENANTS ?? 10);
const WARMUP = 30;
const RELAY_POLL_MS = 50;
const BASELINE_TOPIC = 'lore.bench.webhooks-baseline';
/** What docs/webhooks.md recommends for the webhook topics; the worker process's default consumer concurrency. */
const WEBHOOK_PARTITIONS = 12;
const CONSUMER_CONCURRENCY = Number(process.env.BENCH_CONSUMER_CONCURRENCY ?? 8);

/**
 * The topics the webhook pipeline reads get the partitions a deployment would give them (docs/webhooks.md). On a
 * shared test broker they may already exist with the broker default; partitions are only ever added, never removed.
 */
async function provisionWebhookTopics(brokers: string[]): Promise<void> {
  const kafka = new Kafka({ clientId: 'bench-webhooks-admin', brokers, logLevel: logLevel.NOTHING });
  // lore.events too: the fan-out's parallelism is its partition count (events are keyed by tenant).
  const topics = [TOPICS.events, TOPICS.webhookDeliveries, ...RETRY_TOPICS, TOPICS.webhookDead];
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) await admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions: WEBHOOK_PARTITIONS })) });
    const meta = await admin.fetchTopicMetadata({ topics: topics.filter((t) => existing.has(t)) });
    const grow = meta.topics.filter((t) => t.partitions.length < WEBHOOK_PARTITIONS).map((t) => ({ topic: t.name, count: WEBHOOK_PARTITIONS }));
    if (grow.length > 0) await admin.createPartitions({ topicPartitions: grow, validateOnly: false });
  } finally {
    await admin.disconnect();
  }
  // New partitions serve reads only once they have a leader. A fresh client each round: an admin client keeps the
  // metadata it read before the partitions were added.
  for (let round = 0; round < 60; round++) {
    const check = kafka.admin();
    await check.connect();
    try {
      const ready = await Promise.all(topics.map(async (t) => (await check.fetchTopicOffsets(t)).length >= WEBHOOK_PARTITIONS));
      if (ready.every(Boolean)) return;
    } catch {
      // Not led yet: try again.
    } finally {
      await check.disconnect();
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('the webhook topics did not get leaders for their new partitions within 30 s');
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

function summary(values: number[]): { n: number; p50: number; p95: number; p99: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN };
}

/** Runs `fn` `count` times at `rate` per second, on a fixed schedule (no coordinated omission from slow calls). */
async function paced(count: number, rate: number, fn: (i: number) => Promise<void>): Promise<void> {
  const start = now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inFlight.push(fn(i));
  }
  await Promise.all(inFlight);
}

async function waitUntil(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(): Promise<void> {
  const pki = createTestPki();
  // As many connections as the worker has handlers at once (fan-out and deliveries), plus the relay and producer.
  const store = await webhooksDatabase(2 * CONSUMER_CONCURRENCY + 8);
  const brokers = (process.env.LORE_TEST_KAFKA_BROKERS ?? '').split(',').filter(Boolean);
  if (brokers.length === 0) throw new Error('LORE_TEST_KAFKA_BROKERS is not set: start test/infra/up.sh and source its env file');
  await provisionWebhookTopics(brokers);
  // One client per role, as deployed: the producing service's relay, the webhooks worker, and the baseline probe
  // (a KafkaBus has one producer, and its publishes go one at a time).
  const newBus = (role: string) =>
    new KafkaBus({
      brokers,
      clientId: `bench-webhooks-${role}`,
      logger: silentLogger,
      metrics: createMetricsRegistry(`bench-webhooks-${role}`, { defaultMetrics: false }),
      partitionsConsumedConcurrently: CONSUMER_CONCURRENCY,
    });
  const bus = newBus('worker');
  const producerBus = newBus('producer');
  const probeBus = newBus('baseline');
  // The receiver runs in its own process, so its TLS work does not share the worker's event loop.
  const arrivals = new Map<string, number>();
  const child = fork(join(__dirname, 'receiver-process.ts'), [], {
    execArgv: ['--conditions=lore-src', '--import', 'tsx'],
    env: { ...process.env, BENCH_PKI_DIR: pki.dir },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const receiverUrl = await new Promise<string>((resolve, reject) => {
    child.on('message', (m: { ready?: string; id?: string; at?: number }) => {
      if (m.ready) resolve(m.ready);
      else if (m.id && m.at !== undefined && !arrivals.has(m.id)) arrivals.set(m.id, m.at);
    });
    child.once('exit', (code) => reject(new Error(`receiver process exited (${code})`)));
  });
  const worker = await startWorker(store.db, bus, pki, { groupIdPrefix: uniqueGroupPrefix('bench'), concurrencyPerEndpoint: 16 });
  const relay = new OutboxRelay({ db: store.db, bus: producerBus, logger: silentLogger, pollIntervalMs: RELAY_POLL_MS });
  relay.start();

  // Baseline consumer: raw produce → consume on one topic, same broker, same process.
  await probeBus.ensureTopics([BASELINE_TOPIC]);
  const baseline = new Map<string, number>();
  const baselineSub = await probeBus.subscribe({ groupId: uniqueGroupPrefix('bench-baseline'), topics: [BASELINE_TOPIC], fromBeginning: false }, async (m) => {
    const sent = Number(m.headers['sent-at']);
    baseline.set(m.key, now() - sent);
  });

  try {
    const tenants = Array.from({ length: TENANTS }, () => tenantId());
    for (const t of tenants) await subscribe(store.db, t, `${receiverUrl}/bench`, ['memory.ingest.completed']);
    const tenant = tenants[0]!;

    // Warm-up: connections, prepared plans, JIT.
    const warm: string[] = [];
    await paced(WARMUP, 20, async () => {
      const e = envelope(tenant);
      warm.push(e.event_id);
      await commitEvent(store.db, e);
      await probeBus.publish(BASELINE_TOPIC, [{ key: randomUUID(), value: 'warm', headers: { 'sent-at': String(now()) } }]);
    });
    await waitUntil('warm-up deliveries', () => warm.every((id) => arrivals.has(id)), 30_000);
    baseline.clear();

    // Measured run: webhook events and baseline messages interleaved at the same rate.
    const committed = new Map<string, number>();
    const baselineKeys: string[] = [];
    await paced(EVENTS, RATE, async (i) => {
      if (i % 2 === 0) {
        const key = randomUUID();
        baselineKeys.push(key);
        await probeBus.publish(BASELINE_TOPIC, [{ key, value: 'x', headers: { 'sent-at': String(now()) } }]);
      }
      const e = envelope(tenants[i % tenants.length]!, 'memory.ingest.completed', { doc_id: `doc_${i}`, vault_id: 'v_bench' });
      const at = await commitEvent(store.db, e);
      committed.set(e.event_id, at);
    });
    await waitUntil('every delivery', () => [...committed.keys()].every((id) => arrivals.has(id)), 60_000);
    await waitUntil('every baseline message', () => baselineKeys.every((k) => baseline.has(k)), 30_000);

    const webhook = summary([...committed].map(([id, at]) => arrivals.get(id)! - at));
    const raw = summary(baselineKeys.map((k) => baseline.get(k)!));
    const fmt = (v: number) => `${v.toFixed(1)} ms`;
    const out = [
      `webhook delivery latency, commit → first attempt at the receiver (${webhook.n} events at ${RATE}/s over ${TENANTS} tenant(s), relay poll ${RELAY_POLL_MS} ms, ${WEBHOOK_PARTITIONS} partitions, consumer concurrency ${CONSUMER_CONCURRENCY})`,
      `  webhooks:  p50 ${fmt(webhook.p50)}  p95 ${fmt(webhook.p95)}  p99 ${fmt(webhook.p99)}  max ${fmt(webhook.max)}`,
      `  baseline (raw Kafka produce → consume, ${raw.n} messages): p50 ${fmt(raw.p50)}  p95 ${fmt(raw.p95)}  p99 ${fmt(raw.p99)}`,
      `  ratio p95 webhooks / p95 baseline: ${(webhook.p95 / raw.p95).toFixed(2)}x`,
      `  target p95 ≤ 500 ms: ${webhook.p95 <= 500 ? 'met' : 'NOT met'}`,
      // Everything (PostgreSQL, Kafka, worker, receiver) shares this machine: the load says how far to trust it.
      `  machine: ${cpus().length} cores, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
    if (webhook.p95 > 500) process.exitCode = 1;
  } finally {
    await baselineSub.stop();
    await relay.stop();
    await worker.stop();
    await bus.close();
    await producerBus.close();
    await probeBus.close();
    child.disconnect();
    await store.close();
    pki.cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
