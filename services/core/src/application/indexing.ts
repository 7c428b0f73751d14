import { randomUUID } from 'node:crypto';
import { TOPICS, type ConnectorIndexMessage, type CredentialKind } from '@lore/contracts';
import { counterOn, enqueueOutbox, GraphCallError, histogramOn, type BlobStore, type Db, type IdentitySigner, type Logger, type SecretBox, type Sql } from '@lore/runtime';
import type { Counter, Histogram, Registry } from 'prom-client';
import { ConnectorDocumentsError, type ConnectorDocuments, type PairAccess } from '../clients/graph-documents';
import { consume, type ConnectorSource, type RunOutcome, type SourceDocument, type SourceLimits, type Validators } from '../connectors/source';
import {
  beforeIndexingStart,
  endStatus,
  idsToPrune,
  inRepeatedErrorState,
  nextRunAt,
  runPlan,
  type AttemptKind,
  type AttemptStatus,
  type AttemptTrigger,
} from '../domain/indexing';
import {
  countAttempt,
  addDocsIndexed,
  deleteCcPair,
  getCcPair,
  holdWriteLease,
  lockWriteLease,
  recordAttemptEnd,
  releaseWriteLease,
  renewWriteLease,
  setCcPairStatus,
  setDocsIndexed,
  type CcPairRow,
} from '../store/cc-pairs';
import { countDocuments, forgetDocuments, forgetPairDocuments, keepDocuments, keptValidators, type KeptDocument } from '../store/connector-documents';
import { deleteConnectorWithoutPairs, getConnector, type ConnectorRow } from '../store/connectors';
import { getCredential } from '../store/credentials';
import {
  addProgress,
  claimAttempt,
  deleteAttemptsOfPair,
  finishAttempt,
  getAttempt,
  insertAttempt,
  lastEndedStatuses,
  liveAttempt,
  type AttemptProgress,
  type IndexAttemptRow,
} from '../store/index-attempts';
import { clearAttempt, heartbeat, lockDuePairs, lockSchedule, schedulePair, setScheduledAttempt, staleAttempts, tenantsDue, unschedulePair } from '../store/index-schedule';
import { deleteConnectorFiles, filesLeftBehind } from './connector-files';
import { openCredentialJson } from './credential-secrets';

/**
 * Connector indexing (docs/core.md, "Indexing"): the scheduler finds due pairs and writes their attempts with a
 * `lore.connectors.index` message through the outbox in the same transaction; a worker claims each attempt, drives
 * the pair's source and writes what it yields into the pair's memory through the graph service (the same pipeline
 * as memory ingest), keeping per document what the next poll starts from. Documents are keyed by the pair and the
 * source's id, so a rerun neither loses nor duplicates them; a worker that stops heartbeating has its attempt
 * failed and the pair run again.
 */

/** Makes the connector source a pair reads with (the web, uploaded files, Google Drive). */
export type SourceFactory = (connector: ConnectorRow, credentialJson: Record<string, unknown>, tenantId: string) => ConnectorSource;

export interface IndexingSettings {
  /** How often a running attempt says it is alive (and checks it should go on). */
  heartbeatMs: number;
  /** A running attempt silent this long is failed and its pair run again. */
  staleMs: number;
  /** Documents per write to the memory, and their text's bytes at most. */
  batchDocuments: number;
  batchBytes: number;
  /**
   * The longest a document read waits for its batch to fill: a batch is written once full, or once its first
   * document has waited this long, whichever comes first (never while the write before is in flight).
   */
  batchLingerMs: number;
  /** Limits every run's source honours. */
  limits?: Partial<SourceLimits>;
  /** Pairs the scheduler starts per tick at most. */
  schedulePerTick: number;
  /**
   * Runs one worker process holds at once; one tenant holds at most a quarter of them (docs/core.md, "Workers and
   * failures"). Attempts beyond wait in the worker, each tenant's in turn.
   */
  maxRunning: number;
}

export const DEFAULT_INDEXING_SETTINGS: IndexingSettings = {
  heartbeatMs: 5_000,
  staleMs: 60_000,
  batchDocuments: 64,
  batchBytes: 8 * 1024 * 1024,
  batchLingerMs: 1_000,
  schedulePerTick: 50,
  maxRunning: 8,
};

/**
 * An attempt waiting in a worker for a free run: says the worker holds it (the scheduler fails it, like a silent run,
 * should the worker die before running it). False when the attempt is no longer the pair's live one (paused,
 * deleted, or already ended): nothing is left to run.
 */
