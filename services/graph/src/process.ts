import { IdentitySigner, openBlobStore, processBus, startServiceProcess, type KafkaBus, type Lifecycle, type Logger } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { buildAi, graphConfigSchema, type GraphConfig } from './config';
import type { GraphServiceDeps } from './graph-service';

/** What both graph deployments (API and worker) start the same way. */
export interface GraphProcess {
  config: GraphConfig;
  logger: Logger;
  metrics: Registry;
  lifecycle: Lifecycle;
  /** The same bus as `deps.bus`, with the Kafka adapter's readiness reads (consumer group membership, lag). */
  bus: KafkaBus;
  /** The dependencies of `createGraphService` every graph process shares; each adds its own part. */
  deps: GraphServiceDeps;
}

/**
 * Config (parsed once), logger, metrics, lifecycle with signal handlers, the PostgreSQL pool and the Kafka bus,
 * each registered for shutdown in the order that stops them after the service using them.
 */
export async function startGraphProcess(service: 'graph' | 'graph-worker'): Promise<GraphProcess> {
  const proc = await startServiceProcess(service, graphConfigSchema);
  const { config, logger, metrics, lifecycle, db } = proc;
  const bus = processBus(proc, { brokers: config.LORE_KAFKA_BROKERS, prefix: config.LORE_KAFKA_PREFIX, clientId: `lore-${service}` });
  const { close: closeAi, ...ai } = await buildAi(config, logger);
  lifecycle.onShutdown('ai', closeAi);
  return {
    config,
    logger,
    metrics,
    lifecycle,
    bus,
    deps: {
      db,
      bus,
      blobs: openBlobStore(config, db, lifecycle),
      logger,
      metrics,
      signer: new IdentitySigner(config.LORE_IDENTITY_SECRET),
      ...ai,
      config: { uploadMaxBytes: config.LORE_GRAPH_UPLOAD_MAX_BYTES },
      migrate: config.LORE_GRAPH_MIGRATE,
      vectors: config.LORE_GRAPH_VECTORS,
      lifecycle,
    },
  };
}
