import { GraphKnowledgeSearch, IdentitySigner, LISTENER_CLOSE_TIMEOUT_MS, exitOnConfigError, openBlobStore, listen, opsRouter, startServiceProcess } from '@lore/runtime';
import { languageModelFromEnv } from '@lore/ai';
import { connectorFileConfig, coreConfigSchema, projectFileConfig } from './config';
import { createCoreService } from './core-service';

/** The `core` deployment: chat and connectors behind the gateway (probes and metrics share the port). */
async function main(): Promise<void> {
  const proc = await startServiceProcess('core', coreConfigSchema);
  const { config, logger, metrics, lifecycle, db } = proc;
  const core = await createCoreService({
    db,
    logger,
    metrics,
    signer: new IdentitySigner(config.LORE_IDENTITY_SECRET),
    encryptionKeys: config.LORE_ENCRYPTION_KEYS,
    migrate: config.LORE_CORE_MIGRATE,
    languageModel: languageModelFromEnv(config, logger),
    knowledge: new GraphKnowledgeSearch({ url: config.LORE_CORE_GRAPH_URL, timeoutMs: config.LORE_CORE_GRAPH_TIMEOUT_MS }),
    answerMaxTokens: config.LORE_CORE_ANSWER_MAX_TOKENS,
    bodyLimitBytes: config.LORE_CORE_BODY_LIMIT_BYTES,
    lifecycle,
    blobs: openBlobStore(config, db, lifecycle),
    connectorTargets: { allowLoopback: config.LORE_CONNECTORS_ALLOW_LOOPBACK },
    projectFiles: projectFileConfig(config),
    connectorFiles: connectorFileConfig(config),
  });
  core.app.use(opsRouter(lifecycle, metrics).routes());
  const server = await listen(core.app, config.LORE_CORE_PORT, config.LORE_CORE_HOST);
  lifecycle.onShutdown('http server', () => server.close(), LISTENER_CLOSE_TIMEOUT_MS);
  lifecycle.onShutdown('core', () => core.close());
  lifecycle.markStarted();
  logger.info({ url: server.url }, 'core listening');
}

main().catch(exitOnConfigError);
