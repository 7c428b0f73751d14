/**
 * The benchmark's server process: the full gateway (real PostgreSQL, Redis state) with an unauthenticated twin
 * of the ping route in the same pipeline, and on a second port the same handler in a bare runtime app. Prints
 * its URLs as one JSON line.
 */
import { Session } from 'node:inspector/promises';
import Router, { type RouterMiddleware } from '@koa/router';
import { Redis } from 'ioredis';
import { IdentitySigner, PostgresDb, createHttpApp, createLogger, createMetricsRegistry, generateEncryptionKey, listen, parseEncryptionKeys, type LoreState } from '@lore/runtime';
import { createGateway, gatewayConfig, pingHandler, RedisGatewayState } from '@lore/gateway';

async function main(): Promise<void> {
  const [dbUrl, ownerUrl, redisUrl] = [process.env.BENCH_DB_URL, process.env.BENCH_DB_OWNER_URL, process.env.BENCH_REDIS_URL];
  if (!dbUrl || !ownerUrl || !redisUrl) throw new Error('BENCH_DB_URL, BENCH_DB_OWNER_URL and BENCH_REDIS_URL are required');
  // Access logs off on both sides alike: the comparison is about authentication, not logging.
  const logger = createLogger({ level: 'warn', service: 'bench-gateway' });
  const metrics = createMetricsRegistry('bench-gateway', { defaultMetrics: false });
  const db = await new PostgresDb({ url: dbUrl, ownerUrl, maxConnections: 10 }).init();
  const state = new RedisGatewayState(new Redis(redisUrl, { enableAutoPipelining: process.env.BENCH_AUTO_PIPELINE === '1' }), { prefix: 'bench:gw:' });
  const gateway = await createGateway(
    {
      db,
      state,
      logger,
      metrics,
      signer: new IdentitySigner('bench-identity-secret-0123456789abcdef'),
      config: gatewayConfig({
        adminToken: 'bench-admin-token-0123456789abcdef',
        sessions: { secret: 'bench-session-secret-0123456789abcdef' },
        encryptionKeys: parseEncryptionKeys(generateEncryptionKey('bench')),
        rateLimit: { perSecond: 1_000_000, burst: 1_000_000 },
      }),
    },
    {
      // The same handler, in the same pipeline, without the credential middleware.
      extraRoutes: (r) => {
        r.get('/bench/unauthenticated-ping', pingHandler);
      },
    },
  );
  const baseline = createHttpApp({ service: 'bench-baseline', logger, metrics, parseBodies: false });
  const router = new Router<LoreState>();
  router.get('/api/v1/pages/ping', pingHandler as unknown as RouterMiddleware<LoreState>);
  router.get('/__bench/round-trips', (ctx) => {
    const cpu = process.cpuUsage();
    ctx.body = { round_trips: state.roundTrips(), cpu_us: cpu.user + cpu.system, system_us: cpu.system };
  });
  // `ping.ts --profile DIR`: a CPU profile of this process around one side's round, through the inspector.
  let profiler: Session | undefined;
  router.post('/__bench/profile/start', async (ctx) => {
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
    await profiler.post('Profiler.start');
    ctx.status = 204;
  });
  router.post('/__bench/profile/stop', async (ctx) => {
    if (!profiler) throw new Error('no profile was started');
    const { profile } = await profiler.post('Profiler.stop');
    profiler.disconnect();
    profiler = undefined;
    ctx.body = profile;
  });
  baseline.use(router.routes());

  const pub = await listen(gateway.publicApp, 0, '127.0.0.1');
  const admin = await listen(gateway.adminApp, 0, '127.0.0.1');
  const base = await listen(baseline, 0, '127.0.0.1');
  process.stdout.write(`${JSON.stringify({ gateway: pub.url, admin: admin.url, baseline: base.url })}\n`);
  const stop = async () => {
    await Promise.all([pub.close(100), admin.close(100), base.close(100)]);
    await gateway.close();
    await state.close();
    await db.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
