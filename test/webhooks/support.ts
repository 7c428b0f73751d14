import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createTlsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EVENT_KINDS, TOPICS, type EventEnvelope, type EventKind } from '@lore/contracts';
import {
  KafkaBus,
  OutboxRelay,
  PostgresDb,
  createLogger,
  createMetricsRegistry,
  enqueueOutbox,
  runRuntimeMigrations,
  type BusMessage,
  type Db,
  type EventBus,
  type Logger,
} from '@lore/runtime';
import { migrateGateway } from '@lore/gateway';
import { createWebhooksWorker, type WebhooksWorker, type WebhooksWorkerConfig } from '../../services/gateway/src/webhooks/worker';
import { WebhookService } from '../../services/gateway/src/webhooks/subscriptions';
import type { HostLookup } from '@lore/outbound';
import { freshDatabase, requireEnv, type TestDatabase } from '../support/infra';
import { testEncryptionKeys, testSecretBox } from '../support/encryption';

export { TEST_ENCRYPTION_KEYS, testEncryptionKeys, testSecretBox } from '../support/encryption';

export const silentLogger: Logger = createLogger({ level: process.env.LORE_TEST_LOG_LEVEL ?? 'silent', service: 'webhooks-test' });

/** A certificate authority made for one test run, and a server certificate it signed for the loopback names. */
export interface TestPki {
  dir: string;
  caPem: string;
  caFile: string;
  keyPem: string;
  certPem: string;
  cleanup(): void;
}

