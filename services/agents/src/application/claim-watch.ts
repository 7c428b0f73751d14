import { isRunning } from '../domain/workflow';
import { updateList } from '../store/lists';
import { getWorkflow, heartbeatWorkflow, updateWorkflow, workflowFlagsOf, type WorkflowRow } from '../store/workflows';
import { enqueueWorkflow } from './workflows';
import type { AgentsDeps } from './context';
import { publishEvents, recordEvent, type WorkflowEvent } from './progress';

/** Why a claimed run must end, as its watcher sees it. */
export type ClaimEnd = 'stop' | 'lost' | 'shutdown';

export interface ClaimWatchDeps {
  agents: AgentsDeps;
  settings: { heartbeatMs: number; leaseMs: number; stopPollMs: number };
  /** This worker's name in claimed_by. */
  workerId: string;
  /** The worker's shutdown; it outlives every run. */
  shutdown: AbortSignal;
}

/**
 * Keeps a running workflow's claim and watches for its end (docs/agents.md, "Workflows"), for every kind a worker runs
 * (searches, sessions, research): a heartbeat renews the claim every `heartbeatMs` (a claim no longer held, or a stop
 * asked, ends the run), the worker's stop watch reads the stop flag every `stopPollMs`, and the worker's shutdown ends
 * it at once. `end` may be called more than once; the caller keeps the first reason. Answers the function that stops
 * watching (timers cleared, the run off the stop watch, the shutdown listener removed: hundreds of runs share that
 * signal, none may stay on it).
 */
export function watchClaim(deps: ClaimWatchDeps, tenantId: string, threadId: string, end: (why: ClaimEnd) => void, what = 'workflow'): () => void {
  const { db, logger } = deps.agents;
  const onShutdown = () => end('shutdown');
  if (deps.shutdown.aborted) end('shutdown');
  deps.shutdown.addEventListener('abort', onShutdown, { once: true });
  const heartbeat = setInterval(() => {
    db.withTenant(tenantId, (sql) => heartbeatWorkflow(sql, tenantId, threadId, deps.workerId, deps.settings.leaseMs))
      .then((h) => {
        if (!h.held) end('lost');
        else if (h.stopRequested) end('stop');
      })
      .catch((err: unknown) => logger.warn({ err, thread_id: threadId }, `${what} heartbeat failed`));
  }, deps.settings.heartbeatMs);
  heartbeat.unref();
  const unwatchStop = stopWatchOf(deps).watch(tenantId, threadId, end);
  return () => {
    clearInterval(heartbeat);
    unwatchStop();
    deps.shutdown.removeEventListener('abort', onShutdown);
  };
}

/**
 * The stop flags of every run a worker holds, read together: every `stopPollMs`, one statement per tenant names all
 * of that tenant's runs (a worker running 100 workflows reads its flags in one transaction, not in 100). A run whose
 * workflow is gone or claimed by another worker ends `lost`; one whose stop was asked ends `stop`. A read that fails
 * is tried again at the next tick, as the heartbeat will notice a database that stays away. Ticks never overlap.
 */
export class StopWatch {
  private readonly runs = new Map<string, Map<string, (why: ClaimEnd) => void>>();
  private timer: NodeJS.Timeout | null = null;
  private reading = false;

  constructor(private readonly deps: Pick<ClaimWatchDeps, 'agents' | 'workerId'> & { settings: Pick<ClaimWatchDeps['settings'], 'stopPollMs'> }) {}

  /** Watches one run until the answered function is called. */
  watch(tenantId: string, threadId: string, end: (why: ClaimEnd) => void): () => void {
    let tenant = this.runs.get(tenantId);
    if (!tenant) this.runs.set(tenantId, (tenant = new Map()));
    const key = threadId.toLowerCase();
    tenant.set(key, end);
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.deps.settings.stopPollMs);
      this.timer.unref();
    }
    return () => {
      const runs = this.runs.get(tenantId);
      if (runs?.get(key) !== end) return;
      runs.delete(key);
      if (runs.size === 0) this.runs.delete(tenantId);
      if (this.runs.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    };
  }

  /** How many runs are watched (for tests). */
  get size(): number {
    let n = 0;
    for (const runs of this.runs.values()) n += runs.size;
    return n;
  }

  /** One read of every watched run's flags. */
  async tick(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      await Promise.all(
        [...this.runs].map(async ([tenantId, runs]) => {
          const ids = [...runs.keys()];
          const flags = await this.deps.agents.db.withTenant(tenantId, (sql) => workflowFlagsOf(sql, tenantId, ids)).catch(() => null);
          if (!flags) return;
          for (const id of ids) {
            // A run that stopped watching meanwhile is not told anything.
            const end = this.runs.get(tenantId)?.get(id);
            if (!end) continue;
            const w = flags.get(id);
            if (!w || w.claimed_by !== this.deps.workerId) end('lost');
            else if (w.stop_requested) end('stop');
          }
        }),
      );
    } finally {
      this.reading = false;
    }
  }
}

/** One stop watch per worker: its database, its name and its poll period. */
const stopWatches = new WeakMap<AgentsDeps, Map<string, StopWatch>>();

