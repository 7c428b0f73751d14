import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';

export interface StartedServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish, then drops idle and (after `graceMs`) all connections. */
  close(graceMs?: number): Promise<void>;
}

/** How long a service keeps an idle keep-alive connection: longer than its callers keep theirs in their pools. */
export const SERVER_KEEP_ALIVE_MS = 65_000;

/**
 * How long a request may take to arrive whole, headers and body: a 25 MiB upload at 100 KiB/s takes about 4 minutes.
 * Past it the server answers 408 and closes the connection. Answers are not bounded by it: a stream (SSE) begins once
 * its request has arrived, and is bounded by its own handler.
 */
export const SERVER_REQUEST_TIMEOUT_MS = 300_000;

/**
 * The HTTP server every listener of a service uses, TCP or unix socket alike: idle keep-alive connections live
 * `SERVER_KEEP_ALIVE_MS` (Node's default of 5 s is shorter than a caller's pool keeps a connection, and a request
 * sent on a connection the server is closing fails with ECONNRESET), headers must arrive within
 * `SERVER_KEEP_ALIVE_MS` + 1 s, and a whole request within `requestTimeoutMs` (default `SERVER_REQUEST_TIMEOUT_MS`).
 * Before 2026-11-30 a request's body had no deadline: a client sending it a byte a minute, or one refused (401, 413)
 * before its body was read, held its connection for good, and enough of them took the process's file descriptors.
 * Node checks the deadlines every `checkIntervalMs` (default 30 s).
 */
export function createServiceServer(handler: (req: any, res: any) => void, options: { requestTimeoutMs?: number; checkIntervalMs?: number; drainAfterAnswerMs?: number } = {}): Server {
  const drainMs = options.drainAfterAnswerMs ?? SERVER_DRAIN_AFTER_ANSWER_MS;
  const server = createServer({ connectionsCheckingInterval: options.checkIntervalMs ?? 30_000 }, (req: IncomingMessage, res: ServerResponse) => {
    boundDrainAfterAnswer(req, res, drainMs);
    handler(req, res);
  });
  const requestTimeoutMs = options.requestTimeoutMs ?? SERVER_REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = SERVER_KEEP_ALIVE_MS;
  // Node checks neither deadline when the headers' is the longer.
  server.headersTimeout = Math.min(SERVER_KEEP_ALIVE_MS + 1_000, requestTimeoutMs);
  server.requestTimeout = requestTimeoutMs;
  return server;
}

/** How long the rest of a request's body may take to arrive once its answer was sent (see `boundDrainAfterAnswer`). */
export const SERVER_DRAIN_AFTER_ANSWER_MS = 30_000;

/**
 * An answer sent before its request arrived whole (a 401, a 413 refused before the body was read): Node reads and
 * discards the rest of the body to keep the connection, and the request deadline no longer applies once the answer is
 * sent. The rest must then arrive within `drainMs`, or the connection is closed. The connection is not closed at once:
 * a caller still sending (the gateway relaying a body to a service that refused it early) must be able to finish and
 * read the answer.
 */
function boundDrainAfterAnswer(req: IncomingMessage, res: ServerResponse, drainMs: number): void {
  res.once('finish', () => {
    if (req.complete) return;
    const timer = setTimeout(() => {
      if (!req.complete) req.socket.destroy();
    }, drainMs);
    timer.unref();
    req.once('end', () => clearTimeout(timer));
    req.once('close', () => clearTimeout(timer));
  });
}

export async function listen(app: Koa<any, any> | ((req: any, res: any) => void), port: number, host = '0.0.0.0'): Promise<StartedServer> {
  const server = await listening(app, (s, done) => s.listen(port, host, done));
  const actual = (server.address() as AddressInfo).port;
  return started(server, actual, `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${actual}`);
}

/** The same server on a unix socket (embedded mode's services behind its gateway); `port` is 0, `url` `unix:<path>`. */
export async function listenSocket(app: Koa<any, any> | ((req: any, res: any) => void), path: string): Promise<StartedServer> {
  const server = await listening(app, (s, done) => s.listen(path, done));
  return started(server, 0, `unix:${path}`);
}

async function listening(app: Koa<any, any> | ((req: any, res: any) => void), bind: (server: Server, done: () => void) => void): Promise<Server> {
  const server = createServiceServer(typeof app === 'function' ? app : app.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    bind(server, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

function started(server: Server, port: number, url: string): StartedServer {
  return {
    server,
    port,
    url,
    close: (graceMs = 5_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
