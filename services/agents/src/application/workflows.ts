import { cutUnits } from '@lore/ai';
import { randomUUID } from 'node:crypto';
import { readsOwnMemory, TOPICS } from '@lore/contracts';
import { enqueueOutbox, type Sql } from '@lore/runtime';
import {
  DEFAULT_TOTAL_TARGET,
  SEARCH_KINDS,
  columnIdOf,
  emptyState,
  isRunning,
  openCell,
  readState,
  type Column,
  type SearchKind,
  type WorkflowState,
} from '../domain/workflow';
import { countListRows, getList, insertList, listLists, listRowsOf, listRowsShownOf, updateList, updateListRowCells, type ListRow, type ListRowRow } from '../store/lists';
import { getWorkflow, insertWorkflow, updateWorkflow, type WorkflowRow } from '../store/workflows';
import type { AgentsDeps } from './context';
import { agentsError, notFound } from './errors';
import { seesWorkflow, type Principal } from './principal';
import { publishEvents, recordEvent, type WorkflowEvent } from './progress';

/**
 * Company and people search workflows, the API side (docs/agents.md, "Workflows"): start, continue, stop, enrichment
 * of a column, and the reads (snapshot, lists, results). Every change is one transaction: the workflow row, its event
 * and, when a worker must act, the outbox message on `lore.agents.workflows` (keyed `<tenant>:<thread>`). The worker
 * (worker.ts) runs the steps.
 */

/** The message a worker acts on. */
export interface WorkflowMessage {
  event_id: string;
  tenant_id: string;
  thread_id: string;
  /** Why it was sent: start, continue, stop, enrich, resume (the sweep). */
  reason: string;
}

/** Rows a snapshot or a result shows at most (total_target is bounded by the same number). */
export const MAX_ROWS_SHOWN = 1000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Sends the workflow to the workers, in the caller's transaction. */
export async function enqueueWorkflow(sql: Sql, tenantId: string, threadId: string, reason: string): Promise<void> {
  const message: WorkflowMessage = { event_id: randomUUID(), tenant_id: tenantId, thread_id: threadId, reason };
  await enqueueOutbox(sql, { topic: TOPICS.agentsWorkflows, key: `${tenantId}:${threadId}`, eventId: message.event_id, value: message });
}

/**
 * The workflow of a thread the principal may see (`seesWorkflow`: its owner, or an administrator within the reach of
 * the memory it reads), of one of `kinds`; else 404 naming `noun` (a workflow, a research run, a session).
 */
export async function visibleWorkflow(sql: Sql, principal: Principal, threadId: string, kinds: readonly string[], lock = false, noun = 'workflow'): Promise<WorkflowRow> {
  const w = UUID.test(threadId) ? await getWorkflow(sql, principal.tenantId, threadId.toLowerCase(), kinds, lock) : null;
  if (!w || !seesWorkflow(principal, w)) throw notFound(noun);
  return w;
}

/** Runs `fn` in one transaction of the tenant, then publishes the workflow events it recorded. */
export async function inTenant<T>(deps: AgentsDeps, tenantId: string, fn: (sql: Sql, events: WorkflowEvent[]) => Promise<T>): Promise<T> {
  const events: WorkflowEvent[] = [];
  const out = await deps.db.withTenant(tenantId, (sql) => fn(sql, events));
  await publishEvents(deps.streams, deps.logger, events);
  return out;
}

export interface StartInput {
  prompt: string;
  list_name?: string;
  list_description?: string;
  search_mode?: string;
  /** The generic workflow API's choices (docs/agents.md, "Generic workflow API"): ids, a target, state keys. */
  thread_id?: string;
  list_id?: string;
  total_target?: number;
  state?: Record<string, unknown>;
  /** Runs first in the start's transaction (a limit's check); throws to refuse the start. */
  admit?: (sql: Sql) => Promise<void>;
}

const titleOf = (prompt: string): string => {
  const line = prompt.trim().split(/\s+/).join(' ');
  return line.length <= 80 ? line : `${cutUnits(line, 79)}…`;
};

