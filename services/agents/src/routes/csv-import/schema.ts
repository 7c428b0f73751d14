import { queryInteger } from '@lore/runtime';
import { z } from 'zod';
import type { CsvImportStatus, RestoredCsvList } from '../../application/csv-imports';

/**
 * Path ids as the workflow routes take them: 1–512 characters, and one that names no import or list of the tenant —
 * not a UUID at all included — is 404 (until 2026-12-01 an id that was no UUID was 422 here).
 */
export const threadParams = z.object({ thread_id: z.string().min(1).max(512).describe('the import thread (the upload stream\'s `thread_id`)') });
export const listParams = z.object({ list_id: z.string().min(1).max(512).describe('the list the review created') });
/** Rows a restore may skip at most. */
const MAX_OFFSET = 10_000_000;

export const restoreQuery = z.object({
  offset: queryInteger('offset', { min: 0, max: MAX_OFFSET, default: 0 }).describe('rows to skip: the restore answers the rows after the first `offset` (0: from the first); decimal digits only'),
});

const columnDescription = z.object({
  column_name: z.string().trim().min(1).max(200).describe('the editable display name'),
  column_id: z.string().min(1).max(1000).describe("the file's original column name (one of the analysis's `column_id`s)"),
  description: z.string().max(2000).optional().describe("what the column holds (left out: the analysis's suggestion)"),
});

/** Spec 3's review body; every field optional (the spec leaves required flags unstated; docs/agents.md). */
export const reviewBody = z.object({
  listName: z.string().max(200).optional().describe("the list's name (default: the file's name)"),
  listDescription: z.string().max(2000).optional(),
  description: z.string().max(2000).optional().describe('an alternative description'),
  category: z.string().max(200).optional(),
  column_descriptions: z.array(columnDescription).max(1000).optional().describe("columns to rename or describe; a column left out keeps the analysis's name and description"),
});

export const reviewView = z.string().describe('a sentence that names the new list: `CSV import started; list_id: <uuid>`');

const problem = z.object({
  row: z.number().int().describe("the record's number in the file, the header being 1; 0 for the file as a whole"),
  column: z.string().describe("the column's header name, '' when the problem is not one column's"),
  message: z.string(),
  value: z.string().describe('what was found there (shortened)'),
});

const columnView = z.object({ column_name: z.string(), column_id: z.string(), description: z.string() });

export const statusView = z.object({
  thread_id: z.string(),
  status: z.enum(['analyzing', 'ready_for_review', 'importing', 'processing', 'completed', 'error']),
  list_id: z.string().nullable().describe('the list, once reviewed'),
  total_rows: z.number().int().describe('data rows of the file (without the header)'),
  imported_rows: z.number().int().describe('rows written to the list so far'),
  errors: z.array(problem).describe('why the file cannot be imported (status `error`)'),
  columns: z.array(columnView).describe('the columns as analysed, or as reviewed'),
});

export function presentStatus(s: CsvImportStatus): z.input<typeof statusView> {
  return { ...s, status: s.status as z.input<typeof statusView>['status'] };
}

const cellView = z.object({ row_id: z.string(), column_id: z.string(), value: z.string(), status: z.string(), metadata: z.record(z.string(), z.unknown()), expandable: z.boolean() });
const rowView = z.object({ id: z.string(), cells: z.record(z.string(), cellView), step_source: z.string(), metadata: z.record(z.string(), z.unknown()) });
const tableColumnView = z
  .object({ id: z.string(), header: z.string(), type: z.string(), columnType: z.string(), dataType: z.string(), width: z.number().int(), maxWidth: z.number().int(), minWidth: z.number().int(), required: z.boolean() })
  .catchall(z.unknown());

export const restoreView = z.object({
  list_id: z.string(),
  status: z.literal('restored'),
  criteria: z.array(z.unknown()).describe('always empty: an imported list has no criteria'),
  total_target: z.number().int().describe("the file's data rows"),
  table_structure: z.object({
    columns: z.array(tableColumnView),
    rows: z.array(rowView).describe('the rows in file order after the first `offset`: at most 5,000 and 16 MiB of them (at least one); fewer than `current_count - offset` means more follow'),
    total_target: z.number().int(),
    current_count: z.number().int().describe('rows imported so far (all of them, whatever `offset`)'),
  }),
  title: z.string(),
  description: z.string(),
  thread_id: z.string().nullable(),
  listType: z.literal('csv_import'),
  supervisor_started: z.literal(false),
});

export function presentRestore(r: RestoredCsvList): z.input<typeof restoreView> {
  return {
    list_id: r.list.listId,
    status: 'restored',
    criteria: [],
    total_target: r.totalRows,
    table_structure: {
      columns: r.list.columns as z.input<typeof tableColumnView>[],
      rows: r.rows.map((row) => ({ id: row.row_id, cells: row.cells as Record<string, z.input<typeof cellView>>, step_source: row.step_source, metadata: row.metadata })),
      total_target: r.totalRows,
      current_count: r.currentCount,
    },
    title: r.list.name,
    description: r.list.description,
    thread_id: r.list.threadId,
    listType: 'csv_import',
    supervisor_started: false,
  };
}

/** The multipart body, for the document. */
export const UPLOAD_BODY = {
  'multipart/form-data': {
    schema: {
      type: 'object',
      properties: { file: { type: 'string', format: 'binary', description: 'the CSV file: comma, semicolon or tab separated, a header row, UTF-8 (UTF-16 with a byte-order mark, windows-1252 are read too)' } },
      required: ['file'],
    },
  },
};

/** The stream's events, for the document. */
export const UPLOAD_STREAM = {
  'text/event-stream': {
    schema: {
      type: 'string',
      description:
        'lines `data: <json>`: `{event: "status", thread_id, status: "analyzing", filename}`, then `{event: "analysis", thread_id, status: "analyzing", columns: [{column_name, column_id, description}], row_count, delimiter, delimiter_name, encoding, bom}` and `{event: "status", thread_id, status: "ready_for_review", row_count}`; or `{event: "status", thread_id, status: "error", message, errors: [{row, column, message, value}]}`',
    },
  },
};
