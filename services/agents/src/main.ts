import { languageModelFromEnv } from '@lore/ai';
import { IdentitySigner, LISTENER_CLOSE_TIMEOUT_MS, RedisProgressStreams, exitOnConfigError, listen, openBlobStore, opsRouter, startServiceProcess } from '@lore/runtime';
import { agentsConfigSchema, csvImportFrom } from './config';
import { createAgentsService } from './agents-service';
import { parseEgressProxies } from './domain/egress';
import { LiveTokens } from './application/live-page';

/** The `agents` deployment: list building, imports, utility and seed routes behind the gateway (probes and metrics share the port). */
async function main(): Promise<void> {
  const { config, logger, metrics, lifecycle, db } = await startServiceProcess('agents', agentsConfigSchema, { maxConnections: (c) => c.LORE_AGENTS_DB_POOL_MAX });
  // The workflows' progress streams (the stream routes read them; the worker writes them): Redis when configured.
  const streams = config.LORE_REDIS_URL ? new RedisProgressStreams(config.LORE_REDIS_URL, { keyPrefix: config.LORE_AGENTS_REDIS_PREFIX }) : undefined;
  if (streams) lifecycle.onShutdown('progress streams', () => streams.close());
  const agents = await createAgentsService({
    db,
    logger,
    metrics,
    signer: new IdentitySigner(config.LORE_IDENTITY_SECRET),
    migrate: config.LORE_AGENTS_MIGRATE,
    blobs: openBlobStore(config, db, lifecycle),
    facts: { environment: config.NODE_ENV },
    bodyLimitBytes: config.LORE_AGENTS_BODY_LIMIT_BYTES,
    csvImport: csvImportFrom(config),
    lifecycle,
    ...(streams ? { streams } : {}),
    webTargets: { allowLoopback: config.LORE_AGENTS_ALLOW_LOOPBACK },
    egressProxies: parseEgressProxies(config.LORE_AGENTS_EGRESS_PROXIES).proxies,
    // Every API replica signs and checks live_url tokens with the same key (derived from the identity secret).
    liveTokens: new LiveTokens(config.LORE_IDENTITY_SECRET, config.LORE_AGENTS_LIVE_URL_TTL_S),
    genericWorkflows: { maxRunningPerService: config.LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE },
    languageModel: languageModelFromEnv(config, logger),
  });
  agents.app.use(opsRouter(lifecycle, metrics).routes());
  const server = await listen(agents.app, config.LORE_AGENTS_PORT, config.LORE_AGENTS_HOST);
  // The session sockets (deep search, web research, crawler) are upgraded on the same listener.
  server.server.on('upgrade', agents.handleUpgrade);
  lifecycle.onShutdown('http server', () => server.close(), LISTENER_CLOSE_TIMEOUT_MS);
  lifecycle.onShutdown('agents', () => agents.close());
  lifecycle.markStarted();
  logger.info({ url: server.url }, 'agents listening');
}

main().catch(exitOnConfigError);
