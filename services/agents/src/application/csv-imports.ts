import { cutUnits } from '@lore/ai';
import { randomUUID } from 'node:crypto';
import { isTransientError, type BlobStore, type Db, type Logger } from '@lore/runtime';
import { DEFAULT_CSV_LIMITS, DELIMITER_NAMES, MAX_RECORD_CHARS, readCsv, type CsvDelimiter, type CsvEncoding, type CsvLimits, type CsvProblem } from '../domain/csv';
import { describeColumn, directoryDocument, directoryMapping, type ColumnDataType } from '../domain/csv-columns';
import {
  appendEvents,
  checkpointImport,
  claimImport,
  countRows,
  failStaleAnalysis,
  getCsvList,
  getImport,
  importsToResume,
  insertImport,
  insertList,
  insertRows,
  listRowsAfter,
  releaseImport,
  setListStatus,
  updateImport,
  type CsvImportRow,
  type ImportedRow,
  type StoredRow,
} from '../store/csv-imports';
import { writeDirectoryRecords, type DirectoryInput } from './directory';
import { agentsError, notFound } from './errors';
import type { Principal } from './principal';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The CSV import of spec 3 (docs/agents.md, "CSV import"): an upload is analysed and kept (status `analyzing`, then
 * `ready_for_review` or `error`); a review names the list and its columns and starts the import (`importing`), which
 * writes the rows in batches keyed by their row number (`processing`) until `completed`. A process that stops
 * mid-import leaves it `importing` or `processing`; the sweep (at start and on a timer) resumes it from its
 * checkpoint, and rows already written are never written twice.
 */

export interface CsvImportSettings extends CsvLimits {
  /** Rows written per transaction. */
  batchSize: number;
  /** How long a worker's claim on an import lasts without a written batch renewing it. */
  leaseMs: number;
  /** How often the sweep looks for imports to resume. */
  sweepIntervalMs: number;
  /** An upload still `analyzing` after this long was cut short (its process stopped): the sweep ends it in `error`. */
  staleAnalysisMs: number;
  /**
   * Uploads one process reads and analyses at once (each holds its whole file and its parsed rows in memory); one
   * tenant may hold half of them. Beyond, an upload is refused with Retry-After.
   */
  maxAnalyses: number;
}

export const DEFAULT_CSV_IMPORT: CsvImportSettings = { ...DEFAULT_CSV_LIMITS, batchSize: 500, leaseMs: 60_000, sweepIntervalMs: 30_000, staleAnalysisMs: 10 * 60_000, maxAnalyses: 2 };

/** Claims of one import before it is given up as failing (a file that can no longer be read, a bug). */
const MAX_ATTEMPTS = 5;
/** Rows a restore answers at most (the rest stay in the list). */
export const MAX_RESTORE_ROWS = 5_000;
/**
 * Bytes of rows a restore answers at most: every cell is answered as an object naming its row and column, so 5,000
 * rows of 200 columns would be a body of hundreds of megabytes. A client reads the rest with `offset`.
 */
export const MAX_RESTORE_BYTES = 16 * 1024 * 1024;
/** Rows a restore reads from the database at a time (rows stored in the old, expanded shape are large). */
const RESTORE_PAGE = 200;
/**
 * Characters of values one batch writes at most, whatever its row count: the batch is one JSON parameter, which
 * must stay far below V8's longest string. A record is at most MAX_RECORD_CHARS, so a batch holds at least one.
 */
const MAX_BATCH_CHARS = 4 * MAX_RECORD_CHARS;
/** Characters of a file name kept (the list's default name, the events, the restored rows): a list name's limit. */
export const MAX_FILENAME_CHARS = 200;

export interface CsvImportDeps {
  db: Db;
  blobs: BlobStore;
  logger: Logger;
  csvImport: CsvImportSettings;
}

export interface ColumnDescription {
  column_name: string;
  column_id: string;
  description: string;
}

interface AnalysedColumn extends ColumnDescription {
  data_type: ColumnDataType;
}