export function holdWaitingAttempt(deps: Pick<IndexingDeps, 'db'>, msg: ConnectorIndexMessage): Promise<boolean> {
  return deps.db.withTenant(msg.tenant_id, (sql) => heartbeat(sql, msg.tenant_id, msg.cc_pair_id, msg.attempt_id));
}

/** What the indexer counts (`/metrics` of the process running it). */
export interface IndexingMetrics {
  /** Ended attempts, by kind and status. */
  attempts: Counter<'kind' | 'status'>;
  /** Documents written to the memory, by outcome (created, updated, unchanged, skipped). */
  documents: Counter<'outcome'>;
  /** Wall time of ended runs (not deletions). */
  attemptSeconds: Histogram<'kind'>;
  /** Running attempts abandoned by a silent worker and failed by the scheduler. */
  recovered: Counter;
}

export function createIndexingMetrics(registry: Registry): IndexingMetrics {
  return {
    attempts: counterOn(registry, { name: 'lore_core_index_attempts_total', help: 'Ended connector index attempts, by kind and status', labelNames: ['kind', 'status'] }),
    documents: counterOn(registry, { name: 'lore_core_index_documents_total', help: 'Connector documents written to the memory, by outcome', labelNames: ['outcome'] }),
    attemptSeconds: histogramOn(registry, {
      name: 'lore_core_index_attempt_seconds', help: 'Wall time of connector index runs', labelNames: ['kind'], buckets: [1, 5, 15, 60, 300, 900, 3600, 14_400],
    }),
    recovered: counterOn(registry, { name: 'lore_core_index_attempts_recovered_total', help: 'Running index attempts whose worker went silent, failed and rescheduled', labelNames: [] }),
  };
}

export interface IndexingDeps {
  metrics?: IndexingMetrics;
  db: Db;
  logger: Logger;
  signer: IdentitySigner;
  secrets: SecretBox;
  documents: ConnectorDocuments;
  sources: SourceFactory;
  settings: IndexingSettings;
  /** Where files uploaded for `file` connectors are kept: a deleted connector's files no other names go too. */
  blobs: BlobStore | null;
}

/** The pair's documents are in no memory: the identity that made it had none. */
const NO_MEMORY = 'the pair has no memory to index into: the workspace it was created in has none';
const MEMORY_GONE = 'the memory this pair indexes into no longer exists (it was deleted): the pair is paused; delete it, or make a new pair in a workspace with a memory';

/**
 * Writes a live attempt for the pair with its message, in the caller's transaction; null when the pair already has
 * a live attempt. Counts the attempt on the pair and records it in the schedule (so no scheduler starts another).
 */
export async function enqueueAttempt(sql: Sql, tenantId: string, ccPairId: number, kind: AttemptKind, prune: boolean, trigger: AttemptTrigger): Promise<IndexAttemptRow | null> {
  const attempt = await insertAttempt(sql, tenantId, { cc_pair_id: ccPairId, kind, prune, trigger });
  if (!attempt) return null;
  await countAttempt(sql, tenantId, ccPairId);
  await setScheduledAttempt(sql, tenantId, ccPairId, attempt.id);
  const message: ConnectorIndexMessage = { event_id: `idx_${randomUUID()}`, tenant_id: tenantId, cc_pair_id: ccPairId, attempt_id: attempt.id };
  // Keyed by the pair. Messages are acknowledged before their runs end, so a deletion may start while the run it
  // canceled is still going: the pair's write lease (`PairRun.leased`) keeps their writes apart.
  await enqueueOutbox(sql, { topic: TOPICS.connectorsIndex, key: `${tenantId}:${ccPairId}`, eventId: message.event_id, value: message });
  return attempt;
}

/** Ends the pair's live attempt (a pause, a deletion); the worker running it sees that at its next heartbeat. */
export async function cancelLiveAttempt(sql: Sql, tenantId: string, ccPairId: number, reason: string): Promise<void> {
  const live = await liveAttempt(sql, tenantId, ccPairId);
  if (!live) return;
  // What the run wrote before it was stopped stays in the memory, and the pair and the attempt say so (a write under
  // way ends, under the pair's write lease, and counts itself on the pair; the run writes nothing after it).
  if (await finishAttempt(sql, tenantId, live.id, 'canceled', reason, await countDocuments(sql, tenantId, ccPairId))) {
    await recordEnd(sql, tenantId, ccPairId, live, 'canceled', false);
  }
}

