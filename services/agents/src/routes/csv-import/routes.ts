import { openStream } from '@lore/runtime';
import type { RouterContext } from '@koa/router';
import type { CsvImportStatus, CsvUploadEvent, RestoredCsvList, ReviewInput, UploadedCsv } from '../../application/csv-imports';
import { ReviewColumnError } from '../../application/csv-imports';
import type { Principal } from '../../application/principal';
import { MAX_PARTS, readFilePart, type MultipartRead } from '../multipart';
import { AGENTS_SECURITY, FAMILY, detailValidationError, route, type AgentsGuard, type AgentsState } from '../route';
import { UPLOAD_BODY, UPLOAD_STREAM, listParams, presentRestore, presentStatus, restoreQuery, restoreView, reviewBody, reviewView, statusView, threadParams } from './schema';

export interface CsvImportRouteDeps {
  guard: AgentsGuard;
  /** Largest file an upload keeps (a larger one ends in status `error`). */
  maxBytes(): number;
  /** Takes a slot of the uploads analysed at once (503 when none is left, 429 when the tenant holds its share); answers the function that gives it back. */
  admit(p: Principal): () => void;
  upload(p: Principal, file: UploadedCsv, emit: (e: CsvUploadEvent) => void): Promise<string>;
  review(p: Principal, threadId: string, input: ReviewInput): Promise<{ listId: string; started: boolean }>;
  status(p: Principal, threadId: string): Promise<CsvImportStatus>;
  restore(p: Principal, listId: string, offset: number): Promise<RestoredCsvList>;
}

const detail = FAMILY.detail;
const NOT_FOUND = { 404: detail.error('no such import or list in this tenant') };

/** Starts the server-sent stream and hands `write` to `produce`; a failure after the start becomes a last `error` event. */
function eventStream(ctx: RouterContext<AgentsState>, produce: (write: (e: CsvUploadEvent) => void) => Promise<unknown>): void {
  const { out } = openStream(ctx);
  let last: CsvUploadEvent | null = null;
  const write = (e: CsvUploadEvent) => {
    last = e;
    out.write(`data: ${JSON.stringify(e)}\n\n`);
  };
  const log = ctx.state.log;
  void produce(write)
    .catch((err: unknown) => {
      log.error({ err }, 'csv upload failed');
      const threadId = (last as CsvUploadEvent | null)?.thread_id ?? '';
      write({ event: 'status', thread_id: threadId, status: 'error', message: 'the upload could not be stored', errors: [{ row: 0, column: '', message: 'the upload could not be stored; try again', value: '' }] });
    })
    .finally(() => out.end());
}