/** The import's document (agents.workflows.state). */
interface ImportState {
  filename: string;
  blob_key?: string;
  size: number;
  encoding?: CsvEncoding;
  delimiter?: CsvDelimiter;
  columns?: AnalysedColumn[];
  total_rows?: number;
  imported_rows?: number;
  errors?: CsvProblem[];
  attempts?: number;
  directory_records?: number;
  review?: { listName: string; listDescription: string; description: string; category: string; column_descriptions: ColumnDescription[] };
}

/** What the upload stream carries, event by event. */
export type CsvUploadEvent = Record<string, unknown> & { thread_id: string; status: string };

export interface UploadedCsv {
  filename: string;
  /** The bytes read, at most the limit. */
  bytes: Buffer;
  /** The file was larger than the limit (its bytes past it were not kept). */
  tooLarge: boolean;
}

const stateOf = (row: CsvImportRow): ImportState => row.state as unknown as ImportState;

/** The upload's file name, cut to MAX_FILENAME_CHARS characters (whole code points). */
export function clipFilename(filename: string): string {
  const points = Array.from(filename);
  return points.length > MAX_FILENAME_CHARS ? points.slice(0, MAX_FILENAME_CHARS).join('') : filename;
}
const safeName = (filename: string): string => (filename.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100) || 'upload.csv');

/**
 * Analyses an uploaded file, emitting the stream's events as they are stored: the thread (`analyzing`), the
 * analysis (columns with suggested descriptions, row count, delimiter, encoding), then `ready_for_review`, or
 * `error` with every problem listed. Only a failure of the database or blob store throws.
 */
export async function analyzeUpload(deps: CsvImportDeps, p: Principal, file: UploadedCsv, emit: (e: CsvUploadEvent) => void): Promise<string> {
  const threadId = randomUUID();
  const filename = clipFilename(file.filename || 'upload.csv');
  const started: CsvUploadEvent = { event: 'status', thread_id: threadId, status: 'analyzing', filename };
  await deps.db.withTenant(p.tenantId, async (sql) => {
    await insertImport(sql, p.tenantId, { threadId, owner: p.owner, status: 'analyzing', state: { filename, size: file.bytes.length } });
    await appendEvents(sql, p.tenantId, threadId, [{ type: 'status', data: started }]);
  });
  emit(started);

  const limits = { maxBytes: deps.csvImport.maxBytes, maxColumns: deps.csvImport.maxColumns, maxRows: deps.csvImport.maxRows };
  const reading = file.tooLarge
    ? { ok: false as const, errors: [{ row: 0, column: '', message: `the file is larger than ${limits.maxBytes} bytes`, value: '' }] }
    : readCsv(file.bytes, limits);
  if (!reading.ok) {
    const failed: CsvUploadEvent = { event: 'status', thread_id: threadId, status: 'error', message: 'the file cannot be imported', errors: reading.errors };
    await deps.db.withTenant(p.tenantId, async (sql) => {
      await updateImport(sql, p.tenantId, threadId, { status: 'error', state: { errors: reading.errors }, errorMessage: reading.errors[0]?.message ?? 'the file cannot be imported' });
      await appendEvents(sql, p.tenantId, threadId, [{ type: 'status', data: failed }]);
    });
    emit(failed);
    return threadId;
  }

  const { file: csv } = reading;
  const blobKey = `csv-imports/${threadId}/${safeName(filename)}`;
  await deps.blobs.put(p.tenantId, blobKey, file.bytes, 'text/csv', limits.maxBytes);
  const columns: AnalysedColumn[] = csv.header.map((name, i) => {
    const { description, dataType } = describeColumn(name, csv.rows.slice(0, 200).map((r) => r[i] ?? ''));
    return { column_name: name, column_id: name, description, data_type: dataType };
  });
  const analysis: CsvUploadEvent = {
    event: 'analysis',
    thread_id: threadId,
    status: 'analyzing',
    filename,
    columns: columns.map(({ column_name, column_id, description }) => ({ column_name, column_id, description })),
    row_count: csv.rows.length,
    delimiter: csv.delimiter,
    delimiter_name: DELIMITER_NAMES[csv.delimiter],
    encoding: csv.encoding,
    bom: csv.bom,
  };
  const ready: CsvUploadEvent = { event: 'status', thread_id: threadId, status: 'ready_for_review', row_count: csv.rows.length };
  await deps.db.withTenant(p.tenantId, async (sql) => {
    await updateImport(sql, p.tenantId, threadId, {
      status: 'ready_for_review',
      state: { blob_key: blobKey, encoding: csv.encoding, delimiter: csv.delimiter, columns, total_rows: csv.rows.length, imported_rows: 0, errors: [] },
    });
    await appendEvents(sql, p.tenantId, threadId, [
      { type: 'analysis', data: analysis },
      { type: 'status', data: ready },
    ]);
  });
  emit(analysis);
  emit(ready);
  return threadId;
}

