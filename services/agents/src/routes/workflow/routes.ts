import type { RouterContext } from '@koa/router';
import { AppError } from '@lore/runtime';
import type { GenericContinueInput, GenericStartInput, RestoredWorkflow, SearchViewWithKeys, StreamSink } from '../../application/generic-workflows';
import type { Principal } from '../../application/principal';
import type { SearchView } from '../../application/workflows';
import type { SearchKind } from '../../domain/workflow';
import type { ThreadRow } from '../../store/generic-workflows';
import { z } from 'zod';
import { AGENTS_SECURITY, FAMILY, detailView, route, type AgentsGuard, type AgentsState } from '../route';
import { serveEventStream } from '../event-stream';
import {
  WORKFLOW_STREAM,
  continueBody,
  genericSnapshotView,
  listParams,
  peopleStartBody,
  presentGenericSnapshot,
  presentRestore,
  presentTable,
  presentThreads,
  removeCriteriaBody,
  restoreView,
  startBody,
  streamQuery,
  tableStructureView,
  threadIdView,
  threadParams,
  threadsQuery,
  threadsView,
} from './schema';

export interface WorkflowRouteDeps {
  guard: AgentsGuard;
  start(p: Principal, kind: SearchKind, input: GenericStartInput): Promise<{ thread_id: string; list_id: string }>;
  continue(p: Principal, kind: SearchKind, input: GenericContinueInput): Promise<{ thread_id: string; seq: number }>;
  view(p: Principal, kind: SearchKind, threadId: string): Promise<SearchViewWithKeys>;
  threads(p: Principal, kind: SearchKind, page: { limit: number; offset: number }): Promise<ThreadRow[]>;
  restore(p: Principal, listId: string): Promise<RestoredWorkflow>;
  stop(p: Principal, kind: SearchKind, threadId: string): Promise<string>;
  removeCriterion(p: Principal, kind: SearchKind, input: { thread_id: string; column_name?: string; name?: string }): Promise<SearchView>;
  /** The caller's workflow (any kind) and its last event's number, or 404. */
  streamable(p: Principal, threadId: string): Promise<{ thread_id: string; last_seq: number }>;
  follow(tenantId: string, threadId: string, afterSeq: number, sink: StreamSink): Promise<void>;
  /** Takes a slot of the open streams (503 when none is left, 429 when the tenant holds its share); answers the function that gives it back. */
  enterStream(tenantId: string): () => void;
}

const detail = FAMILY.detail;
const NOT_FOUND = { 404: detail.error("no such workflow of the caller (another tenant's is not found either)") };
const LIMITED = { 429: detail.error('the serviceId already has its most running workflows (LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE), or the tenant its most open streams (a quarter of the instance\'s); Retry-After') };
const TENANT_STREAMS = { 429: detail.error('the tenant already holds its most open streams on this instance (a quarter of them); Retry-After') };
/** Body (c) for input its schema refuses, `{detail: "<message>"}` for what the workflow's state refuses. */
const INVALID = (what: string) => ({ 422: { description: `invalid input: body (c); ${what}: {detail: "<message>"}`, schema: z.union([detail.invalidView, detailView]) } });
const BUSY = { 503: detail.error('too many open streams on this instance; Retry-After') };

/** A JSON string (the router would send a returned string as text/plain). */
function jsonString(ctx: RouterContext<AgentsState>, value: string): void {
  ctx.status = 200;
  ctx.type = 'application/json';
  ctx.body = JSON.stringify(value);
}

/**
 * Answers a server-sent stream of the workflow's events after `afterSeq`; the slot `leave` is given back when it ends.
 * The client going away stops the stream, not the workflow; its slot is free at once.
 */
function serveStream(ctx: RouterContext<AgentsState>, deps: WorkflowRouteDeps, threadId: string, afterSeq: number, leave: () => void): void {
  const tenantId = ctx.state.principal.tenantId;
  serveEventStream(ctx, (sink) => deps.follow(tenantId, threadId, afterSeq, sink), leave, { what: 'workflow', threadId });
}