/** A pair made or resumed: due now. */
export function scheduleNow(sql: Sql, tenantId: string, ccPairId: number): Promise<void> {
  return schedulePair(sql, tenantId, ccPairId);
}

export { unschedulePair };

/**
 * One scheduler pass: fails attempts whose worker went silent, then starts every due pair (at most
 * `schedulePerTick`). Due pairs are locked FOR UPDATE SKIP LOCKED, so schedulers of several replicas never start the
 * same pair. Answers how many attempts it started.
 */
export async function scheduleTick(deps: IndexingDeps, now: () => Date = () => new Date()): Promise<number> {
  await recoverStale(deps);
  let started = 0;
  for (const tenantId of await tenantsDue(deps.db, deps.settings.schedulePerTick)) {
    started += await deps.db.withTenant(tenantId, async (sql) => {
      let n = 0;
      for (const pairId of await lockDuePairs(sql, tenantId, deps.settings.schedulePerTick)) {
        const pair = await getCcPair(sql, tenantId, pairId);
        if (!pair || pair.status === 'PAUSED') {
          await unschedulePair(sql, tenantId, pairId);
          continue;
        }
        if (pair.status === 'DELETING') {
          if (await enqueueAttempt(sql, tenantId, pairId, 'delete', false, 'deletion')) n++;
          continue;
        }
        const connector = await getConnector(sql, tenantId, pair.connector_id);
        if (!connector) {
          await unschedulePair(sql, tenantId, pairId);
          continue;
        }
        const plan = runPlan({ lastSuccess: pair.last_successful_index_time, lastPruned: pair.last_pruned, pruneFreq: connector.prune_freq }, now());
        if (await enqueueAttempt(sql, tenantId, pairId, plan.kind, plan.prune, 'schedule')) n++;
      }
      return n;
    });
  }
  return started;
}

/** Fails running attempts whose worker stopped heartbeating; their pairs are due again at once. */
export async function recoverStale(deps: IndexingDeps): Promise<number> {
  let recovered = 0;
  for (const s of await staleAttempts(deps.db, deps.settings.staleMs, 100)) {
    const done = await deps.db.withTenant(s.tenant_id, async (sql) => {
      const row = await lockSchedule(sql, s.tenant_id, s.cc_pair_id);
      if (!row || row.attempt_id !== s.attempt_id) return false;
      const attempt = await getAttempt(sql, s.tenant_id, s.attempt_id, true);
      if (attempt && (attempt.status === 'in_progress' || attempt.status === 'not_started')) {
        await finishAttempt(sql, s.tenant_id, attempt.id, 'failed', 'the worker running it stopped answering', await countDocuments(sql, s.tenant_id, s.cc_pair_id));
        await recordEnd(sql, s.tenant_id, s.cc_pair_id, attempt, 'failed', false);
      }
      await clearAttempt(sql, s.tenant_id, s.cc_pair_id, s.attempt_id, new Date());
      return true;
    });
    if (done) {
      recovered++;
      deps.metrics?.recovered.inc();
      deps.logger.warn({ tenant_id: s.tenant_id, cc_pair_id: s.cc_pair_id, attempt_id: s.attempt_id }, 'index attempt abandoned by its worker; failed and rescheduled');
    }
  }
  return recovered;
}

/** The pair's counts and statuses after an attempt ended. */
async function recordEnd(sql: Sql, tenantId: string, pairId: number, attempt: IndexAttemptRow, status: AttemptStatus, pruned: boolean): Promise<void> {
  await recordAttemptEnd(sql, tenantId, pairId, {
    num_docs_indexed: await countDocuments(sql, tenantId, pairId),
    status,
    repeated_errors: inRepeatedErrorState(await lastEndedStatuses(sql, tenantId, pairId, 3)),
    // The next poll asks for changes since this run started (what changed while it ran is not missed), and only
    // after a run that read its source whole and wrote everything: after a limit or a failed write, a source that
    // polls by modification time would never offer the unread or unwritten documents again.
    succeeded_from: status === 'success' && attempt.kind !== 'delete' ? (attempt.time_started ?? attempt.time_created) : null,
    pruned,
  });
}

/** How long a write waits before it looks again at a lease another attempt holds. */
const LEASE_POLL_MS = 200;

/**
 * Takes the pair's write lease for the attempt, when the attempt is still live and no other attempt holds the lease
 * (or its holder stopped renewing it for `staleMs`). The pair's row is locked first, the order a pause or a deletion
 * takes before it cancels the attempt, and the attempt is read in a statement of its own after it: a cancel that
 * committed meanwhile is seen, and one that comes later waits for this transaction.
 */