export interface ReviewInput {
  listName?: string;
  listDescription?: string;
  description?: string;
  category?: string;
  column_descriptions?: Array<{ column_name: string; column_id: string; description?: string }>;
}

/** A review's problem with one of its column descriptions, worded as body (c) by the route. */
export class ReviewColumnError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Names the list and its columns and starts the import: the list is created and the import accepted (`importing`)
 * in one transaction, then run in the background. Reviewing an import already under way or done answers its list
 * again (a retried request starts nothing twice).
 */
export async function reviewImport(deps: CsvImportDeps, p: Principal, threadId: string, input: ReviewInput): Promise<{ listId: string; started: boolean }> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    // An id that is no UUID names no import (the column is a uuid: PostgreSQL would refuse the text).
    const row = UUID.test(threadId) ? await getImport(sql, p.tenantId, threadId.toLowerCase(), true) : null;
    if (!row) throw notFound('CSV import');
    const state = stateOf(row);
    if (row.list_id && ['importing', 'processing', 'completed'].includes(row.status)) return { listId: row.list_id, started: false };
    if (row.status !== 'ready_for_review') throw agentsError('CONFLICT', `the import is ${row.status}; only an import ready_for_review can be reviewed`);
    const fileColumns = state.columns ?? [];
    const known = new Set(fileColumns.map((c) => c.column_id));
    const given = new Map<string, { column_name: string; column_id: string; description?: string }>();
    (input.column_descriptions ?? []).forEach((c, i) => {
      if (!known.has(c.column_id)) throw new ReviewColumnError(`column_descriptions.${i}.column_id`, `is not a column of the file (one of: ${[...known].slice(0, 20).join(', ')})`);
      if (given.has(c.column_id)) throw new ReviewColumnError(`column_descriptions.${i}.column_id`, 'names a column described earlier in the list');
      given.set(c.column_id, c);
    });
    const columns = fileColumns.map((c) => {
      const g = given.get(c.column_id);
      return { column_name: g?.column_name || c.column_name, column_id: c.column_id, description: g?.description ?? c.description, data_type: c.data_type };
    });
    checkDisplayNames(columns, input.column_descriptions ?? []);
    const listId = randomUUID();
    const review = {
      listName: input.listName?.trim() || clipFilename(state.filename).replace(/\.(csv|tsv|txt)$/i, ''),
      listDescription: input.listDescription ?? '',
      description: input.description ?? '',
      category: input.category ?? '',
      column_descriptions: columns.map(({ column_name, column_id, description }) => ({ column_name, column_id, description })),
    };
    await insertList(sql, p.tenantId, {
      listId,
      threadId,
      owner: p.owner,
      name: review.listName,
      description: review.listDescription || review.description,
      columns: columns.map(tableColumn),
    });
    await updateImport(sql, p.tenantId, threadId, { status: 'importing', listId, state: { review, columns, imported_rows: 0 } });
    await appendEvents(sql, p.tenantId, threadId, [{ type: 'status', data: { event: 'status', thread_id: threadId, status: 'importing', list_id: listId } }]);
    return { listId, started: true };
  });
}

/**
 * Two columns may not be shown under one name (a restored table would have two columns headed alike): the column a
 * review renamed onto another's name is the one refused.
 */
