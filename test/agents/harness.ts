import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ExtractiveLanguageModel } from '@lore/ai';
import { createLogger, createMetricsRegistry, GraphKnowledgeSearch, IdentitySigner, KafkaBus, listen, MemoryProgressStreams, PostgresBlobStore, PostgresDb, RedisProgressStreams, type Db, type ProgressStreams, type StartedServer } from '@lore/runtime';
import { createGraphService, type GraphService } from '@lore/graph';
import { createAgentsService, createAgentsWorker, knowledgeSource, listSources, SearxngWebSearch, webSource, type AgentsService, type AgentsServiceDeps, type AgentsWorker, type ListSources, type RunSettings } from '@lore/agents';
import { createCreditUsageConsumer, invalidateTenant, type CreditUsageConsumer, type GatewayConfig } from '@lore/gateway';
import { createMcpService, type McpLimits, type McpService } from '@lore/mcp';
import type { Registry } from 'prom-client';
import { adminCall, http, IDENTITY_SECRET, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import { freshDatabase, requireEnv, uniqueSuffix, type TestDatabase } from '../support/infra';

/**
 * The agents service behind a real gateway on real PostgreSQL and Redis (and Kafka, once a suite runs the worker):
 * every request goes client → gateway → agents, with the gateway's signed identity. Later issues' suites (research,
 * crawler, MCP) start from this stack too.
 */
export interface AgentsStack {
  database: TestDatabase;
  db: Db;
  agents: AgentsService;
  agentsServer: StartedServer;
  metrics: Registry;
  /** The stack's Kafka topic prefix (`LORE_KAFKA_PREFIX` for a process that joins it). */
  kafkaPrefix: string;
  /** The progress streams (with `worker`: real Redis, keys under `redisPrefix`; otherwise in memory). */
  streams: ProgressStreams;
  redisPrefix: string;
  /** The agents worker, with `worker` (on real Kafka under `kafkaPrefix`). */
  worker?: AgentsWorker;
  /** The graph service (the tenant's memory, behind the gateway), with `graph`: the worker reads the tenant's knowledge from it. */
  graph?: GraphService;
  gateway: GatewayUnderTest;
  /** The MCP tool server behind the gateway (`/mcp`), with `mcp`: it calls the API back through the gateway. */
  mcp?: McpService;
  /** The stack's Kafka bus (with `worker` or `graph`). */
  bus?: KafkaBus;
  /** The gateway's credits consumer on the stack's bus, with `credits` (what the webhooks deployment runs). */
  credits?: CreditUsageConsumer;
  /** A call through the gateway's public listener. */
  call(method: string, path: string, headers: Record<string, string>, body?: unknown): ReturnType<typeof http>;
  tenant(keyOptions?: Record<string, unknown>): Promise<TenantFixture>;
  key(tenantId: string, options?: Record<string, unknown>): Promise<string>;
  /** A user of the tenant with this role (`member`, `admin`), signed in: their session token. */
  user(tenantId: string, role: string): Promise<{ token: string; userId: string; email: string }>;
  close(): Promise<void>;
  /**
   * Starts `services/agents/src/worker-main.ts` as a child process on this stack's database, Kafka prefix and progress
   * streams (the agents-worker deployment, for kill tests; the stack's own worker should be stopped first); `env`
   * adds or overrides settings. `close` SIGKILLs every child still running.
   */
  spawnWorker(env?: Record<string, string>): WorkerChild;
}

export interface AgentsStackOptions {
  /** Connections of the agents process's database pool (default 10). */
  dbMaxConnections?: number;
  /** Check every answer against its declared schema (default true; benchmarks measure without, as production runs). */
  checkResponses?: boolean;
  /** Gateway settings on top of the stack's. */
  gateway?: Partial<Omit<GatewayConfig, 'sessions'>>;
  /** Service settings on top of the stack's. */
  service?: Partial<Omit<AgentsServiceDeps, 'db' | 'logger' | 'metrics' | 'signer'>>;
  /** Runs the agents worker in the stack: its run settings, a web source, and whether it starts (default true). */
  worker?: {
    settings?: Partial<RunSettings>;
    searxngUrl?: string;
    start?: boolean;
    sweepIntervalMs?: number;
    consumerGroup?: string;
    maxRunning?: number;
    /** Wraps the worker's list sources (a test holding a batch at a point of its choosing). */
    sources?: (sources: ListSources) => ListSources;
  };
  /**
   * Runs the graph service with its worker on the same database and Kafka prefix (as core's stack does), behind the
   * gateway (`/api/v1/memory/...`); the agents worker reads the tenant's knowledge from its memory API.
   */
  graph?: boolean;
  /** Runs the MCP tool server behind the gateway (its upstream `mcp`), calling the API back through the gateway. */
  mcp?: boolean | { limits?: Partial<McpLimits> };
  /**
   * Runs the gateway's credits consumer on the stack's bus (needs `worker`), as the webhooks deployment does: the
   * agents' charges come off tenants' balances, and the stack's gateway reads a charged tenant again at once.
   */
  credits?: boolean;
}

export async function startAgentsStack(options: AgentsStackOptions = {}): Promise<AgentsStack> {
  const database = await freshDatabase('lore_agents');
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: options.dbMaxConnections ?? 10 }).init();
  const signer = new IdentitySigner(IDENTITY_SECRET);
  const logger = createLogger({ level: 'silent', service: 'agents-test' });
  const metrics = createMetricsRegistry('agents-test', { defaultMetrics: false });
  const kafkaPrefix = `agents-${uniqueSuffix()}`;
  const redisPrefix = `agents-${uniqueSuffix()}:`;
  // On real Redis when the stack runs the worker; otherwise the service's default (memory), which needs no closing.
  const streams = options.service?.streams ?? (options.worker ? new RedisProgressStreams(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: redisPrefix }) : new MemoryProgressStreams());
  const agents = await createAgentsService({
    db,
    logger,
    metrics,
    signer,
    facts: { environment: 'test' },
    checkResponses: options.checkResponses ?? true,
    ...options.service,
    streams,
  });
  let worker: AgentsWorker | undefined;
  let bus: KafkaBus | undefined;
  let graph: GraphService | undefined;
  let graphServer: StartedServer | undefined;
  if (options.worker || options.graph) bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), prefix: kafkaPrefix, clientId: `agents-test-${uniqueSuffix()}`, logger, partitions: 2 });
  if (options.graph) {
    graph = await createGraphService({
      db, bus: bus!, blobs: new PostgresBlobStore(db), logger, metrics: createMetricsRegistry('agents-test-graph', { defaultMetrics: false }), signer, ocr: null,
      consumerGroup: `graph-worker-agents-${uniqueSuffix()}`, languageModel: new ExtractiveLanguageModel(), checkResponses: options.checkResponses ?? true,
    });
    await graph.worker.start();
    graphServer = await listen(graph.app, 0, '127.0.0.1');
  }
  if (options.worker) {
    const knowledge = graphServer ? knowledgeSource(new GraphKnowledgeSearch({ url: graphServer.url, timeoutMs: 10_000 }), signer) : undefined;
    worker = createAgentsWorker({
      agents: agents.agents,
      bus: bus!,
      sources: (options.worker.sources ?? ((x: ListSources) => x))(
        listSources(agents.agents, { ...(options.worker.searxngUrl ? { web: webSource(new SearxngWebSearch({ baseUrl: options.worker.searxngUrl }), agents.agents.pages) } : {}), knowledge }),
      ),
      settings: options.worker.settings,
      consumerGroup: options.worker.consumerGroup ?? `agents-worker-${uniqueSuffix()}`,
      sweepIntervalMs: options.worker.sweepIntervalMs ?? 500,
      ...(options.worker.maxRunning ? { maxRunning: options.worker.maxRunning } : {}),
    });
    if (options.worker.start !== false) await worker.start();
  }
  const agentsServer = await listen(agents.app, 0, '127.0.0.1');
  agentsServer.server.on('upgrade', agents.handleUpgrade);
  // The MCP server's addresses are the gateway's, known once the gateway listens (as a cluster's AGENT_CORE_URL).
  let gatewayUrl = '';
  const mcp = options.mcp
    ? createMcpService({ targets: () => ({ agentCore: gatewayUrl, memory: gatewayUrl }), signer, logger, limits: typeof options.mcp === 'object' ? options.mcp.limits : undefined })
    : undefined;
  const mcpServer = mcp ? await listen(mcp.app, 0, '127.0.0.1') : undefined;
  const gateway = await startGateway(database, { upstreams: { agents: agentsServer.url, ...(graphServer ? { graph: graphServer.url } : {}), ...(mcpServer ? { mcp: mcpServer.url } : {}) }, rateLimit: { perSecond: 1000, burst: 2000 }, ...options.gateway }, { redisPrefix: `agents-${uid()}:` });
  gatewayUrl = gateway.publicUrl;
  const credits = options.credits
    ? createCreditUsageConsumer({ db, bus: bus!, logger, metrics, consumerGroup: `gateway-credits-${uniqueSuffix()}`, onBalanceChanged: (tenantId) => invalidateTenant(gateway.gateway.context, tenantId) })
    : undefined;
  await credits?.start();
  const children: ChildProcess[] = [];
  const spawnWorker = (env: Record<string, string> = {}): WorkerChild => {
    const logs: string[] = [];
    const child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/agents/src/worker-main.ts')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        LORE_LOG_LEVEL: 'info',
        LORE_DATABASE_URL: database.url,
        LORE_IDENTITY_SECRET: IDENTITY_SECRET,
        LORE_REDIS_URL: requireEnv('LORE_TEST_REDIS_URL'),
        LORE_AGENTS_REDIS_PREFIX: redisPrefix,
        LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
        LORE_KAFKA_PREFIX: kafkaPrefix,
        LORE_AGENTS_CONSUMER_GROUP: `agents-worker-child-${uniqueSuffix()}`,
        LORE_AGENTS_WORKER_PORT: '0',
        LORE_AGENTS_HOST: '127.0.0.1',
        // The child relays the outbox (the stack's worker, and its relay, are stopped).
        LORE_AGENTS_RELAY: 'true',
        LORE_AGENTS_WORKFLOW_HEARTBEAT_MS: '200',
        LORE_AGENTS_WORKFLOW_LEASE_MS: '2000',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    child.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
    return {
      process: child,
      logs,
      assertRunning: () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`worker exited: ${logs.join('')}`);
      },
    };
  };
  return {
    spawnWorker,
    database,
    db,
    agents,
    agentsServer,
    metrics,
    kafkaPrefix,
    streams,
    redisPrefix,
    worker,
    graph,
    gateway,
    mcp,
    bus,
    credits,
    call: (method, path, headers, body) => http(gateway.publicUrl, method, path, { headers, body }),
    tenant: (keyOptions = {}) => makeTenant(gateway, keyOptions),
    key: async (tenantId, opts = {}) => (await makeKey(gateway, tenantId, opts)).key,
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
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await worker?.stop();
      await credits?.stop();
      await gateway.close();
      await mcp?.close();
      await mcpServer?.close();
      await graphServer?.close();
      await graph?.worker.stop();
      await graph?.close();
      await bus?.close();
      await agentsServer.close();
      await agents.close();
      await streams.close();
      await db.close();
      await database.drop();
    },
  };
}

/** An agents worker child process (`AgentsStack.spawnWorker`). */
export interface WorkerChild {
  process: ChildProcess;
  /** What it printed so far. */
  logs: string[];
  /** Throws (with its output) once the child has exited: for `eventually` probes that wait on its work. */
  assertRunning(): void;
}

const ROOT = join(__dirname, '..', '..');

/** The call headers of a tenant fixture's key. */
export const auth = (t: TenantFixture) => ({ authorization: `Bearer ${t.key}` });

/** Polls `probe` until it gives a value (errors count as not yet), failing after `timeoutMs` with the last error. */
export async function eventually<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 60_000, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