/** Starts a search: its list, the workflow (status `processing`), its first event and the worker's message. */
export async function startSearch(deps: AgentsDeps, principal: Principal, kind: SearchKind, input: StartInput): Promise<{ thread_id: string; status: string; list_id: string }> {
  const prompt = input.prompt.trim();
  if (prompt === '') throw agentsError('UNPROCESSABLE', 'prompt must not be empty');
  const threadId = input.thread_id ?? randomUUID();
  const listId = input.list_id ?? randomUUID();
  const target = input.total_target ?? DEFAULT_TOTAL_TARGET;
  const title = input.list_name?.trim() || titleOf(prompt);
  const state = { ...emptyState({ title, named: Boolean(input.list_name?.trim()), description: input.list_description?.trim() ?? '', search_mode: input.search_mode?.trim() || 'fast' }), ...input.state };
  // The worker reads the tenant's knowledge as the starter: their workspace, memory, role and groups (no memory when
  // their credential may not read it).
  const [credential = 'session', ...subject] = principal.owner.split(':');
  state.starter = { workspace_id: principal.workspaceId, memory_id: readsOwnMemory(principal) ? principal.memoryId : '', credential, subject: subject.join(':'), role: principal.role ?? (principal.admin ? 'admin' : 'member'), ...(principal.groups ? { groups: principal.groups } : {}) };
  await inTenant(deps, principal.tenantId, async (sql, events) => {
    await input.admit?.(sql);
    await insertList(sql, principal.tenantId, { list_id: listId, thread_id: threadId, owner: principal.owner, name: title, description: state.description, list_type: kind, status: 'processing', columns: [] });
    await insertWorkflow(sql, principal.tenantId, {
      thread_id: threadId,
      kind,
      owner: principal.owner,
      status: 'processing',
      current_step: 'criteria_extraction',
      prompt,
      state: state as unknown as Record<string, unknown>,
      total_target: target,
      list_id: listId,
    });
    events.push(await recordEvent(sql, principal.tenantId, threadId, 'started', { kind, prompt, total_target: target, list_id: listId }));
    await enqueueWorkflow(sql, principal.tenantId, threadId, 'start');
  });
  deps.workflowMetrics?.started(kind);
  return { thread_id: threadId, status: 'processing', list_id: listId };
}

/** Raises the target of a search and runs it again (status `continuing`); the target must exceed the rows found. */
export async function continueSearch(
  deps: AgentsDeps,
  principal: Principal,
  kind: SearchKind,
  threadId: string,
  totalTarget: number,
  /** Edits the state in the same transaction (the generic workflow API's criteria); answers more data for `continued`. */
  edit?: (sql: Sql, w: WorkflowRow, state: WorkflowState) => Promise<Record<string, unknown>>,
): Promise<{ thread_id: string; status: string }> {
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleWorkflow(sql, principal, threadId, [kind], true);
    if (w.status === 'stopping') throw agentsError('UNPROCESSABLE', 'the workflow is stopping; continue it once it has stopped');
    const found = w.list_id ? await countListRows(sql, principal.tenantId, w.list_id) : 0;
    if (totalTarget <= found) throw agentsError('UNPROCESSABLE', `total_target must exceed the ${found} rows already found`);
    const state = readState(w.state);
    state.spent = { fetches: 0, model_tokens: 0, wall_ms: 0 };
    state.notes = state.notes.filter((n) => !n.startsWith('budget') && !n.startsWith('sources exhausted'));
    // The sources are read again from the start: a run stops mid-page once its target is met, and the directory may
    // hold new records; rows already in the list are skipped by their entity key.
    state.cursor = { directory_offset: 0, web_pages: 0, exhausted: false, pass: (state.cursor.pass ?? 0) + 1 };
    const more = edit ? await edit(sql, w, state) : {};
    const step = w.current_step === 'criteria_extraction' ? 'criteria_extraction' : 'data_collection';
    await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'continuing', total_target: totalTarget, current_step: step, stop_requested: false, error_message: null, state: state as unknown as Record<string, unknown> });
    if (w.list_id) await updateList(sql, principal.tenantId, w.list_id, { status: 'processing' });
    events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'continued', { ...more, total_target: totalTarget, rows: found }));
    await enqueueWorkflow(sql, principal.tenantId, w.thread_id, 'continue');
    return { thread_id: w.thread_id, status: 'continuing' };
  });
}

/** Asks a running search to stop (status `stopping`; the worker marks it `stopped`). An ended one is left as it is. */
export async function stopSearch(deps: AgentsDeps, principal: Principal, kind: SearchKind, threadId: string): Promise<{ thread_id: string; status: string; message: string }> {
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleWorkflow(sql, principal, threadId, [kind], true);
    if (!isRunning(w.status)) return { thread_id: w.thread_id, status: w.status, message: `the workflow has already ended (${w.status})` };
    if (w.status !== 'stopping') {
      await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'stopping', stop_requested: true });
      events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'stop_requested', {}));
      // A workflow no worker holds is stopped by whichever worker takes this message.
      await enqueueWorkflow(sql, principal.tenantId, w.thread_id, 'stop');
    }
    return { thread_id: w.thread_id, status: 'stopping', message: 'the workflow stops after the step in progress' };
  });
}

export interface EnrichmentInput {
  column_name: string;
  instruction: string;
  enrichment_type: string;
  data_type: string;
}

export interface EnrichmentTask {
  thread_id: string;
  column_id: string;
  column_name: string;
  enrichment_type: string;
  status: string;
  message: string;
}

/**
 * Adds an enrichment column to a search's list (a custom instruction, or `contacts`) and has the worker fill it for
 * every row: the workflow runs its enrichment step again (status `processing`).
 */
