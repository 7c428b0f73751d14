import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { TOPICS } from '@lore/contracts';
import { componentLogger, PoisonError, startOutboxRelay, TenantTurns, type BusMessage, type EventBus, type OutboxRelay, type Subscription } from '@lore/runtime';
import { z } from 'zod';
import type { AgentsDeps } from './application/context';
import type { AgentsWorkflowConfig } from './config';
import type { ListSources } from './application/list-building';
import { claimRun, DEFAULT_RUN_SETTINGS, type RunDeps, type RunSettings } from './application/runner';
import { enqueueWorkflow } from './application/workflows';
import { getWorkflow, updateWorkflow, workflowsToResume } from './store/workflows';
import { isRunning } from './domain/workflow';
import { SESSION_KINDS } from './application/sessions/agent';
import { sessionAgents } from './application/sessions/kinds';
import type { SessionAgents } from './application/sessions/registry';
import { sessionsToResume } from './store/sessions';
import { researchToResume } from './store/research';
import { RESEARCH_KIND } from './domain/research';
import { creditBalanceConsumer } from './consumers/credit-balance';

/**
 * The topics the agents worker consumes or publishes to: its workflows, the credit charges its checkpoints write
 * and the gateway's balance announcements it reads (docs/agents.md, "Credits").
 */
export const AGENTS_TOPICS = [TOPICS.agentsWorkflows, TOPICS.creditsUsage, TOPICS.creditsBalance] as const;

/** The run settings of the agents configuration (the agents worker's, or embedded mode's, which reads the same settings). */
export function runSettingsFrom(config: AgentsWorkflowConfig): RunSettings {
  return {
    leaseMs: config.LORE_AGENTS_WORKFLOW_LEASE_MS,
    heartbeatMs: config.LORE_AGENTS_WORKFLOW_HEARTBEAT_MS,
    stopPollMs: DEFAULT_RUN_SETTINGS.stopPollMs,
    batchRows: config.LORE_AGENTS_WORKFLOW_BATCH_ROWS,
    budgets: { fetches: config.LORE_AGENTS_BUDGET_FETCHES, wallMs: config.LORE_AGENTS_BUDGET_WALL_MS, modelTokens: config.LORE_AGENTS_BUDGET_MODEL_TOKENS },
    prices: { perFetch: config.LORE_AGENTS_CREDITS_PER_FETCH, perRow: config.LORE_AGENTS_CREDITS_PER_ROW, perThousandTokens: config.LORE_AGENTS_CREDITS_PER_1000_TOKENS },
  };
}

const WorkflowMessageSchema = z.object({ event_id: z.string().min(1), tenant_id: z.string().min(1), thread_id: z.string().uuid(), reason: z.string() });

export interface AgentsWorkerDeps {
  agents: AgentsDeps;
  bus: EventBus;
  sources: ListSources;
  settings?: Partial<RunSettings>;
  /** Kafka consumer group (default `agents-worker`). */
  consumerGroup?: string;
  /** Run an outbox relay in this process (default true; embedded mode runs one shared relay instead). */
  relay?: boolean;
  /** How often the sweep looks for workflows whose claim expired (default 10 s). */
  sweepIntervalMs?: number;
  /** Runs at once in this process; a message beyond waits for a slot (default 8). */
  maxRunning?: number;
  /** This worker's name in claimed_by (default `<host>:<pid>:<random>`). */
  workerId?: string;
  /** The agents sessions run (default: every kind Lore has, application/sessions/kinds.ts). */
  sessions?: SessionAgents;
}

export interface AgentsWorker {
  readonly workerId: string;
  start(): Promise<void>;
  /** Stops consuming; running workflows are handed back (released and sent to the workers again). */
  stop(): Promise<void>;
  /** One sweep pass now: answers how many workflows it sent to the workers again. */
  sweep(): Promise<number>;
  /** Workflows running in this process now. */
  running(): number;
  /** Resolves when no workflow runs in this process (tests). */
  idle(): Promise<void>;
}

/**
 * The agents worker (docs/agents.md, "Workflows"): consumes `lore.agents.workflows`, claims each workflow and runs it
 * in the background (at most `maxRunning` at once), sweeps for workflows a dead worker left, and relays the outbox.
 * Runs as the `agents-worker` deployment and inside the embedded process.
 */
