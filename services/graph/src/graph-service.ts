import { join } from 'node:path';
import { describeAi, ExtractiveLanguageModel, HashedEmbedder, type AiDescription, type Embedder, type LanguageModel } from '@lore/ai';
import { TOPICS } from '@lore/contracts';
import {
  componentLogger,
  assertAppRole,
  checkAppRole,
  ConfigError,
  probeVector,
  RUNTIME_MIGRATIONS,
  startOutboxRelay,
  sweepAbandonedBlobs,
  type OutboxRelay,
  runMigrations,
  runRuntimeMigrations,
  type BlobStore,
  type Db,
  type EventBus,
  type IdentitySigner,
  type Lifecycle,
  type LoreApp,
  type Logger,
  type Subscription,
} from '@lore/runtime';
import type { Registry } from 'prom-client';
import { createGraphApp } from './app';
import { TesseractOcr, type OcrEngine } from '@lore/extract/ocr';
import { createGraphMetrics, DEFAULT_MEMORY_CONFIG, type MemoryConfig, type MemoryDeps } from './application/context';
import { ABANDONED_BLOB_AGE_MS, GRAPH_BLOB_OWNER } from './application/blob-owner';
import { graphConsumers } from './consumers';
import { hasEmbeddingColumn } from './store/search-store';

export const GRAPH_MIGRATIONS = { schema: 'graph', dir: join(__dirname, '..', 'migrations') };
/** The schemas a graph process works in: the application role needs what their migrations grant. */
const GRAPH_SCHEMAS = [RUNTIME_MIGRATIONS, GRAPH_MIGRATIONS];

export interface GraphServiceDeps {
  db: Db;
  bus: EventBus;
  blobs: BlobStore;
  logger: Logger;
  metrics: Registry;
  signer: IdentitySigner;
  /** Default: the embedded extractive answerer. */
  languageModel?: LanguageModel;
  /** Default: the hashed embedder (384 dimensions). */
  embedder?: Embedder;
  /** Default: tesseract.js with the English model from npm; `null` disables OCR. */
  ocr?: OcrEngine | null;
  config?: Partial<MemoryConfig>;
  /** Largest JSON body (bytes). Default 2 MiB. */
  bodyLimitBytes?: number;
  /** Check every success body against its route's declared schema (tests): a drift answers 500 naming it. */
  checkResponses?: boolean;
  /** Apply the runtime and graph migrations at start (dev, embedded, tests). Default true. */
  migrate?: boolean;
  /** Use pgvector when the database has it. Default true. */
  vectors?: boolean;
  /** `worker.start()` also runs an outbox relay. Default true (embedded mode may run one shared relay instead). */
  relay?: boolean;
  /** Kafka consumer group of the worker. Default `graph-worker`. */
  consumerGroup?: string;
  /** Registers the readiness check `graph` (with which AI and retrieval mode are active). */
  lifecycle?: Lifecycle;
}

export interface GraphDescription extends AiDescription {
  retrieval: 'hybrid' | 'lexical';
  vectors: boolean;
  ocr: string;
}

export interface GraphService {
  app: LoreApp;
  /** The composed dependencies, for in-process tools (benchmarks, the embedded mode's own wiring). */
  memory: MemoryDeps;
  worker: { start(): Promise<void>; stop(): Promise<void> };
  describe(): GraphDescription;
  close(): Promise<void>;
}

/** The topics the graph worker consumes or publishes to; `worker.start()` makes sure they exist. */
export const GRAPH_TOPICS = [TOPICS.memoryIngest, TOPICS.memoryUploads, TOPICS.memoryLifecycle, TOPICS.graphJobs, TOPICS.events];

/**
 * The graph service's memory data plane, composed from ports: the HTTP app (`/api/v1/memory/*` and
 * `/openapi.json`) and the worker (the consumers in `consumers/`, one module each, of `lore.memory.ingest`,
 * `lore.memory.uploads`, `lore.memory.lifecycle` and `lore.graph.jobs`, plus an outbox relay). The same code runs as two processes in a
 * cluster and inside the embedded single process.
 */
