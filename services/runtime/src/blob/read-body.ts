import type { Readable } from 'node:stream';
import { AppError } from '../errors/app-error';

/**
 * The largest blob any store takes. A bytea value travels hex-encoded in one PostgreSQL protocol message (1 GiB at
 * most), and both stores hold one body in memory while they write it: stay well below.
 */
export const MAX_BLOB_BYTES = 256 * 1024 * 1024;

/** Reads a body into memory, failing as soon as it passes `maxBytes` (the rest of the stream is not read). */
export async function readBody(data: Buffer | Readable, maxBytes: number): Promise<Buffer> {
  const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', `blob exceeds ${maxBytes} bytes`);
  if (Buffer.isBuffer(data)) {
    if (data.length > maxBytes) throw tooLarge();
    return data;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of data) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > maxBytes) {
      data.destroy();
      throw tooLarge();
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}