function checkDisplayNames(columns: readonly ColumnDescription[], given: ReadonlyArray<{ column_id: string }>): void {
  const indexOf = new Map(given.map((c, i) => [c.column_id, i]));
  const shown = new Map<string, string>();
  for (const c of columns) {
    const other = shown.get(c.column_name);
    if (other !== undefined) {
      const renamed = indexOf.get(c.column_id) ?? indexOf.get(other) ?? 0;
      throw new ReviewColumnError(`column_descriptions.${renamed}.column_name`, `"${c.column_name}" is already the name of another column`);
    }
    shown.set(c.column_name, c.column_id);
  }
}

/** A table column of the list (spec 3's column): keyed by the file's column name, headed by the reviewed one. */
function tableColumn(c: AnalysedColumn) {
  return { id: c.column_id, header: c.column_name, description: c.description, type: 'fixed', columnType: 'text', dataType: c.data_type, width: 200, maxWidth: 400, minWidth: 100, required: false };
}

export interface CsvImportStatus {
  thread_id: string;
  status: string;
  list_id: string | null;
  total_rows: number;
  imported_rows: number;
  errors: CsvProblem[];
  columns: ColumnDescription[];
}

export async function importStatus(deps: CsvImportDeps, p: Principal, threadId: string): Promise<CsvImportStatus> {
  const row = UUID.test(threadId) ? await deps.db.withTenant(p.tenantId, (sql) => getImport(sql, p.tenantId, threadId.toLowerCase())) : null;
  if (!row) throw notFound('CSV import');
  const state = stateOf(row);
  return {
    thread_id: row.thread_id,
    status: row.status,
    list_id: row.list_id,
    total_rows: state.total_rows ?? 0,
    imported_rows: state.imported_rows ?? 0,
    errors: state.errors ?? [],
    columns: (state.review?.column_descriptions ?? state.columns ?? []).map(({ column_name, column_id, description }) => ({ column_name, column_id, description })),
  };
}

export interface RestoredCsvList {
  list: { listId: string; threadId: string | null; name: string; description: string; columns: unknown[] };
  rows: StoredRow[];
  totalRows: number;
  currentCount: number;
}

/**
 * The imported list with its rows in file order after the first `offset`, for the restore route: at most
 * MAX_RESTORE_ROWS rows and MAX_RESTORE_BYTES of them (at least one), read a page at a time, each expanded to the
 * restored shape. `currentCount` is every row imported, so a client sees when there are more to read.
 */
export async function restoreCsvList(deps: CsvImportDeps, p: Principal, listId: string, offset = 0): Promise<RestoredCsvList> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    const list = UUID.test(listId) ? await getCsvList(sql, p.tenantId, listId.toLowerCase()) : null;
    if (!list) throw notFound('CSV list');
    const row = list.thread_id ? await getImport(sql, p.tenantId, list.thread_id) : null;
    const filename = clipFilename(row ? stateOf(row).filename : '');
    const columnIds = (list.columns as Array<{ id?: unknown }>).map((c) => String(c.id ?? ''));
    const rows: StoredRow[] = [];
    let bytes = 0;
    let after = offset;
    let more = true;
    while (more && rows.length < MAX_RESTORE_ROWS) {
      const page = await listRowsAfter(sql, p.tenantId, listId, after, Math.min(RESTORE_PAGE, MAX_RESTORE_ROWS - rows.length));
      more = page.length === Math.min(RESTORE_PAGE, MAX_RESTORE_ROWS - rows.length);
      for (const stored of page) {
        const restored = restoredRow(stored, columnIds, filename);
        bytes += Buffer.byteLength(JSON.stringify(restored));
        if (bytes > MAX_RESTORE_BYTES && rows.length > 0) {
          more = false;
          break;
        }
        rows.push(restored);
        after = stored.position;
      }
    }
    const reachedEnd = !more && rows.length < MAX_RESTORE_ROWS && bytes <= MAX_RESTORE_BYTES;
    const currentCount = offset === 0 && reachedEnd ? rows.length : await countRows(sql, p.tenantId, listId);
    return {
      list: { listId: list.list_id, threadId: list.thread_id, name: list.name, description: list.description, columns: list.columns },
      rows,
      totalRows: row ? (stateOf(row).total_rows ?? currentCount) : currentCount,
      currentCount,
    };
  });
}

