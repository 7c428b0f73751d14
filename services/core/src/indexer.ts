import { ConnectorIndexMessageSchema, TOPICS } from '@lore/contracts';
import { componentLogger, PoisonError, startOutboxRelay, type BusMessage, type Db, type EventBus, type IdentitySigner, type Logger, type OutboxRelay, type SecretBox, type Subscription } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { createIndexingMetrics, DEFAULT_INDEXING_SETTINGS, runAttempt, scheduleTick, type IndexingDeps, type IndexingSettings } from './application/indexing';
import type { ConnectorDocuments } from './clients/graph-documents';
import { sourceFactory, type SourceSettings } from './connectors/factory';

/** The topics the core worker consumes or publishes to. */
export const CORE_TOPICS = [TOPICS.connectorsIndex] as const;

export interface CoreIndexerDeps {
  db: Db;
  logger: Logger;
  metrics: Registry;
  signer: IdentitySigner;
  secrets: SecretBox;
  bus: EventBus;
  /** Where a pair's documents are written: the graph service's connector-document routes. */
  documents: ConnectorDocuments;
  sources: SourceSettings;
  settings?: Partial<IndexingSettings>;
  /** How often the scheduler looks for due pairs and silent workers (default 15 s). */
  schedulerIntervalMs?: number;
  /** Kafka consumer group (default `core-worker`). */
  consumerGroup?: string;
  /** Run an outbox relay in this process (default true; embedded mode runs one shared relay instead). */
  relay?: boolean;
}

export interface CoreIndexer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** One scheduler pass now (tests, and the interval's work): answers the attempts started. */
  tick(): Promise<number>;
  /** Attempts running in this process now. */
  running(): number;
}

/**
 * The connector indexer of the `core-worker` deployment (and of the embedded process): the scheduler on an
 * interval, the `lore.connectors.index` consumer that runs attempts, and an outbox relay. See "Indexing" in
 * docs/core.md.
 */
export function createCoreIndexer(deps: CoreIndexerDeps): CoreIndexer {
  const logger = componentLogger(deps.logger, 'indexer');
  const factory = sourceFactory(deps.sources);
  const indexing: IndexingDeps = {
    metrics: createIndexingMetrics(deps.metrics),
    db: deps.db,
    logger,
    signer: deps.signer,
    secrets: deps.secrets,
    documents: deps.documents,
    sources: (connector, credentialJson, tenantId) => factory.create(connector, credentialJson, tenantId),
    settings: { ...DEFAULT_INDEXING_SETTINGS, ...deps.settings },
    blobs: deps.sources.blobs,
  };
  let stopping = new AbortController();
  let subscription: Subscription | null = null;
  let relay: OutboxRelay | null = null;
  let timer: NodeJS.Timeout | null = null;
  let ticking: Promise<number> | null = null;
  let active = 0;

  const tick = (): Promise<number> => {
    // One pass at a time in this process; other replicas are kept apart by the row locks.
    ticking ??= scheduleTick(indexing).finally(() => {
      ticking = null;
    });
    return ticking;
  };

  const handle = async (message: BusMessage): Promise<void> => {
    let msg;
    try {
      msg = ConnectorIndexMessageSchema.parse(JSON.parse(message.value.toString('utf8')));
    } catch (err) {
      logger.error({ topic: message.topic, offset: message.offset }, 'malformed index message; dead-lettering it');
      throw new PoisonError('malformed message: it does not match its contract schema', { cause: err });
    }
    active++;
    try {
      const result = await runAttempt(indexing, msg, stopping.signal);
      logger.debug({ attempt_id: msg.attempt_id, result }, 'index message handled');
    } finally {
      active--;
    }
  };

  return {
    async start() {
      if (subscription) return;
      stopping = new AbortController();
      await deps.bus.ensureTopics([...CORE_TOPICS]);
      subscription = await deps.bus.subscribe({ groupId: deps.consumerGroup ?? 'core-worker', topics: [TOPICS.connectorsIndex], fromBeginning: true }, handle);
      relay = await startOutboxRelay({ process: 'core-worker', enabled: deps.relay !== false, db: deps.db, bus: deps.bus, logger, metrics: deps.metrics, pollIntervalMs: 50, topics: CORE_TOPICS });
      timer = setInterval(() => {
        tick().catch((err: unknown) => logger.warn({ err }, 'index scheduler pass failed'));
      }, deps.schedulerIntervalMs ?? 15_000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      // Running attempts end `canceled` and their pairs are due again at once (another worker takes them).
      stopping.abort();
      const sub = subscription;
      subscription = null;
      await sub?.stop();
      await relay?.stop();
      relay = null;
      await ticking?.catch(() => 0);
    },
    tick,
    running: () => active,
  };
}