const LAST_ID = /^\d{1,15}$/;

/** The position to resume after: `Last-Event-ID` (or `?last_event_id=`), 0 without; 422 body (c) for anything else. */
function resumePoint(ctx: RouterContext<AgentsState>, query: { last_event_id?: string }, lastSeq: number): number {
  const header = ctx.get('last-event-id');
  const [raw, loc] = header !== '' ? [header.trim(), ['header', 'Last-Event-ID']] : [query.last_event_id?.trim(), ['query', 'last_event_id']];
  if (raw === undefined || raw === '') return 0;
  const refuse = (msg: string) => new AppError('UNPROCESSABLE', msg, { body: { detail: [{ loc, msg, type: 'value_error' }] } });
  if (!LAST_ID.test(raw)) throw refuse('an event id is a whole number (the `id:` of a received event)');
  const n = Number(raw);
  if (n > lastSeq) throw refuse(`no event ${n} yet: the workflow's last event is ${lastSeq}`);
  return n;
}

/** Spec 3's generic workflow API (detail family): company routes stream, people routes answer the thread id. */
export function workflowRoutes(deps: WorkflowRouteDeps) {
  const common = { security: AGENTS_SECURITY, invalid: detail.invalid, unreadable: detail.unreadable };
  const tags = ['workflow'];
  const peopleTags = ['workflow (people)'];
  const removeDescription =
    'An open object: `thread_id` and the criterion\'s `column_name` (else its `name`). The criterion leaves the workflow\'s criteria and its column and cells leave the list (the entity\'s own fields stay). Only once the workflow has ended: a running one is 409.';
  const removeResponses = { ...NOT_FOUND, 409: detail.error('the workflow is still running'), ...INVALID('no column_name or name') };
  const removeInput = (body: { thread_id: string; column_name?: string; name?: string }) => ({ thread_id: body.thread_id, column_name: body.column_name, name: body.name });
  const status = (kind: SearchKind, path: string, people: boolean) =>
    route({
      ...common,
      method: 'get',
      path,
      operationId: people ? 'peopleWorkflowStatus' : 'workflowStatus',
      summary: 'The workflow\'s snapshot',
      description: 'Spec 3\'s snapshot; `goal` is an object here `{description, category, total_target, current_count}`; plus `status`, `list_id`, `serviceId` and `type`.',
      tags: people ? peopleTags : tags,
      guards: deps.guard('read', 'detail'),
      params: threadParams,
      ok: { status: 200, description: 'the snapshot', schema: genericSnapshotView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => presentGenericSnapshot(await deps.view(ctx.state.principal, kind, params.thread_id)),
    });
  const threads = (kind: SearchKind, path: string, people: boolean) =>
    route({
      ...common,
      method: 'get',
      path,
      operationId: people ? 'peopleWorkflowThreads' : 'workflowThreads',
      summary: 'The caller\'s workflows, newest first',
      description: 'Thread items `{thread_id, tenant_id, order_id, status, created_at, last_updated}`; `order_id` is the serviceId (empty without). `limit` 1–200 (50), `offset` ≤ 100,000.',
      tags: people ? peopleTags : tags,
      guards: deps.guard('read', 'detail'),
      query: threadsQuery,
      ok: { status: 200, description: 'the thread items', schema: threadsView },
      handler: async (ctx, { query }) => presentThreads(await deps.threads(ctx.state.principal, kind, query)),
    });
  const stop = (kind: SearchKind, path: string, people: boolean) =>
    route({
      ...common,
      method: 'post',
      path,
      operationId: people ? 'peopleWorkflowStop' : 'workflowStop',
      summary: 'Stop the workflow',
      description: 'Status `stopping`; the worker marks it `stopped` within about a second. An ended workflow is left as it is. Answers the thread id.',
      tags: people ? peopleTags : tags,
      guards: deps.guard('write', 'detail'),
      params: threadParams,
      ok: { status: 200, description: 'the thread id', schema: threadIdView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => jsonString(ctx, await deps.stop(ctx.state.principal, kind, params.thread_id)),
    });
  return [
    route({
      ...common,
      method: 'post',
      path: '/api/workflow/start',
      operationId: 'workflowStart',
      summary: 'Start a company workflow and stream its progress',
      description:
        '`prompt` 1–4,000; `serviceId` (recorded; at most LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE running workflows per serviceId, else 429); `total_target` 1–1,000 (25; a count in the prompt sets it when absent); `type` list_builder, base_data_list or predefined_agent (kept on the workflow); `threadId`, `list_id` (UUIDs the new workflow and list take; taken ones are 409); `list_name`, `list_description`; `additional_criteria` (≤ 30) join the extracted ones. The stream follows the workflow until it ends; the workflow goes on if the client leaves.',
      tags,
      guards: deps.guard('write', 'detail'),
      body: startBody,
      ok: { status: 200, description: 'the workflow\'s events as server-sent events', content: WORKFLOW_STREAM },
      responses: { 409: detail.error('threadId or list_id is already taken in this tenant'), ...LIMITED, ...BUSY, ...INVALID('a blank prompt') },
      handler: async (ctx, { body }) => {
        const leave = deps.enterStream(ctx.state.principal.tenantId);
        try {
          const r = await deps.start(ctx.state.principal, 'company_search', body);
          serveStream(ctx, deps, r.thread_id, 0, leave);
        } catch (err) {
          leave();
          throw err;
        }
      },
    }),
    route({
      ...common,
      method: 'post',
      path: '/api/workflow/continue',
      operationId: 'workflowContinue',
      summary: 'Continue a company workflow (criteria edits, a larger target) and stream its progress',
      description:
        '`total_target` (default: the workflow\'s own) must exceed the rows found; `current_criteria` replaces the criteria, `additional_criteria` are merged in by column_name; `serviceId` is recorded and counted. The stream starts at the `continued` event.',
      tags,
      guards: deps.guard('write', 'detail'),
      body: continueBody,
      ok: { status: 200, description: 'the workflow\'s events from the continue on, as server-sent events', content: WORKFLOW_STREAM },
      responses: { ...NOT_FOUND, ...LIMITED, ...BUSY, ...INVALID('a target not above the rows found, a workflow still stopping') },
      handler: async (ctx, { body }) => {
        const leave = deps.enterStream(ctx.state.principal.tenantId);
        try {
          const r = await deps.continue(ctx.state.principal, 'company_search', body);
          serveStream(ctx, deps, r.thread_id, r.seq - 1, leave);
        } catch (err) {
          leave();
          throw err;
        }
      },
    }),
    route({
      ...common,
      method: 'get',
      path: '/api/workflow/stream/:thread_id',
      operationId: 'workflowStream',
      summary: 'Resume a workflow\'s stream',
      description:
        'The events after `Last-Event-ID` (header; or `?last_event_id=`), each once and in order, then live ones until the workflow ends; without either, from its first event. Company and people workflows alike. An id beyond the workflow\'s last event is 422 body (c).',
      tags,
      guards: deps.guard('read', 'detail'),
      params: threadParams,
      query: streamQuery,
      parameters: [{ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'the `id:` of the last event received' }],
      ok: { status: 200, description: 'the workflow\'s events as server-sent events', content: WORKFLOW_STREAM },
      responses: { ...NOT_FOUND, ...TENANT_STREAMS, ...BUSY, ...INVALID('none') },
      handler: async (ctx, { params, query }) => {
        const w = await deps.streamable(ctx.state.principal, params.thread_id);
        const after = resumePoint(ctx, query, w.last_seq);
        serveStream(ctx, deps, w.thread_id, after, deps.enterStream(ctx.state.principal.tenantId));
      },
    }),
    status('company_search', '/api/workflow/status/:thread_id', false),
    threads('company_search', '/api/workflow/threads', false),
    route({
      ...common,
      method: 'get',
      path: '/api/workflow/restore/:list_id',
      operationId: 'workflowRestore',
      summary: 'A company or people list as a restored workflow',
      description: '`{list_id, status: "restored", criteria, total_target, table_structure, title, description, thread_id, listType, supervisor_started}`; `supervisor_started` while a worker runs it. An imported list is restored by `/api/lists/csv/restore`.',
      tags,
      guards: deps.guard('read', 'detail'),
      params: listParams,
      ok: { status: 200, description: 'the restored workflow', schema: restoreView },
      responses: { 404: detail.error('no such company or people list of the caller') },
      handler: async (ctx, { params }) => presentRestore(await deps.restore(ctx.state.principal, params.list_id)),
    }),
    stop('company_search', '/api/workflow/stop/:thread_id', false),
    route({
      ...common,
      method: 'post',
      path: '/api/workflow/remove-criteria',
      operationId: 'workflowRemoveCriteria',
      summary: 'Remove a criterion and its column',
      description: `${removeDescription} Answers the updated table structure.`,
      tags,
      guards: deps.guard('write', 'detail'),
      body: removeCriteriaBody,
      ok: { status: 200, description: 'the table structure without the column', schema: tableStructureView },
      responses: removeResponses,
      handler: async (ctx, { body }) => presentTable(await deps.removeCriterion(ctx.state.principal, 'company_search', removeInput(body))),
    }),
    route({
      ...common,
      method: 'post',
      path: '/api/workflow/people/start',
      operationId: 'peopleWorkflowStart',
      summary: 'Start a people workflow',
      description: 'The company start\'s fields, `type` `people_search`. Answers the thread id; follow it with `GET /api/workflow/stream/{thread_id}`.',
      tags: peopleTags,
      guards: deps.guard('write', 'detail'),
      body: peopleStartBody,
      ok: { status: 200, description: 'the thread id', schema: threadIdView },
      responses: { 409: detail.error('threadId or list_id is already taken in this tenant'), ...LIMITED, ...INVALID('a blank prompt') },
      handler: async (ctx, { body }) => jsonString(ctx, (await deps.start(ctx.state.principal, 'people_search', body)).thread_id),
    }),
    route({
      ...common,
      method: 'post',
      path: '/api/workflow/people/continue',
      operationId: 'peopleWorkflowContinue',
      summary: 'Continue a people workflow',
      description: 'The company continue\'s fields. Answers the thread id.',
      tags: peopleTags,
      guards: deps.guard('write', 'detail'),
      body: continueBody,
      ok: { status: 200, description: 'the thread id', schema: threadIdView },
      responses: { ...NOT_FOUND, ...LIMITED, ...INVALID('a target not above the rows found, a workflow still stopping') },
      handler: async (ctx, { body }) => jsonString(ctx, (await deps.continue(ctx.state.principal, 'people_search', body)).thread_id),
    }),
    status('people_search', '/api/workflow/people/status/:thread_id', true),
    threads('people_search', '/api/workflow/people/threads', true),
    stop('people_search', '/api/workflow/people/stop/:thread_id', true),
    route({
      ...common,
      method: 'post',
      path: '/api/workflow/people/remove-criteria',
      operationId: 'peopleWorkflowRemoveCriteria',
      summary: 'Remove a criterion and its column',
      description: `${removeDescription} Answers a confirmation string.`,
      tags: peopleTags,
      guards: deps.guard('write', 'detail'),
      body: removeCriteriaBody,
      ok: { status: 200, description: 'a confirmation', schema: threadIdView },
      responses: removeResponses,
      handler: async (ctx, { body }) => {
        const v = await deps.removeCriterion(ctx.state.principal, 'people_search', removeInput(body));
        jsonString(ctx, `criterion ${body.column_name ?? body.name ?? ''} removed from workflow ${v.workflow.thread_id}`);
      },
    }),
  ];
}
