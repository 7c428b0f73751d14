import { cutUnits } from '@lore/ai';
import { randomUUID } from 'node:crypto';
import type { Sql } from '@lore/runtime';
import { insertList, updateList } from '../../store/lists';
import { getWorkflow, insertWorkflow, updateWorkflow, type WorkflowRow } from '../../store/workflows';
import type { AgentsDeps } from '../context';
import { agentsError, notFound } from '../errors';
import { seesWorkflow, type Principal } from '../principal';
import { recordEvent, type WorkflowEvent } from '../progress';
import { enqueueWorkflow, inTenant, visibleWorkflow } from '../workflows';
import { SESSION_KINDS, type SessionKind, type SessionOptions } from './agent';

/**
 * The API side of sessions (docs/agents.md, "Sessions over websockets"): prepare (the start routes), answer a
 * clarifying question (the socket, or deep search's start called again), connect (the socket: the session runs),
 * stop, and files uploaded for a deep search. Every change is one transaction: the row, its event, and the worker's
 * message when a worker must act.
 */

/** A session's own document inside `agents.workflows.state`. */
export interface SessionState {
  options: SessionOptions;
  /** Questions asked so far (their index is their number) and the answers given, in order. */
  questions: string[];
  answers: string[];
  /** The agent's checkpoint (SessionContext.state). */
  agent: Record<string, unknown>;
  /** When the first client connected (the session ran from then on), or null. */
  connected_at: string | null;
}

export const readSessionState = (raw: Record<string, unknown>): SessionState => {
  const s = raw as Partial<SessionState>;
  return {
    options: s.options ?? { llm_model: null, model: null, live_url: false, proxy: false, proxy_country_code: null, workspace_id: null, uploads: [] },
    questions: Array.isArray(s.questions) ? s.questions : [],
    answers: Array.isArray(s.answers) ? s.answers : [],
    agent: s.agent && typeof s.agent === 'object' ? s.agent : {},
    connected_at: typeof s.connected_at === 'string' ? s.connected_at : null,
  };
};

/** Status of a prepared session nobody connected to yet; a worker never claims it. */
export const READY = 'ready';
/** The status words of a session that ended. */
export const SESSION_ENDED = ['completed', 'stopped', 'error'] as const;
export const isSessionEnded = (status: string): boolean => (SESSION_ENDED as readonly string[]).includes(status);

export interface PrepareInput {
  prompt: string;
  thread_id?: string | undefined;
  list_id?: string | undefined;
  options: SessionOptions;
}

export interface PreparedSession {
  thread_id: string;
  list_id: string;
  /** The row's status (`ready`, or the running session's when a start answered its question). */
  status: string;
  options: SessionOptions;
  /** A start that answered a pending clarifying question. */
  answered: boolean;
}

/** The session of a thread the principal may see (its owner, or an administrator), of this kind; else 404. */
export function visibleSession(sql: Sql, principal: Principal, kind: SessionKind, threadId: string, lock = false): Promise<WorkflowRow> {
  return visibleWorkflow(sql, principal, threadId, [kind], lock, 'session');
}

/** Records the answer to the question the session waits on, in the caller's transaction; false when none waits. */
async function recordAnswer(sql: Sql, tenantId: string, w: WorkflowRow, answer: string, events: WorkflowEvent[]): Promise<boolean> {
  const state = readSessionState(w.state);
  if (state.questions.length <= state.answers.length || w.status !== 'processing') return false;
  const index = state.answers.length;
  state.answers = [...state.answers, answer];
  await updateWorkflow(sql, tenantId, w.thread_id, { state: state as unknown as Record<string, unknown> });
  events.push(await recordEvent(sql, tenantId, w.thread_id, 'answer', { index, answer }));
  return true;
}

/**
 * Prepares a session (status `ready`, its list created), or, when `thread_id` and `list_id` name a session of the
 * caller that waits on a clarifying question, answers it with the prompt. A thread the caller does not have is 404;
 * ids already in use otherwise are 422 body (b).
 */
