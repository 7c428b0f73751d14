import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  IdentitySigner,
  Lifecycle,
  MemoryBus,
  OutboxRelay,
  PgliteDb,
  PostgresBlobStore,
  createMetricsRegistry,
  listen,
  opsRouter,
  createHttpApp,
  parseEncryptionKeys,
  runRuntimeMigrations,
  type Db,
  type Logger,
  type StartedServer,
} from '@lore/runtime';
import { createGateway, ensureDevTenant, gatewayConfig, MemoryGatewayState, createWebhooksWorker, type Gateway } from '@lore/gateway';
import { selectEmbeddedEmbedder } from '@lore/ai';
import { createGraphService, type GraphService } from '@lore/graph';
import type { EmbeddedConfig } from './config';
import { loadSecrets } from './secrets';

export interface DevCredentials {
  tenant_id: string;
  api_key: string;
}

export interface Embedded {
  url: string;
  port: number;
  opsUrl: string | null;
  credentials: DevCredentials;
  /** True when this start created the dev tenant and its key. */
  createdCredentials: boolean;
  lifecycle: Lifecycle;
  /**
   * The composed parts, for in-process tools and tests (embedded mode has no admin listener: an operation such as
   * deleting a memory is called on `gateway.context`). Clients use `url`.
   */
  parts: { db: Db; gateway: Gateway; graph: GraphService };
  stop(): Promise<void>;
}

/** Every Lore service and worker in one process: PGlite, in-memory state and bus, one public port. */
export async function startEmbedded(config: EmbeddedConfig, logger: Logger): Promise<Embedded> {
  await mkdir(config.LORE_DATA_DIR, { recursive: true });
  await chmod(config.LORE_DATA_DIR, 0o700);
  const secrets = await loadSecrets(config.LORE_DATA_DIR);
  const lifecycle = new Lifecycle(logger);
  const metrics = createMetricsRegistry('lore');
  const signer = new IdentitySigner(secrets.identity_secret);
  const encryptionKeys = parseEncryptionKeys(secrets.encryption_keys);

  const db = await PgliteDb.open(join(config.LORE_DATA_DIR, 'pg'));
  lifecycle.onShutdown('database', () => db.close());
  lifecycle.addCheck('database', async () => {
    await db.ping();
    return { ok: true, details: { kind: db.kind, vector: db.hasVector } };
  });
  await runRuntimeMigrations(db);
  const bus = new MemoryBus({ logger });
  lifecycle.onShutdown('event bus', () => bus.close());

  // Internal services talk over unix sockets in a private folder: one public TCP port, as in a cluster's
  // ClusterIP-only services.
  const socketDir = await mkdtemp(join(tmpdir(), 'lore-'));
  lifecycle.onShutdown('sockets', () => rm(socketDir, { recursive: true, force: true }));
  const graphSocket = join(socketDir, 'graph.sock');

  // The local embedding model only if it is already in the cache: loading it takes about half a second, and
  // nothing is downloaded here.
  const embedding = await selectEmbeddedEmbedder({
    choice: config.LORE_EMBEDDER,
    modelDir: config.LORE_EMBEDDER_MODEL_DIR,
    logger: logger.child({ service: 'graph' }),
  });
  lifecycle.onShutdown('embedder', () => embedding.close());
  const graph = await createGraphService({
    db,
    bus,
    blobs: new PostgresBlobStore(db),
    logger: logger.child({ service: 'graph' }),
    metrics,
    signer,
    embedder: embedding.embedder,
    ...(config.LORE_OCR === 'false' ? { ocr: null } : {}),
    relay: false,
    lifecycle,
  });
  const graphServer = await listenUnix(graph.app.callback(), graphSocket);
  lifecycle.onShutdown('graph server', () => graphServer.close());
  lifecycle.onShutdown('graph', () => graph.close());

  const gateway = await createGateway(
    {
      db,
      state: new MemoryGatewayState(),
      logger: logger.child({ service: 'gateway' }),
      metrics,
      signer,
      config: gatewayConfig({
        sessions: { secret: secrets.session_secret, cookieSecure: false },
        upstreams: { graph: `unix:${graphSocket}` },
        encryptionKeys,
        webhooks: { allowLoopback: config.LORE_WEBHOOKS_ALLOW_LOOPBACK },
      }),
    },
    { lifecycle },
  );
  lifecycle.onShutdown('gateway', () => gateway.close());

  const webhooks = createWebhooksWorker({
    db,
    bus,
    logger: logger.child({ service: 'webhooks' }),
    metrics,
    encryptionKeys,
    config: { allowLoopback: config.LORE_WEBHOOKS_ALLOW_LOOPBACK },
  });
  const relay = new OutboxRelay({ db, bus, logger, metrics, pollIntervalMs: 50 });

  const server = await listen(gateway.publicApp, config.PORT, config.LORE_HOST);
  server.server.on('upgrade', gateway.handleUpgrade);
  lifecycle.onShutdown('public server', () => server.close());
  const credentials = await devCredentials(config.LORE_DATA_DIR, gateway.context, server.url);

  let ops: StartedServer | null = null;
  if (config.LORE_OPS_PORT > 0) {
    const opsApp = createHttpApp({ service: 'ops', logger, metrics });
    opsApp.use(opsRouter(lifecycle, metrics).routes());
    try {
      ops = await listen(opsApp, config.LORE_OPS_PORT, config.LORE_HOST);
      lifecycle.onShutdown('ops server', () => ops!.close());
    } catch (err) {
      // Probes and metrics are a convenience here: a busy port must not keep the newcomer's Lore from starting.
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      logger.warn({ port: config.LORE_OPS_PORT }, 'ops port in use: probes and metrics are off (set LORE_OPS_PORT to another port, 0 for none)');
    }
  }

  // The graph worker consumes ingest, uploads and the gateway's memory lifecycle messages (a memory deleted without
  // retaining its data is erased); the one relay below publishes what the gateway and the graph enqueue.
  await graph.worker.start();
  lifecycle.onShutdown('graph worker', () => graph.worker.stop());
  await webhooks.start();
  lifecycle.onShutdown('webhooks worker', () => webhooks.stop());
  relay.start();
  lifecycle.onShutdown('outbox relay', () => relay.stop());
  lifecycle.addCheck('graph', async () => ({ ok: true, details: { ...graph.describe() } }));
  lifecycle.markStarted();

  return {
    url: server.url,
    port: server.port,
    opsUrl: ops?.url ?? null,
    credentials: credentials.credentials,
    createdCredentials: credentials.created,
    lifecycle,
    parts: { db, gateway, graph },
    stop: () => lifecycle.shutdown('stop'),
  };
}

