import { once } from 'node:events';
import type { Sql } from '@lore/runtime';
import { SSE_KEEPALIVE, eventOfEntry, foldEvent, initialFrame, isEnded, mergeCriteria, sseFrame, toCriterion, type CriterionInput, type GenericStateKeys, type LoggedEvent, type StreamFrame } from '../domain/generic-workflow';
import { isRunning, readState, tableColumns, type Column, type Criterion, type SearchKind } from '../domain/workflow';
import { countListRows, getList, updateList } from '../store/lists';
import { countRunningForService, listExists, listThreads, lockService, removeColumnCells, workflowExists, type ThreadRow } from '../store/generic-workflows';
import { getWorkflow, listWorkflowEvents, updateWorkflow } from '../store/workflows';
import type { AgentsDeps } from './context';
import { agentsError, notFound } from './errors';
import { seesWorkflow, type Principal } from './principal';
import { publishEvents, recordEvent, streamKeyOf, waitForEntries, type WorkflowEvent } from './progress';
import { webSearchQuery } from './list-sources';
import { continueSearch, searchView, startSearch, stopSearch, visibleWorkflow, type SearchView } from './workflows';

/**
 * The generic workflow API (docs/agents.md, "Generic workflow API"): start and continue with criteria a caller adds
 * or edits, a per-serviceId limit of running workflows, thread listings, restore, criteria removal, and the
 * server-sent stream of a workflow: live frames from its progress stream (Redis, the live fan-out), its event log
 * (PostgreSQL, the record) read to catch up. Start, continue and stop are the search workflows' own (workflows.ts).
 */

export interface GenericWorkflowSettings {
  /** Running workflows one (tenant, serviceId) may have at once; one more start is 429. */
  maxRunningPerService: number;
  /** Server-sent streams this process serves at once; one more is 503. */
  maxOpenStreams: number;
  /** A stream ends after this long (the client resumes it with Last-Event-ID). */
  streamMaxMs: number;
  /** A quiet stream sends a comment this often and looks at the event log again. */
  keepaliveMs: number;
}

export const DEFAULT_GENERIC_WORKFLOWS: GenericWorkflowSettings = { maxRunningPerService: 10, maxOpenStreams: 200, streamMaxMs: 30 * 60_000, keepaliveMs: 10_000 };

const settingsOf = (deps: AgentsDeps): GenericWorkflowSettings => ({ ...DEFAULT_GENERIC_WORKFLOWS, ...deps.genericWorkflows });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ANY: readonly SearchKind[] = ['company_search', 'people_search'];

async function admitForService(deps: AgentsDeps, sql: Sql, tenantId: string, serviceId: string | undefined, except?: string): Promise<void> {
  if (serviceId === undefined) return;
  await lockService(sql, tenantId, serviceId);
  const max = settingsOf(deps).maxRunningPerService;
  const running = await countRunningForService(sql, tenantId, serviceId, except);
  if (running >= max) {
    throw agentsError('RATE_LIMITED', `serviceId ${serviceId} already has ${running} running workflows (at most ${max} at once); stop one or wait for one to end`, { 'retry-after': '10' });
  }
}

export interface GenericStartInput {
  prompt: string;
  serviceId?: string;
  total_target?: number;
  type?: string;
  threadId?: string;
  list_name?: string;
  list_description?: string;
  list_id?: string;
  additional_criteria?: CriterionInput[];
}

/** Starts a company or people workflow with the caller's choices; 409 for a thread or list id already taken, 429 over the service's limit. */
export async function startGeneric(deps: AgentsDeps, principal: Principal, kind: SearchKind, input: GenericStartInput): Promise<{ thread_id: string; list_id: string }> {
  const threadId = input.threadId?.toLowerCase();
  const listId = input.list_id?.toLowerCase();
  const state: GenericStateKeys = {
    ...(input.serviceId !== undefined ? { service_id: input.serviceId } : {}),
    workflow_type: input.type ?? (kind === 'company_search' ? 'list_builder' : 'people_search'),
    additional_criteria: mergeCriteria([], (input.additional_criteria ?? []).map(toCriterion)),
    target_chosen: input.total_target !== undefined,
  };
  return startSearch(deps, principal, kind, {
    prompt: input.prompt,
    list_name: input.list_name,
    list_description: input.list_description,
    thread_id: threadId,
    list_id: listId,
    total_target: input.total_target,
    state: state as Record<string, unknown>,
    admit: async (sql) => {
      if (threadId && (await workflowExists(sql, principal.tenantId, threadId))) throw agentsError('CONFLICT', `threadId ${threadId} is already a workflow of this tenant`);
      if (listId && (await listExists(sql, principal.tenantId, listId))) throw agentsError('CONFLICT', `list_id ${listId} is already a list of this tenant`);
      await admitForService(deps, sql, principal.tenantId, input.serviceId);
    },
  });
}

