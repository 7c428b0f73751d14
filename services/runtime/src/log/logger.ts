import pino, { type Logger, type LoggerOptions } from 'pino';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { processLogDestination } from './destination';

export type { Logger } from 'pino';

/**
 * Paths never written to logs: credentials, auth headers, cookies, and the values a failed statement was given (an
 * embedded database's errors carry `params`: documents' text, uploaded rows, hashed keys). These are exact paths,
 * which pino compiles into direct property accesses (cheap on every line).
 */
export const REDACT_PATHS = [
  'err.params',
  'error.params',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'req.headers["x-lore-identity"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  'headers["x-lore-identity"]',
];

export const REDACTED = '[redacted]';

/**
 * Field names that are secret wherever they appear at the top of a log object or one level down. A bare `key` is
 * taken for a credential: log an identifier as `key_id` (or a message key as `message_key`).
 */
const SECRET_TOP = new Set(['password', 'secret', 'api_key', 'apiKey', 'key', 'token', 'plaintext', 'signing_secret']);
const SECRET_NESTED = SECRET_TOP;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function redactNested(value: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const k in value) {
    if (SECRET_NESTED.has(k) && value[k] !== undefined) {
      copy ??= { ...value };
      copy[k] = REDACTED;
    }
  }
  return copy ?? value;
}

/**
 * One pass over a log object: secret-named fields at the top level and one level down are censored. Objects the
 * caller passed are never mutated (a changed object is copied), and a line with nothing secret costs one loop
 * over its few keys — the wildcard paths pino offers cost a tree walk on every line.
 */
export function redactSecrets(obj: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const k in obj) {
    const v = obj[k];
    let next = v;
    if (SECRET_TOP.has(k)) {
      if (v !== undefined) next = REDACTED;
    } else if (isPlainObject(v)) {
      next = redactNested(v);
    }
    if (next !== v) {
      out ??= { ...obj };
      out[k] = next;
    }
  }
  return out ?? obj;
}

let stampSecond = -1;
let stampPrefix = '';

/**
 * pino's `time` field as ISO-8601 UTC with milliseconds, like `stdTimeFunctions.isoTime`, but formatting the date
 * once per second: `Date#toISOString` on every line was the single most expensive step of an access log line.
 */
export function isoTimestamp(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== stampSecond) {
    stampSecond = second;
    stampPrefix = new Date(second * 1000).toISOString().slice(0, 19);
  }
  const ms = now - second * 1000;
  return `,"time":"${stampPrefix}.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
}

/** What the mixin returns outside any trace: one shared, empty, frozen object. */
const NO_TRACE: Record<string, never> = Object.freeze({});

/**
 * pino's default merge copies every field of the logged object into the mixin's object, on every line; outside a
 * trace there is nothing to add, so the logged object is used as it is (pino only reads it).
 */
function mergeTrace(logged: object, mixed: object): object {
  return mixed === NO_TRACE ? logged : Object.assign(mixed, logged);
}

const SECRET_BINDING_SERIALIZERS: Record<string, () => string> = Object.fromEntries([...SECRET_TOP].map((k) => [k, () => REDACTED]));

export interface LoggerConfig {
  level: string;
  /**
   * Every line's `service`. A process that hosts several services (embedded mode) gives none, and each service's
   * child binds its own: pino appends a child's bindings, so binding it twice would print the key twice.
   */
  service?: string;
  /**
   * Where lines go; default: standard output, batched per event-loop turn (`processLogDestination`). Tests
   * capture output through their own stream.
   */
  destination?: pino.DestinationStream;
}

/**
 * A child logger for one part of a service. pino appends a child's bindings to its parent's, so a `component` bound
 * under another would print the key twice (JSON readers keep one or refuse the line): a part inside a component is
 * bound as `part`, and a part inside that adds nothing.
 */
export function componentLogger(logger: Logger, name: string): Logger {
  const bound = logger.bindings();
  if (!('component' in bound)) return logger.child({ component: name });
  if (!('part' in bound)) return logger.child({ part: name });
  return logger;
}

export function createLogger(config: LoggerConfig): Logger {
  const options: LoggerOptions = {
    level: config.level,
    base: config.service === undefined ? {} : { service: config.service },
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    timestamp: isoTimestamp,
    formatters: { level: (label) => ({ level: label }), log: redactSecrets },
    // A child's bindings never pass the log formatter (pino applies its bindings formatter to the root only), but
    // they do pass serializers: `logger.child({ token })` prints the token censored like a logged field.
    serializers: SECRET_BINDING_SERIALIZERS,
    // Every line carries the active trace so logs and traces join up.
    mixin() {
      const span = trace.getActiveSpan();
      if (!span) return NO_TRACE;
      const ctx = span.spanContext();
      // A non-recording placeholder span (work that no trace started) carries the all-zero ids: no trace to name.
      if (!isSpanContextValid(ctx)) return NO_TRACE;
      return { trace_id: ctx.traceId, span_id: ctx.spanId };
    },
    mixinMergeStrategy: mergeTrace,
  };
  return pino(options, config.destination ?? processLogDestination());
}

/** What the kit's access line reports of one finished request. */
export interface AccessFields {
  /** Written as a field when the logger is not already the request's child (which carries it as a binding). */
  request_id?: string;
  method: string;
  path: string;
  route: string;
  status: number;
  duration_ms: number;
}

const {
  streamSym,
  chindingsSym,
  lsCacheSym,
  timeSym,
  endSym,
  hooksSym,
  msgPrefixSym,
  messageKeySym,
  needsMetadataGsym,
} = pino.symbols as unknown as Record<'streamSym' | 'chindingsSym' | 'lsCacheSym' | 'timeSym' | 'endSym' | 'hooksSym' | 'msgPrefixSym' | 'messageKeySym' | 'needsMetadataGsym', symbol>;

interface PinoInternals {
  [key: symbol]: unknown;
}

/** Strings JSON writes as they are: printable ASCII without `"` and `\\`. */
const JSON_PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** `JSON.stringify` of a string, without its escaping pass for the strings that need none. */
function jsonString(value: string): string {
  return JSON_PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
}

