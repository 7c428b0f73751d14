import { ExtractiveLanguageModel, type LanguageModel } from '@lore/ai';
import { createLogger, createMetricsRegistry, IdentitySigner, KafkaBus, listen, PostgresBlobStore, PostgresDb, type BlobStore, type Db, type StartedServer } from '@lore/runtime';
import { createCoreService, GraphConnectorDocuments, GraphKnowledgeSearch, type CoreService, type CoreServiceDeps, type IndexingSettings, type SourceSettings } from '@lore/core';
import { createGraphService, type GraphService } from '@lore/graph';
import { createMcpService, type McpService } from '@lore/mcp';
import type { GatewayConfig } from '@lore/gateway';
import type { HostLookup } from '@lore/outbound';
import type { Registry } from 'prom-client';
import { adminCall, http, IDENTITY_SECRET, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import { testEncryptionKeys } from '../support/encryption';
import { freshDatabase, requireEnv, uniqueSuffix, type TestDatabase } from '../support/infra';

/**
 * Core behind a real gateway, with the graph service (the one retrieval engine chat searches) beside it, on real
 * PostgreSQL, Redis and Kafka: every request goes client → gateway → core (→ graph with the caller's identity).
 */
export interface CoreStack {
  database: TestDatabase;
  db: Db;
  core: CoreService;
  graph: GraphService;
  coreServer: StartedServer;
  /** The stack's Kafka topic prefix (`LORE_KAFKA_PREFIX` for a process that joins it). */
  kafkaPrefix: string;
  /** Core's metrics registry (its indexer's counters among them). */
  coreMetrics: Registry;
  gateway: GatewayUnderTest;
  /** The MCP tool server, with `mcp`. */
  mcp?: McpService;
  /** A call through the gateway's public listener. */
  call(method: string, path: string, headers: Record<string, string>, body?: unknown): ReturnType<typeof http>;
  tenant(keyOptions?: Record<string, unknown>): Promise<TenantFixture>;
  key(tenantId: string, options?: Record<string, unknown>): Promise<string>;
  /** A signed-in user of the tenant (role admin or member) and its session JWT. */
  user(tenantId: string, role: 'admin' | 'member'): Promise<{ token: string; userId: string; email: string }>;
  close(): Promise<void>;
}

export interface CoreStackOptions {
  /** The model core and graph answer with (default: the embedded extractive model). */
  languageModel?: LanguageModel;
  /** Check every answer against its declared schema (default true; benchmarks measure without, as production runs). */
  checkResponses?: boolean;
  /** Gateway settings on top of the stack's (e.g. chat message limits). */
  gateway?: Partial<Omit<GatewayConfig, 'sessions'>>;
  /**
   * Run core's connector indexer in the stack (started): the scheduler on `schedulerIntervalMs` (default: an hour,
   * so only `core.indexer.tick()` and the routes start attempts), the `lore.connectors.index` consumer, documents
   * written through the graph service's connector-document routes.
   */
  indexer?: { sources?: Partial<SourceSettings>; settings?: Partial<IndexingSettings>; schedulerIntervalMs?: number };
  /** Chat project file limits and extraction settings (default: the documented ones). */
  projectFiles?: CoreServiceDeps['projectFiles'];
  /** Limits of the uploads for `file` connectors (default: the documented ones). */
  connectorFiles?: CoreServiceDeps['connectorFiles'];
  /**
   * How core resolves connector host names when a web connector is created (default: the indexer's lookup, else the
   * system's); connectors may always name loopback in the stack.
   */
  connectorLookup?: HostLookup;
  /** The graph service's URL for core (default: its listener); a test may put a proxy in between. */
  graphUrl?: (graphUrl: string) => string;
  /** Runs the MCP tool server behind the gateway (its upstream `mcp`), calling the API back through the gateway. */
  mcp?: boolean;
  /** The blob store graph and core keep files in (default: PostgreSQL, `runtime.blobs` of the stack's database). */
  blobs?: (db: Db) => BlobStore;
}

export async function startCoreStack(options: CoreStackOptions = {}): Promise<CoreStack> {
  const database = await freshDatabase('lore_core');
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 10 }).init();
  const signer = new IdentitySigner(IDENTITY_SECRET);
  const languageModel = options.languageModel ?? new ExtractiveLanguageModel();
  const logger = createLogger({ level: 'silent', service: 'core-test' });
  // Topics of its own (a prefix per stack, as an install on a shared broker has): a fresh consumer group starts at the
  // beginning of its topics, and on the suites' shared broker the unprefixed ones hold every earlier stack's messages,
  // whose replay would keep this stack's graph worker busy for seconds before it reads its own.
  const kafkaPrefix = `core-${uniqueSuffix()}`;
  const bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), prefix: kafkaPrefix, clientId: `core-test-${uniqueSuffix()}`, logger, partitions: 2 });
  const graph = await createGraphService({
    db, bus, blobs: options.blobs?.(db) ?? new PostgresBlobStore(db), logger, metrics: createMetricsRegistry('core-test-graph', { defaultMetrics: false }), signer, ocr: null,
    consumerGroup: `graph-worker-core-${uniqueSuffix()}`, languageModel, checkResponses: options.checkResponses ?? true,
  });
  await graph.worker.start();
  const graphServer = await listen(graph.app, 0, '127.0.0.1');
  const graphUrl = options.graphUrl ? options.graphUrl(graphServer.url) : graphServer.url;
  const blobs = options.blobs?.(db) ?? new PostgresBlobStore(db);
  const coreMetrics = createMetricsRegistry('core-test', { defaultMetrics: false });
  const connectorLookup = options.connectorLookup ?? options.indexer?.sources?.lookup;
  const core = await createCoreService({
    db,
    logger,
    metrics: coreMetrics,
    signer,
    languageModel,
    knowledge: new GraphKnowledgeSearch({ url: graphUrl, timeoutMs: 10_000 }),
    connectorTargets: { allowLoopback: true, ...(connectorLookup ? { lookup: connectorLookup } : {}) },
    encryptionKeys: testEncryptionKeys(),
    // Every answer of every core suite is checked against the schema its route declares.
    checkResponses: options.checkResponses ?? true,
    blobs,
    ...(options.projectFiles ? { projectFiles: options.projectFiles } : {}),
    ...(options.connectorFiles ? { connectorFiles: options.connectorFiles } : {}),
    ...(options.indexer
      ? {
          indexer: {
            bus,
            documents: new GraphConnectorDocuments({ url: graphUrl, timeoutMs: 60_000 }),
            sources: { allowLoopback: true, blobs, ...options.indexer.sources },
            settings: options.indexer.settings,
            schedulerIntervalMs: options.indexer.schedulerIntervalMs ?? 3_600_000,
            consumerGroup: `core-worker-${uniqueSuffix()}`,
            // The graph worker's relay publishes every outbox row of this database.
            relay: false,
          },
        }
      : {}),
  });
  await core.indexer?.start();
  const coreServer = await listen(core.app, 0, '127.0.0.1');
  // The MCP server's addresses are the gateway's, known once the gateway listens (as a cluster's AGENT_CORE_URL).
  let gatewayUrl = '';
  const mcp = options.mcp ? createMcpService({ targets: () => ({ agentCore: gatewayUrl, memory: gatewayUrl }), signer, logger }) : undefined;
  const mcpServer = mcp ? await listen(mcp.app, 0, '127.0.0.1') : undefined;
  const gateway = await startGateway(database, { upstreams: { core: coreServer.url, graph: graphServer.url, ...(mcpServer ? { mcp: mcpServer.url } : {}) }, rateLimit: { perSecond: 1000, burst: 2000 }, ...options.gateway }, { redisPrefix: `core-${uid()}:` });
  gatewayUrl = gateway.publicUrl;
  return {
    database,
    db,
    core,
    graph,
    coreServer,
    coreMetrics,
    kafkaPrefix,
    gateway,
    mcp,
    call: (method, path, headers, body) => http(gateway.publicUrl, method, path, { headers, body }),
    tenant: (keyOptions = {}) => makeTenant(gateway, keyOptions),
    key: async (tenantId, options = {}) => (await makeKey(gateway, tenantId, options)).key,
    user: async (tenantId, role) => {
      const email = `u-${uid()}@example.test`;
      const password = `pw-${uid()}-${uid()}`;
      const u = await adminCall(gateway, 'POST', `/internal/v1/tenants/${tenantId}/users`, { email, password, role });
      if (u.status !== 201) throw new Error(`user creation failed: ${u.status} ${u.text}`);
      const login = await http(gateway.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
      if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
      return { token: login.json.token as string, userId: u.json.user_id as string, email };
    },
    close: async () => {
      await gateway.close();
      await mcpServer?.close();
      await mcp?.close();
      await coreServer.close();
      await core.close();
      await graphServer.close();
      await graph.worker.stop();
      await graph.close();
      await bus.close();
      await db.close();
      await database.drop();
    },
  };
}

/** Polls `probe` every 150 ms until it gives a value (an error fails at once), failing after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}
