import WebSocket from 'ws';

/**
 * A session socket client for the agents suites (docs/agents.md, "Sessions over websockets"): opens a socket through
 * the gateway, keeps every message, and waits for one that matches. `refusal` opens one that must be refused and
 * answers its HTTP status and body.
 */
export type SessionMessage = Record<string, any> & { type: string; cursor: number | null };

export interface SessionClient {
  ws: WebSocket;
  messages: SessionMessage[];
  /** Resolves with the first message (seen so far or to come) that matches. */
  waitFor(what: string, match: (m: SessionMessage) => boolean, timeoutMs?: number): Promise<SessionMessage>;
  /** Resolves once the server closed the socket (its code). */
  closed: Promise<number>;
  send(body: unknown): void;
  close(): Promise<void>;
}

/** A start answer's `websocket_url` with the `<your-api-key>` placeholder replaced by `key`, as a client does. */
export const socketUrl = (start: Record<string, unknown>, key: string): string => String(start.websocket_url).replace('<your-api-key>', encodeURIComponent(key));

export function openSession(url: string, headers: Record<string, string> = {}): Promise<SessionClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const messages: SessionMessage[] = [];
    const waiters: Array<() => void> = [];
    let closeCode: (code: number) => void = () => undefined;
    const closed = new Promise<number>((r) => (closeCode = r));
    ws.on('message', (data) => {
      messages.push(JSON.parse(data.toString()) as SessionMessage);
      for (const w of waiters.splice(0)) w();
    });
    ws.on('close', (code) => {
      closeCode(code);
      for (const w of waiters.splice(0)) w();
    });
    ws.once('unexpected-response', (_req, res) => reject(new Error(`socket refused: ${res.statusCode}`)));
    ws.once('error', reject);
    ws.once('open', () =>
      resolve({
        ws,
        messages,
        closed,
        send: (body) => ws.send(JSON.stringify(body)),
        close: () =>
          new Promise<void>((done) => {
            if (ws.readyState === ws.CLOSED) return done();
            ws.once('close', () => done());
            ws.close();
          }),
        waitFor: (what, match, timeoutMs = 60_000) =>
          new Promise<SessionMessage>((ok, fail) => {
            const timer = setTimeout(() => fail(new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages.slice(-5))}`)), timeoutMs);
            const look = () => {
              const found = messages.find(match);
              if (found) {
                clearTimeout(timer);
                ok(found);
              } else if (ws.readyState === ws.CLOSED) {
                clearTimeout(timer);
                fail(new Error(`the socket closed before ${what}; got ${JSON.stringify(messages.slice(-5))}`));
              } else waiters.push(look);
            };
            look();
          }),
      }),
    );
  });
}

/** Opens a socket that must be refused: its HTTP status and body. */
export function refusal(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => {
      ws.close();
      reject(new Error('the socket was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    ws.once('error', (err) => reject(err));
  });
}