export function createAgentsWorker(deps: AgentsWorkerDeps): AgentsWorker {
  const workerId = deps.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const logger = componentLogger(deps.agents.logger, 'agents-worker');
  const settings: RunSettings = {
    ...DEFAULT_RUN_SETTINGS,
    ...deps.settings,
    budgets: { ...DEFAULT_RUN_SETTINGS.budgets, ...deps.settings?.budgets },
    prices: { ...DEFAULT_RUN_SETTINGS.prices, ...deps.settings?.prices },
  };
  const maxRunning = Math.max(1, deps.maxRunning ?? 8);
  let shutdown = new AbortController();
  let subscription: Subscription | null = null;
  let balances: Subscription | null = null;
  let relay: OutboxRelay | null = null;
  let timer: NodeJS.Timeout | null = null;
  let sweeping: Promise<number> | null = null;
  const runs = new Map<string, Promise<string>>();
  /** Workflows whose message came while this process ran them. */
  const again = new Set<string>();
  /**
   * Workflows whose message came while no slot was free, by tenant (each tenant's in arrival order, one entry a
   * workflow): the message is acknowledged at once, so one tenant's backlog never holds another's messages in the
   * topic, and slots go round the tenants. Kept in memory only: should the process end first, the workflows are still
   * running and unclaimed in the database, and the sweep (this process's next start, or another worker's) sends them
   * again.
   */
  const pending = new TenantTurns<string>();
  /** Runs in this process by tenant. */
  const perTenant = new Map<string, number>();
  /**
   * The most one tenant may run at once in this process: all the slots but one, so another tenant's workflow always
   * finds one without waiting for a run to end (a run may take minutes).
   */
  const tenantCap = maxRunning > 1 ? maxRunning - 1 : 1;
  let draining: Promise<void> | null = null;
  let drainAgain = false;

  const sessions = deps.sessions ?? sessionAgents();
  const runDeps = (): RunDeps => ({ agents: { ...deps.agents, logger }, sources: deps.sources, settings, workerId, shutdown: shutdown.signal, sessions });

  const keyOf = (tenantId: string, threadId: string) => `${tenantId}:${threadId}`;
  const isPending = (tenantId: string, threadId: string) => pending.has(tenantId, threadId);

  const addPending = (tenantId: string, threadId: string, reason: string, first = false): void => pending.add(tenantId, threadId, reason, first);

  /** The next workflow to start: the first waiting of the first tenant in turn that is under its cap. */
  const takePending = (): { tenantId: string; threadId: string; reason: string } | null => {
    const next = pending.take((tenantId) => (perTenant.get(tenantId) ?? 0) < tenantCap);
    return next ? { tenantId: next.tenantId, threadId: next.key, reason: next.item } : null;
  };

  /** Starts waiting workflows while slots are free; one drain at a time (a call meanwhile makes it go round again). */
  const drain = (): Promise<void> => {
    if (draining) {
      drainAgain = true;
      return draining;
    }
    draining = (async () => {
      do {
        drainAgain = false;
        while (runs.size < maxRunning && !shutdown.signal.aborted) {
          const next = takePending();
          if (!next) break;
          if (runs.has(keyOf(next.tenantId, next.threadId))) continue;
          // A failure leaves the workflow to the sweep, which finds it running and unclaimed.
          await start(next.tenantId, next.threadId, next.reason).catch((err: unknown) => logger.warn({ err, thread_id: next.threadId }, 'workflow could not be claimed; the sweep resumes it'));
        }
      } while (drainAgain && !shutdown.signal.aborted);
    })().finally(() => {
      draining = null;
    });
    return draining;
  };

  const handle = async (message: BusMessage): Promise<void> => {
    let msg;
    try {
      msg = WorkflowMessageSchema.parse(JSON.parse(message.value.toString('utf8')));
    } catch (err) {
      logger.error({ topic: message.topic, offset: message.offset }, 'malformed workflow message; dead-lettering it');
      throw new PoisonError('malformed message: it does not match its contract schema', { cause: err });
    }
    const key = keyOf(msg.tenant_id, msg.thread_id);
    // A run in this process sees a continue, stop or enrichment at its next checkpoint; should the message have come
    // just as the run ended, the workflow is claimed once more when it has (`again`).
    if (runs.has(key)) {
      again.add(key);
      return;
    }
    if (shutdown.signal.aborted) throw new Error('the worker is stopping');
    // A stop never waits for a slot: the run it claims ends at its first checkpoint, so a workflow stopped while it
    // waited ends at once (it no longer waits either).
    if (msg.reason === 'stop') {
      pending.delete(msg.tenant_id, msg.thread_id);
      await start(msg.tenant_id, msg.thread_id, msg.reason);
      return;
    }
    addPending(msg.tenant_id, msg.thread_id, msg.reason);
    await drain();
  };

  /** Claims and runs a workflow in the background; false when it could not be claimed. */
  const start = async (tenantId: string, threadId: string, reason: string): Promise<boolean> => {
    const key = keyOf(tenantId, threadId);
    const claimed = await claimRun(runDeps(), tenantId, threadId);
    if (!claimed) {
      logger.debug({ thread_id: threadId, reason }, 'workflow not claimed: another worker holds it or it is not running');
      return false;
    }
    const run = claimed
      .run()
      .catch((err: unknown) => {
        logger.error({ err, thread_id: threadId }, 'workflow run failed');
        return 'error';
      })
      .then((outcome) => {
        logger.info({ thread_id: threadId, kind: claimed.kind, outcome }, 'workflow run ended');
        return outcome;
      })
      .finally(() => {
        runs.delete(key);
        const n = (perTenant.get(tenantId) ?? 1) - 1;
        if (n <= 0) perTenant.delete(tenantId);
        else perTenant.set(tenantId, n);
        // Claimed once more, first in its tenant's line: a message came while it ran.
        if (again.delete(key) && !shutdown.signal.aborted) addPending(tenantId, threadId, 'again', true);
        if (!shutdown.signal.aborted) void drain();
      });
    runs.set(key, run);
    perTenant.set(tenantId, (perTenant.get(tenantId) ?? 0) + 1);
    return true;
  };

  const sweep = (): Promise<number> => {
    sweeping ??= (async () => {
      const found = [...(await workflowsToResume(deps.agents.db, settings.leaseMs * 2, 100)), ...(await sessionsToResume(deps.agents.db, settings.leaseMs * 2, 100)), ...(await researchToResume(deps.agents.db, settings.leaseMs * 2, 100))];
      let sent = 0;
      for (const { tenant_id, thread_id } of found) {
        // Running here, or waiting here for a slot: this process has it.
        if (runs.has(keyOf(tenant_id, thread_id)) || isPending(tenant_id, thread_id)) continue;
        const resumed = await deps.agents.db.withTenant(tenant_id, async (sql) => {
          const w = await getWorkflow(sql, tenant_id, thread_id, ['company_search', 'people_search', ...SESSION_KINDS, RESEARCH_KIND], true);
          if (!w || !isRunning(w.status)) return false;
          if (w.claimed_until && w.claimed_until.getTime() > Date.now()) return false;
          await updateWorkflow(sql, tenant_id, thread_id, { claimed_by: null, claimed_until_ms: null });
          await enqueueWorkflow(sql, tenant_id, thread_id, 'resume');
          return true;
        });
        if (resumed) {
          sent++;
          logger.info({ tenant_id, thread_id }, 'workflow resumed: its worker stopped holding it');
        }
      }
      if (sent > 0) deps.agents.workflowMetrics?.resumed(sent);
      return sent;
    })().finally(() => {
      sweeping = null;
    });
    return sweeping;
  };

  return {
    workerId,
    async start() {
      if (subscription) return;
      shutdown = new AbortController();
      await deps.bus.ensureTopics([...AGENTS_TOPICS]);
      const group = deps.consumerGroup ?? 'agents-worker';
      // The balance announcements first, so a run claimed at start-up already knows a used-up balance kept before.
      balances = await deps.bus.subscribe({ groupId: `${group}-credits`, topics: [TOPICS.creditsBalance], fromBeginning: true }, creditBalanceConsumer(deps.agents));
      subscription = await deps.bus.subscribe({ groupId: group, topics: [TOPICS.agentsWorkflows], fromBeginning: true }, handle);
      relay = await startOutboxRelay({ process: 'agents-worker', enabled: deps.relay !== false, db: deps.agents.db, bus: deps.bus, logger, pollIntervalMs: 50, topics: AGENTS_TOPICS });
      timer = setInterval(() => {
        sweep().catch((err: unknown) => logger.warn({ err }, 'workflow sweep failed'));
      }, deps.sweepIntervalMs ?? 10_000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      shutdown.abort();
      // What waited is still running and unclaimed in the database: the sweep sends it again.
      pending.clear();
      const sub = subscription;
      subscription = null;
      await sub?.stop();
      const bal = balances;
      balances = null;
      await bal?.stop();
      await Promise.allSettled([...runs.values()]);
      await relay?.stop();
      relay = null;
      await sweeping?.catch(() => 0);
    },
    sweep,
    running: () => runs.size,
    idle: async () => {
      while (runs.size > 0) await Promise.allSettled([...runs.values()]);
    },
  };
}