export interface GenericContinueInput {
  thread_id: string;
  total_target?: number;
  serviceId?: string;
  additional_criteria?: CriterionInput[];
  current_criteria?: CriterionInput[];
}

/**
 * Continues a workflow: `current_criteria` replaces its criteria, `additional_criteria` are merged in (by column), the
 * list's criterion columns follow; without `total_target` the workflow's own target is kept. Answers the sequence
 * number of its `continued` event (the continue stream starts there).
 */
export async function continueGeneric(deps: AgentsDeps, principal: Principal, kind: SearchKind, input: GenericContinueInput): Promise<{ thread_id: string; seq: number }> {
  let target = input.total_target;
  if (target === undefined) target = (await deps.db.withTenant(principal.tenantId, (sql) => visibleWorkflow(sql, principal, input.thread_id, [kind]))).total_target;
  let seq = 0;
  const current = input.current_criteria?.map(toCriterion);
  const added = (input.additional_criteria ?? []).map(toCriterion);
  const r = await continueSearch(deps, principal, kind, input.thread_id, target, async (sql, w, state) => {
    seq = Number(w.next_seq);
    const keys = state as typeof state & GenericStateKeys;
    if (input.serviceId !== undefined) keys.service_id = input.serviceId;
    if (!isRunning(w.status)) await admitForService(deps, sql, principal.tenantId, keys.service_id, w.thread_id);
    const more: Record<string, unknown> = {};
    if (current === undefined && added.length === 0) return more;
    if (w.current_step === 'criteria_extraction') {
      // Not extracted yet: the worker merges these into what it extracts.
      keys.additional_criteria = mergeCriteria(current ?? keys.additional_criteria ?? [], added);
      return more;
    }
    state.criteria = mergeCriteria(current ?? state.criteria, added);
    // The web search follows the criteria: it is made again from them and the prompt's keywords.
    const plan = (state as typeof state & { plan?: { query: string; keywords?: string[] } }).plan;
    if (plan?.keywords !== undefined) plan.query = webSearchQuery(state.criteria, plan.keywords, w.prompt);
    if (w.list_id) {
      const list = await getList(sql, principal.tenantId, w.list_id);
      const before = (list?.columns ?? []) as Column[];
      const extra = before.filter((c) => c.type === 'enrichment');
      const columns = tableColumns(kind, state.criteria, extra);
      await updateList(sql, principal.tenantId, w.list_id, { columns });
      // A criterion the edit dropped leaves no cell behind in the rows found before, as remove-criteria does.
      const kept = new Set(columns.map((c) => c.id));
      for (const c of before) if (c.type === 'criterion' && !kept.has(c.id)) await removeColumnCells(sql, principal.tenantId, w.list_id, c.id);
    }
    more.criteria = state.criteria;
    return more;
  });
  return { thread_id: r.thread_id, seq };
}

export async function stopGeneric(deps: AgentsDeps, principal: Principal, kind: SearchKind, threadId: string): Promise<string> {
  const r = await stopSearch(deps, principal, kind, threadId);
  return r.thread_id;
}

/** The snapshot's view, with what the generic snapshot adds (the list, the service, the type). */
export type SearchViewWithKeys = SearchView & { keys: GenericStateKeys };

export async function genericView(deps: AgentsDeps, principal: Principal, kind: SearchKind, threadId: string): Promise<SearchViewWithKeys> {
  const v = await searchView(deps, principal, [kind], threadId);
  return { ...v, keys: v.state as unknown as GenericStateKeys };
}

export const MAX_THREADS_PAGE = 200;

/** The workflows of a kind the caller sees (`seesWorkflow`), newest first. */
export async function threadsOf(deps: AgentsDeps, principal: Principal, kind: SearchKind, page: { limit: number; offset: number }): Promise<ThreadRow[]> {
  return deps.db.withTenant(principal.tenantId, (sql) => listThreads(sql, principal.tenantId, principal, kind, { limit: Math.min(page.limit, MAX_THREADS_PAGE), offset: page.offset }));
}

export interface RestoredWorkflow {
  view: SearchView;
  total: number;
}