function stopWatchOf(deps: ClaimWatchDeps): StopWatch {
  let byWorker = stopWatches.get(deps.agents);
  if (!byWorker) stopWatches.set(deps.agents, (byWorker = new Map()));
  const key = `${deps.workerId}\n${deps.settings.stopPollMs}`;
  let watch = byWorker.get(key);
  if (!watch) byWorker.set(key, (watch = new StopWatch({ agents: deps.agents, workerId: deps.workerId, settings: { stopPollMs: deps.settings.stopPollMs } })));
  return watch;
}

/**
 * A worker shutting down gives a run's claim back and sends the workflow to the workers again, in one transaction; if
 * that fails, the sweep resumes it once the claim expires.
 */
export async function handOverClaim(deps: Pick<ClaimWatchDeps, 'agents' | 'workerId'>, tenantId: string, threadId: string, what = 'workflow'): Promise<void> {
  await deps.agents.db
    .withTenant(tenantId, async (sql) => {
      const released = await updateWorkflow(sql, tenantId, threadId, { claimed_by: null, claimed_until_ms: null }, deps.workerId);
      if (released) await enqueueWorkflow(sql, tenantId, threadId, 'resume');
    })
    .catch((err: unknown) => deps.agents.logger.warn({ err, thread_id: threadId }, `could not hand the ${what} over; the sweep resumes it once its claim expires`));
}

/** A claimed run ended before finishing: a stop was asked, the claim was lost, or the worker is shutting down. */
export class RunEnded extends Error {
  constructor(readonly why: ClaimEnd) {
    super(`run ended: ${why}`);
  }
}

/**
 * What a worker's claimed run shares, a list workflow's and a deep research's alike: its end (the first reason wins
 * and aborts the run's signal, which every fetch and model call in flight listens to), the claim watcher, and how a
 * run that threw answers (`ended`).
 */
export abstract class ClaimedRun {
  private readonly abort = new AbortController();
  protected endedBy: ClaimEnd | null = null;
  private readonly unwatch: () => void;
  private readonly claim: { deps: ClaimWatchDeps; what: 'workflow' | 'research'; kinds: readonly string[] };

  /** `kinds`: the workflow kinds this run reads its row as. */
  constructor(
    deps: ClaimWatchDeps,
    protected readonly tenantId: string,
    protected readonly threadId: string,
    what: 'workflow' | 'research',
    kinds: readonly string[],
  ) {
    this.claim = { deps, what, kinds };
    this.unwatch = watchClaim(deps, tenantId, threadId, (why) => this.end(why), what);
  }

  protected end(why: ClaimEnd): void {
    if (this.endedBy) return;
    this.endedBy = why;
    this.abort.abort(new RunEnded(why));
  }

  dispose(): void {
    this.unwatch();
  }

  protected get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Throws RunEnded once the run has ended. */
  protected check(): void {
    if (this.endedBy) throw new RunEnded(this.endedBy);
  }

  /**
   * How a run that threw answers: a stop finishes it `stopped`; a lost claim or a shutdown leaves it to the claim's
   * expiry (another worker runs it again); anything else is the run's error. A fetch aborted by the run's signal
   * fails with its own error: the run's end is then the reason.
   */
  protected async ended(err: unknown): Promise<string> {
    const why = err instanceof RunEnded ? err.why : this.endedBy;
    if (why === 'stop') return await this.finishStopped();
    if (why) {
      this.claim.deps.agents.logger.info({ thread_id: this.threadId, why }, `${this.claim.what} run ended without finishing; its claim expires for another worker`);
      return why;
    }
    await this.finishError(err);
    return 'error';
  }

  /**
   * Ends a run that was asked to stop, in one transaction: status `stopped`, the claim released, its list (if it has
   * one) `stopped`, and the `stopped` event with `stoppedData`. `lost` when the run is no longer this worker's.
   */
  protected async finishStopped(): Promise<string> {
    const { deps, kinds } = this.claim;
    const { tenantId, threadId } = this;
    const events: WorkflowEvent[] = [];
    const stopped = await deps.agents.db.withTenant(tenantId, async (sql) => {
      const w = await getWorkflow(sql, tenantId, threadId, kinds, true);
      if (!w || w.claimed_by !== deps.workerId || !isRunning(w.status)) return false;
      await updateWorkflow(sql, tenantId, threadId, { status: 'stopped', stop_requested: false, claimed_by: null, claimed_until_ms: null }, deps.workerId);
      if (w.list_id) await updateList(sql, tenantId, w.list_id, { status: 'stopped' });
      events.push(await recordEvent(sql, tenantId, threadId, 'stopped', this.stoppedData(w)));
      return true;
    });
    await publishEvents(deps.agents.streams, deps.agents.logger, events);
    return stopped ? 'stopped' : 'lost';
  }

  /** What the `stopped` event says. */
  protected stoppedData(w: WorkflowRow): Record<string, unknown> {
    return { step: w.current_step };
  }

  protected abstract finishError(err: unknown): Promise<void>;
}
