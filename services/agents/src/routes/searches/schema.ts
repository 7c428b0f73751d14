import { queryInteger } from '@lore/runtime';
import { z } from 'zod';
import type { SavedListRow, SearchView } from '../../application/workflows';
import { MAX_TOTAL_TARGET, type Cell, type Column } from '../../domain/workflow';
import { openRecord } from '../../application/list-building';

/** A thread id in a path: 1 to 512 characters (spec 3's bound for stop-enrichment, applied to every search path). */
export const threadParams = z.object({ thread_id: z.string().min(1).max(512) });
export const taskParams = z.object({ task_id: z.string().min(1).max(512) });

export const startBody = z.object({
  prompt: z.string().trim().min(1, 'prompt must not be empty').max(4000),
  list_description: z.string().max(2000).optional(),
  list_name: z.string().max(200).optional(),
  search_mode: z.string().max(32).optional(),
});

export const continueBody = z.object({
  thread_id: z.string().min(1).max(512),
  total_target: z.number().int().min(1).max(MAX_TOTAL_TARGET),
});

export const enrichmentBody = z.object({
  thread_id: z.string().min(1).max(512),
  column_name: z.string().trim().min(1, 'column_name must not be empty').max(100),
  instruction: z.string().max(2000).default(''),
  enrichment_type: z.string().max(32).default(''),
  data_type: z.string().max(32).default(''),
});

export const listsQuery = z.object({
  limit: queryInteger('limit', { min: 1, max: 100, default: 50 }),
  offset: queryInteger('offset', { min: 0, max: 100_000, default: 0 }),
});

export const startView = z.object({ success: z.boolean(), message: z.string(), thread_id: z.string(), status: z.string() });
export const continueView = z.object({ success: z.boolean(), thread_id: z.string(), status: z.string() });
export const stopView = z.object({ success: z.boolean(), thread_id: z.string(), status: z.string(), message: z.string() });
export const enrichmentView = z.object({
  success: z.boolean(),
  thread_id: z.string(),
  column_id: z.string(),
  column_name: z.string(),
  enrichment_type: z.string(),
  status: z.string(),
  message: z.string(),
});

const criterionView = z.object({
  name: z.string(),
  value: z.string(),
  column_name: z.string(),
  columnType: z.string(),
  description: z.string(),
  type: z.string(),
  width: z.number().int(),
  maxWidth: z.number().int(),
  minWidth: z.number().int(),
});
const columnView = z.object({
  id: z.string(),
  header: z.string(),
  type: z.string(),
  columnType: z.string(),
  dataType: z.string(),
  width: z.number().int(),
  maxWidth: z.number().int(),
  minWidth: z.number().int(),
  required: z.boolean(),
});
const cellView = z.object({
  row_id: z.string(),
  column_id: z.string(),
  value: z.string(),
  status: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  expandable: z.boolean(),
});
const rowView = z.object({ id: z.string(), cells: z.record(z.string(), cellView), step_source: z.string(), metadata: z.record(z.string(), z.unknown()) });
const tableView = z.object({
  columns: z.array(columnView),
  rows: z.array(rowView),
  total_target: z.number().int(),
  current_count: z.number().int(),
  /** Lore's addition: where the candidates came from (`directory`, `web`). */
  sources: z.array(z.string()),
  /** Lore's addition: what a reader should know (no web provider, a spent budget, sources exhausted). */
  notes: z.array(z.string()),
});

export const snapshotView = z.object({
  success: z.boolean(),
  thread_id: z.string(),
  /** Lore's addition: the workflow's status (processing, continuing, stopping, stopped, completed, error). */
  status: z.string(),
  current_step: z.string(),
  category: z.string(),
  criteria: z.array(criterionView),
  error_message: z.string().nullable(),
  total_target: z.number().int(),
  table_structure: tableView,
  all_companies: z.array(z.record(z.string(), z.unknown())),
  step_companies: z.record(z.string(), z.array(z.record(z.string(), z.unknown()))),
  title: z.string(),
  description: z.string(),
  goal: z.string(),
  processed_companies: z.array(z.string()),
  /** Lore's addition: the credits this workflow was charged so far, over all its runs (docs/agents.md, "Credits"). */
  credits_used: z.number().int().describe('credits charged to the tenant for this workflow so far (Lore\'s addition)'),
});

