import { randomUUID } from 'node:crypto';
import type { Sql } from '@lore/runtime';
import { SSE_KEEPALIVE, eventOfEntry, type LoggedEvent } from '../../domain/generic-workflow';
import { AWAITING_CLARIFICATION, RESEARCH_KIND, endsStream, newResearchState, readResearchState, researchFrame, researchSse, type ResearchState } from '../../domain/research';
import { RUNNING_STATUSES, isRunning } from '../../domain/workflow';
import { countRunningForService, lockService } from '../../store/generic-workflows';
import { activeResearch, type ActiveResearchRow } from '../../store/research';
import { insertWorkflow, listWorkflowEvents, updateWorkflow, type WorkflowRow } from '../../store/workflows';
import type { AgentsDeps } from '../context';
import { agentsError } from '../errors';
import { DEFAULT_GENERIC_WORKFLOWS, type StreamSink } from '../generic-workflows';
import type { Principal } from '../principal';
import { recordEvent, streamKeyOf, waitForEntries } from '../progress';
import { enqueueWorkflow, inTenant, visibleWorkflow } from '../workflows';

/**
 * Deep research, the API side (docs/agents.md, "Deep research"): start, respond, stop and the reads. A research run
 * is a durable workflow of kind `deep_research` (agents.workflows, its event log, an outbox message to agents-worker),
 * so every change is one transaction; the worker's runner (runner.ts beside this) does the research.
 */

/** Statuses `active` lists: running, and waiting for the caller's answer. */
export const ACTIVE_STATUSES = [...RUNNING_STATUSES, AWAITING_CLARIFICATION] as const;
const MAX_ACTIVE = 200;

export interface ResearchStartInput {
  query: string;
  allow_clarification: boolean;
  max_concurrent_research_units: number;
  max_researcher_iterations: number;
  serviceId: string;
}

/** What the routes show of a research workflow. */
export interface ResearchView {
  workflow: WorkflowRow;
  state: ResearchState;
}

/** The research workflow of a thread the principal may see (its owner, or an administrator), or 404. */
function visibleResearch(sql: Sql, principal: Principal, threadId: string, lock = false): Promise<WorkflowRow> {
  return visibleWorkflow(sql, principal, threadId, [RESEARCH_KIND], lock, 'research');
}

/**
 * Starts a research run: the workflow (status `processing`, step `clarification` or `brief`), its `started` event and
 * the worker's message, in one transaction. At most LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE running workflows per
 * (tenant, serviceId), counted under the service's lock as the generic workflow API does.
 */
export async function startResearch(deps: AgentsDeps, principal: Principal, input: ResearchStartInput): Promise<ResearchView> {
  const query = input.query.trim();
  if (query === '') throw agentsError('UNPROCESSABLE', 'query must not be empty');
  const threadId = randomUUID();
  const state = newResearchState({
    query,
    allow_clarification: input.allow_clarification,
    max_concurrent_research_units: input.max_concurrent_research_units,
    max_researcher_iterations: input.max_researcher_iterations,
    service_id: input.serviceId,
  });
  const step = input.allow_clarification ? 'clarification' : 'brief';
  const workflow = await inTenant(deps, principal.tenantId, async (sql, events) => {
    await lockService(sql, principal.tenantId, input.serviceId);
    const max = deps.genericWorkflows?.maxRunningPerService ?? DEFAULT_GENERIC_WORKFLOWS.maxRunningPerService;
    const running = await countRunningForService(sql, principal.tenantId, input.serviceId);
    if (running >= max) throw agentsError('RATE_LIMITED', `serviceId ${input.serviceId} already has ${running} running workflows (at most ${max} at once); stop one or wait for one to end`, { 'retry-after': '10' });
    const w = await insertWorkflow(sql, principal.tenantId, {
      thread_id: threadId,
      kind: RESEARCH_KIND,
      owner: principal.owner,
      status: 'processing',
      current_step: step,
      prompt: query,
      state: state as unknown as Record<string, unknown>,
      total_target: 0,
      list_id: null,
    });
    events.push(
      await recordEvent(sql, principal.tenantId, threadId, 'started', {
        query,
        allow_clarification: input.allow_clarification,
        max_concurrent_research_units: input.max_concurrent_research_units,
        max_researcher_iterations: input.max_researcher_iterations,
        message: 'research started',
      }),
    );
    await enqueueWorkflow(sql, principal.tenantId, threadId, 'start');
    return w;
  });
  deps.workflowMetrics?.started(RESEARCH_KIND);
  return { workflow, state };
}

export async function researchView(deps: AgentsDeps, principal: Principal, threadId: string): Promise<ResearchView> {
  return deps.db.withTenant(principal.tenantId, async (sql) => {
    const w = await visibleResearch(sql, principal, threadId);
    return { workflow: w, state: readResearchState(w.state) };
  });
}

/** The caller's active research (an administrator, or a key: the tenant's), newest first. */
export async function activeResearchOf(deps: AgentsDeps, principal: Principal): Promise<ActiveResearchRow[]> {
  return deps.db.withTenant(principal.tenantId, (sql) => activeResearch(sql, principal.tenantId, principal.admin ? null : principal.owner, ACTIVE_STATUSES, MAX_ACTIVE));
}

