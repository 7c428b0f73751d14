import { consumerGroupsCheck, exitOnConfigError, GraphKnowledgeSearch, IdentitySigner, openBlobStore, processBus, RedisProgressStreams, serveOps, startServiceProcess } from '@lore/runtime';
import { languageModelFromEnv } from '@lore/ai';
import { agentsConfigSchema } from './config';
import { createAgentsService } from './agents-service';
import { parseEgressProxies } from './domain/egress';
import { createAgentsWorker, runSettingsFrom } from './worker';
import { knowledgeSource, listSources, webSource } from './application/list-sources';
import { webSearchFrom } from './sources/web-search';

/**
 * The `agents-worker` deployment: the search workflows' steps (the `lore.agents.workflows` consumer, the sweep of
 * expired claims, an outbox relay). Serves only its probes and metrics on LORE_AGENTS_WORKER_PORT.
 */
async function main(): Promise<void> {
  const proc = await startServiceProcess('agents-worker', agentsConfigSchema, {
    maxConnections: (c) => c.LORE_AGENTS_DB_POOL_MAX,
    requires: (c) => [
      ...(c.LORE_KAFKA_BROKERS ? [] : ['LORE_KAFKA_BROKERS: is required by the agents worker']),
      ...(c.LORE_REDIS_URL ? [] : ['LORE_REDIS_URL: is required by the agents worker (progress streams)']),
    ],
  });
  const { config, logger, metrics, lifecycle, db } = proc;
  const streams = new RedisProgressStreams(config.LORE_REDIS_URL!, { keyPrefix: config.LORE_AGENTS_REDIS_PREFIX });
  lifecycle.onShutdown('progress streams', () => streams.close());
  const bus = processBus(proc, { brokers: config.LORE_KAFKA_BROKERS!, prefix: config.LORE_KAFKA_PREFIX, clientId: 'lore-agents-worker' });
  const signer = new IdentitySigner(config.LORE_IDENTITY_SECRET);
  const service = await createAgentsService({
    db,
    logger,
    metrics,
    signer,
    migrate: config.LORE_AGENTS_MIGRATE,
    blobs: openBlobStore(config, db, lifecycle),
    facts: { environment: config.NODE_ENV },
    lifecycle,
    streams,
    webTargets: { allowLoopback: config.LORE_AGENTS_ALLOW_LOOPBACK },
    egressProxies: parseEgressProxies(config.LORE_AGENTS_EGRESS_PROXIES).proxies,
    languageModel: languageModelFromEnv(config, logger),
  });
  // The web search (SearXNG); without it lists come from the directory and the tenant's knowledge, and each snapshot
  // says so. The tenant's knowledge: graph's memory API, read as each workflow's starter with an identity signed here.
  const web = webSearchFrom({ searxngUrl: config.LORE_AGENTS_SEARXNG_URL });
  const knowledge = config.LORE_AGENTS_GRAPH_URL ? knowledgeSource(new GraphKnowledgeSearch({ url: config.LORE_AGENTS_GRAPH_URL, timeoutMs: 10_000 }), signer) : undefined;
  const worker = createAgentsWorker({
    agents: service.agents,
    bus,
    sources: listSources(service.agents, { web: web ? webSource(web, service.agents.pages) : undefined, knowledge }),
    settings: runSettingsFrom(config),
    consumerGroup: config.LORE_AGENTS_CONSUMER_GROUP,
    relay: config.LORE_AGENTS_RELAY,
    sweepIntervalMs: config.LORE_AGENTS_WORKFLOW_SWEEP_MS,
    maxRunning: config.LORE_AGENTS_WORKFLOW_MAX_RUNNING,
  });
  // Probes answer from before the consumer joins (serveOps).
  const server = await serveOps(proc, config.LORE_AGENTS_WORKER_PORT, config.LORE_AGENTS_HOST);
  lifecycle.addCheck('consumer groups', consumerGroupsCheck(bus));
  lifecycle.onShutdown('agents', () => service.close());
  await worker.start();
  lifecycle.onShutdown('agents worker', () => worker.stop());
  lifecycle.markStarted();
  logger.info({ ops: server.url, worker: worker.workerId }, 'agents-worker running workflows');
}

main().catch(exitOnConfigError);
