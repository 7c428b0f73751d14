import { createHash } from 'node:crypto';
import { snakeCase, type Criterion } from './criteria';

export type { Criterion };

/**
 * Company and people search workflows (docs/agents.md, "Workflows"): their kinds, statuses and steps, and the
 * shapes of the result table (spec 3, "Workflow snapshot"). Pure: no SQL, no HTTP.
 */
export const SEARCH_KINDS = ['company_search', 'people_search'] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];

/** Statuses of a search: the three running ones a worker takes, and the three where a run ended. */
export const RUNNING_STATUSES = ['processing', 'continuing', 'stopping'] as const;
export const ENDED_STATUSES = ['completed', 'stopped', 'error'] as const;
export type WorkflowStatus = (typeof RUNNING_STATUSES)[number] | (typeof ENDED_STATUSES)[number];
export const isRunning = (status: string): boolean => (RUNNING_STATUSES as readonly string[]).includes(status);

/** The steps a run passes through, in order. */
export const STEPS = ['criteria_extraction', 'data_collection', 'enrichment', 'completed'] as const;
export type Step = (typeof STEPS)[number];


export interface Column {
  id: string;
  header: string;
  /** `fixed` (the entity's own fields) or `criterion` (one per criterion) or `enrichment` (added by enrichment). */
  type: string;
  columnType: string;
  dataType: string;
  width: number;
  maxWidth: number;
  minWidth: number;
  required: boolean;
}

/** Where a cell's value came from (a cell's `metadata`). A cell without a source is never `completed`. */
export interface Provenance {
  /**
   * `web` (a fetched page), `directory` (a record of the tenant's directory), `search` (a search engine's snippet),
   * `knowledge` (a document of the tenant's memory: ingested, uploaded or a connector's).
   */
  source: 'web' | 'directory' | 'search' | 'knowledge';
  /** The page's URL, `directory:<record id>`, or a knowledge document's link (`knowledge:<document id>` without one). */
  source_url: string;
  snippet: string;
  fetched_at: string;
  /** A knowledge document's id in the memory. */
  document_id?: string;
}

export interface Cell {
  row_id: string;
  column_id: string;
  value: string;
  /** pending, loaded, completed, error. */
  status: string;
  metadata: Record<string, unknown>;
  expandable: boolean;
}

export const MAX_TOTAL_TARGET = 1000;
export const DEFAULT_TOTAL_TARGET = 25;

/** A row's id: stable for an entity, so a resumed run that finds the same entity again writes the same row. */
export const rowIdOf = (entityKey: string): string => `r_${createHash('sha256').update(entityKey).digest('hex').slice(0, 20)}`;

/** A column id: the criteria's snake_case (domain/criteria.ts), so a criterion's column_name is its column's id. */
export const columnIdOf = (name: string): string => snakeCase(name);

const column = (id: string, header: string, type: string, columnType = 'text', width = 200): Column => ({
  id,
  header,
  type,
  columnType,
  dataType: 'string',
  width,
  maxWidth: 600,
  minWidth: 80,
  required: type === 'fixed',
});

/** The fixed columns of a kind's table: the entity's own fields. */
export function fixedColumns(kind: SearchKind): Column[] {
  return kind === 'company_search'
    ? [column('name', 'Company', 'fixed', 'text', 220), column('domain', 'Domain', 'fixed', 'link', 200), column('industry', 'Industry', 'fixed'), column('location', 'Location', 'fixed')]
    : [column('name', 'Name', 'fixed', 'text', 200), column('title', 'Title', 'fixed'), column('company', 'Company', 'fixed'), column('profile_url', 'Profile', 'fixed', 'link'), column('location', 'Location', 'fixed')];
}

/** The table's columns: the fixed ones, then one per criterion (its column_name). */
export function tableColumns(kind: SearchKind, criteria: readonly Criterion[], extra: readonly Column[] = []): Column[] {
  const out = fixedColumns(kind);
  const seen = new Set(out.map((c) => c.id));
  for (const c of criteria) {
    const id = columnIdOf(c.column_name || c.name);
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ ...column(id, c.name, 'criterion', c.columnType || 'text', c.width || 200), maxWidth: c.maxWidth || 600, minWidth: c.minWidth || 80 });
  }
  for (const c of extra) if (!seen.has(c.id)) {
    seen.add(c.id);
    out.push(c);
  }
  return out;
}

/** A cell with a value and its source: `completed`. */
export const sourcedCell = (rowId: string, columnId: string, value: string, provenance: Provenance, extra: Record<string, unknown> = {}): Cell => ({
  row_id: rowId,
  column_id: columnId,
  value,
  status: 'completed',
  metadata: { ...provenance, ...extra },
  expandable: provenance.source === 'web',
});

/** A cell still to fill, or one no source could fill (`error`, with the reason). */
export const openCell = (rowId: string, columnId: string, status: 'pending' | 'error', reason?: string): Cell => ({
  row_id: rowId,
  column_id: columnId,
  value: '',
  status,
  metadata: reason ? { reason } : {},
  expandable: false,
});

/** The workflow's own document (agents.workflows.state): what the snapshot shows besides the table. */
export interface WorkflowState {
  category: string;
  criteria: Criterion[];
  goal: string;
  title: string;
  /** The caller named the list (`list_name`); otherwise the criteria's title replaces the prompt-derived one. */
  named: boolean;
  description: string;
  search_mode: string;
  /** Where candidates came from this run (`directory`, `web`) and notes for the reader (a missing provider, a spent budget). */
  sources: string[];
  notes: string[];
  /** Budget spent by the current run (reset by continue). */
  spent: { fetches: number; model_tokens: number; wall_ms: number };
  /**
   * Data collection's checkpoint: directory offset, whether the tenant's knowledge was read, web queries already read;
   * `pass` counts the readings of the sources from the start (each continue begins one), so a batch read in an
   * earlier pass is known for what it is.
   */
  cursor: { directory_offset: number; web_pages: number; exhausted: boolean; knowledge_read?: boolean; pass?: number };
  /**
   * Who started the workflow, as their identity had it: the worker reads the tenant's knowledge as them (their
   * workspace and memory, and what their role and groups may see). Absent on workflows started before it was kept.
   */
  starter?: WorkflowStarter;
  /** Enrichment columns asked for (start-enrichment), by column id. */
  enrichments: Record<string, EnrichmentState>;
}

export interface WorkflowStarter {
  workspace_id: string;
  memory_id: string;
  credential: string;
  subject: string;
  role: string;
  groups?: number[];
}

export interface EnrichmentState {
  column_id: string;
  column_name: string;
  instruction: string;
  enrichment_type: string;
  data_type: string;
  status: 'processing' | 'stopping' | 'stopped' | 'completed';
  done: number;
}

export const emptyState = (over: Partial<WorkflowState> = {}): WorkflowState => ({
  category: '',
  criteria: [],
  goal: '',
  title: '',
  named: false,
  description: '',
  search_mode: 'fast',
  sources: [],
  notes: [],
  spent: { fetches: 0, model_tokens: 0, wall_ms: 0 },
  cursor: { directory_offset: 0, web_pages: 0, exhausted: false },
  enrichments: {},
  ...over,
});

/** Reads a stored state, filling what an older row lacks. */
export const readState = (raw: Record<string, unknown> | null | undefined): WorkflowState => {
  const s = { ...emptyState(), ...(raw ?? {}) } as WorkflowState;
  s.spent = { ...emptyState().spent, ...(s.spent ?? {}) };
  s.cursor = { ...emptyState().cursor, ...(s.cursor ?? {}) };
  s.enrichments = s.enrichments ?? {};
  return s;
};