export const listItemView = z.object({
  id: z.string(),
  listLinkID: z.string(),
  createdAt: z.string(),
  listDescription: z.string(),
  listName: z.string(),
  listStatus: z.string(),
  listType: z.string(),
  title: z.string(),
  subtitle: z.string(),
  type: z.string(),
  noOfRecords: z.number().int(),
  author: z.number().int(),
});
export const listsView = z.object({ success: z.boolean(), data: z.array(listItemView), total: z.number().int() });

export const searchResultView = z.object({
  success: z.boolean(),
  thread_id: z.string(),
  list_id: z.string(),
  list_type: z.string(),
  status: z.string(),
  total: z.number().int(),
  columns: z.array(columnView),
  data: z.array(z.record(z.string(), z.unknown())),
});

const presentRow = (r: SearchView['rows'][number]) => {
  const meta = r.metadata as { source?: unknown; score?: unknown };
  return { id: r.row_id, cells: r.cells as Record<string, Cell>, step_source: r.step_source, metadata: { entity_key: r.entity_key, source: meta.source ?? null, score: meta.score ?? null } };
};

const isProcessed = (r: SearchView['rows'][number]) => Object.values(r.cells as Record<string, Cell>).every((c) => c.status !== 'pending');

export function presentSnapshot(v: SearchView): z.input<typeof snapshotView> {
  const columns = (v.list?.columns ?? []) as Column[];
  const records: Array<Record<string, unknown>> = v.rows.map((r) => ({ row_id: r.row_id, ...openRecord(r.entity_key, r.cells as Record<string, Cell>, columns) }));
  const processed = v.rows.filter(isProcessed);
  const stepCompanies: Record<string, Array<Record<string, unknown>>> = {};
  v.rows.forEach((r, i) => (stepCompanies[r.step_source] ??= []).push(records[i]!));
  if (processed.length > 0) stepCompanies.enrichment = records.filter((_, i) => isProcessed(v.rows[i]!));
  return {
    success: v.workflow.status !== 'error',
    thread_id: v.workflow.thread_id,
    status: v.workflow.status,
    current_step: v.workflow.current_step,
    category: v.state.category || v.workflow.kind,
    criteria: v.state.criteria,
    error_message: v.workflow.error_message ?? '',
    total_target: v.workflow.total_target,
    table_structure: { columns, rows: v.rows.map(presentRow), total_target: v.workflow.total_target, current_count: v.rows.length, sources: v.state.sources, notes: v.state.notes },
    all_companies: records,
    step_companies: stepCompanies,
    title: v.state.title,
    description: v.state.description,
    goal: v.state.goal,
    processed_companies: processed.map((r) => r.entity_key),
    credits_used: Number(v.workflow.credits_used ?? 0),
  };
}

/** `author`: an owner whose subject is a whole number (none of Lore's credentials has one: user ids are text), else 0. */
const authorOf = (owner: string): number => {
  const subject = owner.slice(owner.indexOf(':') + 1);
  return /^\d{1,15}$/.test(subject) ? Number(subject) : 0;
};

const LIST_TITLES: Record<string, string> = { company_search: 'Company list', people_search: 'People list', csv_import: 'Imported list' };

export function presentLists(page: { lists: SavedListRow[]; total: number }): z.input<typeof listsView> {
  return {
    success: true,
    total: page.total,
    data: page.lists.map((l) => ({
      id: l.list_id,
      listLinkID: l.thread_id ?? l.list_id,
      createdAt: new Date(l.created_at).toISOString(),
      listDescription: l.description,
      listName: l.name,
      listStatus: l.status,
      listType: l.list_type,
      title: l.name,
      subtitle: `${LIST_TITLES[l.list_type] ?? 'List'} · ${Number(l.rows)} records`,
      type: l.list_type === 'people_search' ? 'people' : l.list_type === 'csv_import' ? 'csv' : 'company',
      noOfRecords: Number(l.rows),
      author: authorOf(l.owner),
    })),
  };
}

export function presentSearchResult(v: SearchView): z.input<typeof searchResultView> {
  const columns = (v.list?.columns ?? []) as Column[];
  return {
    success: v.workflow.status !== 'error',
    thread_id: v.workflow.thread_id,
    list_id: v.list?.list_id ?? '',
    list_type: v.workflow.kind,
    status: v.workflow.status,
    total: v.rows.length,
    columns,
    data: v.rows.map((r) => ({ row_id: r.row_id, ...openRecord(r.entity_key, r.cells as Record<string, Cell>, columns) })),
  };
}