async function takeWriteLease(sql: Sql, tenantId: string, pairId: number, attemptId: number, staleMs: number): Promise<'taken' | 'busy' | 'ended'> {
  const lease = await lockWriteLease(sql, tenantId, pairId, staleMs);
  if (!lease) return 'ended';
  const attempt = await getAttempt(sql, tenantId, attemptId);
  if (attempt?.status !== 'in_progress') return 'ended';
  if (lease.attemptId !== null && lease.attemptId !== attemptId && lease.fresh) return 'busy';
  await holdWriteLease(sql, tenantId, pairId, attemptId);
  return 'taken';
}

/**
 * A graph call that failed without an answer (unreachable, or too slow: the client gave up): the graph may still
 * apply it, so the lease it was made under is not given back (it goes stale instead).
 */
function unanswered(err: unknown): boolean {
  return err instanceof GraphCallError && !(err instanceof ConnectorDocumentsError);
}

interface Claimed {
  attempt: IndexAttemptRow;
  pair: CcPairRow;
  connector: ConnectorRow | null;
  credentialJson: Record<string, unknown> | null;
  previous: Map<string, Validators>;
}

export type AttemptResult = 'duplicate' | AttemptStatus;

/**
 * Handles one `lore.connectors.index` message: claims its attempt (a redelivered or canceled one is done at once),
 * runs it to its end, and records the outcome. `stop` is the worker shutting down: the attempt ends `canceled` and
 * its pair is due again at once.
 */
export async function runAttempt(deps: IndexingDeps, msg: ConnectorIndexMessage, stop: AbortSignal): Promise<AttemptResult> {
  const { tenant_id: tenantId, cc_pair_id: pairId } = msg;
  const claimed = await deps.db.withTenant(tenantId, async (sql): Promise<Claimed | null> => {
    const attempt = await claimAttempt(sql, tenantId, msg.attempt_id);
    if (!attempt) return null;
    const pair = await getCcPair(sql, tenantId, pairId);
    if (!pair) {
      await finishAttempt(sql, tenantId, attempt.id, 'failed', 'the pair no longer exists', null);
      await clearAttempt(sql, tenantId, pairId, attempt.id, null);
      return null;
    }
    await heartbeat(sql, tenantId, pairId, attempt.id);
    if (attempt.kind === 'delete') return { attempt, pair, connector: null, credentialJson: null, previous: new Map() };
    const connector = await getConnector(sql, tenantId, pair.connector_id);
    const credential = await getCredential(sql, tenantId, pair.credential_id);
    const credentialJson = credential ? openCredentialJson(deps.secrets, tenantId, credential.id, credential.credential_json as Record<string, string>) : null;
    return { attempt, pair, connector, credentialJson, previous: await keptValidators(sql, tenantId, pairId) };
  });
  if (!claimed) return 'duplicate';
  const log = deps.logger.child({ tenant_id: tenantId, cc_pair_id: pairId, attempt_id: claimed.attempt.id });
  const run = new PairRun(deps, claimed, stop, log);
  try {
    return await run.execute();
  } finally {
    run.close();
  }
}

/** Why a run stopped before its source's end (besides the source's own reasons). */
type Interruption = 'shutdown' | 'canceled' | null;

class PairRun {
  private readonly abort = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private interruption: Interruption = null;
  private readonly progress: AttemptProgress = { new_docs_indexed: 0, docs_unchanged: 0, docs_skipped: 0, docs_removed: 0 };
  private writeErrors = 0;
  /** The graph answered that the pair's memory does not exist (deleted): the run fails and the pair is paused. */
  private memoryGone = false;
  /**
   * The pair's document count was counted in this run (its first batch, and the batch after a prune): from then on
   * each batch adds the documents it kept that the pair did not have.
   */
  private docsCounted = false;
  private readonly tenantId: string;
  private readonly pairId: number;
  private readonly onStop = () => this.interrupt('shutdown');
  private readonly started = Date.now();