export async function startEnrichment(deps: AgentsDeps, principal: Principal, kind: SearchKind, threadId: string, input: EnrichmentInput): Promise<EnrichmentTask> {
  const columnName = input.column_name.trim();
  if (columnName === '') throw agentsError('UNPROCESSABLE', 'column_name must not be empty');
  const type = input.enrichment_type.trim().toLowerCase() || 'custom';
  if (type !== 'custom' && type !== 'contacts') throw agentsError('UNPROCESSABLE', 'enrichment_type must be custom or contacts');
  // Spec 3's people route takes only the thread and the column: a custom enrichment without an instruction fills the
  // column by its own name (the candidate's field or sentence that shares a word with it).
  const instruction = input.instruction.trim() || columnName;
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleWorkflow(sql, principal, threadId, [kind], true);
    if (w.status === 'stopping') throw agentsError('UNPROCESSABLE', 'the workflow is stopping; enrich it once it has stopped');
    if (!w.list_id) throw agentsError('UNPROCESSABLE', 'the workflow has no list yet');
    const list = await getList(sql, principal.tenantId, w.list_id);
    if (!list) throw notFound('list');
    const state = readState(w.state);
    const columnId = `enrich_${columnIdOf(columnName)}`;
    if (!state.enrichments[columnId] && Object.keys(state.enrichments).length >= 20) throw agentsError('UNPROCESSABLE', 'a list takes at most 20 enrichment columns');
    state.enrichments[columnId] = { column_id: columnId, column_name: columnName, instruction, enrichment_type: type, data_type: input.data_type.trim() || (kind === 'company_search' ? 'company' : 'person'), status: 'processing', done: 0 };
    const columns = (list.columns as Column[]).filter((c) => c.id !== columnId);
    columns.push({ id: columnId, header: columnName, type: 'enrichment', columnType: 'text', dataType: 'string', width: 240, maxWidth: 600, minWidth: 80, required: false });
    await updateList(sql, principal.tenantId, w.list_id, { columns, status: 'processing' });
    // Every row gets the column as a pending cell, so the table shows what is still to come.
    const rows = await listRowsOf(sql, principal.tenantId, w.list_id, MAX_ROWS_SHOWN);
    await updateListRowCells(sql, principal.tenantId, w.list_id, rows.map((r) => ({ row_id: r.row_id, cells: { [columnId]: openCell(r.row_id, columnId, 'pending') } })));
    const running = isRunning(w.status);
    await updateWorkflow(sql, principal.tenantId, w.thread_id, {
      state: state as unknown as Record<string, unknown>,
      ...(running ? {} : { status: 'processing', current_step: 'enrichment', stop_requested: false, error_message: null }),
    });
    events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'enrichment_started', { column_id: columnId, column_name: columnName, enrichment_type: type }));
    if (!running) await enqueueWorkflow(sql, principal.tenantId, w.thread_id, 'enrich');
    return { thread_id: w.thread_id, column_id: columnId, column_name: columnName, enrichment_type: type, status: 'processing', message: `the ${columnName} column is being filled for every row` };
  });
}

/** Stops the enrichment columns still being filled; cells not filled yet stay pending. */
export async function stopEnrichment(deps: AgentsDeps, principal: Principal, kind: SearchKind, threadId: string): Promise<EnrichmentTask> {
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleWorkflow(sql, principal, threadId, [kind], true);
    const state = readState(w.state);
    const active = Object.values(state.enrichments).filter((e) => e.status === 'processing');
    for (const e of active) e.status = 'stopped';
    if (active.length > 0) {
      await updateWorkflow(sql, principal.tenantId, w.thread_id, { state: state as unknown as Record<string, unknown> });
      events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'enrichment_stopped', { column_ids: active.map((e) => e.column_id) }));
    }
    const last = active[active.length - 1];
    return {
      thread_id: w.thread_id,
      column_id: last?.column_id ?? '',
      column_name: last?.column_name ?? '',
      enrichment_type: last?.enrichment_type ?? '',
      status: 'stopped',
      message: active.length > 0 ? `stopped ${active.length} enrichment column(s)` : 'no enrichment was running',
    };
  });
}

/** Everything a snapshot shows: the workflow, its list and rows (of their metadata, `source` and `score`). */
export interface SearchView {
  workflow: WorkflowRow;
  state: WorkflowState;
  list: ListRow | null;
  rows: ListRowRow[];
}

async function viewOf(sql: Sql, tenantId: string, w: WorkflowRow): Promise<SearchView> {
  const list = w.list_id ? await getList(sql, tenantId, w.list_id) : null;
  const rows = list ? await listRowsShownOf(sql, tenantId, list.list_id, MAX_ROWS_SHOWN) : [];
  return { workflow: w, state: readState(w.state), list, rows };
}

/** A search's snapshot (of this kind, or of either kind for getSearchResult). */
export async function searchView(deps: AgentsDeps, principal: Principal, kinds: readonly string[], threadId: string): Promise<SearchView> {
  return deps.db.withTenant(principal.tenantId, async (sql) => viewOf(sql, principal.tenantId, await visibleWorkflow(sql, principal, threadId, kinds)));
}

export const ANY_SEARCH = SEARCH_KINDS;

export type SavedListRow = ListRow & { rows: string };

/** The lists the principal sees (`seesWorkflow`: its own; an administrator's, the tenant's within its reach), newest first. */
export async function savedLists(deps: AgentsDeps, principal: Principal, page: { limit: number; offset: number }): Promise<{ lists: SavedListRow[]; total: number }> {
  return deps.db.withTenant(principal.tenantId, (sql) => listLists(sql, principal.tenantId, principal, page));
}
