import { AppError, type ErrorCode } from '@lore/runtime';

/** An error in spec 2's shape, `{ detail: "<message>" }`, with the code's status. */
export function coreError(code: ErrorCode, message: string): AppError {
  return new AppError(code, message, { body: { detail: message } });
}
