import { queryInteger } from '@lore/runtime';
import { z } from 'zod';
import type { RestoredWorkflow, SearchViewWithKeys } from '../../application/generic-workflows';
import type { ThreadRow } from '../../store/generic-workflows';
import { GENERIC_TYPES, MAX_CRITERIA } from '../../domain/generic-workflow';
import { CRITERION_TYPES } from '../../domain/criteria';
import { MAX_TOTAL_TARGET } from '../../domain/workflow';
import { presentSnapshot, snapshotView } from '../searches/schema';

const uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a UUID');
const width = z.number().int().min(20).max(2000);

/** Spec 3's criterion as a caller sends it: a name at least (column_name in snake_case from it when absent). */
export const criterionBody = z.object({
  name: z.string().trim().min(1, 'name must not be empty').max(100),
  value: z.string().max(500).optional(),
  column_name: z.string().max(64).optional(),
  columnType: z.string().max(32).optional(),
  description: z.string().max(1000).optional(),
  type: z.enum(CRITERION_TYPES as unknown as [string, ...string[]]).optional(),
  width: width.optional(),
  maxWidth: width.optional(),
  minWidth: width.optional(),
});

/** A serviceId: letters, digits and `._:-`, 1 to 128 characters. */
const serviceId = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'serviceId: 1 to 128 letters, digits or . _ : -');
const criteriaList = z.array(criterionBody).max(MAX_CRITERIA);

const startFields = {
  prompt: z.string().trim().min(1, 'prompt must not be empty').max(4000),
  serviceId: serviceId.optional(),
  total_target: z.number().int().min(1).max(MAX_TOTAL_TARGET).optional(),
  threadId: uuid.optional(),
  list_name: z.string().max(200).optional(),
  list_description: z.string().max(2000).optional(),
  list_id: uuid.optional(),
  additional_criteria: criteriaList.optional(),
};

export const startBody = z.object({ ...startFields, type: z.enum(GENERIC_TYPES).default('list_builder') });
export const peopleStartBody = z.object({ ...startFields, type: z.literal('people_search').default('people_search') });

export const continueBody = z.object({
  thread_id: z.string().min(1).max(512),
  total_target: z.number().int().min(1).max(MAX_TOTAL_TARGET).optional(),
  serviceId: serviceId.optional(),
  additional_criteria: criteriaList.optional(),
  current_criteria: criteriaList.optional(),
});

/** An open object: thread_id and the criterion's column_name or name; other keys are ignored. */
export const removeCriteriaBody = z
  .looseObject({
    thread_id: z.string().min(1).max(512),
    column_name: z.string().min(1).max(64).optional(),
    name: z.string().min(1).max(100).optional(),
  })
  .refine((b) => b.column_name !== undefined || b.name !== undefined, { message: 'column_name or name is required', path: ['column_name'] });

export const threadParams = z.object({ thread_id: z.string().min(1).max(512) });
export const listParams = z.object({ list_id: z.string().min(1).max(512) });
export const threadsQuery = z.object({
  limit: queryInteger('limit', { min: 1, max: 200, default: 50 }),
  offset: queryInteger('offset', { min: 0, max: 100_000, default: 0 }),
});
/** `?last_event_id=` (the `Last-Event-ID` header wins when both are sent). */
export const streamQuery = z.object({ last_event_id: z.string().max(20).optional() });

export const threadIdView = z.string().describe('the thread id');

const goalView = z.object({
  description: z.string().describe('what the criteria say the list holds'),
  category: z.string(),
  total_target: z.number().int(),
  current_count: z.number().int(),
});

/** Spec 3's snapshot with `goal` as an object, and the workflow's list, serviceId and type. */
export const genericSnapshotView = snapshotView.extend({
  goal: goalView,
  list_id: z.string().nullable(),
  serviceId: z.string().nullable(),
  type: z.string(),
});

export function presentGenericSnapshot(v: SearchViewWithKeys): z.input<typeof genericSnapshotView> {
  const base = presentSnapshot(v);
  return {
    ...base,
    goal: { description: v.state.goal, category: base.category, total_target: v.workflow.total_target, current_count: v.rows.length },
    list_id: v.workflow.list_id,
    serviceId: v.keys.service_id ?? null,
    type: v.keys.workflow_type ?? (v.workflow.kind === 'people_search' ? 'people_search' : 'list_builder'),
  };
}

export const threadItemView = z.object({
  thread_id: z.string(),
  tenant_id: z.string(),
  order_id: z.string().describe('the serviceId the workflow was started or continued with; empty without one'),
  status: z.string(),
  created_at: z.string(),
  last_updated: z.string(),
});
export const threadsView = z.array(threadItemView);

export const presentThreads = (rows: ThreadRow[]): z.input<typeof threadsView> =>
  rows.map((r) => ({
    thread_id: r.thread_id,
    tenant_id: r.tenant_id,
    order_id: r.service_id ?? '',
    status: r.status,
    created_at: new Date(r.created_at).toISOString(),
    last_updated: new Date(r.updated_at).toISOString(),
  }));

const tableView = snapshotView.shape.table_structure;

export const restoreView = z.object({
  list_id: z.string(),
  status: z.literal('restored'),
  criteria: snapshotView.shape.criteria,
  total_target: z.number().int(),
  table_structure: tableView,
  title: z.string(),
  description: z.string(),
  thread_id: z.string(),
  listType: z.string(),
  supervisor_started: z.boolean().describe('whether a worker runs the workflow now (processing, continuing, stopping)'),
});

export function presentRestore(r: RestoredWorkflow): z.input<typeof restoreView> {
  const snap = presentSnapshot(r.view);
  const running = ['processing', 'continuing', 'stopping'].includes(r.view.workflow.status);
  return {
    list_id: r.view.list?.list_id ?? '',
    status: 'restored',
    criteria: snap.criteria,
    total_target: r.view.workflow.total_target,
    table_structure: snap.table_structure,
    title: r.view.list?.name ?? snap.title,
    description: r.view.list?.description ?? snap.description,
    thread_id: r.view.workflow.thread_id,
    listType: r.view.list?.list_type ?? r.view.workflow.kind,
    supervisor_started: running,
  };
}

export const tableStructureView = tableView;
export const presentTable = (v: Parameters<typeof presentSnapshot>[0]): z.input<typeof tableView> => presentSnapshot(v).table_structure;

/** The stream's frames, for the document. */
export const WORKFLOW_STREAM = {
  'text/event-stream': {
    schema: {
      type: 'string',
      description:
        'one event per entry of the workflow\'s event log: `id: <seq>` and `data: <json>` with `{thread_id, seq, event, status, current_step, criteria, list_id, total_target, current_count, message, at, data}` (the workflow as its log tells it after that event; `data` is the event\'s own). Lines starting with `:` keep a quiet stream open. The stream ends after an event with status completed, stopped or error; resume it with `GET /api/workflow/stream/{thread_id}` and `Last-Event-ID`.',
    },
  },
};
