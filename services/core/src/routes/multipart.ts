import type { RouterContext } from '@koa/router';
import { detailValidationError, multipartParser, MultipartRefusedError, type MultipartParser, feedMultipart } from '@lore/runtime';
import { coreError } from '../application/errors';
import type { UploadLimits, UploadPart } from '../application/uploads';
import type { CoreState } from './route';

/**
 * The one multipart reader of core's upload routes (chat project files, `file` connector files): busboy over the
 * request, file parts handed over one at a time as streams, the upload limits applied before and while reading.
 */

/** Multipart overhead allowed on top of the files themselves before Content-Length alone says 413. */
const MULTIPART_SLACK = 256 * 1024;
const FILE_PARTS = new Set(['files', 'file']);
const NOT_MULTIPART = 'send multipart/form-data with file parts named "files"';
const MALFORMED = 'the multipart body is malformed';

/**
 * Reads an upload's file parts for `use`: a declared Content-Length over the upload limit is 413 before a byte is
 * read, a body that is not multipart/form-data 415; a malformed body is 400 and too many files `tooMany` (422),
 * whatever `use` was doing when the body broke.
 */
export async function withFileParts<T>(ctx: RouterContext<CoreState>, limits: UploadLimits, tooMany: (max: number) => Error, use: (parts: AsyncIterable<UploadPart>) => Promise<T>): Promise<T> {
  const declared = Number(ctx.get('content-length'));
  if (Number.isFinite(declared) && declared > limits.maxUploadBytes + MULTIPART_SLACK) {
    throw coreError('PAYLOAD_TOO_LARGE', `the files of one upload may hold ${limits.maxUploadBytes} bytes together`);
  }
  if (!ctx.is('multipart/form-data')) throw coreError('UNSUPPORTED_MEDIA_TYPE', NOT_MULTIPART);
  const reader = { failure: null as Error | null };
  try {
    return await use(fileParts(ctx, limits, tooMany, reader));
  } catch (err) {
    // A part whose stream broke because the body did: the body's refusal is the answer.
    throw reader.failure ?? err;
  }
}

/**
 * The file parts of a multipart body, one at a time: each part's stream must be read (into the blob store) before
 * the next one arrives. Parts with another name are drained; a malformed body is 400, too many files 422.
 */
async function* fileParts(ctx: RouterContext<CoreState>, limits: UploadLimits, tooMany: (max: number) => Error, reader: { failure: Error | null }): AsyncGenerator<UploadPart> {
  let bb: MultipartParser;
  try {
    bb = multipartParser(ctx.req.headers, { files: limits.maxFilesPerUpload, fileSize: limits.maxFileBytes + 1, fields: 20, fieldSize: 64 * 1024, parts: limits.maxFilesPerUpload + 20 }, NOT_MULTIPART);
  } catch (err) {
    throw err instanceof MultipartRefusedError ? coreError(err.code, err.message) : err;
  }
  const queue: UploadPart[] = [];
  let done = false;
  let wake: (() => void) | null = null;
  const signal = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  bb.on('file', (name, stream, info) => {
    if (!FILE_PARTS.has(name)) {
      stream.resume();
      return;
    }
    queue.push({ filename: info.filename ?? '', contentType: info.mimeType || 'application/octet-stream', stream });
    signal();
  });
  bb.on('filesLimit', () => {
    reader.failure ??= tooMany(limits.maxFilesPerUpload);
    signal();
  });
  // Past the parts or fields bound the parser skips what follows without a word: the whole upload is refused instead
  // (before 2026-11-30 files after enough other fields were dropped and the upload answered 2xx with the rest).
  const tooManyParts = () => {
    reader.failure ??= detailValidationError([{ path: 'files', message: `an upload holds at most ${limits.maxFilesPerUpload} files and 20 other fields` }], 'body');
    signal();
  };
  bb.on('partsLimit', tooManyParts);
  bb.on('fieldsLimit', tooManyParts);
  bb.on('error', () => {
    reader.failure ??= coreError('BAD_REQUEST', MALFORMED);
    done = true;
    signal();
  });
  bb.on('close', () => {
    done = true;
    signal();
  });
  feedMultipart(ctx.req, bb);
  try {
    for (;;) {
      const next = queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (reader.failure) throw reader.failure;
      if (done) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    for (const part of queue) part.stream.resume();
    if (!ctx.req.readableEnded) {
      // Refused before the end: the rest of the body is read and dropped, so the answer reaches the client.
      ctx.req.unpipe(bb);
      ctx.req.resume();
    }
  }
}
