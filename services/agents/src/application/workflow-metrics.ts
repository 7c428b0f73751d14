import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Prometheus metrics of the search workflows (`lore_agents_*`), shared by the API and the worker of one registry. */
export interface WorkflowMetrics {
  started(kind: string): void;
  /** A run ended: completed, stopped, error, or budget (completed because a budget was spent). */
  ended(kind: string, outcome: string): void;
  running(kind: string, delta: number): void;
  step(kind: string, step: string, seconds: number): void;
  resumed(count: number): void;
  /** A server-sent stream read the event log: `catch_up` (opening or resuming), `gap` (a sequence number skipped, an entry trimmed or lost), `quiet` (no entry for a keep-alive period). */
  streamLogRead?(reason: 'catch_up' | 'gap' | 'quiet'): void;
  /** A server-sent stream wrote a frame built from the event log or from the progress-stream entry. */
  streamFrame?(source: 'log' | 'stream'): void;
  /** A session socket read the event log: `open` (a reconnect, or a connect that started nothing), `gap`, `quiet` (no entry for a wait). */
  sessionLogRead?(reason: 'open' | 'gap' | 'quiet'): void;
}

function once<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

export function createWorkflowMetrics(registry: Registry): WorkflowMetrics {
  const workflows = once(registry, 'lore_agents_workflows_total', () =>
    new Counter({ name: 'lore_agents_workflows_total', help: 'Search workflows by kind and status: started, and each run ended (completed, stopped, error, budget)', labelNames: ['kind', 'status'], registers: [registry] }),
  );
  const running = once(registry, 'lore_agents_workflows_running', () =>
    new Gauge({ name: 'lore_agents_workflows_running', help: 'Search workflows this process is running now, by kind', labelNames: ['kind'], registers: [registry] }),
  );
  const steps = once(registry, 'lore_agents_step_duration_seconds', () =>
    new Histogram({ name: 'lore_agents_step_duration_seconds', help: 'Duration of one workflow step run (criteria_extraction, data_collection, enrichment)', labelNames: ['kind', 'step'], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers: [registry] }),
  );
  const resumed = once(registry, 'lore_agents_workflows_resumed_total', () =>
    new Counter({ name: 'lore_agents_workflows_resumed_total', help: 'Workflows the sweep sent to the workers again after their claim expired', registers: [registry] }),
  );
  const logReads = once(registry, 'lore_agents_stream_log_reads_total', () =>
    new Counter({ name: 'lore_agents_stream_log_reads_total', help: 'Event log reads of the workflow server-sent streams, by reason (catch_up, gap, quiet)', labelNames: ['reason'], registers: [registry] }),
  );
  const frames = once(registry, 'lore_agents_stream_frames_total', () =>
    new Counter({ name: 'lore_agents_stream_frames_total', help: 'Frames the workflow server-sent streams wrote, by where the event came from (log, stream)', labelNames: ['source'], registers: [registry] }),
  );
  const sessionLogReads = once(registry, 'lore_agents_session_log_reads_total', () =>
    new Counter({ name: 'lore_agents_session_log_reads_total', help: 'Event log reads of the session sockets, by reason (open, gap, quiet); a first connect sends its start without one', labelNames: ['reason'], registers: [registry] }),
  );
  return {
    sessionLogRead: (reason) => sessionLogReads.inc({ reason }),
    streamLogRead: (reason) => logReads.inc({ reason }),
    streamFrame: (source) => frames.inc({ source }),
    started: (kind) => workflows.inc({ kind, status: 'started' }),
    ended: (kind, outcome) => workflows.inc({ kind, status: outcome }),
    running: (kind, delta) => running.inc({ kind }, delta),
    step: (kind, step, seconds) => steps.observe({ kind, step }, seconds),
    resumed: (count) => resumed.inc(count),
  };
}
