import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createServiceServer } from './server';

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
