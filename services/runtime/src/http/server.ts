import { createServer, type Server } from 'node:http';
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
 * The HTTP server every listener of a service uses, TCP or unix socket alike: idle keep-alive connections live
 * `SERVER_KEEP_ALIVE_MS` (Node's default of 5 s is shorter than a caller's pool keeps a connection, and a request
 * sent on a connection the server is closing fails with ECONNRESET), and no whole-request timeout (long-lived streams,
 * SSE, are bounded by their own handlers).
 */
export function createServiceServer(handler: (req: any, res: any) => void): Server {
  const server = createServer(handler);
  server.keepAliveTimeout = SERVER_KEEP_ALIVE_MS;
  server.headersTimeout = SERVER_KEEP_ALIVE_MS + 1_000;
  server.requestTimeout = 0;
  return server;
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