/**
 * A stored row in the restored shape. A row is stored as its values in the list's column order (`cells` a JSON
 * array) and expanded here: every cell names its row and column, every row the file. Rows written before that
 * (cells already keyed by column id, the file name in their metadata) are answered as they are.
 */
function restoredRow(stored: StoredRow, columnIds: readonly string[], filename: string): StoredRow {
  const values: unknown = stored.cells;
  if (!Array.isArray(values)) return stored;
  const csvRow = stored.position + 1;
  // Keyed by the file's header names: without a prototype, a column named `__proto__` is a cell like any other.
  const cells = Object.create(null) as Record<string, unknown>;
  columnIds.forEach((columnId, i) => {
    cells[columnId] = { row_id: stored.row_id, column_id: columnId, value: String(values[i] ?? ''), status: 'completed', metadata: { source: 'csv', csv_row: csvRow, csv_column: columnId }, expandable: false };
  });
  return { ...stored, cells, metadata: { ...stored.metadata, source: 'csv', csv_row: csvRow, filename } };
}

/**
 * The stored row of data record `index` (0-based; the file's row `index + 2`): its values in the file's column
 * order and nothing every row shares (column ids, file name), which the restore adds back.
 */
function importedRow(index: number, record: readonly string[], width: number): ImportedRow {
  const csvRow = index + 2;
  return { row_id: `row-${csvRow}`, entity_key: `row:${csvRow}`, position: index + 1, values: Array.from({ length: width }, (_, i) => record[i] ?? ''), step_source: 'csv_import', metadata: { source: 'csv', csv_row: csvRow } };
}

/** The end (exclusive) of the batch starting at `start`: at most `maxRows` rows and MAX_BATCH_CHARS of values, at least one row. */
export function batchEnd(rows: readonly (readonly string[])[], start: number, maxRows: number, maxChars = MAX_BATCH_CHARS): number {
  let end = start;
  let chars = 0;
  while (end < rows.length && end - start < maxRows) {
    const size = rows[end]!.reduce((n, v) => n + v.length + 4, 16);
    if (end > start && chars + size > maxChars) break;
    chars += size;
    end += 1;
  }
  return end;
}

/** Gives the event loop a turn: embedded PostgreSQL answers queries without one, so a loop of them starves all I/O. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Bounds the uploads a process reads and analyses at once (each holds its file and its parsed rows in memory):
 * `max()` in all (503 beyond), half of them, at least one, for one tenant (429 beyond).
 */
export class AnalysisGate {
  private open = 0;
  private readonly byTenant = new Map<string, number>();
  constructor(private readonly max: () => number) {}

  /** Takes a slot; answers the function that gives it back (once, whatever number of calls). */
  enter(tenantId: string): () => void {
    const mine = this.byTenant.get(tenantId) ?? 0;
    if (mine >= Math.max(1, Math.ceil(this.max() / 2))) throw agentsError('RATE_LIMITED', 'this tenant already has its most CSV uploads being analysed on this instance; try again shortly', { 'retry-after': '5' });
    if (this.open >= this.max()) throw agentsError('UNAVAILABLE', 'too many CSV uploads are being analysed on this instance; try again shortly', { 'retry-after': '5' });
    this.open += 1;
    this.byTenant.set(tenantId, mine + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.open -= 1;
      const n = (this.byTenant.get(tenantId) ?? 1) - 1;
      if (n <= 0) this.byTenant.delete(tenantId);
      else this.byTenant.set(tenantId, n);
    };
  }

  /** Uploads being read or analysed now. */
  get size(): number {
    return this.open;
  }
}

/** Why a batch's failure is no reason to try again: anything but a dependency's outage (a claim lost is not a failure). */
function isDeterministic(err: unknown): boolean {
  return !(err instanceof ClaimLost) && !isTransientError(err);
}

function reasonOf(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > 200 ? `${cutUnits(text, 200)}…` : text;
}

class ClaimLost extends Error {}

/**
 * Runs imports: the one a review starts, and those a stopped process left (the sweep). One process runs an
 * import at a time (its claim in agents.workflows); a claim not renewed within the lease lets another take over.
 */
