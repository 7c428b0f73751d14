import { z } from 'zod';
import { AppError } from '../errors/app-error';

export interface ValidationIssue {
  path: string;
  message: string;
}

/**
 * An ISO 8601 date-time with a time zone that PostgreSQL can store: years 1 to 9999 once in UTC (`0000-…`, or
 * `0001-01-01T00:00:00+05:00`, would fail in the statement as a 500).
 */
export function isoInstant(error = 'must be an ISO timestamp with a time zone') {
  return z.iso.datetime({ offset: true, error }).refine(
    (v) => {
      const year = new Date(v).getUTCFullYear();
      return Number.isNaN(year) || (year >= 1 && year <= 9999);
    },
    {
      message: 'must be a time between the years 1 and 9999',
      // Only a date-time is asked its year: text that is none gets the format's issue alone (`+010000-…` is one to
      // Date, not to the format). Not `abort`, which would also stop the checks of the object around it.
      when: (payload) => payload.issues.length === 0,
    },
  );
}

/**
 * An integer of the query string, written in decimal digits only. `z.coerce.number()` runs `Number()` on the text,
 * which also reads `0x10`, `1e1`, ` 5`, `+3`, `5.0` and an empty value (as 0); here anything but digits stays text and
 * is refused, and a repeated parameter (an array) is told so.
 */
export function queryInteger(name: string, bounds: { min: number; max: number; default: number }) {
  const { min, max } = bounds;
  return z.preprocess(
    // Digits past 2^53 read as the largest safe integer, so they are told the bound, not that they are no integer.
    (v) => (typeof v === 'string' && /^\d+$/.test(v) ? Math.min(Number(v), Number.MAX_SAFE_INTEGER) : v),
    z
      .number({ error: (iss) => (Array.isArray(iss.input) ? `give ${name} once (it is repeated)` : `${name} must be an integer ≥ ${min} in decimal digits (such as ${bounds.default})`) })
      .int()
      .min(min, { error: `${name} is at least ${min}` })
      .max(max, { error: `${name} is at most ${max}` })
      .default(bounds.default),
  );
}

export function zodIssues(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

/** FastAPI's HTTPValidationError: every issue with its `loc` (strings, and array positions as integers). */
export const detailValidationView = z.object({ detail: z.array(z.object({ loc: z.array(z.union([z.string(), z.number().int()])), msg: z.string(), type: z.string() })) });

/**
 * A FastAPI-shaped `loc`: where, then the issue's path, its numeric parts as integers (array positions:
 * `["body", "ids", 0]`). An object key made only of digits reads as a position too, which no body of Lore's has.
 */
export function issueLoc(where: 'body' | 'query' | 'path', issue: ValidationIssue): Array<string | number> {
  return [where, ...(issue.path === '' ? [] : issue.path.split('.').map((p) => (/^\d+$/.test(p) ? Number(p) : p)))];
}

/** Parses `input` with `schema`; every issue (not only the first) is reported in one 400. */
export function validate<S extends z.ZodType>(schema: S, input: unknown, what = 'request body'): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new AppError('VALIDATION_FAILED', `${what} is invalid`, { details: zodIssues(result.error) });
}

/**
 * Spec 2's and spec 3's validation failure (the FastAPI shape their clients parse): 422
 * `{ detail: [{ loc, msg, type }] }`, `loc` starting with where the value was (`body`, `query`, `path`).
 */
export function detailValidationError(issues: ValidationIssue[], where: 'body' | 'query' | 'path'): AppError {
  const detail = issues.map((i) => ({ loc: issueLoc(where, i), msg: i.message, type: 'value_error' }));
  return new AppError('UNPROCESSABLE', `${where === 'body' ? 'request body' : where} is invalid`, { body: { detail } });
}

/** An error in spec 2's `{ detail: "<message>" }` shape, keeping the code's status and any headers. */
export function detailError(e: AppError, detail = e.message): AppError {
  return new AppError(e.code, e.message, { headers: e.headers, body: { detail } });
}

/** The same error in spec 3's envelope, `{status_code, message, errors: [], data: null}` (agents' paths and their gateway refusals). */
export function envelopeError(e: AppError): AppError {
  // The same error worded again: its stack and its cause, not itself as the cause (a logged cause repeats the message: "x: x").
  const shaped = new AppError(e.code, e.message, { headers: e.headers, body: { status_code: e.status, message: e.message, errors: [], data: null }, ...(e.cause !== undefined ? { cause: e.cause } : {}) });
  shaped.stack = e.stack;
  return shaped;
}
