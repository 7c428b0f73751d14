import { columnWidths, snakeCase } from './criteria';
import { isRunning, type Criterion } from './workflow';

/**
 * The generic workflow API (docs/agents.md, "Generic workflow API"): the criteria a caller adds or edits, and the
 * frames of a workflow's server-sent stream, folded from its event log. Pure: no SQL, no HTTP.
 */

/** Spec 3's start types: each runs the same company workflow; the type is kept on the workflow. */
export const GENERIC_TYPES = ['list_builder', 'base_data_list', 'predefined_agent'] as const;
export type GenericType = (typeof GENERIC_TYPES)[number];

/** Most criteria a workflow carries (extracted and added together). */
export const MAX_CRITERIA = 30;

/** A criterion as a caller sends it: a name at least; the rest is filled in. */
export interface CriterionInput {
  name: string;
  value?: string;
  column_name?: string;
  columnType?: string;
  description?: string;
  type?: string;
  width?: number;
  maxWidth?: number;
  minWidth?: number;
}

/** A caller's criterion made whole: column_name in snake_case (from the name when absent), widths by column type. */
export function toCriterion(c: CriterionInput): Criterion {
  const columnType = c.columnType?.trim() || 'text';
  const widths = columnWidths(columnType);
  return {
    name: c.name.trim(),
    value: c.value?.trim() ?? '',
    column_name: snakeCase(c.column_name?.trim() || c.name),
    columnType,
    description: c.description?.trim() ?? '',
    type: c.type?.trim() || 'hard_filter',
    width: c.width ?? widths.width,
    maxWidth: c.maxWidth ?? widths.maxWidth,
    minWidth: c.minWidth ?? widths.minWidth,
  };
}

/**
 * `base` with `added` merged in by column_name: an added criterion replaces the one with its column, others are
 * appended in order. At most MAX_CRITERIA.
 */
export function mergeCriteria(base: readonly Criterion[], added: readonly Criterion[]): Criterion[] {
  const out = [...base];
  for (const c of added) {
    const i = out.findIndex((o) => o.column_name === c.column_name);
    if (i >= 0) out[i] = c;
    else out.push(c);
  }
  return out.slice(0, MAX_CRITERIA);
}

/** Keys the generic workflow API adds to a workflow's state document. */
export interface GenericStateKeys {
  /** The caller's `serviceId` (credit tracking; the per-service limit counts on it). */
  service_id?: string;
  /** The start's `type`. */
  workflow_type?: string;
  /** Criteria the caller added: merged into the extracted ones when criteria extraction ends. */
  additional_criteria?: Criterion[];
  /** The caller chose total_target: a count in the prompt does not replace it. */
  target_chosen?: boolean;
}

/** The extracted criteria with the caller's additional ones (the worker's criteria extraction calls this). */
export function withAdditionalCriteria(extracted: readonly Criterion[], state: object): Criterion[] {
  const added = (state as GenericStateKeys).additional_criteria;
  return mergeCriteria(extracted, Array.isArray(added) ? added : []);
}

/** Whether the caller chose the target (a state document of any shape). */
export const targetChosen = (state: object): boolean => (state as GenericStateKeys).target_chosen === true;

/** An event of the log, as the stream reads it. */
export interface LoggedEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
  at: string;
}

/** What a stream frame says: the workflow as its log tells it after the event `seq`. */
export interface StreamFrame {
  thread_id: string;
  seq: number;
  event: string;
  status: string;
  current_step: string;
  criteria: Criterion[];
  list_id: string | null;
  total_target: number;
  current_count: number;
  message: string;
  at: string;
  data: Record<string, unknown>;
}

export const ENDED = ['completed', 'stopped', 'error'] as const;
export const isEnded = (status: string): boolean => (ENDED as readonly string[]).includes(status);

export function initialFrame(threadId: string): StreamFrame {
  return { thread_id: threadId, seq: 0, event: '', status: 'processing', current_step: 'criteria_extraction', criteria: [], list_id: null, total_target: 25, current_count: 0, message: '', at: '', data: {} };
}

const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const str = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback);
const criteriaOf = (v: unknown, fallback: Criterion[]): Criterion[] => (Array.isArray(v) ? (v as Criterion[]) : fallback);

/**
 * The frame after `e`, from the frame before it. Deterministic: a replayed event gives the frame it gave live, so a
 * client resuming with Last-Event-ID sees the same frames as one that never left.
 */
export function foldEvent(prev: StreamFrame, e: LoggedEvent): StreamFrame {
  const f: StreamFrame = { ...prev, seq: e.seq, event: e.type, at: e.at, data: e.data, message: '' };
  const d = e.data;
  switch (e.type) {
    case 'started':
      f.status = 'processing';
      f.current_step = 'criteria_extraction';
      f.list_id = str(d.list_id, f.list_id ?? '') || null;
      f.total_target = num(d.total_target, f.total_target);
      f.criteria = criteriaOf(d.criteria, f.criteria);
      break;
    case 'criteria_extracted':
      f.current_step = 'data_collection';
      f.criteria = criteriaOf(d.criteria, f.criteria);
      f.total_target = num(d.total_target, f.total_target);
      break;
    case 'rows_added':
      f.current_count = num(d.total, f.current_count);
      f.total_target = num(d.total_target, f.total_target);
      f.current_step = f.current_count >= f.total_target ? 'enrichment' : 'data_collection';
      break;
    case 'rows_enriched':
      f.current_step = 'enrichment';
      break;
    case 'enrichment_started':
      f.current_step = 'enrichment';
      if (!isRunning(f.status)) f.status = 'processing';
      break;
    case 'continued':
      f.status = 'continuing';
      f.total_target = num(d.total_target, f.total_target);
      f.criteria = criteriaOf(d.criteria, f.criteria);
      if (f.current_step !== 'criteria_extraction') f.current_step = 'data_collection';
      break;
    case 'criteria_removed':
      f.criteria = criteriaOf(d.criteria, f.criteria);
      break;
    case 'stop_requested':
      f.status = 'stopping';
      break;
    case 'stopped':
      f.status = 'stopped';
      break;
    case 'completed':
      f.status = 'completed';
      f.current_step = 'completed';
      f.current_count = num(d.rows, f.current_count);
      break;
    case 'budget_spent':
      f.status = 'completed';
      f.current_step = 'completed';
      f.message = str(d.message, '');
      break;
    case 'error':
      f.status = 'error';
      f.message = str(d.message, '');
      break;
    default:
      break;
  }
  return f;
}

/**
 * The event a progress-stream entry carries (`seq`, `type`, `at`, `data` as JSON; application/progress.ts writes
 * them), or null for an entry that does not (the stream then catches up from the event log).
 */
export function eventOfEntry(fields: Record<string, string>): LoggedEvent | null {
  const seq = Number(fields.seq);
  if (!Number.isSafeInteger(seq) || seq < 1 || !fields.type || !fields.at) return null;
  let data: unknown;
  try {
    data = JSON.parse(fields.data ?? '{}');
  } catch {
    return null;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  return { seq, type: fields.type, data: data as Record<string, unknown>, at: fields.at };
}

/** One server-sent event: `id: <seq>` and `data: <json>` (JSON has no raw line breaks, so one data line). */
export const sseFrame = (f: StreamFrame): string => `id: ${f.seq}\ndata: ${JSON.stringify(f)}\n\n`;

/** A comment line that keeps a quiet stream's connections open. */
export const SSE_KEEPALIVE = ': keepalive\n\n';