/** Answers the clarifying question: the research continues (status `processing`, step `brief`). */
export async function respondResearch(deps: AgentsDeps, principal: Principal, threadId: string, answer: string): Promise<{ thread_id: string; status: string; message: string }> {
  const text = answer.trim();
  if (text === '') throw agentsError('UNPROCESSABLE', 'the response must not be empty');
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleResearch(sql, principal, threadId, true);
    if (w.status !== AWAITING_CLARIFICATION) throw agentsError('UNPROCESSABLE', `the research is not waiting for an answer (status ${w.status})`);
    const state = readResearchState(w.state);
    state.clarification = { question: state.clarification?.question ?? '', answer: text };
    await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'processing', current_step: 'brief', state: state as unknown as Record<string, unknown> });
    events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'clarification_answered', { answer: text, message: 'clarification received; the research continues' }));
    await enqueueWorkflow(sql, principal.tenantId, w.thread_id, 'respond');
    return { thread_id: w.thread_id, status: 'processing', message: 'clarification received; the research continues' };
  });
}

/**
 * Stops a research run: a running one goes `stopping` (its worker ends it `stopped` within about a second); one
 * waiting for a clarification, which no worker holds, is `stopped` at once. An ended one answers its status.
 */
export async function stopResearch(deps: AgentsDeps, principal: Principal, threadId: string): Promise<{ thread_id: string; status: string; message: string }> {
  return inTenant(deps, principal.tenantId, async (sql, events) => {
    const w = await visibleResearch(sql, principal, threadId, true);
    if (w.status === AWAITING_CLARIFICATION) {
      await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'stopped' });
      events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'stopped', { step: w.current_step, message: 'the research was stopped while waiting for a clarification' }));
      return { thread_id: w.thread_id, status: 'stopped', message: 'the research was stopped' };
    }
    if (!isRunning(w.status)) return { thread_id: w.thread_id, status: w.status, message: `the research has already ended (${w.status})` };
    if (w.status !== 'stopping') {
      await updateWorkflow(sql, principal.tenantId, w.thread_id, { status: 'stopping', stop_requested: true });
      events.push(await recordEvent(sql, principal.tenantId, w.thread_id, 'stop_requested', { step: w.current_step, message: 'stop requested' }));
      await enqueueWorkflow(sql, principal.tenantId, w.thread_id, 'stop');
    }
    return { thread_id: w.thread_id, status: 'stopping', message: 'the research stops after the fetch in progress' };
  });
}

/** Checks the caller may follow a research stream; answers its thread id and last event's number. */
export async function researchStreamable(deps: AgentsDeps, principal: Principal, threadId: string): Promise<{ thread_id: string; last_seq: number }> {
  return deps.db.withTenant(principal.tenantId, async (sql) => {
    const w = await visibleResearch(sql, principal, threadId);
    return { thread_id: w.thread_id, last_seq: Number(w.next_seq) - 1 };
  });
}

const EVENT_PAGE = 500;
const MAX_EVENTS = 1_000_000;

/**
 * Follows a research run after `afterSeq` (docs/agents.md, "Deep research", the stream): the same reads as the
 * generic workflow stream — the event log to catch up (opening, a gap, a quiet keep-alive period), live frames from
 * the progress-stream entries — each event one `id: <seq>` / `data: {event, ...}` frame, once and in order. Ends after
 * the `complete`, `error` or `stopped` frame, when the client leaves, or after the stream's longest life.
 */
export async function followResearch(deps: AgentsDeps, tenantId: string, threadId: string, afterSeq: number, sink: StreamSink): Promise<void> {
  const settings = { ...DEFAULT_GENERIC_WORKFLOWS, ...deps.genericWorkflows };
  const key = streamKeyOf(tenantId, threadId);
  const deadline = Date.now() + settings.streamMaxMs;
  let pos = afterSeq;
  let ended = false;
  let read = 0;
  const emit = async (e: LoggedEvent): Promise<boolean> => {
    read++;
    pos = e.seq;
    if (sink.signal.aborted) return false;
    const frame = researchFrame(threadId, e);
    await sink.write(researchSse(frame));
    if (endsStream(frame)) ended = true;
    return true;
  };
  const catchUp = async (): Promise<boolean> => {
    while (read < MAX_EVENTS && !ended) {
      const rows = await deps.db.withTenant(tenantId, (sql) => listWorkflowEvents(sql, tenantId, threadId, pos, EVENT_PAGE));
      for (const row of rows) {
        if (!(await emit({ seq: Number(row.seq), type: row.type, data: row.data, at: new Date(row.created_at).toISOString() }))) return false;
        if (ended) break;
      }
      if (rows.length < EVENT_PAGE) break;
    }
    return !sink.signal.aborted;
  };
  let tail = (await deps.streams.describe(key).catch(() => null))?.lastEntryId ?? '0-0';
  // An event the log has already ended with (a resume at or after the end) ends the stream at once.
  if (afterSeq > 0) {
    const last = await deps.db.withTenant(tenantId, (sql) => listWorkflowEvents(sql, tenantId, threadId, afterSeq - 1, 1));
    const e = last[0];
    if (e && Number(e.seq) === afterSeq && endsStream(researchFrame(threadId, { seq: afterSeq, type: e.type, data: e.data, at: '' }))) return;
  }
  if (!(await catchUp())) return;
  while (read < MAX_EVENTS && !sink.signal.aborted && !ended) {
    const entries = await waitForEntries(deps, key, tail, deadline, settings.keepaliveMs, threadId);
    if (entries === 'expired') return;
    if (entries === null || entries.length === 0) {
      if (entries !== null && !sink.signal.aborted) await sink.write(SSE_KEEPALIVE);
      if (!(await catchUp())) return;
      continue;
    }
    tail = entries[entries.length - 1]!.id;
    for (const entry of entries) {
      if (ended) break;
      const e = eventOfEntry(entry.fields);
      if (e && e.seq <= pos) continue;
      if (e && e.seq === pos + 1) {
        if (!(await emit(e))) return;
        continue;
      }
      if (!(await catchUp())) return;
    }
  }
}
