import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { AppError, detailValidationError, type BlobStore, type Logger } from '@lore/runtime';
import { cleanFileName } from '../domain/project-files';
import { coreError } from './errors';

/**
 * Uploaded files into the blob store, for every upload route of core (chat project files, `file` connector files):
 * each file streams into the store as it arrives, within the upload's limits, and a refused upload keeps nothing.
 * The multipart body itself is read by `routes/multipart.ts`.
 */

/** One file of a multipart upload, streamed: its bytes go to the blob store as they arrive. */
export interface UploadPart {
  filename: string;
  contentType: string;
  stream: Readable;
}

export interface UploadLimits {
  /** The largest file (bytes); a larger one answers 413. */
  maxFileBytes: number;
  /** Files in one upload request at most (more: 422). */
  maxFilesPerUpload: number;
  /** The bytes of one upload's files together at most; more answers 413. */
  maxUploadBytes: number;
}

/** A file of an upload, stored. */
export interface StoredFile {
  /** A new UUID per file. */
  id: string;
  /** The blob key it is stored under (in the tenant's namespace). */
  key: string;
  /** Its name as kept (`nameOf` the uploaded one). */
  name: string;
  /** The type the upload declared (`application/octet-stream` when it declared none). */
  contentType: string;
  size: number;
  /** Its first bytes (`headBytes` of them; empty unless asked for). */
  head: Buffer;
}

export interface StoreUploadOptions {
  limits: UploadLimits;
  /** The blob key of a file. */
  keyOf(id: string, name: string): string;
  /** The name kept for an uploaded name (default: control characters removed, at most 255 characters). */
  nameOf?(uploaded: string): string;
  /** Keeps the first bytes of each file (what a type is told from) for `check`. */
  headBytes?: number;
  /** Refuses a stored file by throwing (its type, say); the whole upload is then refused. */
  check?(file: StoredFile): void;
}

/** The refusal of an upload with more files than one may hold (spec 2's 422 shape). */
export function tooManyFiles(max: number): AppError {
  return detailValidationError([{ path: 'files', message: `at most ${max} files per upload` }], 'body');
}

/**
 * Streams the files of one upload into the tenant's blob store, then hands them to `accept` (which records them).
 * Each file may hold `maxFileBytes`, all of them `maxUploadBytes` (413), at most `maxFilesPerUpload` files (422);
 * an upload without a file is 422. On any refusal — a limit, `check`, `accept` throwing — every byte stored so far
 * is deleted, and the error goes on.
 */
export async function storeUpload<T>(
  deps: { blobs: BlobStore; logger: Logger },
  tenantId: string,
  parts: AsyncIterable<UploadPart>,
  options: StoreUploadOptions,
  accept: (files: StoredFile[]) => Promise<T>,
): Promise<T> {
  const { limits } = options;
  const stored: StoredFile[] = [];
  const written: string[] = [];
  let total = 0;
  try {
    for await (const part of parts) {
      if (stored.length >= limits.maxFilesPerUpload) throw tooManyFiles(limits.maxFilesPerUpload);
      const id = randomUUID();
      const name = (options.nameOf ?? cleanFileName)(part.filename);
      const key = options.keyOf(id, name);
      const max = Math.min(limits.maxFileBytes, limits.maxUploadBytes - total);
      const head: Buffer[] = [];
      const body = options.headBytes ? Readable.from(keepHead(part.stream, options.headBytes, head)) : part.stream;
      written.push(key);
      let info;
      try {
        info = await deps.blobs.put(tenantId, key, body, part.contentType || 'application/octet-stream', max);
      } catch (err) {
        if (err instanceof AppError && err.code === 'PAYLOAD_TOO_LARGE') {
          throw coreError(
            'PAYLOAD_TOO_LARGE',
            max < limits.maxFileBytes ? `the files of one upload may hold ${limits.maxUploadBytes} bytes together` : `a file may hold ${limits.maxFileBytes} bytes at most`,
          );
        }
        throw err;
      }
      const file: StoredFile = { id, key, name, contentType: info.contentType, size: info.size, head: Buffer.concat(head) };
      stored.push(file);
      total += info.size;
      options.check?.(file);
    }
    if (stored.length === 0) throw detailValidationError([{ path: 'files', message: 'at least one file part named `files` is required' }], 'body');
    return await accept(stored);
  } catch (err) {
    await Promise.all(
      written.map((key) => deps.blobs.delete(tenantId, key).catch((e: unknown) => deps.logger.warn({ err: e, key }, 'could not delete the bytes of a refused upload'))),
    );
    throw err;
  }
}

/** Passes `stream` on, keeping its first `bytes` bytes in `into`. */
async function* keepHead(stream: Readable, bytes: number, into: Buffer[]): AsyncGenerator<Buffer> {
  let kept = 0;
  for await (const chunk of stream) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    if (kept < bytes) {
      const piece = Buffer.from(buf.subarray(0, bytes - kept));
      into.push(piece);
      kept += piece.length;
    }
    yield buf;
  }
}
