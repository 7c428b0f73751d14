import {
  ConfigError,
  consumerGroupsCheck,
  createLogger,
  createMetricsRegistry,
  exitOnConfigError,
  GraphKnowledgeSearch,
  IdentitySigner,
  KafkaBus,
  Lifecycle,
  listen,
  opsRouter,
  parseConfig,
  PostgresDb,
  PostgresStartJournal,
  RedisProgressStreams,
} from '@lore/runtime';
import { languageModelFrom } from '@lore/ai';
import Koa from 'koa';
import { agentsConfigSchema } from './config';
import { createAgentsService } from './agents-service';
import { createAgentsWorker, runSettingsFrom } from './worker';
import { knowledgeSource, listSources, webSource } from './application/list-sources';
import { webSearchFrom } from './sources/web-search';

/**
 * The `agents-worker` deployment: the search workflows' steps (the `lore.agents.workflows` consumer, the sweep of
 * expired claims, an outbox relay). Serves only its probes and metrics on LORE_AGENTS_WORKER_PORT.
 */
async function main(): Promise<void> {
  const config = parseConfig(agentsConfigSchema, process.env);
  if (!config.LORE_KAFKA_BROKERS) throw new ConfigError(['LORE_KAFKA_BROKERS: is required by the agents worker']);
  if (!config.LORE_REDIS_URL) throw new ConfigError(['LORE_REDIS_URL: is required by the agents worker (progress streams)']);
  const logger = createLogger({ level: config.LORE_LOG_LEVEL, service: 'agents-worker' });
  const metrics = createMetricsRegistry('agents-worker');
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers();
  const db = await new PostgresDb({ url: config.LORE_DATABASE_URL, ownerUrl: config.LORE_DATABASE_OWNER_URL }).init();
  lifecycle.onShutdown('database', () => db.close());
  const streams = new RedisProgressStreams(config.LORE_REDIS_URL);
  lifecycle.onShutdown('progress streams', () => streams.close());
  const bus = new KafkaBus({
    brokers: config.LORE_KAFKA_BROKERS.split(','),
    prefix: config.LORE_KAFKA_PREFIX,
    clientId: 'lore-agents-worker',
    logger,
    metrics,
    startJournal: new PostgresStartJournal(db),
  });
  lifecycle.onShutdown('event bus', () => bus.close());
  const signer = new IdentitySigner(config.LORE_IDENTITY_SECRET);
  const service = await createAgentsService({
    db,
    logger,
    metrics,
    signer,
    migrate: config.LORE_AGENTS_MIGRATE,
    facts: { environment: config.NODE_ENV },
    lifecycle,
    streams,
    webTargets: { allowLoopback: config.LORE_AGENTS_ALLOW_LOOPBACK },
    languageModel: languageModelFrom({
      baseUrl: config.LORE_AI_LLM_BASE_URL,
      model: config.LORE_AI_LLM_MODEL,
      apiKey: config.LORE_AI_LLM_API_KEY,
      timeoutMs: config.LORE_AI_LLM_TIMEOUT_MS,
      retries: config.LORE_AI_LLM_RETRIES,
      logger,
    }),
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
  // Probes answer from before the consumer joins: a slow join must not look like a dead process.
  const ops = new Koa();
  ops.use(opsRouter(lifecycle, metrics).routes());
  const server = await listen(ops, config.LORE_AGENTS_WORKER_PORT, config.LORE_AGENTS_HOST);
  lifecycle.onShutdown('ops server', () => server.close());
  lifecycle.addCheck('consumer groups', consumerGroupsCheck(bus));
  lifecycle.onShutdown('agents', () => service.close());
  await worker.start();
  lifecycle.onShutdown('agents worker', () => worker.stop());
  lifecycle.markStarted();
  logger.info({ ops: server.url, worker: worker.workerId }, 'agents-worker running workflows');
}

main().catch(exitOnConfigError);
