import { consumerGroupsCheck, exitOnConfigError, serveOps } from '@lore/runtime';
import { TesseractOcr } from '@lore/extract/ocr';
import { createGraphService } from './graph-service';
import { startGraphProcess } from './process';

/**
 * The `graph-worker` deployment: consumes `lore.memory.ingest` and `lore.memory.uploads` (chunking, embeddings,
 * indexing, entities, contradictions, extraction and OCR), `lore.memory.lifecycle` (erasing deleted memories) and
 * `lore.graph.jobs` (filling knowledge graphs), relays the outbox, and serves only its probes and metrics on LORE_GRAPH_WORKER_PORT.
 */
async function main(): Promise<void> {
  const proc = await startGraphProcess('graph-worker');
  const { config, logger, lifecycle, bus, deps } = proc;
  const ocr = config.LORE_GRAPH_OCR ? new TesseractOcr({ timeoutMs: 120_000, logger }) : null;
  const graph = await createGraphService({
    ...deps,
    ocr,
    relay: config.LORE_GRAPH_RELAY,
    consumerGroup: config.LORE_GRAPH_CONSUMER_GROUP,
  });
  // Probes answer from before the consumers join (/livez 200, /readyz 503 "starting"): a slow join must not look like
  // a dead process to the kubelet.
  const server = await serveOps(proc, config.LORE_GRAPH_WORKER_PORT, config.LORE_GRAPH_HOST);
  // In every consumer group it subscribed to; lag is information only (docs/runtime.md, "Readiness").
  lifecycle.addCheck('consumer groups', consumerGroupsCheck(bus));
  await graph.worker.start();
  // A given OCR engine is ours to close; hooks run in reverse order, so this one after the consumers stopped.
  if (ocr) lifecycle.onShutdown('ocr', () => ocr.close());
  lifecycle.onShutdown('graph worker', () => graph.close());
  lifecycle.markStarted();
  logger.info({ ops: server.url, ...graph.describe() }, 'graph-worker consuming');
}

main().catch(exitOnConfigError);
