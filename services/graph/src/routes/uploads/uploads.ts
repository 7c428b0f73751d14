import type { Readable } from 'node:stream';
import Router from '@koa/router';
import { AppError } from '@lore/runtime';
import busboy from 'busboy';
import { acceptUpload, getUploadView, type UploadView } from '../../application/uploads';
import { requireWrite, type GraphContext, type GraphState, type RouteDeps } from '../context';

/** Multipart overhead allowed on top of the file itself before Content-Length alone says 413. */
const MULTIPART_SLACK = 64 * 1024;

/**
 * Reads the multipart body until the `file` part and hands its stream to `onFile`; other parts are drained.
 * The blob store counts bytes while it reads and stops at the limit.
 */
function withFilePart(ctx: GraphContext, maxBytes: number, onFile: (f: { filename: string; contentType: string; stream: Readable }) => Promise<UploadView>): Promise<UploadView> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: ctx.req.headers, limits: { files: 1, fields: 20, fieldSize: 64 * 1024, fileSize: maxBytes + 1, parts: 25 } });
    } catch {
      reject(new AppError('UNSUPPORTED_MEDIA_TYPE', 'send multipart/form-data with a file field named "file"'));
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
    ctx.req.pipe(bb);
  });
}

export function uploadRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();
  router.post('/uploads', requireWrite(), async (ctx) => {
    const max = deps.memory.config.uploadMaxBytes;
    const declared = Number(ctx.get('content-length'));
    if (Number.isFinite(declared) && declared > max + MULTIPART_SLACK) {
      throw new AppError('PAYLOAD_TOO_LARGE', `uploads are limited to ${max} bytes`);
    }
    if (!ctx.is('multipart/form-data')) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'send multipart/form-data with a file field named "file"');
    const upload = await withFilePart(ctx, max, (file) => acceptUpload(deps.memory, ctx.state.scope, file));
    ctx.status = 202;
    ctx.body = upload;
  });
  router.get('/uploads/:upload_id', async (ctx) => {
    ctx.body = await getUploadView(deps.memory, ctx.state.scope, ctx.params.upload_id ?? '');
  });
  return router;
}