export async function prepareSession(deps: AgentsDeps, principal: Principal, kind: SessionKind, input: PrepareInput): Promise<PreparedSession> {
  const prompt = input.prompt.trim();
  if (prompt === '') throw agentsError('UNPROCESSABLE', 'prompt must not be empty');
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    // thread_id and list_id name a session of the caller's to answer its clarifying question; a new session's ids
    // are always Lore's.
    if (input.thread_id) {
      const existing = await getWorkflow(sql, principal.tenantId, input.thread_id.toLowerCase(), SESSION_KINDS, true);
      if (!existing || existing.kind !== kind || !seesWorkflow(principal, existing)) throw notFound('session');
      if (!input.list_id) throw agentsError('UNPROCESSABLE', 'thread_id names an existing session: give its list_id too to answer its clarifying question');
      if (existing.list_id !== input.list_id.toLowerCase()) throw agentsError('UNPROCESSABLE', "list_id is not the list of the session thread_id names: give the list_id its start answered");
      if (!(await recordAnswer(sql, principal.tenantId, existing, prompt, events))) throw agentsError('UNPROCESSABLE', 'the session is not waiting for an answer to a clarifying question');
      return { thread_id: existing.thread_id, list_id: existing.list_id, status: existing.status, options: readSessionState(existing.state).options, answered: true };
    }
    if (input.list_id) throw agentsError('UNPROCESSABLE', 'list_id without thread_id: leave both out for a new session, or give both to answer its clarifying question');
    const threadId = randomUUID();
    const listId = randomUUID();
    const state: SessionState = { options: input.options, questions: [], answers: [], agent: {}, connected_at: null };
    const name = cutUnits(prompt.split(/\s+/).join(' '), 80);
    await insertList(sql, principal.tenantId, { list_id: listId, thread_id: threadId, owner: principal.owner, name, description: '', list_type: kind, status: READY, columns: SESSION_COLUMNS });
    await insertWorkflow(sql, principal.tenantId, { thread_id: threadId, kind, owner: principal.owner, status: READY, current_step: 'waiting_for_client', prompt, state: state as unknown as Record<string, unknown>, total_target: 0, list_id: listId });
    return { thread_id: threadId, list_id: listId, status: READY, options: input.options, answered: false };
  });
}

/** The columns of a session's list: what every row shows, with provenance in each cell's metadata. */
export const SESSION_COLUMNS = ['name', 'entity_type', 'url', 'description'].map((id) => ({
  id,
  header: id === 'entity_type' ? 'Type' : id[0]!.toUpperCase() + id.slice(1),
  type: 'fixed',
  columnType: 'text',
  dataType: 'string',
  width: 200,
  maxWidth: 600,
  minWidth: 80,
  required: id === 'name',
}));

/**
 * A client connected: the first connect of a `ready` session starts it (status `processing`, the worker's message);
 * later connects change nothing. Answers the events this connect wrote (the session's start), committed and
 * appended to its progress stream; none for a later connect.
 */
export async function connectSession(deps: AgentsDeps, principal: Principal, kind: SessionKind, threadId: string): Promise<WorkflowEvent[]> {
  let written: WorkflowEvent[] = [];
  await inTenant(deps, principal.tenantId, async (sql, events) => {
    written = events;
    const w = await visibleSession(sql, principal, kind, threadId, true);
    if (w.status !== READY) return w;
    const state = readSessionState(w.state);
    state.connected_at = new Date().toISOString();
    await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'processing', current_step: 'running', state: state as unknown as Record<string, unknown> });
    if (w.list_id) await updateList(sql, principal.tenantId, w.list_id, { status: 'processing' });
    events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'started', { kind, prompt: w.prompt, list_id: w.list_id }));
    await enqueueWorkflow(sql, principal.tenantId, w.thread_id, 'start');
    deps.workflowMetrics?.started(kind);
    return { ...w, status: 'processing' };
  });
  return written;
}

