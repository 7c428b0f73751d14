import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { request, Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServiceServer, listen } from './server';

/** A client that sends its headers and the first bytes of a long body, then nothing more. */
function trickle(port: number, path: string): Promise<{ answer: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{"a":`);
    });
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (answer += d));
    socket.on('close', () => resolve({ answer, closedAfterMs: Date.now() - started }));
    socket.on('error', reject);
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open after 10 s; answered ${JSON.stringify(answer.slice(0, 40))}`));
    }, 10_000);
  });
}

describe('createServiceServer', () => {
  it('closes a connection whose request body does not arrive in time, read or refused unread', async () => {
    const server = createServiceServer(
      (req: { url: string; on(e: string, f: () => void): void }, res: { writeHead(s: number): { end(b: string): void } }) => {
        // One route refuses before reading the body (as a 401 does); the other waits for the whole body.
        if (req.url === '/refused') return res.writeHead(401).end('no');
        req.on('data', () => undefined);
        req.on('end', () => res.writeHead(200).end('read'));
      },
      { requestTimeoutMs: 1_000, checkIntervalMs: 100, drainAfterAnswerMs: 1_000 },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as AddressInfo).port;
      const [refused, waiting] = await Promise.all([trickle(port, '/refused'), trickle(port, '/waiting')]);
      expect(refused.answer).toMatch(/^HTTP\/1\.1 401/);
      expect(waiting.answer).toMatch(/^HTTP\/1\.1 408/);
      for (const r of [refused, waiting]) expect(r.closedAfterMs).toBeLessThan(5_000);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

/** One request on `agent`, its status, `connection` header and body; `body` is sent over `sendMs` when given. */
function call(port: number, agent: Agent, path: string, body?: { text: string; sendMs: number }): Promise<{ status: number; connection: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: body ? 'POST' : 'GET', agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, text }));
    });
    req.on('error', reject);
    if (!body) return void req.end();
    const half = Math.floor(body.text.length / 2);
    req.write(body.text.slice(0, half));
    setTimeout(() => req.end(body.text.slice(half)), body.sendMs);
  });
}

describe('closing a service server', () => {
  const app = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/stream') {
      res.setHeader('content-type', 'text/event-stream');
      res.writeHead(200);
      res.write('data: open\n\n');
      return;
    }
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end(`done ${req.url} ${body.length}`), req.url === '/slow' ? 600 : 0));
  };

  it('lets requests under way finish, tells kept connections to close, and answers a slow upload begun before', async () => {
    const s = await listen(app, 0, '127.0.0.1');
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    try {
      // A kept connection, warm before the close.
      expect((await call(s.port, agent, '/warm')).connection).toBe('keep-alive');
      const slow = call(s.port, agent, '/slow');
      const upload = call(s.port, agent, '/upload', { text: 'x'.repeat(200_000), sendMs: 1_500 });
      await new Promise((r) => setTimeout(r, 100));
      const began = Date.now();
      const closed = s.close(10_000);
      // Until 2026-11-30 both were cut: the idle connection at once, the others at 5 s whatever they were doing.
      expect(await slow).toEqual({ status: 200, connection: 'close', text: 'done /slow 0' });
      expect(await upload).toEqual({ status: 200, connection: 'close', text: 'done /upload 200000' });
      await closed;
      expect(Date.now() - began).toBeLessThan(5_000);
    } finally {
      agent.destroy();
    }
  });

  it('lets a stream run until the grace ends, then cuts it and any upgraded socket, and refuses upgrades it has no handler for', async () => {
    const s = await listen(app, 0, '127.0.0.1');
    const upgraded: Array<import('node:stream').Duplex> = [];
    s.server.on('upgrade', (_req, socket: import('node:stream').Duplex) => {
      upgraded.push(socket);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: test\r\nconnection: upgrade\r\n\r\n');
    });
    const closedAt = (socket: import('node:net').Socket) => new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())));
    const ended = new Promise<number>((resolve) => {
      request({ host: '127.0.0.1', port: s.port, path: '/stream' }, (res) => {
        res.resume();
        res.on('close', () => resolve(Date.now()));
      }).end();
    });
    const raw = connect(s.port, '127.0.0.1', () => raw.write('GET /ws HTTP/1.1\r\nhost: x\r\nupgrade: test\r\nconnection: upgrade\r\n\r\n'));
    raw.on('error', () => undefined);
    // Read, so that the end the server sends is seen.
    raw.resume();
    const rawClosed = closedAt(raw);
    await new Promise((r) => setTimeout(r, 200));
    expect(upgraded).toHaveLength(1);
    const began = Date.now();
    await s.close(1_000);
    // A stream may be an answer under way (a chat turn): it has the grace; a websocket is cut with it.
    expect((await ended) - began).toBeGreaterThanOrEqual(900);
    expect((await ended) - began).toBeLessThan(3_000);
    expect((await rawClosed) - began).toBeLessThan(3_000);

    // A server without an upgrade handler of its own refuses an upgrade, as Node does.
    const bare = await listen(app, 0, '127.0.0.1');
    const refused = connect(bare.port, '127.0.0.1', () => refused.write('GET /ws HTTP/1.1\r\nhost: x\r\nupgrade: test\r\nconnection: upgrade\r\n\r\n'));
    refused.on('error', () => undefined);
    refused.resume();
    const refusedAt = await closedAt(refused);
    expect(refusedAt).toBeGreaterThan(0);
    await bare.close(1_000);
  });
});
