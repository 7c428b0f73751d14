import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';

export interface StartedServer {
  server: Server;
  port: number;
  url: string;
  /**
   * Stops accepting and drains (`drainServer`): in-flight requests, streams included, finish within `graceMs` (default
   * `SERVER_CLOSE_GRACE_MS`), and each answer from now on closes its connection.
   */
  close(graceMs?: number): Promise<void>;
}

/** How long a closing listener lets its in-flight requests finish (an upload may be slow) before it cuts them. */
export const SERVER_CLOSE_GRACE_MS = 20_000;

/** A lifecycle's time for a listener's close hook: its grace, and a moment to settle. */
export const LISTENER_CLOSE_TIMEOUT_MS = SERVER_CLOSE_GRACE_MS + 2_000;

/** How long a draining listener keeps idle keep-alive connections a caller may be about to reuse. */
export const SERVER_IDLE_LINGER_MS = 500;

/** A service server's requests under way, its upgraded sockets (websockets), and whether it is draining. */
interface Drain {
  draining: boolean;
  active: Set<ServerResponse>;
  upgraded: Set<Duplex>;
}
const drains = new WeakMap<Server, Drain>();

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
  const drain: Drain = { draining: false, active: new Set(), upgraded: new Set() };
  const server = createServer({ connectionsCheckingInterval: options.checkIntervalMs ?? 30_000 }, (req: IncomingMessage, res: ServerResponse) => {
    boundDrainAfterAnswer(req, res, drainMs);
    drain.active.add(res);
    res.once('close', () => drain.active.delete(res));
    // A request a caller sent on a kept connection while this server drains is answered, and the connection closed.
    if (drain.draining) res.setHeader('connection', 'close');
    handler(req, res);
  });
  drains.set(server, drain);
  // Upgraded sockets stay the server's connections, which its close waits for, but no longer its requests: kept here
  // so that a drain can end them. A server with no handler of its own refuses an upgrade, as Node does without one.
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    if (server.listenerCount('upgrade') === 1) return void socket.destroy();
    drain.upgraded.add(socket);
    socket.once('close', () => drain.upgraded.delete(socket));
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
  return { server, port, url, close: (graceMs = SERVER_CLOSE_GRACE_MS) => drainServer(server, graceMs) };
}

/**
 * Closes a service server without dropping what it accepted. It stops accepting connections; every answer not yet
 * begun, and every one to a request that still arrives on a kept connection, says `Connection: close`, so callers stop
 * reusing their connections after their answer (until 2026-11-30 nothing told them, and a caller that went on sending
 * on a kept connection had it cut under a request at 5 s: a write was stored and its answer lost). Idle kept
 * connections stay `SERVER_IDLE_LINGER_MS` when requests are under way (a caller may be writing to one as it closes),
 * at once otherwise. Requests under way, streams included (a chat answer cut would be a turn lost), have `graceMs`
 * to end; then every connection left is cut, websockets too (their clients resume from their cursor elsewhere).
 */
export function drainServer(server: Server, graceMs: number): Promise<void> {
  const drain = drains.get(server) ?? { draining: false, active: new Set<ServerResponse>(), upgraded: new Set<Duplex>() };
  drain.draining = true;
  for (const res of drain.active) if (!res.headersSent) res.setHeader('connection', 'close');
  const lingerMs = drain.active.size > 0 ? Math.min(SERVER_IDLE_LINGER_MS, graceMs) : 0;
  const began = Date.now();
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.closeAllConnections();
      for (const socket of drain.upgraded) socket.destroy();
    }, graceMs);
    force.unref();
    const check = (): void => {
      if (Date.now() - began >= lingerMs) server.closeIdleConnections();
    };
    const poll = setInterval(check, 50);
    poll.unref();
    server.close(() => {
      clearTimeout(force);
      clearInterval(poll);
      resolve();
    });
    check();
  });
}