/** The JSON strings of the few values a process repeats on every line (methods, route templates), kept once each. */
const repeated = new Map<string, string>();
const REPEATED_MAX = 4096;

function knownJsonString(value: string): string {
  let json = repeated.get(value);
  if (json === undefined) {
    json = jsonString(value);
    if (repeated.size < REPEATED_MAX) repeated.set(value, json);
  }
  return json;
}

/**
 * Writes the kit's access line (`"msg":"request"` with the fields above) exactly as `logger.info(fields,
 * 'request')` would, built straight into one string. The access line is written once per request and its fields
 * are fixed and never secret, so pino's generic path (a merged object, the log formatter, a per-key serialiser
 * loop) is cost without use on it: it was most of the kit's own CPU per request (docs/runtime.md). Everything
 * that makes a line this logger's is still pino's: the level label, the time function, the logger's bindings
 * (base fields, a child's `request_id` and whatever a handler bound, redacted when they were bound), the active
 * trace, the stream. A logger with anything this path does not reproduce (hooks, a message prefix, a stream
 * that wants metadata, another message key) gets the line through `logger.info`.
 */
export function writeAccessLine(logger: Logger, fields: AccessFields): void {
  if (!logger.isLevelEnabled('info')) return;
  const p = logger as unknown as PinoInternals;
  const hooks = p[hooksSym] as { logMethod?: unknown; streamWrite?: unknown } | undefined;
  const stream = p[streamSym] as { write(line: string): unknown; [key: symbol]: unknown } | undefined;
  const levelPrefix = (p[lsCacheSym] as Record<number, string> | undefined)?.[30];
  if (
    stream === undefined ||
    levelPrefix === undefined ||
    hooks?.logMethod !== undefined ||
    hooks?.streamWrite !== undefined ||
    p[msgPrefixSym] !== undefined ||
    p[messageKeySym] !== 'msg' ||
    stream[needsMetadataGsym] === true
  ) {
    logger.info(fields, 'request');
    return;
  }
  let line = levelPrefix + (p[timeSym] as () => string)() + (p[chindingsSym] as string);
  const span = trace.getActiveSpan();
  if (span) {
    const ctx = span.spanContext();
    line += `,"trace_id":"${ctx.traceId}","span_id":"${ctx.spanId}"`;
  }
  if (fields.request_id !== undefined) line += `,"request_id":${jsonString(fields.request_id)}`;
  line +=
    `,"method":${knownJsonString(fields.method)},"path":${jsonString(fields.path)},"route":${knownJsonString(fields.route)}` +
    `,"status":${Number.isFinite(fields.status) ? fields.status : null},"duration_ms":${Number.isFinite(fields.duration_ms) ? fields.duration_ms : null}` +
    `,"msg":"request"` +
    (p[endSym] as string);
  stream.write(line);
}
