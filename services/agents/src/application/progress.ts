import type { Db, Logger, ProgressEntry, ProgressStreams, Sql } from '@lore/runtime';
import { appendClaimedEvents, appendWorkflowEvent } from '../store/workflows';

/**
 * A workflow's events (docs/agents.md, "Workflows"): written to agents.workflow_events in the changing transaction
 * (the durable copy), then, after commit, appended to the workflow's progress stream (the live fan-out; Redis Streams
 * in a cluster, memory in embedded mode). A stream that misses an entry loses nothing a reader cannot replay from
 * the event log.
 */
export interface WorkflowEvent {
  tenantId: string;
  threadId: string;
  seq: number;
  type: string;
  data: Record<string, unknown>;
  at: string;
}

/** The stream key the API shows (`workflow:<thread id>`); the tenant is never part of what a caller types. */
export const publicStreamKey = (threadId: string): string => `workflow:${threadId}`;
/** Where a tenant's streams live: every key starts with it, so listing and lookups stay in the tenant. */
export const tenantStreamPrefix = (tenantId: string): string => `agents:${tenantId}:`;
export const streamKeyOf = (tenantId: string, threadId: string): string => `${tenantStreamPrefix(tenantId)}${publicStreamKey(threadId)}`;

/** Entries a stream keeps (MAXLEN ~) and how long an idle stream lives. */
export const STREAM_MAX_LEN = 1000;
export const STREAM_TTL_MS = 24 * 60 * 60 * 1000;

/** Records an event in the caller's transaction; publish it with `publishEvents` after the commit. */
export async function recordEvent(sql: Sql, tenantId: string, threadId: string, type: string, data: Record<string, unknown> = {}): Promise<WorkflowEvent> {
  const { seq, created_at } = await appendWorkflowEvent(sql, tenantId, threadId, type, data);
  return { tenantId, threadId, seq, type, data, at: new Date(created_at).toISOString() };
}

/**
 * Records events of a workflow `workerId` still holds, as their own transaction in one round trip; publish them
 * with `publishEvents`. Null when the claim is no longer this worker's (nothing recorded).
 */
export async function recordClaimedEvents(
  db: Db,
  claim: { tenantId: string; threadId: string; kinds: readonly string[]; workerId: string },
  events: ReadonlyArray<{ type: string; data: Record<string, unknown> }>,
): Promise<WorkflowEvent[] | null> {
  const written = await appendClaimedEvents(db, claim.tenantId, claim.threadId, claim.kinds, claim.workerId, events);
  if (!written) return null;
  return written.map((w, i) => ({ tenantId: claim.tenantId, threadId: claim.threadId, seq: w.seq, type: events[i]!.type, data: events[i]!.data, at: new Date(w.created_at).toISOString() }));
}

/** Appends committed events to their progress streams; a failing stream is logged, never thrown. */
export async function publishEvents(streams: ProgressStreams, logger: Logger, events: readonly WorkflowEvent[]): Promise<void> {
  for (const e of events) {
    try {
      await streams.append(streamKeyOf(e.tenantId, e.threadId), { seq: String(e.seq), type: e.type, at: e.at, data: JSON.stringify(e.data) }, { maxLen: STREAM_MAX_LEN, ttlMs: STREAM_TTL_MS });
    } catch (err) {
      logger.warn({ err, thread_id: e.threadId, seq: e.seq }, 'progress stream append failed; the event log keeps the event');
    }
  }
}

/**
 * One wait of a server-sent stream on its progress stream: at most `keepaliveMs`, never past `deadline` (epoch ms).
 * Answers the entries after `tail` (none: the period passed quietly), null when the wait failed (logged, after a
 * pause of up to a second, so the caller reads the event log instead), or `expired` once the deadline has passed.
 */
export async function waitForEntries(
  deps: { streams: ProgressStreams; logger: Logger },
  key: string,
  tail: string,
  deadline: number,
  keepaliveMs: number,
  threadId: string,
): Promise<ProgressEntry[] | null | 'expired'> {
  const left = deadline - Date.now();
  if (left <= 0) return 'expired';
  const wait = Math.max(1, Math.min(keepaliveMs, left));
  return deps.streams.waitFor(key, tail, wait, 100).catch(async (err: unknown) => {
    deps.logger.warn({ err, thread_id: threadId }, 'progress stream wait failed; reading the event log instead');
    await new Promise((r) => setTimeout(r, Math.min(wait, 1_000)));
    return null;
  });
}