  constructor(
    private readonly deps: IndexingDeps,
    private readonly c: Claimed,
    private readonly stop: AbortSignal,
    private readonly log: Logger,
  ) {
    this.tenantId = c.pair.tenant_id;
    this.pairId = c.pair.id;
    if (stop.aborted) this.interrupt('shutdown');
    else stop.addEventListener('abort', this.onStop, { once: true });
    this.timer = setInterval(() => void this.beat(), deps.settings.heartbeatMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.stop.removeEventListener('abort', this.onStop);
  }

  private interrupt(why: Exclude<Interruption, null>): void {
    if (this.interruption === null) this.interruption = why;
    this.abort.abort();
  }

  /** Says the worker is alive; stops the run when its attempt ended meanwhile (paused, deleted, failed by recovery). */
  private async beat(): Promise<void> {
    try {
      const alive = await this.deps.db.withTenant(this.tenantId, async (sql) => {
        const attempt = await getAttempt(sql, this.tenantId, this.c.attempt.id);
        if (attempt?.status !== 'in_progress') return false;
        return heartbeat(sql, this.tenantId, this.pairId, this.c.attempt.id);
      });
      if (!alive) this.interrupt('canceled');
    } catch (err) {
      // A missed heartbeat is not fatal; enough of them and the scheduler fails the attempt.
      this.log.warn({ err }, 'index attempt heartbeat failed');
    }
  }

  /** The identity the indexer writes the pair's documents with: its memory, its creating administrator. */
  private identity(): Promise<string> {
    const p = this.c.pair;
    return this.deps.signer.sign({
      tenant_id: p.tenant_id,
      workspace_id: p.workspace_id,
      memory_id: p.memory_id,
      credential: (p.creator_credential || 'session') as CredentialKind,
      subject: p.creator_subject || 'indexer',
      role: 'admin',
      request_id: `idx-${this.c.attempt.id}`,
    });
  }

  private access(): PairAccess {
    return { public: this.c.pair.access_type === 'public', groups: this.c.pair.groups };
  }

  /**
   * Runs `change` (a write into the pair's memory, or a removal from it, with what the indexer keeps of it) holding
   * the pair's write lease, renewed every heartbeat until the graph answered. Waits while another attempt holds it (a
   * canceled run's last write, still under way); does nothing and answers null once this attempt is no longer live
   * (paused, deleted) or the run is stopping. So a deletion, which takes the lease before it removes the pair's
   * documents, never runs beside a write, and a canceled run writes nothing after it (before 2026-11-30 a run
   * canceled by a deletion could push one more batch after the deletion, and its documents stayed in the memory).
   */
  private async leased<T>(change: () => Promise<T>): Promise<{ value: T } | null> {
    const { tenantId, pairId } = this;
    const attemptId = this.c.attempt.id;
    for (;;) {
      const take = await this.deps.db.withTenant(tenantId, (sql) => takeWriteLease(sql, tenantId, pairId, attemptId, this.deps.settings.staleMs));
      if (take === 'taken') break;
      if (take === 'ended') {
        this.interrupt('canceled');
        return null;
      }
      if (this.abort.signal.aborted) return null;
      await new Promise((r) => setTimeout(r, LEASE_POLL_MS));
    }
    const renew = setInterval(() => {
      this.deps.db
        .withTenant(tenantId, (sql) => renewWriteLease(sql, tenantId, pairId, attemptId))
        .catch((err: unknown) => this.log.warn({ err }, 'renewing the write lease failed'));
    }, this.deps.settings.heartbeatMs);
    renew.unref();
    let release = true;
    try {
      return { value: await change() };
    } catch (err) {
      release = !unanswered(err);
      throw err;
    } finally {
      clearInterval(renew);
      if (release) {
        await this.deps.db
          .withTenant(tenantId, (sql) => releaseWriteLease(sql, tenantId, pairId, attemptId))
          .catch((err: unknown) => this.log.warn({ err }, 'releasing the write lease failed; it goes stale'));
      }
    }
  }

  async execute(): Promise<AttemptResult> {
    let status: AttemptStatus;
    let error: string | null = null;
    let pruned = false;
    try {
      if (!this.c.pair.memory_id) {
        status = this.c.attempt.kind === 'delete' ? await this.deletePair(false) : 'failed';
        if (status === 'failed') error = NO_MEMORY;
      } else if (this.c.attempt.kind === 'delete') {
        status = await this.deletePair(true);
      } else {
        const outcome = await this.index();
        status = this.interruption ? 'canceled' : endStatus(outcome.stop, this.writeErrors);
        error = outcome.detail ?? (outcome.stop === 'completed' ? null : `the run stopped: ${outcome.stop}`);
        if (this.writeErrors > 0) error = `${error ? `${error}; ` : ''}${this.writeErrors} documents could not be written`;
        if (this.c.attempt.prune && outcome.stop === 'completed' && !this.interruption) pruned = await this.prune();
      }
    } catch (err) {
      status = this.interruption ? 'canceled' : 'failed';
      error = this.interruption ? null : errorText(err);
      this.log.warn({ err }, 'index attempt failed');
    }
    if (status === 'canceled') error = this.interruption === 'shutdown' ? 'the worker stopped' : (error ?? 'canceled');
    if (this.c.attempt.kind === 'delete' && status === 'success') {
      this.deps.metrics?.attempts.inc({ kind: 'delete', status });
      return status;
    }
    await this.finish(status, error, pruned);
    return status;
  }

  /** Drives the source (everything, or changes since the last success) and writes its documents in batches. */
  private async index(): Promise<RunOutcome> {
    const connector = this.c.connector;
    if (!connector || !this.c.credentialJson) throw new Error('the connector or its credential no longer exists');
    const source = this.deps.sources(connector, this.c.credentialJson, this.tenantId);
    const options = { signal: this.abort.signal, limits: this.deps.settings.limits };
    const since = this.c.pair.last_successful_index_time;
    const run = this.c.attempt.kind === 'load' || !since ? source.loadAll(options) : source.pollSince(since, this.c.previous, options);
    // What the source yields waits in `pending` until it makes a full batch (`batchDocuments` documents or
    // `batchBytes` of text) or its first document has waited `batchLingerMs`: a fast site is written in full batches,
    // and a slow one's pages reach the memory within about the linger of being read. At most one write is in flight
    // (a batch that is due meanwhile goes when it ends), and the source waits while a full batch waits behind it.
    const pending: Array<{ document: SourceDocument; validators: Validators; at: number }> = [];
    let pendingBytes = 0;
    let writing: Promise<void> | null = null;
    let writeFailure: { err: unknown } | null = null;
    let lingering: NodeJS.Timeout | null = null;
    const { batchDocuments, batchBytes, batchLingerMs } = this.deps.settings;
    /** Rethrows a write's failure (read through a call: the callbacks below set it while this code awaits). */
    const rethrow = () => {
      if (writeFailure) throw writeFailure.err;
    };
    const full = () => pending.length >= batchDocuments || pendingBytes >= batchBytes;
    const take = () => {
      const out: Array<{ document: SourceDocument; validators: Validators }> = [];
      let taken = 0;
      while (pending.length > 0 && out.length < batchDocuments && (out.length === 0 || taken < batchBytes)) {
        const next = pending.shift()!;
        const size = Buffer.byteLength(next.document.text);
        out.push({ document: next.document, validators: next.validators });
        taken += size;
        pendingBytes -= size;
      }
      return out;
    };
    const stopLingering = () => {
      if (lingering) clearTimeout(lingering);
      lingering = null;
    };
    /** At the run's end: everything left is due at once. After the run's failure: nothing more is written. */
    let draining = false;
    let stopped = false;
    /** Starts a write of what is due, else waits for the linger. */
    const kick = () => {
      // An interrupted run (canceled, or the worker stopping) starts no more writes; the one in flight ends.
      if (stopped || writing || writeFailure || pending.length === 0 || this.interruption) return;
      const waited = Date.now() - pending[0]!.at;
      if (!draining && !full() && waited < batchLingerMs) {
        lingering ??= setTimeout(() => {
          lingering = null;
          kick();
        }, batchLingerMs - waited);
        return;
      }
      stopLingering();
      writing = this.write(take()).then(
        () => {
          writing = null;
          kick();
        },
        (err: unknown) => {
          // Kept for the next document or the end of the run to rethrow; nothing more is written.
          writeFailure = { err };
          writing = null;
        },
      );
    };
    let outcome: RunOutcome;
    try {
      outcome = await consume(run, async (item) => {
        rethrow();
        if (item.kind === 'skipped') {
          this.progress.docs_skipped++;
          return;
        }
        if (beforeIndexingStart(item.document.updated_at, connector.indexing_start)) {
          this.progress.docs_skipped++;
          return;
        }
        pending.push({ document: item.document, validators: item.validators, at: Date.now() });
        pendingBytes += Buffer.byteLength(item.document.text);
        kick();
        // Back-pressure: a full batch waits behind the write in flight; the source reads on once it has gone.
        while (full() && writing) {
          await writing;
          rethrow();
        }
      });
    } catch (err) {
      // The write in flight ends before the run does (what it wrote is kept); the run's own failure is what counts.
      stopped = true;
      stopLingering();
      while (writing) await writing;
      throw err;
    }
    // Documents the source found unchanged (a 304, an old enough date, the same hash) were not yielded: counted
    // before the last writes, so that the last one carries them; with nothing left to write, the counts alone.
    this.progress.docs_unchanged += outcome.unchanged;
    const wrote = pending.length > 0 && !this.interruption;
    // Everything left goes now, batch after batch.
    draining = true;
    stopLingering();
    kick();
    while (writing) await writing;
    stopLingering();
    rethrow();
    if (!wrote) await this.saveProgress([]);
    return outcome;
  }

  /**
   * Writes a batch into the memory, then keeps what each document became and the run's counts, under the pair's
   * write lease: nothing once the attempt is no longer live. A write under way is not aborted by a cancel: it ends
   * (within the graph client's timeout) before the lease is given back.
   */
  private async write(batch: Array<{ document: SourceDocument; validators: Validators }>): Promise<void> {
    try {
      await this.leased(async () => {
        const results = await this.deps.documents.push(await this.identity(), this.pairId, this.access(), batch.map((b) => b.document));
        const kept: KeptDocument[] = [];
        results.forEach((r, i) => {
          const b = batch[i]!;
          this.deps.metrics?.documents.inc({ outcome: r.outcome });
          if (r.outcome === 'skipped') this.progress.docs_skipped++;
          else {
            if (r.outcome === 'unchanged') this.progress.docs_unchanged++;
            else this.progress.new_docs_indexed++;
            kept.push({ doc_key: b.document.id, doc_id: r.doc_id, validators: b.validators });
          }
        });
        await this.saveProgress(kept);
      });
    } catch (err) {
      // Only the graph's refusals and failures are the batch's; anything else (the database) fails the run.
      if (this.abort.signal.aborted || !(err instanceof GraphCallError)) throw err;
      // The memory is gone (deleted, erased): no later write can succeed, so the run stops here, and crawling the
      // source again on the schedule would only read it for nothing.
      if (err instanceof ConnectorDocumentsError && err.status === 404) {
        this.memoryGone = true;
        this.abort.abort();
        throw new Error(MEMORY_GONE);
      }
      // One failed write does not end the run: its documents are retried by the next one (nothing was kept).
      this.writeErrors += batch.length;
      this.log.warn({ err, documents: batch.length }, 'writing documents to the memory failed');
    }
  }

  private async saveProgress(kept: KeptDocument[]): Promise<void> {
    const delta = { ...this.progress };
    this.progress.new_docs_indexed = this.progress.docs_unchanged = this.progress.docs_skipped = this.progress.docs_removed = 0;
    const counted = this.docsCounted;
    const going = await this.deps.db.withTenant(this.tenantId, async (sql) => {
      // What the memory now holds is kept even when the attempt was canceled meanwhile: the documents are there.
      const added = await keepDocuments(sql, this.tenantId, this.pairId, kept);
      // The pair's count follows the run batch by batch (before 2026-11-30 it moved only when the attempt ended, and
      // showed 0 during a first load whose documents were already found by search). The pair's row before the
      // attempt's: the order a pause or a deletion locks them in. Counted once per run, then grown by each batch's
      // new documents (only this run writes the pair's documents: it holds the write lease); before 2026-12-01 every
      // batch counted them all, so a first load read the pair's documents once per batch (5,000 documents: 200,000
      // rows, growing with the square of the load).
      if (counted) await addDocsIndexed(sql, this.tenantId, this.pairId, added);
      else await setDocsIndexed(sql, this.tenantId, this.pairId, await countDocuments(sql, this.tenantId, this.pairId));
      return addProgress(sql, this.tenantId, this.c.attempt.id, delta);
    });
    this.docsCounted = true;
    if (!going) this.interrupt('canceled');
  }

  /** Lists what still exists and removes the rest; only after a listing that completed. */
  private async prune(): Promise<boolean> {
    const connector = this.c.connector!;
    const known = await this.deps.db.withTenant(this.tenantId, (sql) => keptValidators(sql, this.tenantId, this.pairId));
    const source = this.deps.sources(connector, this.c.credentialJson!, this.tenantId);
    const listed = new Set<string>();
    const outcome = await consume(source.listIds({ signal: this.abort.signal, limits: this.deps.settings.limits, previous: known }), (id) => {
      listed.add(id);
    });
    if (outcome.stop !== 'completed' || this.interruption) {
      this.log.info({ stop: outcome.stop }, 'listing did not complete; nothing pruned');
      return false;
    }
    const gone = idsToPrune(known.keys(), listed);
    for (let i = 0; i < gone.length; i += 500) {
      const ids = gone.slice(i, i + 500);
      // Under the write lease, as a write: a run canceled meanwhile removes nothing more.
      const removed = await this.leased(async () => {
        await this.deps.documents.remove(await this.identity(), this.pairId, ids);
        this.progress.docs_removed += await this.deps.db.withTenant(this.tenantId, (sql) => forgetDocuments(sql, this.tenantId, this.pairId, ids));
      });
      if (!removed) return false;
    }
    // The removals are counted with the rest: the pair's documents are counted again.
    this.docsCounted = false;
    await this.saveProgress([]);
    return true;
  }

  /**
   * Removes every document of the pair from its memory, then the pair (and its connector when no other pair reads
   * it) with its attempts and what was kept. A deleted `file` connector's uploaded files that no other connector
   * names are deleted after. A failure leaves the pair DELETING; the scheduler tries again. It holds the pair's write
   * lease throughout: it waits for a write of the run it canceled that is still under way, and no write follows it.
   */
  private async deletePair(inMemory: boolean): Promise<AttemptStatus> {
    const done = await this.leased(async () => {
      if (inMemory) await this.deps.documents.remove(await this.identity(), this.pairId, undefined);
      return this.deps.db.withTenant(this.tenantId, async (sql) => {
        const connector = await getConnector(sql, this.tenantId, this.c.pair.connector_id, 'update');
        await forgetPairDocuments(sql, this.tenantId, this.pairId);
        await deleteAttemptsOfPair(sql, this.tenantId, this.pairId);
        await unschedulePair(sql, this.tenantId, this.pairId);
        await deleteCcPair(sql, this.tenantId, this.pairId);
        const deleted = await deleteConnectorWithoutPairs(sql, this.tenantId, this.c.pair.connector_id);
        return deleted && connector?.source === 'file' ? filesLeftBehind(sql, this.tenantId, connector.connector_specific_config) : [];
      });
    });
    if (!done) throw new Error('the deletion stopped before it removed anything');
    const leftBehind = done.value;
    this.log.info('cc pair deleted with its documents');
    if (leftBehind.length > 0 && this.deps.blobs) {
      await deleteConnectorFiles({ blobs: this.deps.blobs, logger: this.log }, this.tenantId, leftBehind);
      this.log.info({ files: leftBehind.length }, 'uploaded files of the deleted connector deleted');
    }
    return 'success';
  }

  private async finish(status: AttemptStatus, error: string | null, pruned: boolean): Promise<void> {
    const { tenantId, pairId } = this;
    const attempt = this.c.attempt;
    await this.deps.db.withTenant(tenantId, async (sql) => {
      const total = await countDocuments(sql, tenantId, pairId);
      const ended = await finishAttempt(sql, tenantId, attempt.id, status, error ? error.slice(0, 2000) : null, total);
      if (ended) await recordEnd(sql, tenantId, pairId, attempt, status, pruned);
      else if (pruned) await recordEnd(sql, tenantId, pairId, attempt, 'canceled', true);
      let pair = await getCcPair(sql, tenantId, pairId);
      if (pair && this.memoryGone && pair.status === 'ACTIVE') pair = await setCcPairStatus(sql, tenantId, pairId, 'PAUSED');
      const connector = pair ? await getConnector(sql, tenantId, pair.connector_id) : null;
      // Due again after its refresh interval (a deletion that failed: a minute), or at once after a shutdown.
      const now = new Date();
      const next =
        this.interruption === 'shutdown' ? now : attempt.kind === 'delete' ? nextRunAt(now, 60) : nextRunAt(now, connector?.refresh_freq ?? 3600);
      await clearAttempt(sql, tenantId, pairId, attempt.id, pair && pair.status !== 'PAUSED' ? next : null);
    });
    this.deps.metrics?.attempts.inc({ kind: attempt.kind, status });
    if (attempt.kind !== 'delete') this.deps.metrics?.attemptSeconds.observe({ kind: attempt.kind }, (Date.now() - this.started) / 1000);
    this.log.info({ status, error }, 'index attempt ended');
  }
}

/** An error's message for the attempt's record, without addresses (the outbound client's errors carry none). */
function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/https?:\/\/\S+/g, '<url>').slice(0, 500);
}
