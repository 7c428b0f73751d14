import type { Readable } from 'node:stream';
import { AppError, multipartParser, MultipartRefusedError, type MultipartParser, feedMultipart } from '@lore/runtime';
import type { RouterContext } from '@koa/router';
import type { MemoryScope } from '../../application/context';
import type { UploadView } from '../../application/uploads';
import { KEY, MEMORY_PREFIX, READ_ONLY, err, route, type GraphState, type MemoryGuard } from '../route';
import { UPLOAD_BODY, UploadSchema, presentUpload } from './schema';

export interface UploadFile {
  filename: string;
  contentType: string;
  stream: Readable;
}

export interface UploadRouteDeps {
  guard: MemoryGuard;
  uploads: {
    /** Largest file accepted, in bytes. */
    maxBytes: number;
    accept: (scope: MemoryScope, file: UploadFile) => Promise<UploadView>;
    get: (scope: MemoryScope, uploadId: string) => Promise<UploadView>;
  };
}

/** Multipart overhead allowed on top of the file itself before Content-Length alone says 413. */
const MULTIPART_SLACK = 64 * 1024;

/**
 * Reads the multipart body until the `file` part and hands its stream to `onFile`; other parts are drained.
 * The blob store counts bytes while it reads and stops at the limit.
 */
function withFilePart(ctx: RouterContext<GraphState>, maxBytes: number, onFile: (f: UploadFile) => Promise<UploadView>): Promise<UploadView> {
  return new Promise((resolve, reject) => {
    let bb: MultipartParser;
    try {
      bb = multipartParser(ctx.req.headers, { files: 1, fields: 20, fieldSize: 64 * 1024, fileSize: maxBytes + 1, parts: 25 }, 'send multipart/form-data with a file field named "file"');
    } catch (err) {
      reject(err instanceof MultipartRefusedError ? new AppError(err.code, err.message) : err);
      return;
    }
    let handled = false;
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || handled) {
        stream.resume();
        return;
      }
      handled = true;
      onFile({ filename: info.filename ?? 'upload', contentType: info.mimeType ?? 'application/octet-stream', stream }).then(resolve, (err) => {
        stream.resume();
        reject(err);
      });
    });
    bb.on('error', () => reject(AppError.badRequest('the multipart body is malformed')));
    bb.on('close', () => {
      if (!handled) reject(new AppError('VALIDATION_FAILED', 'a file field named "file" is required', { details: [{ path: 'file', message: 'is required' }] }));
    });
    feedMultipart(ctx.req, bb);
  });
}

/** Files for background extraction (text, Markdown, HTML, PDF, DOCX, CSV, JSON, images by OCR) and their status. */
export function uploadRoutes(deps: UploadRouteDeps) {
  const tags = ['uploads'];
  return [
    route({
      method: 'post', path: `${MEMORY_PREFIX}/uploads`, operationId: 'uploadFile', summary: 'Upload a file for background extraction and ingest', tags,
      security: KEY, guards: [deps.guard('write')],
      // The body streams into the blob store as it arrives: never buffered, never parsed as JSON.
      bodyKind: 'stream', bodyContent: UPLOAD_BODY,
      ok: { status: 202, description: 'accepted, status `pending`; extraction runs in the background', schema: UploadSchema },
      responses: {
        ...READ_ONLY,
        400: err('malformed multipart body, or no part named `file`'),
        413: err('the file is larger than the upload limit (declared or while streaming)'),
        415: err('the body is not multipart/form-data'),
      },
      handler: async (ctx) => {
        const max = deps.uploads.maxBytes;
        const declared = Number(ctx.get('content-length'));
        if (Number.isFinite(declared) && declared > max + MULTIPART_SLACK) {
          throw new AppError('PAYLOAD_TOO_LARGE', `uploads are limited to ${max} bytes`);
        }
        const scope = ctx.state.scope;
        return presentUpload(await withFilePart(ctx, max, (file) => deps.uploads.accept(scope, file)));
      },
    }),
    route({
      method: 'get', path: `${MEMORY_PREFIX}/uploads/:upload_id`, operationId: 'getUpload', summary: 'Upload status', tags,
      security: KEY, guards: [deps.guard('read')],
      ok: { status: 200, description: 'the upload', schema: UploadSchema },
      handler: async (ctx, { params }) => presentUpload(await deps.uploads.get(ctx.state.scope, params.upload_id ?? '')),
    }),
  ];
}
