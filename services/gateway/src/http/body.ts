import type { IncomingMessage } from 'node:http';
import { AppError } from '@lore/runtime';

/**
 * The gateway's own routes read their bodies here, one route at a time; forwarded routes never do, so their
 * streams reach the upstream untouched. The limit is enforced while reading, not after.
 */
export async function readRawBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) throw new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) throw new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function mediaType(req: IncomingMessage): string {
  return String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** JSON body (an empty body reads as `{}`); anything that is not JSON is 415 or 400. */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const text = await readRawBody(req, limit);
  if (text.trim() === '') return {};
  const type = mediaType(req);
  if (type !== '' && type !== 'application/json' && !type.endsWith('+json')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError('BAD_REQUEST', 'request body is not valid JSON');
  }
}

/** JSON or `application/x-www-form-urlencoded` (the OAuth token endpoint accepts both). */
export async function readJsonOrForm(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const text = await readRawBody(req, limit);
  const type = mediaType(req);
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(text));
  if (text.trim() === '') return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    throw new AppError('BAD_REQUEST', 'request body is neither JSON nor form-encoded');
  }
}
