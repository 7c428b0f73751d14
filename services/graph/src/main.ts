import {
  createLogger,
  createMetricsRegistry,
  exitOnConfigError,
  IdentitySigner,
  KafkaBus,
  Lifecycle,
  listen,
  opsRouter,
  OutboxRelay,
  parseConfig,
  PostgresBlobStore,
  PostgresDb,
} from '@lore/runtime';
import { buildAi, graphConfigSchema } from './config';
import { createGraphService } from './graph-service';

/** The `graph` deployment: the memory HTTP API (plus an outbox relay for what it writes). */
async function main(): Promise<void> {
  const config = parseConfig(graphConfigSchema, process.env);
  const logger = createLogger({ level: config.LORE_LOG_LEVEL, service: 'graph' });
  const metrics = createMetricsRegistry('graph');
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers();

  const db = await new PostgresDb({ url: config.LORE_DATABASE_URL, ownerUrl: config.LORE_DATABASE_OWNER_URL }).init();
  lifecycle.onShutdown('database', () => db.close());
  const bus = new KafkaBus({ brokers: config.LORE_KAFKA_BROKERS.split(','), clientId: 'lore-graph', logger, metrics });
  lifecycle.onShutdown('event bus', () => bus.close());
  const graph = await createGraphService({
    db,
    bus,
    blobs: new PostgresBlobStore(db),
    logger,
    metrics,
    signer: new IdentitySigner(config.LORE_IDENTITY_SECRET),
    ...buildAi(config, logger),
    // The API process extracts nothing: OCR runs in graph-worker.
    ocr: null,
    config: { uploadMaxBytes: config.LORE_GRAPH_UPLOAD_MAX_BYTES },
    bodyLimitBytes: config.LORE_GRAPH_BODY_LIMIT_BYTES,
    migrate: config.LORE_GRAPH_MIGRATE,
    vectors: config.LORE_GRAPH_VECTORS,
    lifecycle,
  });
  graph.app.use(opsRouter(lifecycle, metrics).routes());
  const server = await listen(graph.app, config.LORE_GRAPH_PORT, config.LORE_GRAPH_HOST);
  lifecycle.onShutdown('http server', () => server.close());
  if (config.LORE_GRAPH_RELAY) {
    // Only the relay part of the worker: consumers run in graph-worker.
    const relay = new OutboxRelay({ db, bus, logger, metrics });
    relay.start();
    lifecycle.onShutdown('outbox relay', () => relay.stop());
  }
  lifecycle.onShutdown('graph', () => graph.close());
  lifecycle.markStarted();
  logger.info({ url: server.url }, 'graph listening');
}

main().catch(exitOnConfigError);
