import { ConnectorIndexMessageSchema, TOPICS, type ConnectorIndexMessage } from '@lore/contracts';
import { componentLogger, PoisonError, startOutboxRelay, TenantTurns, type BusMessage, type Db, type EventBus, type IdentitySigner, type Logger, type OutboxRelay, type SecretBox, type Subscription } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { createIndexingMetrics, DEFAULT_INDEXING_SETTINGS, holdWaitingAttempt, runAttempt, scheduleTick, type IndexingDeps, type IndexingSettings } from './application/indexing';
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

  /**
   * Runs take minutes (a site's Crawl-delay, an hour's limit), so a message is not held while its run goes on: its
   * attempt is held (`holdWaitingAttempt`: heartbeated, so a worker that dies is found out as for a run) and the
   * message acknowledged, and the attempt waits here for a free run, each tenant's in arrival order, the tenants in
   * turn. One tenant runs at most a quarter of `maxRunning` (2 of the default 8), so at least four tenants run at
   * once whatever the others do, and a tenant beyond them waits only for a run to end, never behind another's
   * backlog (before 2026-11-30 runs took the partitions, and one tenant's slow crawls held every other tenant's).
   */
  const maxRunning = Math.max(1, indexing.settings.maxRunning);
  const tenantCap = Math.max(1, Math.floor(maxRunning / 4));
  const runs = new Map<string, Promise<void>>();
  const perTenant = new Map<string, number>();
  const waiting = new TenantTurns<ConnectorIndexMessage>();
  let waitBeat: NodeJS.Timeout | null = null;
  const keyOf = (m: ConnectorIndexMessage) => `${m.tenant_id}:${m.attempt_id}`;

  /** The next attempt to run: the first waiting of the first tenant in turn under its cap. */
  const next = (): ConnectorIndexMessage | null => waiting.take((tenantId) => (perTenant.get(tenantId) ?? 0) < tenantCap)?.item ?? null;

  const run = (msg: ConnectorIndexMessage): void => {
    const key = keyOf(msg);
    perTenant.set(msg.tenant_id, (perTenant.get(msg.tenant_id) ?? 0) + 1);
    const done = runAttempt(indexing, msg, stopping.signal)
      .then((result) => logger.debug({ attempt_id: msg.attempt_id, result }, 'index message handled'))
      // A run that fails outright (the database gone) leaves its attempt to the scheduler, which finds it silent.
      .catch((err: unknown) => logger.error({ err, attempt_id: msg.attempt_id }, 'index attempt failed to run; the scheduler retries it'))
      .finally(() => {
        runs.delete(key);
        const n = (perTenant.get(msg.tenant_id) ?? 1) - 1;
        if (n <= 0) perTenant.delete(msg.tenant_id);
        else perTenant.set(msg.tenant_id, n);
        if (!stopping.signal.aborted) drain();
      });
    runs.set(key, done);
  };

  const drain = (): void => {
    while (runs.size < maxRunning && !stopping.signal.aborted) {
      const msg = next();
      if (!msg) return;
      run(msg);
    }
  };

  /** Keeps the waiting attempts held; drops those no longer live (paused or deleted meanwhile). One pass at a time. */
  let holding = false;
  const holdWaiting = async (): Promise<void> => {
    if (holding) return;
    holding = true;
    try {
      for (const { tenantId, key, item } of waiting.entries()) {
        const held = await holdWaitingAttempt(indexing, item).catch(() => true);
        if (!held) waiting.delete(tenantId, key);
      }
    } finally {
      holding = false;
    }
  };

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
    if (stopping.signal.aborted) throw new Error('the indexer is stopping');
    const key = keyOf(msg);
    if (runs.has(key) || waiting.has(msg.tenant_id, key)) return;
    // Not the pair's live attempt any more (a redelivery after its end, a pause meanwhile): nothing to run.
    if (!(await holdWaitingAttempt(indexing, msg))) {
      logger.debug({ attempt_id: msg.attempt_id }, 'index message for an attempt no longer live; nothing to run');
      return;
    }
    waiting.add(msg.tenant_id, key, msg);
    drain();
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
      waitBeat = setInterval(() => void holdWaiting(), indexing.settings.heartbeatMs);
      waitBeat.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      // Running attempts end `canceled` and their pairs are due again at once (another worker takes them); so do
      // waiting ones, each run with the stop already signalled.
      stopping.abort();
      if (waitBeat) clearInterval(waitBeat);
      waitBeat = null;
      const sub = subscription;
      subscription = null;
      await sub?.stop();
      const left = waiting.entries().map((w) => w.item);
      waiting.clear();
      for (const msg of left) await runAttempt(indexing, msg, stopping.signal).catch((err: unknown) => logger.warn({ err, attempt_id: msg.attempt_id }, 'a waiting attempt could not be released'));
      await Promise.allSettled([...runs.values()]);
      await relay?.stop();
      relay = null;
      await ticking?.catch(() => 0);
    },
    tick,
    running: () => runs.size,
  };
}