/**
 * A clarifying answer sent over the socket: false when the session waits on none (or `list_id` is not its list). An
 * answer that is only white space is refused as empty (400), whether or not the session waits: until 2026-11-30 it
 * answered false, and the socket said the session was not waiting.
 */
export async function answerSession(deps: AgentsDeps, principal: Principal, kind: SessionKind, threadId: string, listId: string, answer: string): Promise<boolean> {
  const text = answer.trim();
  if (text === '') throw agentsError('BAD_REQUEST', 'the answer is empty (only white space)');
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleSession(sql, principal, kind, threadId, true);
    if (w.list_id !== listId.toLowerCase()) return false;
    return recordAnswer(sql, principal.tenantId, w, text, events);
  });
}

/** Asks a running session to stop (the worker ends it within about a second); a `ready` one is stopped at once. */
export async function stopSession(deps: AgentsDeps, principal: Principal, kind: SessionKind, threadId: string): Promise<string> {
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleSession(sql, principal, kind, threadId, true);
    if (w.status === READY) {
      await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'stopped' });
      events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'stopped', { before_start: true }));
      return 'stopped';
    }
    if (w.status !== 'processing') return w.status;
    await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'stopping', stop_requested: true });
    await enqueueWorkflow(sql, principal.tenantId, w.thread_id, 'stop');
    return 'stopping';
  });
}

/** Where a deep search's uploaded files are kept: the thread's workspace (`workspace_id`). */
export interface UploadedFile {
  filename: string;
  bytes: Buffer;
  contentType: string;
}

const safeName = (filename: string): string => {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const cleaned = base.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '').slice(0, 100);
  return cleaned === '' ? 'upload' : cleaned;
};

/**
 * Keeps a reference file for a deep search (docs/agents.md): stored under the thread's workspace with a server-side
 * name (`sessions/<thread>/<random>-<cleaned name>`; the client's path is never used), listed in the session.
 */
export async function uploadForSession(deps: AgentsDeps, principal: Principal, threadId: string, file: UploadedFile): Promise<{ workspace_id: string; paths: string[] }> {
  const w = await deps.db.withTenant(principal.tenantId, (sql) => visibleSession(sql, principal, 'deep_search', threadId));
  if (isSessionEnded(w.status)) throw agentsError('UNPROCESSABLE', 'the session has ended: files can no longer be added');
  const path = `sessions/${w.thread_id}/${randomUUID().slice(0, 8)}-${safeName(file.filename)}`;
  await deps.blobs.put(principal.tenantId, path, file.bytes, file.contentType);
  return deps.db.withTenant(principal.tenantId, async (sql) => {
    const fresh = await visibleSession(sql, principal, 'deep_search', threadId, true);
    const state = readSessionState(fresh.state);
    const workspaceId = state.options.workspace_id ?? fresh.thread_id;
    state.options = { ...state.options, workspace_id: workspaceId, uploads: [...state.options.uploads, path] };
    await updateWorkflow(sql, principal.tenantId, fresh.thread_id, { state: state as unknown as Record<string, unknown> });
    return { workspace_id: workspaceId, paths: state.options.uploads };
  });
}

/** The ids of a session the principal may open (404 otherwise); reads only. */
/** A session of the caller, with the cursor of its last message so far (0 before any). */
export async function findSession(deps: AgentsDeps, principal: Principal, kind: SessionKind, threadId: string): Promise<{ thread_id: string; list_id: string; last_cursor: number }> {
  const w = await deps.db.withTenant(principal.tenantId, (sql) => visibleSession(sql, principal, kind, threadId));
  return { thread_id: w.thread_id, list_id: w.list_id ?? '', last_cursor: Math.max(0, Number(w.next_seq) - 1) };
}
