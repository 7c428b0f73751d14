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

/**
 * PostgreSQL text cannot hold NUL; a string carrying one would fail deep in a query (500). Refused here, at the
 * edge, as a client error.
 */
function rejectNul(_key: string, value: unknown): unknown {
  if (typeof value === 'string' && value.includes('\u0000')) throw new AppError('BAD_REQUEST', 'strings in the body must not contain NUL characters');
  return value;
}

/** True when any string (key or value) in a parsed body holds NUL; depth-bounded. */
export function containsNul(value: unknown, depth = 0): boolean {
  if (depth > 32) return false;
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some((v) => containsNul(v, depth + 1));
  if (value && typeof value === 'object') return Object.entries(value).some(([k, v]) => k.includes('\u0000') || containsNul(v, depth + 1));
  return false;
}

/** Parses JSON text; NUL characters in strings are refused. */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text, rejectNul) as unknown;
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('BAD_REQUEST', 'request body is not valid JSON');
  }
}

/** JSON body (an empty body reads as `{}`); anything that is not JSON is 415 or 400. */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const text = await readRawBody(req, limit);
  if (text.trim() === '') return {};
  const type = mediaType(req);
  if (type !== '' && type !== 'application/json' && !type.endsWith('+json')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json');
  }
  return parseJsonText(text);
}

/** JSON or `application/x-www-form-urlencoded` (the OAuth token endpoint accepts both). */
export async function readJsonOrForm(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const text = await readRawBody(req, limit);
  const type = mediaType(req);
  if (type === 'application/x-www-form-urlencoded') {
    if (text.includes('\u0000') || /%00/.test(text)) throw new AppError('BAD_REQUEST', 'the body must not contain NUL characters');
    return Object.fromEntries(new URLSearchParams(text));
  }
  if (text.trim() === '') return {};
  const v = parseJsonText(text);
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
