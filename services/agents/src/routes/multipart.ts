import type { RouterContext } from '@koa/router';
import { multipartParser, MultipartRefusedError, type MultipartParser, feedMultipart } from '@lore/runtime';
import { agentsError } from '../application/errors';
import type { AgentsState } from './route';

/**
 * The multipart reader of the agents upload routes (the CSV import), in the approach of core's: busboy over the
 * request, the one file part read as it arrives with its limit applied while reading. A file over the limit is not
 * refused here: its first `maxBytes` are kept, the rest read and dropped, and the caller reports it (spec 3 wants
 * an oversized CSV to end in status `error`, not a bare status code).
 */

const NOT_MULTIPART = 'send multipart/form-data with the file in a part named "file"';
const MALFORMED = 'the multipart body is malformed';

export interface FilePart {
  filename: string;
  bytes: Buffer;
  /** More than `maxBytes` arrived. */
  tooLarge: boolean;
  /** The body's text fields (the first value of each name; at most 20, 64 KiB each). */
  fields: Record<string, string>;
}

/** A multipart body: its file part (null when it has none) and its text fields, which come either way. */
export interface MultipartRead {
  file: FilePart | null;
  fields: Record<string, string>;
  /** The body held more than MAX_PARTS parts: those past the bound were skipped unread (a `file` among them too). */
  truncated: boolean;
}

/** Parts of a body read at most: the file and 20 others (text fields or file parts of other names, all ignored). */
export const MAX_PARTS = 21;

/**
 * The part named `field` of a multipart body, and the body's text fields. File parts of other names, and a second
 * `field`, are read to their end and ignored, whatever their order: busboy is told to hand over as many file parts
 * as the body may hold parts (until 2026-11-30 it was told one, so a file part of another name sent first used up the
 * slot and the real file was dropped unread). A body that is not multipart/form-data is 415, a malformed one 400.
 */
export async function readFilePart(ctx: RouterContext<AgentsState>, field: string, maxBytes: number): Promise<MultipartRead> {
  let bb: MultipartParser;
  try {
    // busboy says `limit` when a file reaches `fileSize`: one byte more than allowed, so a file of exactly `maxBytes` passes.
    bb = multipartParser(ctx.req.headers, { files: MAX_PARTS, fileSize: maxBytes + 1, fields: 20, fieldSize: 64 * 1024, parts: MAX_PARTS }, NOT_MULTIPART);
  } catch (err) {
    throw err instanceof MultipartRefusedError ? agentsError(err.code, err.message) : err;
  }
  return new Promise<MultipartRead>((resolve, reject) => {
    let found: { filename: string; chunks: Buffer[]; tooLarge: boolean; done: Promise<void> } | null = null;
    let failed = false;
    let truncated = false;
    const fields: Record<string, string> = {};
    bb.on('partsLimit', () => {
      truncated = true;
    });
    bb.on('field', (name, value) => {
      if (!(name in fields)) fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      if (name !== field || found) {
        stream.resume();
        return;
      }
      const part = { filename: info.filename ?? '', chunks: [] as Buffer[], tooLarge: false, done: Promise.resolve() };
      part.done = new Promise<void>((done) => {
        stream.on('data', (c: Buffer) => part.chunks.push(c));
        stream.on('limit', () => {
          part.tooLarge = true;
        });
        stream.on('error', () => done());
        stream.on('end', () => done());
        stream.on('close', () => done());
      });
      found = part;
    });
    bb.on('error', () => {
      failed = true;
      ctx.req.unpipe(bb);
      ctx.req.resume();
      reject(agentsError('BAD_REQUEST', MALFORMED));
    });
    bb.on('close', () => {
      if (failed) return;
      const part = found;
      if (!part) {
        resolve({ file: null, fields, truncated });
        return;
      }
      void part.done.then(() => resolve({ file: { filename: part.filename, bytes: Buffer.concat(part.chunks), tooLarge: part.tooLarge, fields }, fields, truncated }));
    });
    feedMultipart(ctx.req, bb);
  });
}
