import { IDENTITY_HEADER, IdentitySigner, MemoryBus, PgliteDb, PostgresBlobStore, createLogger, createMetricsRegistry, listen, type BlobStore, type Identity, type MemoryBusOptions, type StartedServer } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { createGraphService, type GraphService, type GraphServiceDeps } from './graph-service';

/** The graph service of one test file on PGlite and the in-process bus, listening on a loopback port. */
export interface GraphTestStack {
  db: PgliteDb;
  bus: MemoryBus;
  graph: GraphService;
  server: StartedServer;
  signer: IdentitySigner;
  /** The service's metrics registry. */
  metrics: Registry;
  /** The headers that carry `who` to the graph's listener, as the gateway would send them (no gateway here). */
  identify(who: Identity): Promise<Record<string, string>>;
  /** Closes the listener, the service, the bus and the database, in that order. */
  close(): Promise<void>;
}

export interface GraphTestStackOptions {
  /** Options of the in-process bus beside the logger. */
  bus?: Omit<MemoryBusOptions, 'logger'>;
  /** The blob store over the database (default: PostgreSQL's own). */
  blobs?: (db: PgliteDb) => BlobStore;
  /** Starts the worker (its consumers and relay) before listening. Default true. */
  worker?: boolean;
  /** What else the service takes: OCR (default none), config, the language model... */
  service?: Partial<Omit<GraphServiceDeps, 'db' | 'bus' | 'blobs' | 'logger' | 'metrics' | 'signer'>>;
}

/**
 * Starts the graph service for the tests of one file: `name` names its logger, metrics and identity secret, so two
 * files never share them. Every file of the service's own tests that needs its routes starts it this way.
 */
export async function startGraphTestStack(name: string, options: GraphTestStackOptions = {}): Promise<GraphTestStack> {
  const logger = createLogger({ level: 'silent', service: `graph-${name}-test` });
  const signer = new IdentitySigner(`${name}-unit-identity-secret-0123456789`);
  const db = await PgliteDb.open();
  const bus = new MemoryBus({ ...options.bus, logger });
  const metrics = createMetricsRegistry(`graph-${name}-test`, { defaultMetrics: false });
  const graph = await createGraphService({
    ocr: null,
    ...options.service,
    db,
    bus,
    blobs: options.blobs ? options.blobs(db) : new PostgresBlobStore(db),
    logger,
    metrics,
    signer,
  });
  if (options.worker !== false) await graph.worker.start();
  const server = await listen(graph.app, 0, '127.0.0.1');
  return {
    db,
    bus,
    graph,
    server,
    signer,
    metrics,
    identify: async (who) => ({ [IDENTITY_HEADER]: await signer.sign(who) }),
    close: async () => {
      await server.close(100);
      await graph.close();
      await bus.close();
      await db.close();
    },
  };
}