export class CsvImporter {
  /** The uploads being read and analysed in this process (the upload route takes a slot before reading the body). */
  readonly analyses: AnalysisGate;
  private readonly worker = `agents-${randomUUID()}`;
  private readonly running = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<number> | null = null;
  private stopping = false;

  constructor(private readonly deps: CsvImportDeps) {
    this.analyses = new AnalysisGate(() => deps.csvImport.maxAnalyses);
  }

  /** Sweeps now and then every `sweepIntervalMs`. */
  start(): void {
    if (this.timer || this.stopping) return;
    this.timer = setInterval(() => void this.sweep(), this.deps.csvImport.sweepIntervalMs);
    this.timer.unref();
    void this.sweep();
  }

  /**
   * Resumes every import left `importing` or `processing` whose claim is absent or expired, and ends uploads whose
   * analysis was cut short in `error`. Returns how many imports it looked at.
   */
  sweep(): Promise<number> {
    if (this.sweeping) return this.sweeping;
    const pass = (async () => {
      let ran = 0;
      try {
        const left = await importsToResume(this.deps.db, 50, this.deps.csvImport.staleAnalysisMs);
        for (const { tenant_id, thread_id, status } of left) {
          if (this.stopping) break;
          if (status === 'analyzing') await this.endStaleAnalysis(tenant_id, thread_id);
          else await this.run(tenant_id, thread_id);
          ran += 1;
        }
      } catch (err) {
        this.deps.logger.warn({ err }, 'csv import sweep failed');
      }
      return ran;
    })();
    this.sweeping = pass;
    void pass.finally(() => {
      this.sweeping = null;
    });
    return pass;
  }

  /** Runs (or resumes) one import in this process; a second call while it runs waits for the same run. */
  run(tenantId: string, threadId: string): Promise<void> {
    const key = `${tenantId}/${threadId}`;
    const current = this.running.get(key);
    if (current) return current;
    const run = this.execute(tenantId, threadId)
      .catch((err: unknown) => {
        if (!(err instanceof ClaimLost)) this.deps.logger.error({ err, thread_id: threadId }, 'csv import failed; the sweep resumes it when its claim expires');
      })
      .finally(() => this.running.delete(key));
    this.running.set(key, run);
    return run;
  }