/** Spec 3's CSV import routes (detail family). */
export function csvImportRoutes(deps: CsvImportRouteDeps) {
  const tags = ['csv import'];
  return [
    route({
      method: 'post',
      path: '/api/lists/csv/upload',
      operationId: 'uploadCsv',
      summary: 'Upload a CSV file and stream its analysis',
      description:
        'Multipart with the file in the part `file`. The answer is a server-sent stream: the thread, its analysis (columns with suggested descriptions, row count, delimiter, encoding), then status `ready_for_review`, or status `error` with every problem listed (row, column, message, value): an empty, binary, malformed (unclosed quote, ragged rows, a record longer than 1,048,576 characters), too wide (default 200 columns), too long (default 200,000 rows) or too large (default 50 MiB) file, or a column name longer than 200 characters. The file name is kept cut to 200 characters. An instance analyses 2 uploads at once (a tenant 1): beyond, 503 or 429 with Retry-After.',
      tags,
      security: AGENTS_SECURITY,
      guards: deps.guard('write', 'detail'),
      bodyKind: 'stream',
      bodyContent: UPLOAD_BODY,
      ok: { status: 200, description: 'the analysis as server-sent events', content: UPLOAD_STREAM },
      responses: {
        400: detail.error('a malformed multipart body'),
        415: detail.error('the body is not multipart/form-data'),
        422: { description: 'no part named `file` (among the first 21 parts): body (c)', schema: detail.invalidView },
        429: detail.error("the tenant already has its most uploads being analysed on this instance (half of them), or the credential's rate limit; Retry-After"),
        503: detail.error('too many uploads are being analysed on this instance, or a dependency cannot be reached; Retry-After'),
      },
      handler: async (ctx) => {
        const p = ctx.state.principal;
        // The slot is held from the body's first byte (the whole file is kept in memory) to the analysis's end.
        const leave = deps.admit(p);
        let read: MultipartRead;
        try {
          read = await readFilePart(ctx, 'file', deps.maxBytes());
        } catch (err) {
          leave();
          throw err;
        }
        const part: UploadedCsv | null = read.file;
        if (!part) {
          leave();
          const message = read.truncated ? `Field required: no file part named "file" among the body's first ${MAX_PARTS} parts` : 'Field required: a file part named "file"';
          throw detailValidationError([{ path: 'file', message }], 'body');
        }
        const file = part;
        eventStream(ctx, (write) => deps.upload(p, file, write).finally(leave));
      },
    }),
    route({
      method: 'post',
      path: '/api/lists/csv/review/:thread_id',
      operationId: 'reviewCsv',
      summary: 'Name the list and its columns, and start the import',
      description:
        'The import must be `ready_for_review`; it becomes `importing`, then `processing` while rows are written, then `completed`. Reviewing an import already started answers its list again and starts nothing. A `column_id` that is not one of the file\'s columns, or a `column_name` another column already has, is 422 body (c).',
      tags,
      security: AGENTS_SECURITY,
      guards: deps.guard('write', 'detail'),
      params: threadParams,
      body: reviewBody,
      invalid: detail.invalid,
      unreadable: detail.unreadable,
      ok: { status: 200, description: 'a sentence naming the new list', schema: reviewView },
      responses: { ...NOT_FOUND, 409: detail.error('the import is not ready for review (still analysing, or failed)') },
      handler: async (ctx, { params, body }) => {
        try {
          const { listId, started } = await deps.review(ctx.state.principal, params.thread_id, body);
          // A JSON string (Koa would send a bare string as text/plain).
          ctx.status = 200;
          ctx.type = 'application/json';
          ctx.body = JSON.stringify(started ? `CSV import started; list_id: ${listId}` : `CSV import already started; list_id: ${listId}`);
          return undefined;
        } catch (err) {
          if (err instanceof ReviewColumnError) throw detailValidationError([{ path: err.path, message: err.message }], 'body');
          throw err;
        }
      },
    }),
    route({
      method: 'get',
      path: '/api/lists/csv/status/:thread_id',
      operationId: 'csvStatus',
      summary: 'The status of a CSV import',
      tags,
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'detail'),
      params: threadParams,
      invalid: detail.invalid,
      ok: { status: 200, description: 'the import: status, list, rows counted and imported, problems, columns', schema: statusView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => presentStatus(await deps.status(ctx.state.principal, params.thread_id)),
    }),
    route({
      method: 'get',
      path: '/api/lists/csv/restore/:list_id',
      operationId: 'restoreCsvList',
      summary: 'An imported list as a restored workflow',
      description:
        'The rows in file order after the first `offset`: at most 5,000 rows and 16 MiB of them (at least one row). When `table_structure.rows` holds fewer than `current_count - offset`, read the rest with `offset` advanced by the rows received.',
      tags,
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'detail'),
      params: listParams,
      query: restoreQuery,
      invalid: detail.invalid,
      ok: { status: 200, description: 'the restored workflow of spec 3: the imported rows as the table, each cell naming its CSV row', schema: restoreView },
      responses: NOT_FOUND,
      handler: async (ctx, { params, query }) => presentRestore(await deps.restore(ctx.state.principal, params.list_id, query.offset)),
    }),
  ];
}