/** A company or people list of the caller as a restored workflow; 404 for another's, an import's or none. */
export async function restoreGeneric(deps: AgentsDeps, principal: Principal, listId: string): Promise<RestoredWorkflow> {
  const found = await deps.db.withTenant(principal.tenantId, async (sql) => {
    const list = UUID.test(listId) ? await getList(sql, principal.tenantId, listId.toLowerCase()) : null;
    if (!list || !list.thread_id || !(ANY as readonly string[]).includes(list.list_type)) throw notFound('list');
    const w = await getWorkflow(sql, principal.tenantId, list.thread_id, ANY);
    if (!w || !seesWorkflow(principal, w)) throw notFound('list');
    return { threadId: w.thread_id, total: await countListRows(sql, principal.tenantId, list.list_id) };
  });
  // searchView opens its own transaction: after this one, never inside it (embedded mode's one PGlite connection
  // would wait for itself, and every later request of the process with it).
  return { view: await searchView(deps, principal, ANY, found.threadId), total: found.total };
}

/**
 * Removes a criterion (by column_name, else by name) from an ended workflow: from its criteria, its list's columns
 * (a criterion column; the entity's own fields stay) and every row's cells, with a `criteria_removed` event. A
 * running workflow is 409 (its worker writes those cells); one whose criteria are not extracted yet too.
 */
export async function removeCriterion(deps: AgentsDeps, principal: Principal, kind: SearchKind, input: { thread_id: string; column_name?: string; name?: string }): Promise<SearchView> {
  const events: WorkflowEvent[] = [];
  const threadId = await deps.db.withTenant(principal.tenantId, async (sql) => {
    const found = await visibleWorkflow(sql, principal, input.thread_id, [kind], true);
    if (isRunning(found.status)) throw agentsError('CONFLICT', `the workflow is ${found.status}; remove a criterion once it has ended (stop it first)`);
    const state = readState(found.state);
    const keys = state as typeof state & GenericStateKeys;
    const wanted = input.column_name?.trim();
    const byName = input.name?.trim().toLowerCase();
    const target = state.criteria.find((c) => (wanted ? c.column_name === wanted : c.name.toLowerCase() === byName));
    if (!target) throw notFound(`criterion ${JSON.stringify(wanted ?? input.name ?? '')}`);
    state.criteria = state.criteria.filter((c) => c !== target);
    if (Array.isArray(keys.additional_criteria)) keys.additional_criteria = keys.additional_criteria.filter((c: Criterion) => c.column_name !== target.column_name);
    if (found.list_id) {
      const list = await getList(sql, principal.tenantId, found.list_id);
      const columns = (list?.columns ?? []) as Column[];
      const column = columns.find((c) => c.id === target.column_name && c.type === 'criterion');
      if (column) {
        await updateList(sql, principal.tenantId, found.list_id, { columns: columns.filter((c) => c !== column) });
        await removeColumnCells(sql, principal.tenantId, found.list_id, column.id);
      }
    }
    await updateWorkflow(sql, principal.tenantId, found.thread_id, { state: state as unknown as Record<string, unknown> });
    events.push(await recordEvent(sql, principal.tenantId, found.thread_id, 'criteria_removed', { column_name: target.column_name, name: target.name, criteria: state.criteria }));
    return found.thread_id;
  });
  await publishEvents(deps.streams, deps.logger, events);
  return searchView(deps, principal, [kind], threadId);
}

/** Checks the caller may follow a workflow's stream (any kind); answers its thread id and last event's number. */
export async function streamable(deps: AgentsDeps, principal: Principal, threadId: string): Promise<{ thread_id: string; last_seq: number }> {
  return deps.db.withTenant(principal.tenantId, async (sql) => {
    const w = await visibleWorkflow(sql, principal, threadId, ANY);
    return { thread_id: w.thread_id, last_seq: Number(w.next_seq) - 1 };
  });
}

/**
 * Counts the streams this process serves; one over the limit is refused before it starts (503). One tenant holds at
 * most a quarter of them (429): a tenant's own streams, however many, never lock other tenants out of the streams
 * (a streaming start or continue included).
 */
export class StreamGate {
  private open = 0;
  private readonly byTenant = new Map<string, number>();
  constructor(private readonly max: () => number) {}

  /** The most streams one tenant may hold at once. */
  tenantMax(): number {
    return Math.max(1, Math.ceil(this.max() / 4));
  }

  enter(tenantId: string): () => void {
    const mine = this.byTenant.get(tenantId) ?? 0;
    if (mine >= this.tenantMax()) throw agentsError('RATE_LIMITED', `this tenant has ${mine} open streams on this instance, the most one tenant may hold; close one, or try again shortly`, { 'retry-after': '5' });
    if (this.open >= this.max()) throw agentsError('UNAVAILABLE', 'too many open workflow streams on this instance; try again shortly', { 'retry-after': '5' });
    this.open++;
    this.byTenant.set(tenantId, mine + 1);
    let left = false;
    return () => {
      if (!left) {
        left = true;
        this.open--;
        const n = (this.byTenant.get(tenantId) ?? 1) - 1;
        if (n <= 0) this.byTenant.delete(tenantId);
        else this.byTenant.set(tenantId, n);
      }
    };
  }

