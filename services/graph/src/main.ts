import { exitOnConfigError, LISTENER_CLOSE_TIMEOUT_MS, listen, opsRouter, startOutboxRelay } from '@lore/runtime';
import { createGraphService, GRAPH_TOPICS } from './graph-service';
import { startGraphProcess } from './process';

/** The `graph` deployment: the memory HTTP API (plus an outbox relay for what it writes). */
async function main(): Promise<void> {
  const { config, logger, metrics, lifecycle, deps } = await startGraphProcess('graph');
  const graph = await createGraphService({
    ...deps,
    // The API process extracts nothing: OCR runs in graph-worker.
    ocr: null,
    bodyLimitBytes: config.LORE_GRAPH_BODY_LIMIT_BYTES,
  });
  graph.app.use(opsRouter(lifecycle, metrics).routes());
  const server = await listen(graph.app, config.LORE_GRAPH_PORT, config.LORE_GRAPH_HOST);
  lifecycle.onShutdown('http server', () => server.close(), LISTENER_CLOSE_TIMEOUT_MS);
  // Consumers run in graph-worker; which processes relay is decided in one place (startOutboxRelay).
  await startOutboxRelay({ process: 'graph', enabled: config.LORE_GRAPH_RELAY, db: deps.db, bus: deps.bus, logger, metrics, topics: GRAPH_TOPICS, lifecycle });
  lifecycle.onShutdown('graph', () => graph.close());
  lifecycle.markStarted();
  logger.info({ url: server.url }, 'graph listening');
}

main().catch(exitOnConfigError);