/** Uses the openssl CLI, so the test depends on no certificate library. */
export function createTestPki(hostnames: string[] = ['localhost', 'receiver.lore.test']): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'lore-webhooks-pki-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Lore Webhooks Test CA']);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=receiver.lore.test']);
  const san = [...hostnames.map((h) => `DNS:${h}`), 'IP:127.0.0.1', 'IP:::1'].join(',');
  writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`);
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'ext.cnf']);
  return {
    dir,
    caPem: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    caFile: join(dir, 'ca.pem'),
    keyPem: readFileSync(join(dir, 'server.key'), 'utf8'),
    certPem: readFileSync(join(dir, 'server.pem'), 'utf8'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface ReceivedRequest {
  /** Arrival time (epoch ms, fractional). */
  at: number;
  /** When the receiver finished its answer (epoch ms), or null when the client gave up first. */
  answeredAt: number | null;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  status: number;
}

export type Reply = { status: number; delayMs?: number; headers?: Record<string, string>; body?: string };

export interface Receiver {
  url: string;
  port: number;
  /** Every request, in arrival order, recorded when its body has arrived. */
  requests: ReceivedRequest[];
  /** Resolves when `n` requests have arrived (or rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** A local HTTPS receiver; `reply` decides each answer from the number of requests seen before it (0-based). */
export async function startReceiver(pki: TestPki, reply: (index: number, req: { path: string; headers: IncomingHttpHeaders; body: string }) => Reply): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let waiters: Array<() => void> = [];
  // Answers still to be given: closing the receiver cancels them, so a long `delayMs` keeps no test process alive.
  const answers = new Set<NodeJS.Timeout>();
  const server: HttpsServer = createTlsServer({ key: pki.keyPem, cert: pki.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      const body = Buffer.concat(chunks).toString('utf8');
      const index = requests.length;
      const r = reply(index, { path: req.url ?? '/', headers: req.headers, body });
      const record: ReceivedRequest = { at, answeredAt: null, path: req.url ?? '/', headers: req.headers, rawBody: body, status: r.status };
      requests.push(record);
      const w = waiters;
      waiters = [];
      w.forEach((fn) => fn());
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(r.status, { 'content-type': 'text/plain', ...(r.headers ?? {}) });
        res.end(r.body ?? `status ${r.status}`, () => {
          record.answeredAt = now();
        });
      };
      if (r.delayMs) {
        const timer = setTimeout(() => {
          answers.delete(timer);
          answer();
        }, r.delayMs);
        answers.add(timer);
      } else answer();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}/hooks`,
    port,
    requests,
    async waitFor(n, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver saw ${requests.length} of ${n} expected requests within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(left, 1000));
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      return requests.slice(0, n);
    },
    close: () =>
      new Promise<void>((resolve) => {
        answers.forEach((t) => clearTimeout(t));
        answers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A plain TCP listener that counts accepted connections: proof that nothing connected to it. */
export async function startCountingListener(host: string, port = 0): Promise<{ port: number; accepted: () => number; close(): Promise<void> }> {
  let accepted = 0;
  const server = createServer();
  server.on('connection', (socket) => {
    accepted += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    accepted: () => accepted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface WebhooksDb {
  database: TestDatabase;
  db: PostgresDb;
  close(): Promise<void>;
}

/** A fresh database with the runtime's and the gateway's migrations applied (the webhook tables among them). */
export async function webhooksDatabase(maxConnections = 12): Promise<WebhooksDb> {
  const database = await freshDatabase('lore_wh');
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections }).init();
  await runRuntimeMigrations(db);
  await migrateGateway(db);
  return {
    database,
    db,
    async close() {
      await db.close();
      await database.drop();
    },
  };
}

/** A random topic prefix of a suite's own (see `kafkaBus`). */
export function ownTopicPrefix(name: string): string {
  return `wh-${name}-${randomBytes(4).toString('hex')}`;
}

/**
 * A bus on the shared test broker. With `ownTopics`, every topic and group carries a random prefix (as an install
 * sharing a broker has, `LORE_KAFKA_PREFIX`): the suite's worker then reads only its own events and deliveries, and
 * no other suite's worker reads its, so the suite may run beside others (test/integration-lanes.txt). `prefix`
 * names that prefix, to share it with another bus of the suite (the graph harness's).
 */
export function kafkaBus(name: string, options: { ownTopics?: boolean; prefix?: string } = {}): KafkaBus {
  const prefix = options.prefix ?? (options.ownTopics ? ownTopicPrefix(name) : undefined);
  return new KafkaBus({
    brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','),
    ...(prefix ? { prefix, partitions: 2 } : {}),
    clientId: `webhooks-test-${name}`,
    logger: silentLogger,
    metrics: createMetricsRegistry(`webhooks-test-${name}`, { defaultMetrics: false }),
  });
}

export function uniqueGroupPrefix(name: string): string {
  return `test.webhooks.${name}.${randomBytes(4).toString('hex')}`;
}

export async function startWorker(
  db: Db,
  bus: EventBus,
  pki: TestPki,
  config: Partial<WebhooksWorkerConfig> & { groupIdPrefix: string },
  lookup?: HostLookup,
): Promise<WebhooksWorker> {
  const worker = createWebhooksWorker({
    db,
    bus,
    logger: silentLogger,
    metrics: createMetricsRegistry('webhooks-worker-test', { defaultMetrics: false }),
    encryptionKeys: testEncryptionKeys(),
    config: { startFrom: 'latest', allowLoopback: true, extraCaPem: pki.caPem, ...config },
    ...(lookup ? { lookup } : {}),
  });
  await worker.start();
  return worker;
}

export function tenantId(): string {
  return `t-${randomBytes(5).toString('hex')}`;
}

export function envelope(tenant: string, event: EventKind = 'memory.ingest.completed', payload: Record<string, unknown> = { doc_id: 'doc_1', vault_id: 'v_unassigned' }): EventEnvelope {
  return {
    event_id: `evt_${randomUUID()}`,
    event,
    occurred_at: new Date().toISOString(),
    scope: { tenant_id: tenant, workspace_id: `ws-${tenant}`, memory_id: `mem-${tenant}` },
    payload,
  };
}

/** Commits an event through the outbox, the way producers do (the relay publishes it to `lore.events`). */
export async function commitEvent(db: Db, e: EventEnvelope): Promise<number> {
  await db.withTenant(e.scope.tenant_id, (sql) => enqueueOutbox(sql, { topic: TOPICS.events, key: e.scope.tenant_id, eventId: e.event_id, value: e }));
  return now();
}

/** Publishes an event straight to `lore.events` (tests that do not exercise the outbox). */
export async function publishEvent(bus: EventBus, e: EventEnvelope): Promise<number> {
  await bus.publish(TOPICS.events, [{ key: e.scope.tenant_id, value: JSON.stringify(e), headers: { 'event-id': e.event_id } }]);
  return now();
}

export function startRelay(db: PostgresDb, bus: EventBus, pollIntervalMs = 200): OutboxRelay {
  const relay = new OutboxRelay({ db, bus, logger: silentLogger, pollIntervalMs });
  relay.start();
  return relay;
}

/** The subscription rules as the gateway runs them, sealing with the test key ring; loopback receivers allowed. */
export function webhookService(db: Db): WebhookService {
  return new WebhookService(db, testSecretBox(), { allowLoopbackTargets: true });
}

export async function subscribe(db: Db, tenant: string, url: string, events: EventKind[] = [...EVENT_KINDS]): Promise<{ id: string; secret: string }> {
  const { subscription, secret } = await webhookService(db).create({ tenantId: tenant, workspaceId: null }, { url, events });
  return { id: subscription.id, secret };
}

/** Collects the messages of one topic from now on (a throw-away consumer group). */
export async function collectTopic(bus: EventBus, topic: string): Promise<{ messages: BusMessage[]; stop(): Promise<void> }> {
  const messages: BusMessage[] = [];
  const sub = await bus.subscribe({ groupId: uniqueGroupPrefix('collect'), topics: [topic], fromBeginning: false }, async (m) => {
    messages.push(m);
  });
  return { messages, stop: () => sub.stop() };
}

export async function eventually<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The receiver's side of spec 1 rule 7, written out plainly: hex HMAC-SHA256 of the raw body, compared in constant time. */
export function plainHmacMatches(secret: string, rawBody: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(rawBody).digest('hex'));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Verifies one delivery both ways: rule 7's HMAC and the standardwebhooks package. Throws on any mismatch. */
export function assertSigned(req: ReceivedRequest, secret: string, hmacHeader: 'x-service-signature' | 'x-service-signature-next' = 'x-service-signature'): EventEnvelope {
  if (!plainHmacMatches(secret, req.rawBody, req.headers[hmacHeader])) throw new Error(`${hmacHeader} does not match the secret`);
  const headers = {
    'webhook-id': String(req.headers['webhook-id']),
    'webhook-timestamp': String(req.headers['webhook-timestamp']),
    'webhook-signature': String(req.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(req.rawBody, headers) as EventEnvelope;
}
