/**
 * Whether an error means PostgreSQL cannot be reached right now (stopped, restarting, failing over, or the
 * connection cut), as opposed to a statement that failed. Requests that meet one are answered 503 with
 * `Retry-After` instead of 500 (docs/faults.md): nothing was written, and the same request succeeds once the server
 * is back.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      // Socket errors of node-postgres' connection.
      if (SOCKET_CODES.has(code)) return true;
      // SQLSTATE class 08 (connection exception), and the server shutting down or not yet accepting connections.
      if (/^08[0-9A-Z]{3}$/.test(code) || SHUTDOWN_STATES.has(code)) return true;
    }
    if (typeof message === 'string' && CLIENT_MESSAGES.some((m) => message.startsWith(m))) return true;
  }
  return false;
}

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);
/** admin_shutdown, crash_shutdown, cannot_connect_now. */
const SHUTDOWN_STATES = new Set(['57P01', '57P02', '57P03']);
/** What node-postgres and its pool say when the connection ends or cannot be had in time. */
const CLIENT_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
];
