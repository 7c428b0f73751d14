import type { IncomingMessage } from 'node:http';
import { AppError } from '../errors/app-error';

/**
 * The one request-body reader of every Lore service. Routes read their own bodies (nothing is parsed before a
 * route asked for it), so forwarded and streamed bodies (the gateway's proxy, multipart uploads) stay untouched.
 *
 * Every text body must be valid UTF-8, and every string in a parsed body (keys too) must be well-formed Unicode
 * without NUL: PostgreSQL text cannot hold NUL, and a lone surrogate would be silently replaced by U+FFFD on the
 * way to the database. Both would otherwise fail deep in a query (500) or change the caller's data; here they are
 * a 400 with the error envelope.
 */

export interface BodyLimits {
  /** Largest body accepted, in bytes; larger bodies answer 413 (checked against Content-Length and while reading). */
  limitBytes: number;
}

const tooLarge = (limit: number) => new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);

/**
 * A request body sent with a content coding (gzip, br, ...) is refused, 415: Lore decodes none, and reading the
 * coded bytes as they are would take a gzipped body for bad UTF-8, or a plain body labelled gzip for what it says.
 */
export function assertNoContentCoding(req: IncomingMessage): void {
  const coding = String(req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (coding !== '' && coding !== 'identity') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `request bodies are not decoded: send the body without Content-Encoding (got ${coding.slice(0, 40)})`);
  }
}

/** Reads the raw body into one buffer, refusing it as soon as it passes the limit (declared or streamed). */
export async function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  assertNoContentCoding(req);
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Decodes UTF-8 strictly: an invalid byte sequence is the client's error (400), never replaced. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new AppError('BAD_REQUEST', 'request body is not valid UTF-8');
  }
}

/** The body's media type without parameters, lower-cased ('' when absent). */
export function mediaTypeOf(req: IncomingMessage): string {
  return String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
}

const isJsonType = (type: string) => type === 'application/json' || type.endsWith('+json');

/** Why a string cannot be stored as given, or undefined when it can. */
// In a `u` regex a surrogate pair is one code point, so this class matches only a surrogate standing alone.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function badString(s: string): string | undefined {
  if (s.includes('\u0000')) return 'strings in the body must not contain NUL characters';
  if (LONE_SURROGATE.test(s)) return 'strings in the body must be well-formed Unicode (no lone surrogates)';
  return undefined;
}

const MAX_DEPTH = 64;

/**
 * Throws a 400 when any string of a parsed body (object keys included) holds NUL or a lone surrogate, or when the
 * body nests deeper than any route accepts. Iterative, so a hostile body cannot exhaust the stack.
 */
export function assertCleanStrings(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string') {
      const why = badString(v);
      if (why) throw new AppError('BAD_REQUEST', why);
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_DEPTH) throw new AppError('BAD_REQUEST', `request body nests deeper than ${MAX_DEPTH} levels`);
      if (Array.isArray(v)) {
        for (const item of v) stack.push([item, depth + 1]);
      } else {
        for (const [k, item] of Object.entries(v)) {
          const why = badString(k);
          if (why) throw new AppError('BAD_REQUEST', why);
          stack.push([item, depth + 1]);
        }
      }
    }
  }
}

/** Parses JSON text; malformed JSON, NUL and lone surrogates are refused with 400. */
export function parseJsonText(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw new AppError('BAD_REQUEST', 'request body is not valid JSON');
  }
  assertCleanStrings(value);
  return value;
}

/** A JSON body (an empty body reads as `{}`); another media type is 415, anything that is not JSON is 400. */
export async function readJson(req: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  const text = decodeUtf8(await readRawBody(req, limits.limitBytes));
  if (text.trim() === '') return {};
  const type = mediaTypeOf(req);
  if (type !== '' && !isJsonType(type)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json');
  return parseJsonText(text);
}

/**
 * JSON or `application/x-www-form-urlencoded` (OAuth's token endpoint takes both). A form decodes to an object of
 * strings (the last value of a repeated field wins); an empty body or a JSON value that is not an object reads as
 * `{}` so that validation lists the missing fields.
 */
export async function readJsonOrForm(req: IncomingMessage, limits: BodyLimits): Promise<Record<string, unknown>> {
  const text = decodeUtf8(await readRawBody(req, limits.limitBytes));
  const type = mediaTypeOf(req);
  if (type === 'application/x-www-form-urlencoded') {
    const form = Object.fromEntries(new URLSearchParams(text));
    assertCleanStrings(form);
    return form;
  }
  if (text.trim() === '') return {};
  if (type !== '' && !isJsonType(type)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json or application/x-www-form-urlencoded');
  const v = parseJsonText(text);
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