export async function createGraphService(deps: GraphServiceDeps): Promise<GraphService> {
  const logger = componentLogger(deps.logger, 'graph');
  if (deps.migrate !== false) {
    await runRuntimeMigrations(deps.db);
    await runMigrations(deps.db, GRAPH_MIGRATIONS);
  }
  // Refuse to start when the application role cannot do the work (or could escape row-level security), and when
  // pgvector is installed but unusable by that role: search would fail rather than fall back to lexical-only.
  await assertAppRole(deps.db, GRAPH_SCHEMAS);
  const probe = deps.vectors === false ? null : await probeVector(deps.db);
  if (probe?.installed && !probe.usable) {
    throw new ConfigError([`LORE_DATABASE_URL: ${probe.problem ?? 'pgvector is not usable'}`, 'LORE_GRAPH_VECTORS: set it to false to run search lexical-only instead']);
  }
  const vectors = deps.vectors !== false && probe?.usable === true && (await hasEmbeddingColumn(deps.db));
  if (!vectors) logger.warn({ db: deps.db.kind }, 'pgvector unavailable or disabled: memory search runs lexical-only');
  const ownOcr = deps.ocr === undefined;
  const ocr = deps.ocr === undefined ? new TesseractOcr({ timeoutMs: 120_000, logger }) : deps.ocr;
  const memory: MemoryDeps = {
    db: deps.db,
    bus: deps.bus,
    blobs: deps.blobs,
    logger,
    metrics: createGraphMetrics(deps.metrics),
    languageModel: deps.languageModel ?? new ExtractiveLanguageModel(),
    embedder: deps.embedder ?? new HashedEmbedder(384),
    ocr,
    vectors,
    config: { ...DEFAULT_MEMORY_CONFIG, ...deps.config },
    knownMemories: new Set(),
  };
  const description: GraphDescription = {
    ...describeAi(memory.languageModel, memory.embedder),
    retrieval: vectors ? 'hybrid' : 'lexical',
    vectors,
    ocr: ocr ? ocr.kind : 'disabled',
  };
  logger.info(description, 'memory data plane ready');
  deps.lifecycle?.addCheck('graph', async () => {
    // What start-up checked, again: a privilege revoked or an extension dropped since makes the process unready.
    const { problems } = await checkAppRole(deps.db, GRAPH_SCHEMAS);
    if (vectors) {
      const now = await probeVector(deps.db);
      if (!now.usable) problems.push(now.problem ?? 'pgvector is no longer installed: vector search fails');
    }
    return { ok: problems.length === 0, details: { ...description, ...(problems.length > 0 ? { problems } : {}) } };
  });

  const app = createGraphApp({ memory, signer: deps.signer, logger: deps.logger, metrics: deps.metrics, bodyLimitBytes: deps.bodyLimitBytes ?? 2 * 1024 * 1024, checkResponses: deps.checkResponses });

  const group = deps.consumerGroup ?? 'graph-worker';
  const consumers = graphConsumers(memory);
  let relay: OutboxRelay | null = null;
  let subscriptions: Subscription[] = [];
  let sweeper: NodeJS.Timeout | null = null;
  // Upload bytes written by a process killed before their upload's row committed (runtime's blob intents): deleted
  // once an hour old, checked every ten minutes and at start.
  const sweepAbandoned = () =>
    sweepAbandonedBlobs(deps.db, deps.blobs, GRAPH_BLOB_OWNER, ABANDONED_BLOB_AGE_MS)
      .then((swept) => {
        if (swept > 0) logger.warn({ swept }, 'deleted the bytes of uploads whose record was never written (a process stopped in between)');
      })
      .catch((err: unknown) => logger.warn({ err }, 'sweeping abandoned upload bytes failed; the next sweep tries again'));

  const worker = {
    async start(): Promise<void> {
      if (subscriptions.length > 0) return;
      await deps.bus.ensureTopics(GRAPH_TOPICS);
      const subs: Subscription[] = [];
      for (const c of consumers) {
        const options = { groupId: c.groupId(group), topics: [c.topic], fromBeginning: true };
        const deadLettered = c.deadLettered?.bind(c);
        subs.push(await deps.bus.subscribe(deadLettered ? { ...options, onDeadLetter: (m) => deadLettered(m) } : options, (message) => c.handle(message)));
      }
      subscriptions = subs;
      relay = await startOutboxRelay({
        process: group,
        enabled: deps.relay !== false,
        db: deps.db,
        bus: deps.bus,
        logger,
        metrics: deps.metrics,
        pollIntervalMs: 50,
        topics: GRAPH_TOPICS,
      });
      sweeper = setInterval(() => void sweepAbandoned(), 10 * 60_000);
      sweeper.unref();
      void sweepAbandoned();
    },
    async stop(): Promise<void> {
      if (sweeper) clearInterval(sweeper);
      sweeper = null;
      const subs = subscriptions;
      subscriptions = [];
      await Promise.all(subs.map((s) => s.stop()));
      await relay?.stop();
      relay = null;
    },
  };

  return {
    app,
    memory,
    worker,
    describe: () => description,
    async close() {
      await worker.stop();
      if (ownOcr) await ocr?.close();
    },
  };
}
