import Router from '@koa/router';
import { TOPICS } from '@lore/contracts';
import {
  assertAppRole,
  checkAppRole,
  consumerGroupsCheck,
  KafkaBus,
  Lifecycle,
  startOutboxRelay,
  PostgresDb,
  PostgresStartJournal,
  createHttpApp,
  createLogger,
  createMetricsRegistry,
  exitOnConfigError,
  listen,
  opsRouter,
  parseConfig,
  runRuntimeMigrations,
  type LoreState,
} from '@lore/runtime';
import { GATEWAY_SCHEMAS, migrateGateway } from './gateway';
import { webhooksEnvSchema, workerConfigFromEnv } from './webhooks/config';
import { createWebhooksWorker } from './webhooks/worker';
import { CREDIT_TOPICS, createCreditUsageConsumer } from './consumers/credit-usage';

/**
 * The `webhooks` deployment, the gateway's worker: consumes domain events, signs and delivers them, retries on the
 * documented schedule, dead-letters; and applies the credit charges of `lore.credits.usage` to tenants' balances
 * (docs/gateway.md, "Credits"). The only place that reads the environment and builds clients for it.
 */
async function main(): Promise<void> {
  const env = parseConfig(webhooksEnvSchema, process.env);
  const logger = createLogger({ level: env.LOG_LEVEL, service: 'webhooks' });
  const metrics = createMetricsRegistry('webhooks');
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers();

  const db = await new PostgresDb({ url: env.LORE_DATABASE_URL, ...(env.LORE_DATABASE_OWNER_URL ? { ownerUrl: env.LORE_DATABASE_OWNER_URL } : {}) }).init();
  lifecycle.onShutdown('database', () => db.close());
  if (env.WEBHOOKS_RUN_MIGRATIONS) {
    await runRuntimeMigrations(db);
    await migrateGateway(db);
  }
  // Refuse to start when the application role cannot do the work or could escape row-level security.
  await assertAppRole(db, GATEWAY_SCHEMAS);

  const bus = new KafkaBus({
    brokers: env.LORE_KAFKA_BROKERS,
    prefix: env.LORE_KAFKA_PREFIX,
    clientId: 'lore-webhooks',
    logger,
    metrics,
    ...(env.WEBHOOKS_KAFKA_PARTITIONS > 0 ? { partitions: env.WEBHOOKS_KAFKA_PARTITIONS } : {}),
    // Each consumer group works on this many partitions at once; a partition itself is handled in order.
    partitionsConsumedConcurrently: env.WEBHOOKS_CONSUMER_CONCURRENCY,
    sessionTimeoutMs: env.WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS,
    // Bounds crash loops: a message whose handling kills the process is dead-lettered after a few starts on it
    // (docs/runtime.md, "Poison messages"). Closed before the database, so a graceful stop clears its starts.
    startJournal: new PostgresStartJournal(db),
  });
  lifecycle.onShutdown('event bus', () => bus.close());

  // The gateway enqueues dead-letter replays, memory lifecycle messages and credit balances but runs no relay: this
  // one publishes them even in a deployment without the graph (the rule: startOutboxRelay). Their topics must exist.
  await startOutboxRelay({
    process: 'webhooks',
    enabled: env.WEBHOOKS_RUN_OUTBOX_RELAY,
    db,
    bus,
    logger,
    metrics,
    pollIntervalMs: 50,
    topics: [TOPICS.memoryLifecycle, ...CREDIT_TOPICS],
    lifecycle,
  });

  const worker = createWebhooksWorker({ db, bus, logger, metrics, config: workerConfigFromEnv(env), encryptionKeys: env.LORE_ENCRYPTION_KEYS });
  lifecycle.addCheck('database', async () => {
    const { role, problems } = await checkAppRole(db, GATEWAY_SCHEMAS);
    return { ok: problems.length === 0, details: { role, ...(problems.length > 0 ? { problems } : {}) } };
  });
  lifecycle.addCheck('event bus', async () => {
    await bus.ping();
    return { ok: true, details: { kind: bus.kind } };
  });
  const credits = createCreditUsageConsumer({ db, bus, logger, metrics });
  lifecycle.addCheck('worker', async () => ({ ok: worker.running }));
  lifecycle.addCheck('credits', async () => ({ ok: credits.running }));
  // In every consumer group it subscribed to; lag is information only (docs/runtime.md, "Readiness").
  lifecycle.addCheck('consumer groups', consumerGroupsCheck(bus));

  const ops = createHttpApp({ service: 'webhooks-ops', logger, metrics });
  const router: Router<LoreState> = opsRouter(lifecycle, metrics);
  ops.use(router.routes());
  const opsServer = await listen(ops, env.WEBHOOKS_OPS_PORT, env.WEBHOOKS_OPS_HOST);
  lifecycle.onShutdown('ops listener', () => opsServer.close());

  await worker.start();
  lifecycle.onShutdown('webhooks worker', () => worker.stop(), 15_000);
  await credits.start();
  lifecycle.onShutdown('credits consumer', () => credits.stop());
  lifecycle.markStarted();
  logger.info({ ops_port: opsServer.port }, 'webhooks worker ready');
}

main().catch(exitOnConfigError);
