import { ExtractiveLanguageModel } from '@lore/ai';
import { createAgentsService, type AgentsService } from '@lore/agents';
import { createCoreService, GraphKnowledgeSearch, type CoreService } from '@lore/core';
import { createGraphService, type GraphService } from '@lore/graph';
import { createLogger, createMetricsRegistry, IdentitySigner, KafkaBus, listen, PostgresBlobStore, PostgresDb, RedisProgressStreams, type StartedServer } from '@lore/runtime';
import { adminCall, http, IDENTITY_SECRET, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import { testEncryptionKeys } from '../support/encryption';
import { freshDatabase, requireEnv, uniqueSuffix, type TestDatabase } from '../support/infra';

/**
 * The four services that serve an OpenAPI document, in cluster mode on real PostgreSQL, Redis and Kafka: the gateway
 * in front (public and admin listeners, Redis state), the graph service with its worker on Kafka, core, and agents
 * with its progress streams on Redis, each on its own loopback listener and reached through the gateway as a
 * client reaches them. Every answer is checked against the schema its route declares (`checkResponses`), as in the
 * other integration suites, so an answer that breaks its own schema is a 500 the fuzzer sees.
 */
export interface FuzzStack {
  database: TestDatabase;
  gateway: GatewayUnderTest;
  graphUrl: string;
  /**
   * A new tenant with a ck_live_ key and a signed-in administrator's session JWT (the portal routes' credential):
   * one per run, since a run may revoke the key it was given or sign its session out.
   */
  credentials(): Promise<{ tenant: TenantFixture; key: string; session: string }>;
  close(): Promise<void>;
}

export async function startFuzzStack(): Promise<FuzzStack> {
  const database = await freshDatabase('lore_fuzz');
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 10 }).init();
  const signer = new IdentitySigner(IDENTITY_SECRET);
  const logger = createLogger({ level: 'silent', service: 'fuzz' });
  const languageModel = new ExtractiveLanguageModel();
  const kafkaPrefix = `fuzz-${uniqueSuffix()}`;
  const bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), prefix: kafkaPrefix, clientId: `fuzz-${uniqueSuffix()}`, logger, partitions: 1 });
  const servers: StartedServer[] = [];
  let graph: GraphService | undefined;
  let core: CoreService | undefined;
  let agents: AgentsService | undefined;
  let streams: RedisProgressStreams | undefined;
  let gateway: GatewayUnderTest | undefined;
  const close = async () => {
    await gateway?.close();
    for (const s of servers.reverse()) await s.close(100);
    await agents?.close();
    await streams?.close();
    await core?.close();
    await graph?.worker.stop();
    await graph?.close();
    await bus.close();
    await db.close();
    await database.drop();
  };
  try {
    graph = await createGraphService({
      db, bus, blobs: new PostgresBlobStore(db), logger, metrics: createMetricsRegistry('fuzz-graph', { defaultMetrics: false }), signer, ocr: null,
      consumerGroup: `graph-worker-fuzz-${uniqueSuffix()}`, languageModel, checkResponses: true,
    });
    await graph.worker.start();
    const graphServer = await listen(graph.app, 0, '127.0.0.1');
    servers.push(graphServer);
    core = await createCoreService({
      db, logger, metrics: createMetricsRegistry('fuzz-core', { defaultMetrics: false }), signer, languageModel,
      knowledge: new GraphKnowledgeSearch({ url: graphServer.url, timeoutMs: 10_000 }),
      encryptionKeys: testEncryptionKeys(), checkResponses: true, blobs: new PostgresBlobStore(db),
      // No connector the fuzzer names may reach a real host: loopback only is refused too (the default).
      connectorTargets: { allowLoopback: false, lookup: async () => [] },
    });
    const coreServer = await listen(core.app, 0, '127.0.0.1');
    servers.push(coreServer);
    streams = new RedisProgressStreams(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: `fuzz-${uniqueSuffix()}:` });
    agents = await createAgentsService({
      db, logger, metrics: createMetricsRegistry('fuzz-agents', { defaultMetrics: false }), signer, facts: { environment: 'test' }, checkResponses: true, streams,
    });
    const agentsServer = await listen(agents.app, 0, '127.0.0.1');
    agentsServer.server.on('upgrade', agents.handleUpgrade);
    servers.push(agentsServer);
    gateway = await startGateway(
      database,
      { upstreams: { graph: graphServer.url, core: coreServer.url, agents: agentsServer.url }, rateLimit: { perSecond: 10_000, burst: 20_000 }, loginRateLimit: { perSecond: 100, burst: 100 } },
      { redisPrefix: `fuzz-${uid()}:` },
    );
    const g = gateway;
    const credentials = async () => {
      const tenant = await makeTenant(g);
      const email = `fuzz-${uid()}@example.test`;
      const password = `pw-${uid()}-${uid()}`;
      const u = await adminCall(g, 'POST', `/internal/v1/tenants/${tenant.tenantId}/users`, { email, password, role: 'admin' });
      if (u.status !== 201) throw new Error(`user creation failed: ${u.status} ${u.text}`);
      const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password } });
      if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
      return { tenant, key: tenant.key, session: login.json.token as string };
    };
    return { database, gateway, graphUrl: graphServer.url, credentials, close };
  } catch (e) {
    await close().catch(() => undefined);
    throw e;
  }
}
