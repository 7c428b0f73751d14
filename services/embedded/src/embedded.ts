import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  IdentitySigner,
  Lifecycle,
  startOutboxRelay,
  PgliteDb,
  FileBlobStore,
  PostgresBlobStore,
  createMetricsRegistry,
  listen,
  opsRouter,
  createHttpApp,
  listenSocket,
  parseEncryptionKeys,
  type Db,
  type Logger,
  type StartedServer,
} from '@lore/runtime';
import { createGateway, createCreditUsageConsumer, CREDIT_TOPICS, gatewayConfig, invalidateTenant, MemoryGatewayState, createWebhooksWorker, type Gateway } from '@lore/gateway';
import { createGraphService, GRAPH_TOPICS, type GraphService } from '@lore/graph';
import { AGENTS_TOPICS, createAgentsService, createAgentsWorker, knowledgeSource, listSources, LiveTokens, webSearchFrom, webSource, type AgentsService } from '@lore/agents';
import { createMcpService } from '@lore/mcp';
import { CORE_TOPICS, createCoreService, GraphConnectorDocuments, GraphKnowledgeSearch, startCredentialSealing, type CoreService } from '@lore/core';
import { agentsServiceSettings, agentsWorkerSettings, coreFileSettings, googleEndpoints, type EmbeddedConfig } from './config';
import { lockDataDir } from './data-lock';
import { dataDirCheck } from './data-dir-check';
import { openSocketDir } from './socket-dir';
import { statisticsUpkeep } from './statistics';
import { createEmbeddedBus } from './bus';
import { loadSecrets } from './secrets';
import { ensureDevCredentials, type DevCredentials, type DevSecret } from './dev-credentials';
import { embeddedEmbedder, type ModelFetchSetting } from './embedder';
import { migrateEmbedded } from './migrations';

export type { DevCredentials, DevSecret };

export interface Embedded {
  url: string;
  port: number;
  opsUrl: string | null;
  /** The internal admin API on 127.0.0.1 (token in the credentials), or null when it is off. */
  adminUrl: string | null;
  credentials: DevCredentials;
  /** The credentials file (`<data dir>/dev-credentials.json`). */
  credentialsFile: string;
  /** The secrets this start created: shown once, at the terminal, by `npm start`. */
  freshSecrets: DevSecret[];
  lifecycle: Lifecycle;
  /**
   * The composed parts, for in-process tools and tests. Clients use `url`, and `adminUrl` for the admin API.
   */
  parts: { db: Db; gateway: Gateway; graph: GraphService; core: CoreService; agents: AgentsService };
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /**
   * How to fetch the local embedding model in the background when `LORE_EMBEDDER=auto` finds none (`npm start`
   * gives the fetch script and its environment). Without it, a start without the model keeps the hashed embedder.
   */
  modelFetch?: ModelFetchSetting;
}

/**
 * Every Lore service and worker in one process: PGlite, in-memory state and bus, one public port. `root` is the
 * process's logger without a `service` (`createLogger` without one): each service's lines bind their own, and
 * embedded mode's own lines `lore-embedded`.
 */