/**
 * Reuses `dev-credentials.json` while its key still authenticates against this data directory's database;
 * otherwise (first start, or a wiped database) creates the dev tenant and a fresh key.
 */
async function devCredentials(
  dataDir: string,
  ctx: Parameters<typeof ensureDevTenant>[0],
  baseUrl: string,
): Promise<{ credentials: DevCredentials; created: boolean }> {
  const file = join(dataDir, 'dev-credentials.json');
  if (existsSync(file)) {
    const saved = JSON.parse(await readFile(file, 'utf8')) as DevCredentials;
    if (saved.api_key && (await keyAuthenticates(baseUrl, saved.api_key))) return { credentials: saved, created: false };
  }
  const dev = await ensureDevTenant(ctx);
  const credentials: DevCredentials = { tenant_id: dev.tenant_id, api_key: dev.api_key };
  await writeFile(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return { credentials, created: true };
}

/** Asks the gateway itself, through the same pipeline every client uses. */
async function keyAuthenticates(baseUrl: string, apiKey: string): Promise<boolean> {
  const res = await fetch(`${baseUrl}/api/v1/pages/ping`, { headers: { 'x-api-key': apiKey } });
  await res.arrayBuffer();
  return res.status === 200;
}

function listenUnix(handler: Parameters<typeof import('node:http').createServer>[1], path: string): Promise<{ close(): Promise<void> }> {
  return import('node:http').then(
    ({ createServer }) =>
      new Promise((resolveListen, reject) => {
        const server = createServer(handler);
        server.once('error', reject);
        server.listen(path, () =>
          resolveListen({
            close: () =>
              new Promise<void>((done) => {
                server.close(() => done());
                server.closeIdleConnections();
                setTimeout(() => server.closeAllConnections(), 2_000).unref();
              }),
          }),
        );
      }),
  );
}
