import { getWorkflow, listWorkflowEvents } from '../../store/workflows';
import { SESSION_KINDS } from './agent';
import { isSessionEnded } from './service';
import type { AgentsDeps } from '../context';
import { streamKeyOf } from '../progress';

/**
 * The messages a session socket sends (docs/agents.md, "Sessions over websockets"; services/agents/asyncapi.json):
 * each is one JSON text frame with a `type`, the `cursor` of the event it comes from (the event's sequence number
 * in the session's log; reconnect with `?cursor=<last cursor seen>` to get everything after it) and the event's time
 * `at`. `error` and `done`
 * end the session; an `error` about a client's own message (an unknown message, a rate limit) has cursor null and
 * ends nothing.
 */
export type SessionMessage =
  | { type: 'progress'; cursor: number; thread_id: string; stage: string; message: string; data?: Record<string, unknown> }
  | { type: 'clarification'; cursor: number; thread_id: string; list_id: string; index: number; question: string }
  | { type: 'row'; cursor: number; thread_id: string; list_id: string; row: Record<string, unknown> }
  | { type: 'error'; cursor: number | null; thread_id: string; message: string }
  | { type: 'done'; cursor: number; thread_id: string; list_id: string; status: 'completed' | 'stopped'; outcome: string; summary: string; rows: number };

/** A message as the socket sends it: with `at`, the event's time (a refusal's: when it was refused). */
export type TimedSessionMessage = SessionMessage & { at: string };

export interface LoggedEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
  /** ISO 8601: when the event was written (its transaction's time). */
  at: string;
}

const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

/** The message of one logged session event. */
export function messageOf(e: LoggedEvent, threadId: string, listId: string): TimedSessionMessage {
  const cursor = e.seq;
  const at = e.at;
  const d = e.data;
  switch (e.type) {
    case 'progress':
      return { type: 'progress', cursor, at, thread_id: threadId, stage: str(d.stage, 'working'), message: str(d.message), ...(d.data && typeof d.data === 'object' ? { data: d.data as Record<string, unknown> } : {}) };
    case 'started':
      return { type: 'progress', cursor, at, thread_id: threadId, stage: 'started', message: 'the session started' };
    case 'answer':
      return { type: 'progress', cursor, at, thread_id: threadId, stage: 'answered', message: 'the clarifying answer was received', data: { index: num(d.index) } };
    case 'clarification':
      return { type: 'clarification', cursor, at, thread_id: threadId, list_id: listId, index: num(d.index), question: str(d.question) };
    case 'row':
      return { type: 'row', cursor, at, thread_id: threadId, list_id: listId, row: d };
    case 'error':
      return { type: 'error', cursor, at, thread_id: threadId, message: str(d.message, 'the session failed') };
    case 'done':
      return { type: 'done', cursor, at, thread_id: threadId, list_id: listId, status: d.outcome === 'stopped' ? 'stopped' : 'completed', outcome: str(d.outcome, 'completed'), summary: str(d.summary), rows: num(d.rows) };
    case 'stopped':
      return { type: 'done', cursor, at, thread_id: threadId, list_id: listId, status: 'stopped', outcome: 'stopped', summary: 'stopped before it started', rows: 0 };
    default:
      return { type: 'progress', cursor, at, thread_id: threadId, stage: e.type, message: e.type };
  }
}

export const isFinal = (m: SessionMessage): boolean => (m.type === 'error' && m.cursor !== null) || m.type === 'done';

const EVENT_PAGE = 200;
/** How long one wait on the progress stream lasts before the log is read again (and a closed socket noticed). */
const WAIT_MS = 5_000;

const eventOfEntry = (fields: Record<string, string>): LoggedEvent | null => {
  const seq = Number(fields.seq);
  if (!Number.isInteger(seq) || !fields.type) return null;
  try {
    return { seq, type: fields.type, data: JSON.parse(fields.data ?? '{}') as Record<string, unknown>, at: fields.at ?? '' };
  } catch {
    return null;
  }
};

/** How a socket follows its session (`followSession` with its dependencies bound). */
export type SessionFollow = (
  tenantId: string,
  threadId: string,
  listId: string,
  afterSeq: number,
  send: (m: TimedSessionMessage) => Promise<void>,
  signal: AbortSignal,
  start?: () => Promise<readonly LoggedEvent[]>,
) => Promise<void>;

/**
 * Sends a session's messages after `afterSeq`: the event log first (the durable copy: a reconnect loses nothing),
 * then live from the progress stream, reading the log again on a gap or a quiet period. `start` (a socket's connect)
 * runs once the follow has its place in the stream; when the events it wrote continue the client's cursor (a first
 * connect), they are sent as written and the log is not read. Resolves after the final message, once the session
 * has ended with nothing left to send, or once `signal` aborts (the socket closed).
 */
export async function followSession(deps: AgentsDeps, ...[tenantId, threadId, listId, afterSeq, send, signal, start]: Parameters<SessionFollow>): Promise<void> {
  const key = streamKeyOf(tenantId, threadId);
  let pos = afterSeq;
  let ended = false;
  const emit = async (e: LoggedEvent): Promise<void> => {
    pos = e.seq;
    const m = messageOf(e, threadId, listId);
    if (signal.aborted) return;
    await send(m);
    if (isFinal(m)) ended = true;
  };
  /**
   * Reads the log after `pos` to its end. The session's status is read first, in the same transaction, so a session
   * that had ended has all its events in what follows. False when the follow is over: the final message sent, the
   * session ended (a client whose cursor is past its end gets nothing more), or the client gone.
   */
  const readLog = async (reason: 'open' | 'gap' | 'quiet'): Promise<boolean> => {
    deps.workflowMetrics?.sessionLogRead?.(reason);
    let over = false;
    for (let page = 0; ; page++) {
      const rows = await deps.db.withTenant(tenantId, async (sql) => {
        if (page === 0) {
          const w = await getWorkflow(sql, tenantId, threadId, SESSION_KINDS);
          over = !w || isSessionEnded(w.status);
        }
        return listWorkflowEvents(sql, tenantId, threadId, pos, EVENT_PAGE);
      });
      for (const row of rows) {
        await emit({ seq: Number(row.seq), type: row.type, data: row.data, at: new Date(row.created_at).toISOString() });
        if (ended || signal.aborted) return false;
      }
      if (rows.length < EVENT_PAGE) return !over;
    }
  };
  // The stream's position before the log is read and before the connect writes: entries after it may repeat what
  // the log or the connect gave (skipped by seq), never fewer.
  let tail = (await deps.streams.describe(key).catch(() => null))?.lastEntryId ?? '0-0';
  const started = start ? await start() : [];
  if (started.length > 0 && started[0]!.seq === pos + 1) {
    // This connect started the session: nothing precedes its events after the cursor, and the session runs.
    for (const e of started) {
      await emit(e);
      if (ended || signal.aborted) return;
    }
  } else if (!(await readLog('open'))) {
    return;
  }
  while (!ended && !signal.aborted) {
    const entries = await deps.streams.waitFor(key, tail, WAIT_MS, 100).catch(() => null);
    if (signal.aborted) return;
    if (!entries || entries.length === 0) {
      if (!(await readLog('quiet'))) return;
      continue;
    }
    tail = entries[entries.length - 1]!.id;
    for (const entry of entries) {
      const e = eventOfEntry(entry.fields);
      if (e && e.seq <= pos) continue;
      if (e && e.seq === pos + 1) await emit(e);
      else if (!(await readLog('gap'))) return;
      if (ended || signal.aborted) return;
    }
  }
}
