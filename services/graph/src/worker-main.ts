import {
  createLogger,
  createMetricsRegistry,
  exitOnConfigError,
  IdentitySigner,
  KafkaBus,
  Lifecycle,
  listen,
  opsRouter,
  parseConfig,
  PostgresBlobStore,
  PostgresDb,
} from '@lore/runtime';
import Koa from 'koa';
import { TesseractOcr } from './extract/ocr';
import { buildAi, graphConfigSchema } from './config';
import { createGraphService } from './graph-service';

/**
 * The `graph-worker` deployment: consumes `lore.memory.ingest` and `lore.memory.uploads` (chunking, embeddings,
 * indexing, entities, contradictions, extraction and OCR), relays the outbox, and serves only its probes and
 * metrics on LORE_GRAPH_PORT.
 */
async function main(): Promise<void> {
  const config = parseConfig(graphConfigSchema, process.env);
  const logger = createLogger({ level: config.LORE_LOG_LEVEL, service: 'graph-worker' });
  const metrics = createMetricsRegistry('graph-worker');
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers();

  const db = await new PostgresDb({ url: config.LORE_DATABASE_URL, ownerUrl: config.LORE_DATABASE_OWNER_URL }).init();
  lifecycle.onShutdown('database', () => db.close());
  const bus = new KafkaBus({ brokers: config.LORE_KAFKA_BROKERS.split(','), clientId: 'lore-graph-worker', logger, metrics });
  lifecycle.onShutdown('event bus', () => bus.close());
  const graph = await createGraphService({
    db,
    bus,
    blobs: new PostgresBlobStore(db),
    logger,
    metrics,
    signer: new IdentitySigner(config.LORE_IDENTITY_SECRET),
    ...buildAi(config, logger),
    ocr: config.LORE_GRAPH_OCR ? new TesseractOcr({ timeoutMs: 120_000, logger }) : null,
    config: { uploadMaxBytes: config.LORE_GRAPH_UPLOAD_MAX_BYTES },
    migrate: config.LORE_GRAPH_MIGRATE,
    vectors: config.LORE_GRAPH_VECTORS,
    relay: config.LORE_GRAPH_RELAY,
    consumerGroup: config.LORE_GRAPH_CONSUMER_GROUP,
    lifecycle,
  });
  await graph.worker.start();
  lifecycle.onShutdown('graph worker', () => graph.close());
  const ops = new Koa();
  ops.use(opsRouter(lifecycle, metrics).routes());
  const server = await listen(ops, config.LORE_GRAPH_PORT, config.LORE_GRAPH_HOST);
  lifecycle.onShutdown('ops server', () => server.close());
  lifecycle.markStarted();
  logger.info({ ops: server.url, ...graph.describe() }, 'graph-worker consuming');
}

main().catch(exitOnConfigError);
