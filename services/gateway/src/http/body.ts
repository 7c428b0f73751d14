import type { IncomingMessage } from 'node:http';
import { assertCleanStrings, readJson as readJsonBody } from '@lore/runtime';

/**
 * Only for the callers that have not moved onto route definitions yet (the project routes, being rewritten, and
 * the internal admin API): the same runtime reader (services/runtime/src/http/body.ts) under the old signatures.
 * Delete this file when they have moved.
 */
export function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  return readJsonBody(req, { limitBytes: limit });
}

/** True when a parsed body holds a string (or key) the runtime reader refuses: NUL or a lone surrogate. */
export function containsNul(value: unknown): boolean {
  try {
    assertCleanStrings(value);
    return false;
  } catch {
    return true;
  }
}
