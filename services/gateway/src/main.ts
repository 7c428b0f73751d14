import { Redis } from 'ioredis';
import {
  IdentitySigner, Lifecycle, LISTENER_CLOSE_TIMEOUT_MS, PostgresDb, createLogger, createMetricsRegistry, exitOnConfigError, listen, parseConfig,
  type StartedServer,
} from '@lore/runtime';
import { configFromEnv, gatewayEnvSchema } from './config';
import { createGateway } from './gateway';
import { RedisGatewayState } from './state/redis-state';

/** The gateway process: the only place that reads the environment and builds clients. */
async function main(): Promise<void> {
  const env = parseConfig(gatewayEnvSchema, process.env);
  const logger = createLogger({ level: env.LOG_LEVEL, service: 'gateway' });
  const metrics = createMetricsRegistry('gateway');
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers();
  // Registered first so it closes after everything else but the tracer: while the public and admin listeners
  // drain, /readyz keeps answering 503 and /metrics stays scrapeable.
  let ops: StartedServer | undefined;
  lifecycle.onShutdown('ops listener', async () => ops?.close());

  const db = await new PostgresDb({ url: env.LORE_DATABASE_URL, ownerUrl: env.LORE_DATABASE_OWNER_URL }).init();
  lifecycle.onShutdown('database', () => db.close());
  const redis = new Redis(env.LORE_REDIS_URL, { maxRetriesPerRequest: 1, enableAutoPipelining: false, lazyConnect: false });
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis connection problem'));
  const state = new RedisGatewayState(redis, { prefix: env.GATEWAY_REDIS_PREFIX });
  lifecycle.onShutdown('redis', () => state.close());

  const gateway = await createGateway(
    { db, state, logger, metrics, signer: new IdentitySigner(env.LORE_IDENTITY_SECRET), config: configFromEnv(env) },
    { lifecycle, migrate: env.GATEWAY_RUN_MIGRATIONS },
  );
  lifecycle.onShutdown('upstream connections', () => gateway.close());

  const pub = await listen(gateway.publicApp, env.GATEWAY_PORT, env.GATEWAY_HOST);
  pub.server.on('upgrade', gateway.handleUpgrade);
  const admin = await listen(gateway.adminApp, env.GATEWAY_ADMIN_PORT, env.GATEWAY_ADMIN_HOST);
  // Both drain at once, within one grace (each lets its in-flight requests finish).
  lifecycle.onShutdown('public and admin listeners', async () => void (await Promise.all([pub.close(), admin.close()])), LISTENER_CLOSE_TIMEOUT_MS);
  if (gateway.opsApp) {
    ops = await listen(gateway.opsApp, env.GATEWAY_OPS_PORT, env.GATEWAY_HOST);
    logger.info({ port: ops.port }, 'ops listening');
  }
  lifecycle.markStarted();
  logger.info({ public_port: pub.port, admin_port: admin.port }, 'gateway listening');
}

main().catch(exitOnConfigError);
