import { createServer, request, type Agent, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createServiceServer, SERVER_KEEP_ALIVE_MS, SERVER_REQUEST_TIMEOUT_MS } from '@lore/runtime';
import { parseUpstream } from './proxy';

/** One GET through `agent`, read to its end; answers the socket it used. */
function get(agent: Agent, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(req.socket as Socket));
    });
    req.on('error', reject);
    req.end();
  });
}

const listening = (server: Server): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

const freeSockets = (agent: Agent): number => Object.values(agent.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);

describe('the gateway keeps idle upstream connections shorter than the upstream does', () => {
  let server: Server;
  let closedByServer = 0;

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("drops an idle connection a second before the upstream's announced keep-alive timeout", async () => {
    // An upstream that closes idle connections after 3 s, and says so (`Keep-Alive: timeout=3`).
    server = createServer((_req, res) => res.end('ok'));
    server.keepAliveTimeout = 3_000;
    closedByServer = 0;
    server.on('connection', (s: Socket) => {
      // The client's end arrives first when the gateway drops the connection; the server's timeout never fires then.
      s.on('timeout', () => closedByServer++);
    });
    const port = await listening(server);
    const { agent } = parseUpstream('test', `http://127.0.0.1:${port}`);
    try {
      const socket = await get(agent, port);
      await new Promise((r) => setImmediate(r));
      expect(freeSockets(agent)).toBe(1);
      // Node honours the hint only when it is shorter than the pool's own timeout; without one the socket waits
      // with no timeout at all (0) until the upstream closes it.
      expect(socket.timeout).toBe(2_000);
      const started = Date.now();
      while (freeSockets(agent) > 0 && Date.now() - started < 2_900) await new Promise((r) => setTimeout(r, 50));
      expect(freeSockets(agent)).toBe(0);
      expect(closedByServer).toBe(0);
      // The next request opens a new connection and is answered.
      const next = await get(agent, port);
      expect(next).not.toBe(socket);
    } finally {
      agent.destroy();
    }
  });

  it('keeps a connection to a Lore service for up to a minute: services keep theirs longer', async () => {
    server = createServiceServer((_req: unknown, res: { end(s: string): void }) => res.end('ok'));
    expect(server.keepAliveTimeout).toBe(SERVER_KEEP_ALIVE_MS);
    expect(server.headersTimeout).toBeGreaterThan(SERVER_KEEP_ALIVE_MS);
    // A whole request must arrive within five minutes; an answer (a stream) is not bounded by it.
    expect(server.requestTimeout).toBe(SERVER_REQUEST_TIMEOUT_MS);
    const port = await listening(server);
    const { agent } = parseUpstream('test', `http://127.0.0.1:${port}`);
    try {
      const socket = await get(agent, port);
      // min(the pool's 60 s, the service's 65 s hint less one second)
      expect(socket.timeout).toBe(60_000);
      expect(socket.timeout).toBeLessThan(SERVER_KEEP_ALIVE_MS);
    } finally {
      agent.destroy();
    }
  });
});
