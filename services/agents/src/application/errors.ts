import { AppError, type ErrorCode } from '@lore/runtime';

/**
 * An error of the agents application layer: a code and a message, no body. The route family words it (see
 * routes/route.ts): spec 3's envelope on the search routes, `{ detail }` on the `/api/...` routes.
 */
export function agentsError(code: ErrorCode, message: string, headers?: Record<string, string>): AppError {
  return new AppError(code, message, headers ? { headers } : {});
}

export const notFound = (what: string): AppError => agentsError('NOT_FOUND', `${what} not found`);