export async function startEmbedded(config: EmbeddedConfig, root: Logger, options: EmbeddedOptions = {}): Promise<Embedded> {
  const logger = root.child({ service: 'lore-embedded' });
  await mkdir(config.LORE_DATA_DIR, { recursive: true });
  await chmod(config.LORE_DATA_DIR, 0o700);
  // Before anything reads the directory: one process at a time (a second opener corrupts the embedded database).
  const dataLock = await lockDataDir(config.LORE_DATA_DIR);
  const secrets = await loadSecrets(config.LORE_DATA_DIR);
  const lifecycle = new Lifecycle(logger);
  // Registered first, so given back last (shutdown runs in reverse order), once the database is closed.
  lifecycle.onShutdown('data directory lock', () => dataLock.release());
  const metrics = createMetricsRegistry('lore');
  const signer = new IdentitySigner(secrets.identity_secret);
  const encryptionKeys = parseEncryptionKeys(secrets.encryption_keys);

  const db = await PgliteDb.open(join(config.LORE_DATA_DIR, 'pg'));
  lifecycle.onShutdown('database', () => db.close());
  lifecycle.addCheck('database', async () => {
    await db.ping();
    return { ok: true, details: { kind: db.kind, vector: db.hasVector } };
  });
  // Everything is kept under the data directory: one that can no longer be written is not ready (./data-dir-check.ts).
  lifecycle.addCheck('data directory', dataDirCheck(config.LORE_DATA_DIR));
  // Every schema's migrations before any service starts, in the migrations Job's order, each logged when it changed
  // something (./migrations.ts); the services start without migrating.
  await migrateEmbedded(db, logger);
  // Its counters (`lore_bus_*`) are the process's: in embedded mode the dead-letter counter is the record of a dead letter.
  // It keeps no message every group has handled (./bus.ts): every group subscribes below, before the relay starts.
  const bus = createEmbeddedBus({ logger, metrics });
  lifecycle.onShutdown('event bus', () => bus.close());

  // Uploads, project files, connector files and knowledge-graph CSVs as files under the data directory, read and
  // written off the process's thread (in PGlite a 25 MiB blob held every request for 10 s); blobs kept in the
  // database before are still read from there (runtime/blob/file-blob-store.ts).
  const blobs = new FileBlobStore(join(config.LORE_DATA_DIR, 'blobs'), new PostgresBlobStore(db));
  // Pieces of puts a killed process cut short (temporary files, bytes without their description): removed at start
  // and hourly once ten minutes old, so a put running now is never touched.
  const sweepBlobs = () =>
    blobs
      .sweepUnfinished(10 * 60_000)
      .then((removed) => {
        if (removed > 0) logger.warn({ removed }, 'removed the pieces of blob writes a stopped process left');
      })
      .catch((err: unknown) => logger.warn({ err }, 'sweeping unfinished blob writes failed'));
  void sweepBlobs();
  const blobSweeper = setInterval(() => void sweepBlobs(), 60 * 60_000);
  blobSweeper.unref();
  lifecycle.onShutdown('blob sweeper', async () => clearInterval(blobSweeper));

  // Internal services talk over unix sockets in a private folder: one public TCP port, as in a cluster's
  // ClusterIP-only services.
  // The folder a killed process left is removed first (./socket-dir.ts).
  const sockets = await openSocketDir(config.LORE_DATA_DIR);
  lifecycle.onShutdown('sockets', () => sockets.remove());
  const socketDir = sockets.path;
  const graphSocket = join(socketDir, 'graph.sock');
  const coreSocket = join(socketDir, 'core.sock');
  const agentsSocket = join(socketDir, 'agents.sock');
  const mcpSocket = join(socketDir, 'mcp.sock');

  // The local embedding model if it is already in the cache (loading it takes about half a second); otherwise the
  // hashed embedder now and, with `auto`, the model fetched in the background once Lore answers (./embedder.ts).
  const embedding = await embeddedEmbedder({ config, db, logger: root.child({ service: 'graph' }), fetch: options.modelFetch });
  lifecycle.onShutdown('embedder', () => embedding.close());
  const graph = await createGraphService({
    db,
    bus,
    blobs,
    logger: root.child({ service: 'graph' }),
    metrics,
    signer,
    embedder: embedding.switching,
    ...(config.LORE_OCR === 'false' ? { ocr: null } : {}),
    relay: false,
    lifecycle,
    migrate: false,
  });
  const graphServer = await listenSocket(graph.app, graphSocket);
  lifecycle.onShutdown('graph server', () => graphServer.close(2_000));
  lifecycle.onShutdown('graph', () => graph.close());

  // Core: chat, personas and connector administration (credentials sealed with the same key ring), on the same database.
  // Chat project files and file connectors read the blob store the graph's uploads use.
  const coreBlobs = blobs;
  // Its connector indexer runs here too: the scheduler, the index consumer on the in-memory bus, documents written
  // through the graph's socket.
  const core = await createCoreService({
    db,
    logger: root.child({ service: 'core' }),
    metrics,
    signer,
    encryptionKeys,
    lifecycle,
    knowledge: new GraphKnowledgeSearch({ url: `unix:${graphSocket}`, timeoutMs: 10_000 }),
    languageModel: graph.memory.languageModel,
    blobs: coreBlobs,
    // Project and connector file upload limits, from the variables core reads on a cluster.
    ...coreFileSettings(config),
    connectorTargets: { allowLoopback: config.LORE_CONNECTORS_ALLOW_LOOPBACK },
    indexer: {
      bus,
      documents: new GraphConnectorDocuments({ url: `unix:${graphSocket}`, timeoutMs: 60_000 }),
      sources: { allowLoopback: config.LORE_CONNECTORS_ALLOW_LOOPBACK, blobs: coreBlobs, google: googleEndpoints(config) },
      schedulerIntervalMs: config.LORE_CORE_SCHEDULER_INTERVAL_MS,
      settings: { maxRunning: config.LORE_CORE_INDEX_MAX_RUNNING },
      relay: false,
    },
    soleAnswerer: true,
    migrate: false,
  });
  const coreServer = await listenSocket(core.app, coreSocket);
  lifecycle.onShutdown('core server', () => coreServer.close(2_000));
  lifecycle.onShutdown('core', () => core.close());
  // In the background: credentials sealed with an older key of the ring are sealed again with the first one.
  const credentialSealing = startCredentialSealing(db, core.core.secrets, root.child({ service: 'core' }));
  lifecycle.onShutdown('credential sealing', () => credentialSealing.stop());

  // Agents: list building, imports, utility and seed routes, on the same database, with the API's limits from the
  // variables the agents API reads on a cluster.
  const agentsLimits = agentsServiceSettings(config);
  const agents = await createAgentsService({
    db,
    logger: root.child({ service: 'agents' }),
    metrics,
    signer,
    lifecycle,
    facts: { environment: process.env.NODE_ENV ?? 'development' },
    // CSV uploads are kept with core's files.
    blobs: coreBlobs,
    // The graph's model (the embedded extractive one unless configured): criteria and routing fall back to rules with it.
    languageModel: graph.memory.languageModel,
    webTargets: { allowLoopback: config.LORE_AGENTS_ALLOW_LOOPBACK },
    csvImport: agentsLimits.csvImport,
    genericWorkflows: agentsLimits.genericWorkflows,
    // One process: a random key (LiveTokens' default), with the lifetime set.
    liveTokens: new LiveTokens(undefined, agentsLimits.liveUrlTtlSeconds),
    migrate: false,
  });
  const agentsServer = await listenSocket(agents.app, agentsSocket);
  // Websocket upgrades (the agents session sockets the gateway splices through).
  agentsServer.server.on('upgrade', agents.handleUpgrade);
  lifecycle.onShutdown('agents server', () => agentsServer.close(2_000));
  lifecycle.onShutdown('agents', () => agents.close());

  // The MCP tool server (docs/mcp.md) calls the API back through this process's public listener with the caller's
  // key, as a cluster's does through the gateway service: its address is known once the listener is up.
  let publicUrl = '';
  const mcp = createMcpService({
    targets: () => ({ agentCore: publicUrl, memory: publicUrl }),
    signer,
    logger: root.child({ service: 'mcp' }),
  });
  const mcpServer = await listenSocket(mcp.app, mcpSocket);
  lifecycle.onShutdown('mcp server', () => mcpServer.close(2_000));
  lifecycle.onShutdown('mcp', () => mcp.close());

  const gateway = await createGateway(
    {
      db,
      state: new MemoryGatewayState(),
      logger: root.child({ service: 'gateway' }),
      metrics,
      signer,
      config: gatewayConfig({
        sessions: { secret: secrets.session_secret, cookieSecure: false },
        adminToken: secrets.admin_token,
        upstreams: { graph: `unix:${graphSocket}`, core: `unix:${coreSocket}`, agents: `unix:${agentsSocket}`, mcp: `unix:${mcpSocket}` },
        encryptionKeys,
        webhooks: { allowLoopback: config.LORE_WEBHOOKS_ALLOW_LOOPBACK },
      }),
    },
    // The graph, core and agents upstreams are this process: their health is already this readiness.
    { lifecycle, checkUpstreams: false, migrate: false },
  );
  lifecycle.onShutdown('gateway', () => gateway.close());

  const webhooks = createWebhooksWorker({
    db,
    bus,
    logger: root.child({ service: 'webhooks' }),
    metrics,
    encryptionKeys,
    // The in-memory bus ends with the process: the attempts it held are announced again from their rows on start.
    config: { allowLoopback: config.LORE_WEBHOOKS_ALLOW_LOOPBACK, recoverOnStart: true, retentionDays: config.LORE_WEBHOOKS_RETENTION_DAYS },
  });

  const server = await listen(gateway.publicApp, config.PORT, config.LORE_HOST);
  publicUrl = server.url;
  server.server.on('upgrade', gateway.handleUpgrade);
  // Ctrl-C should not wait long: what is under way has 5 s (a cluster's listeners have 20).
  lifecycle.onShutdown('public server', () => server.close(5_000));
  const credentials = await ensureDevCredentials({
    dataDir: config.LORE_DATA_DIR,
    gateway: gateway.context,
    adminToken: secrets.admin_token,
    keyTenant: (apiKey) => keyTenant(server.url, apiKey),
    logger,
  });

  // The admin API is what a cluster keeps inside (the operator's and automation's door): here it listens on the
  // loopback interface only, whatever LORE_HOST says, and needs the generated token.
  let admin: StartedServer | null = null;
  if (config.LORE_ADMIN_PORT > 0) {
    try {
      admin = await listen(gateway.adminApp, config.LORE_ADMIN_PORT, '127.0.0.1');
      lifecycle.onShutdown('admin server', () => admin!.close(5_000));
    } catch (err) {
      // Like the ops port: a busy port must not keep the public API from starting.
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      logger.warn({ port: config.LORE_ADMIN_PORT }, 'admin port in use: the admin API is off (set LORE_ADMIN_PORT to another port, 0 for none)');
    }
  }

  let ops: StartedServer | null = null;
  if (config.LORE_OPS_PORT > 0) {
    const opsApp = createHttpApp({ service: 'ops', logger, metrics });
    opsApp.use(opsRouter(lifecycle, metrics).routes());
    try {
      ops = await listen(opsApp, config.LORE_OPS_PORT, config.LORE_HOST);
      lifecycle.onShutdown('ops server', () => ops!.close(2_000));
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
  // The gateway's credits consumer: the agents' charges (lore.credits.usage) come off tenants' balances, and this
  // process's gateway reads a charged tenant again at once.
  const credits = createCreditUsageConsumer({ db, bus, logger: root.child({ service: 'gateway' }), metrics, onBalanceChanged: (tenantId) => invalidateTenant(gateway.context, tenantId) });
  await credits.start();
  lifecycle.onShutdown('credits consumer', () => credits.stop());
  await core.indexer!.start();
  lifecycle.onShutdown('core indexer', () => core.indexer!.stop());
  // The agents worker runs the search workflows here, on the in-memory bus (progress streams in memory too), with the
  // agents worker's runs at once, budgets and credit prices (./config.ts).
  // With LORE_AGENTS_SEARXNG_URL it searches the web too; without it lists come from the directory and the tenant's
  // knowledge (the memory API on the graph's socket, as the workflow's starter), and the snapshot says so.
  const agentsWeb = webSearchFrom({ searxngUrl: config.LORE_AGENTS_SEARXNG_URL });
  const agentsKnowledge = knowledgeSource(new GraphKnowledgeSearch({ url: `unix:${graphSocket}`, timeoutMs: 10_000 }), signer);
  const agentsWorker = createAgentsWorker({ agents: agents.agents, bus, sources: listSources(agents.agents, { web: agentsWeb ? webSource(agentsWeb, agents.agents.pages) : undefined, knowledge: agentsKnowledge }), relay: false, ...agentsWorkerSettings(config) });
  await agentsWorker.start();
  lifecycle.onShutdown('agents worker', () => agentsWorker.stop());
  // Planner statistics, which PGlite's missing autovacuum would otherwise never gather (./statistics.ts): the tables
  // that need them now, then a few at a time as they grow; and a checkpoint every 5 minutes, which PGlite's missing
  // checkpointer would otherwise never run (all WAL kept and replayed after a crash).
  const statistics = statisticsUpkeep(db, logger);
  lifecycle.onShutdown('planner statistics', async () => statistics.stop());
  const analyzed = await statistics.analyzeStale();
  if (analyzed.length > 0) logger.info({ tables: analyzed.length }, 'planner statistics gathered');
  // The bus ends with the process: the relay publishes again what a process that ended left unhandled.
  await startOutboxRelay({ process: 'embedded', db, bus, volatileBus: bus, logger, metrics, pollIntervalMs: 50, topics: [...GRAPH_TOPICS, ...CORE_TOPICS, ...AGENTS_TOPICS, ...CREDIT_TOPICS], lifecycle });
  lifecycle.addCheck('graph', async () => ({ ok: true, details: { ...graph.describe(), embedder: embedding.describe() } }));
  lifecycle.markStarted();
  // After the start: the fetch and the re-embed never hold a request up (the first stops in shutdown first).
  embedding.startUpgrade(graph.memory);
  lifecycle.onShutdown('embedder upgrade', () => embedding.stopUpgrade(), 15_000);

  return {
    url: server.url,
    port: server.port,
    opsUrl: ops?.url ?? null,
    adminUrl: admin?.url ?? null,
    credentials: credentials.credentials,
    credentialsFile: join(config.LORE_DATA_DIR, 'dev-credentials.json'),
    freshSecrets: credentials.fresh,
    lifecycle,
    parts: { db, gateway, graph, core, agents },
    stop: () => lifecycle.shutdown('stop'),
  };
}

/** The tenant a key authenticates as, asked of the gateway itself through the pipeline every client goes through. */
async function keyTenant(baseUrl: string, apiKey: string): Promise<string | null> {
  // A hand-edited file must not turn into an invalid header (fetch would throw): such a value is simply no key.
  if (!/^[\x21-\x7e]{1,512}$/.test(apiKey)) return null;
  const res = await fetch(`${baseUrl}/api/v1/pages/ping`, { headers: { 'x-api-key': apiKey } });
  if (res.status !== 200) {
    await res.arrayBuffer();
    return null;
  }
  const body = (await res.json()) as { tenant_id?: unknown };
  return typeof body.tenant_id === 'string' ? body.tenant_id : null;
}