  get size(): number {
    return this.open;
  }
}

export const streamGate = (deps: AgentsDeps): StreamGate => new StreamGate(() => settingsOf(deps).maxOpenStreams);

const EVENT_PAGE = 500;
/** The most events a stream reads (a workflow's log is far shorter; the bound keeps a loop finite). */
const MAX_EVENTS = 1_000_000;

export interface StreamSink {
  /** Writes a frame or a comment; resolves once the connection can take more. */
  write(chunk: string): Promise<void>;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/**
 * Follows a workflow from after `afterSeq`: every later event becomes one frame, in order, each once. Events up to
 * `afterSeq` are folded silently (a frame is the workflow after its event). The event log (PostgreSQL, the record) is
 * read to catch up: once at the start, after a gap in sequence numbers (an entry the progress stream trimmed or lost,
 * or one that carries no event), and when the progress stream says nothing for `keepaliveMs` (then a comment is sent
 * too), so a lost entry delays a frame at most that long and loses nothing. While caught up, each frame is built from
 * the progress-stream entry (Redis, the live fan-out), which carries its event: a live follower holds no database
 * connection. Ends after a frame with an ended status once nothing follows it, when the client goes away, or after
 * `streamMaxMs`.
 */
export async function followWorkflow(deps: AgentsDeps, tenantId: string, threadId: string, afterSeq: number, sink: StreamSink, onFrame?: (f: StreamFrame) => void): Promise<void> {
  const settings = settingsOf(deps);
  const metrics = deps.workflowMetrics;
  const key = streamKeyOf(tenantId, threadId);
  const deadline = Date.now() + settings.streamMaxMs;
  let frame = initialFrame(threadId);
  let pos = 0;
  let read = 0;
  /** Folds the next event and writes its frame (after `afterSeq`); false once the client has gone. */
  const emit = async (e: LoggedEvent, source: 'log' | 'stream'): Promise<boolean> => {
    read++;
    frame = foldEvent(frame, e);
    pos = e.seq;
    if (e.seq <= afterSeq) return true;
    if (sink.signal.aborted) return false;
    await sink.write(sseFrame(frame));
    metrics?.streamFrame?.(source);
    onFrame?.(frame);
    return true;
  };
  /** Reads the event log after `pos` to its end; false once the client has gone. */
  const catchUp = async (reason: 'catch_up' | 'gap' | 'quiet'): Promise<boolean> => {
    while (read < MAX_EVENTS) {
      metrics?.streamLogRead?.(reason);
      const rows = await deps.db.withTenant(tenantId, (sql) => listWorkflowEvents(sql, tenantId, threadId, pos, EVENT_PAGE));
      for (const row of rows) {
        if (!(await emit({ seq: Number(row.seq), type: row.type, data: row.data, at: new Date(row.created_at).toISOString() }, 'log'))) return false;
      }
      if (rows.length < EVENT_PAGE) break;
    }
    return !sink.signal.aborted;
  };
  // The stream's position before the log is read: entries after it are events the log read may also have seen
  // (skipped by their sequence numbers), never fewer.
  let tail = (await deps.streams.describe(key).catch(() => null))?.lastEntryId ?? '0-0';
  if (!(await catchUp('catch_up'))) return;
  while (read < MAX_EVENTS && !sink.signal.aborted) {
    // Caught up: a workflow that ended has nothing more to say (a later continue has its own stream).
    if (isEnded(frame.status)) return;
    const entries = await waitForEntries(deps, key, tail, deadline, settings.keepaliveMs, threadId);
    if (entries === 'expired') return;
    if (entries === null || entries.length === 0) {
      if (entries !== null && !sink.signal.aborted) await sink.write(SSE_KEEPALIVE);
      if (!(await catchUp('quiet'))) return;
      continue;
    }
    tail = entries[entries.length - 1]!.id;
    for (const entry of entries) {
      const e = eventOfEntry(entry.fields);
      if (e && e.seq <= pos) continue;
      if (e && e.seq === pos + 1) {
        if (!(await emit(e, 'stream'))) return;
        continue;
      }
      // A gap (an earlier entry trimmed or lost) or an entry without its event: the log has what is missing.
      if (!(await catchUp('gap'))) return;
    }
  }
}

/** Writes to a Node stream honouring its back-pressure, giving up when the client has gone. */
export async function writeWithDrain(out: NodeJS.WritableStream, chunk: string, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  if (out.write(chunk)) return;
  await Promise.race([once(out as unknown as NodeJS.EventEmitter, 'drain'), once(signal as unknown as NodeJS.EventEmitter, 'abort')]).catch(() => undefined);
}
