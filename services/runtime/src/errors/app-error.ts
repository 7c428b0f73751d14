import { z } from 'zod';
/**
 * The closed set of error codes Lore answers with. Each code has exactly one HTTP status; the table is the only
 * place that mapping lives.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  INVALID_REFRESH_TOKEN: 401,
  PLAN_LIMIT_EXCEEDED: 402,
  INSUFFICIENT_CREDITS: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  BAD_GATEWAY: 502,
  UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface AppErrorOptions {
  /** Extra, safe-to-show structured details (e.g. validation issues). */
  details?: unknown;
  /** Response headers to set (e.g. Retry-After). */
  headers?: Record<string, string>;
  /**
   * A body to send instead of the default `{error:{...}}` shape, for routes whose spec fixes another shape
   * (spec 2's `detail`, the refresh route's error object, spec 3's 422s).
   */
  body?: unknown;
  cause?: unknown;
}

export class AppError extends Error {
  readonly status: number;
  readonly details?: unknown;
  readonly headers: Record<string, string>;
  readonly body?: unknown;

  constructor(readonly code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
    this.details = options.details;
    this.headers = options.headers ?? {};
    this.body = options.body;
  }

  static notFound(what = 'resource'): AppError {
    return new AppError('NOT_FOUND', `${what} not found`);
  }
  static unauthorized(message = 'a valid credential is required'): AppError {
    return new AppError('UNAUTHORIZED', message);
  }
  static forbidden(message = 'the credential is not allowed to do this'): AppError {
    return new AppError('FORBIDDEN', message);
  }
  static badRequest(message: string, details?: unknown): AppError {
    return new AppError('BAD_REQUEST', message, { details });
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/**
 * The platform's error envelope as OpenAPI documents declare it (`errorBody`): the gateway's own answers, spec 1's
 * routes, and the gateway's refusals (401, 402, 403, 413, 429) wherever they keep it. `details` is the issues of a
 * validation failure (`[{path, message}]`) or an object saying more (a 402's `reason`).
 */
export const errorEnvelopeView = z.object({
  error: z.object({ code: z.string(), message: z.string(), request_id: z.string(), details: z.unknown().optional() }),
});

/** The default error body: `{ error: { code, message, request_id, details? } }`. */
export function errorBody(err: AppError, requestId: string): unknown {
  if (err.body !== undefined) return err.body;
  const error: Record<string, unknown> = { code: err.code, message: err.message, request_id: requestId };
  if (err.details !== undefined) error.details = err.details;
  return { error };
}
