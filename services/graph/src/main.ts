import { exitOnConfigError, listen, opsRouter, OutboxRelay } from '@lore/runtime';
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
  lifecycle.onShutdown('http server', () => server.close());
  if (config.LORE_GRAPH_RELAY) {
    // Only the relay part of the worker: consumers run in graph-worker. The relay publishes in id order, so a
    // missing topic would hold back every event behind it until graph-worker created it.
    await deps.bus.ensureTopics(GRAPH_TOPICS);
    const relay = new OutboxRelay({ db: deps.db, bus: deps.bus, logger, metrics });
    relay.start();
    lifecycle.onShutdown('outbox relay', () => relay.stop());
  }
  lifecycle.onShutdown('graph', () => graph.close());
  lifecycle.markStarted();
  logger.info({ url: server.url }, 'graph listening');
}

main().catch(exitOnConfigError);
