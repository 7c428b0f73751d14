import { heartbeatWorkflow, updateWorkflow, workflowFlags } from '../store/workflows';
import { enqueueWorkflow } from './workflows';
import type { AgentsDeps } from './context';

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
 * asked, ends the run), a watcher reads the stop flag every `stopPollMs`, and the worker's shutdown ends it at once.
 * `end` may be called more than once; the caller keeps the first reason. Answers the function that stops watching
 * (timers cleared, the shutdown listener removed: hundreds of runs share that signal, none may stay on it).
 */
export function watchClaim(deps: ClaimWatchDeps, tenantId: string, threadId: string, end: (why: ClaimEnd) => void, what = 'workflow'): () => void {
  const { db, logger } = deps.agents;
  const onShutdown = () => end('shutdown');
  if (deps.shutdown.aborted) end('shutdown');
  deps.shutdown.addEventListener('abort', onShutdown, { once: true });
  const timers = [
    setInterval(() => {
      db.withTenant(tenantId, (sql) => heartbeatWorkflow(sql, tenantId, threadId, deps.workerId, deps.settings.leaseMs))
        .then((h) => {
          if (!h.held) end('lost');
          else if (h.stopRequested) end('stop');
        })
        .catch((err: unknown) => logger.warn({ err, thread_id: threadId }, `${what} heartbeat failed`));
    }, deps.settings.heartbeatMs),
    setInterval(() => {
      db.withTenant(tenantId, (sql) => workflowFlags(sql, tenantId, threadId))
        .then((w) => {
          if (!w || w.claimed_by !== deps.workerId) end('lost');
          else if (w.stop_requested) end('stop');
        })
        .catch(() => undefined);
    }, deps.settings.stopPollMs),
  ];
  for (const t of timers) t.unref();
  return () => {
    for (const t of timers) clearInterval(t);
    deps.shutdown.removeEventListener('abort', onShutdown);
  };
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