  /** Stops sweeping; imports under way stop after their current batch and give up their claim. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
    await Promise.allSettled([...this.running.values()]);
  }

  private async endStaleAnalysis(tenantId: string, threadId: string): Promise<void> {
    const errors = [{ row: 0, column: '', message: 'the analysis was cut short (the service stopped); upload the file again', value: '' }];
    await this.deps.db.withTenant(tenantId, async (sql) => {
      if (!(await failStaleAnalysis(sql, tenantId, threadId, this.deps.csvImport.staleAnalysisMs, errors))) return;
      await appendEvents(sql, tenantId, threadId, [{ type: 'status', data: { event: 'status', thread_id: threadId, status: 'error', errors } }]);
    });
  }

  private async fail(tenantId: string, threadId: string, listId: string | null, message: string): Promise<void> {
    const errors = [{ row: 0, column: '', message, value: '' }];
    await this.deps.db.withTenant(tenantId, async (sql) => {
      await updateImport(sql, tenantId, threadId, { status: 'error', state: { errors }, errorMessage: message, release: true });
      if (listId) await setListStatus(sql, tenantId, listId, 'error');
      await appendEvents(sql, tenantId, threadId, [{ type: 'status', data: { event: 'status', thread_id: threadId, status: 'error', errors } }]);
    });
  }

  private async execute(tenantId: string, threadId: string): Promise<void> {
    const { db, blobs, csvImport } = this.deps;
    if (this.stopping) return;
    const claimed = await db.withTenant(tenantId, async (sql) => {
      const row = await claimImport(sql, tenantId, threadId, this.worker, csvImport.leaseMs);
      if (!row) return null;
      const attempts = (stateOf(row).attempts ?? 0) + 1;
      await updateImport(sql, tenantId, threadId, { status: 'processing', state: { attempts } });
      await appendEvents(sql, tenantId, threadId, [{ type: 'status', data: { event: 'status', thread_id: threadId, status: 'processing', list_id: row.list_id, attempt: attempts } }]);
      return { row, attempts };
    });
    if (!claimed) return;
    const { row, attempts } = claimed;
    const state = stateOf(row);
    const listId = row.list_id;
    if (!listId || !state.blob_key || attempts > MAX_ATTEMPTS) {
      await this.fail(tenantId, threadId, listId, attempts > MAX_ATTEMPTS ? `the import failed ${MAX_ATTEMPTS} times` : 'the import has no list or file');
      return;
    }
    const blob = await blobs.get(tenantId, state.blob_key);
    if (!blob) {
      await this.fail(tenantId, threadId, listId, 'the uploaded file is no longer stored');
      return;
    }
    // The file as the analysis read it; limits as they were then, whatever this process's are now.
    const reading = readCsv(blob.data, { maxBytes: Number.MAX_SAFE_INTEGER, maxColumns: Number.MAX_SAFE_INTEGER, maxRows: Math.max(state.total_rows ?? 0, 1) });
    if (!reading.ok) {
      await this.fail(tenantId, threadId, listId, 'the stored file no longer reads as it did');
      return;
    }
    const { header, rows } = reading.file;
    const mapping = directoryMapping(header);
    const source = `csv:${listId}`;
    let directoryRecords = state.directory_records ?? 0;
    for (let start = Math.min(state.imported_rows ?? 0, rows.length); start < rows.length; ) {
      // Between batches the process answers requests and signals; a stopping one ends here, its claim given up.
      await nextTurn();
      if (this.stopping) {
        await db.withTenant(tenantId, (sql) => releaseImport(sql, tenantId, threadId, this.worker));
        return;
      }
      const end = batchEnd(rows, start, csvImport.batchSize);
      const batch = rows.slice(start, end);
      try {
        await db.withTenant(tenantId, async (sql) => {
          // The claim first: it locks the import and proves no other process took it over.
          if (!(await checkpointImport(sql, tenantId, threadId, this.worker, csvImport.leaseMs, end))) throw new ClaimLost();
          await insertRows(sql, tenantId, listId, batch.map((record, k) => importedRow(start + k, record, header.length)));
          const inputs: DirectoryInput[] = [];
          for (const record of batch) {
            const data = directoryDocument(mapping, record);
            if (data) inputs.push({ kind: mapping.kind, data, source });
          }
          directoryRecords += await writeDirectoryRecords(sql, tenantId, inputs);
          await updateImport(sql, tenantId, threadId, { status: 'processing', state: { directory_records: directoryRecords } });
          await appendEvents(sql, tenantId, threadId, [{ type: 'progress', data: { event: 'progress', thread_id: threadId, status: 'processing', imported_rows: end, total_rows: rows.length } }]);
        });
      } catch (err) {
        // An outage is waited out (the claim expires, the sweep resumes); a failure the same rows would meet again ends the import now.
        if (this.stopping || !isDeterministic(err)) throw err;
        this.deps.logger.error({ err, thread_id: threadId }, 'csv import failed on rows it cannot write; it ends in error');
        await this.fail(tenantId, threadId, listId, `rows ${start + 2}–${end + 1} of the file could not be imported (${reasonOf(err)}); trying again would fail the same way`);
        return;
      }
      start = end;
    }
    await db.withTenant(tenantId, async (sql) => {
      const current = await getImport(sql, tenantId, threadId, true);
      if (current?.claimed_by !== this.worker || current.status !== 'processing') throw new ClaimLost();
      await updateImport(sql, tenantId, threadId, { status: 'completed', state: { imported_rows: rows.length }, release: true });
      await setListStatus(sql, tenantId, listId, 'completed');
      await appendEvents(sql, tenantId, threadId, [
        { type: 'status', data: { event: 'status', thread_id: threadId, status: 'completed', list_id: listId, imported_rows: rows.length, total_rows: rows.length, directory_records: directoryRecords } },
      ]);
    });
  }
}
