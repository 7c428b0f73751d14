import { consumerGroupsCheck, exitOnConfigError, GraphKnowledgeSearch, IdentitySigner, openBlobStore, processBus, serveOps, startServiceProcess } from '@lore/runtime';
import { GraphConnectorDocuments } from './clients/graph-documents';
import { connectorFileConfig, coreConfigSchema, projectFileConfig } from './config';
import { createCoreService } from './core-service';
import { startCredentialSealing } from './application/credential-sealing';

/**
 * The `core-worker` deployment: the connector indexer (the scheduler, the `lore.connectors.index` consumer that runs
 * index attempts and writes documents through the graph service, an outbox relay). Serves only its probes and
 * metrics on LORE_CORE_WORKER_PORT.
 */
async function main(): Promise<void> {
  const proc = await startServiceProcess('core-worker', coreConfigSchema, {
    requires: (c) => (c.LORE_KAFKA_BROKERS ? [] : ['LORE_KAFKA_BROKERS: is required by the core worker']),
  });
  const { config, logger, lifecycle, db } = proc;
  const bus = processBus(proc, { brokers: config.LORE_KAFKA_BROKERS!, prefix: config.LORE_KAFKA_PREFIX, clientId: 'lore-core-worker' });
  const graph = { url: config.LORE_CORE_GRAPH_URL, timeoutMs: config.LORE_CORE_GRAPH_TIMEOUT_MS };
  const blobs = openBlobStore(config, db, lifecycle);
  const core = await createCoreService({
    db,
    logger,
    metrics: proc.metrics,
    signer: new IdentitySigner(config.LORE_IDENTITY_SECRET),
    encryptionKeys: config.LORE_ENCRYPTION_KEYS,
    migrate: config.LORE_CORE_MIGRATE,
    knowledge: new GraphKnowledgeSearch(graph),
    lifecycle,
    // It also takes over chat project files whose core process stopped mid-extraction.
    blobs,
    connectorTargets: { allowLoopback: config.LORE_CONNECTORS_ALLOW_LOOPBACK },
    projectFiles: projectFileConfig(config),
    connectorFiles: connectorFileConfig(config),
    indexer: {
      bus,
      documents: new GraphConnectorDocuments({ ...graph, timeoutMs: Math.max(graph.timeoutMs, 60_000) }),
      sources: {
        allowLoopback: config.LORE_CONNECTORS_ALLOW_LOOPBACK,
        blobs,
        google: {
          ...(config.LORE_CONNECTORS_GOOGLE_API_URL ? { apiBaseUrl: config.LORE_CONNECTORS_GOOGLE_API_URL } : {}),
          ...(config.LORE_CONNECTORS_GOOGLE_TOKEN_URL ? { tokenUrl: config.LORE_CONNECTORS_GOOGLE_TOKEN_URL } : {}),
        },
      },
      settings: { heartbeatMs: config.LORE_CORE_INDEX_HEARTBEAT_MS, staleMs: config.LORE_CORE_INDEX_STALE_MS, batchDocuments: config.LORE_CORE_INDEX_BATCH_DOCUMENTS, maxRunning: config.LORE_CORE_INDEX_MAX_RUNNING },
      schedulerIntervalMs: config.LORE_CORE_SCHEDULER_INTERVAL_MS,
      consumerGroup: config.LORE_CORE_CONSUMER_GROUP,
      relay: config.LORE_CORE_RELAY,
    },
  });
  const server = await serveOps(proc, config.LORE_CORE_WORKER_PORT, config.LORE_CORE_HOST);
  lifecycle.addCheck('consumer groups', consumerGroupsCheck(bus));
  await core.indexer!.start();
  lifecycle.onShutdown('core worker', () => core.close());
  // In the background: credentials sealed with an older key of the ring are sealed again with the first one.
  const sealing = startCredentialSealing(db, core.core.secrets, logger);
  lifecycle.onShutdown('credential sealing', () => sealing.stop());
  lifecycle.markStarted();
  logger.info({ ops: server.url }, 'core-worker indexing');
}

main().catch(exitOnConfigError);
