import { Agent, request } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '@lore/runtime';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeKey, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest, type TenantFixture } from './harness';
import { freePort } from './processes';

jest.setTimeout(120_000);

describe('gateway forwarding: streams, uploads, websockets, failures', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;
  let unixEcho: EchoUpstream;
  let t: TenantFixture;
  const logLines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    database = await freshDatabase('lore_gwfwd');
    echo = await startEcho();
    unixEcho = await startEcho({ socketPath: join(tmpdir(), `lore-gw-${uid()}.sock`) });
    const closedPort = await freePort();
    g = await startGateway(
      database,
      {
        // graph and agents over TCP, mcp over a unix socket (as in embedded mode), core pointing at nothing.
        upstreams: { graph: echo.url, agents: echo.url, mcp: unixEcho.url, core: `http://127.0.0.1:${closedPort}` },
        proxy: { connectTimeoutMs: 2000, responseTimeoutMs: 800, idleTimeoutMs: 10_000, maxBodyBytes: 5 * 1024 * 1024, revocationRecheckMs: 100 },
      },
      {
        redisPrefix: `gwfwd:${uid()}:`,
        logger: createLogger({
          level: 'info',
          service: 'gateway-test',
          destination: new Writable({ write: (c: Buffer, _e, done) => (logLines.push(...c.toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)), done()) }),
        }),
      },
    );
    t = await makeTenant(g);
  });
  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await unixEcho?.close();
    await database?.drop();
  });

  it('streams server-sent events as they are produced (sources before the first token)', async () => {
    const u = new URL(g.publicUrl);
    const events: Array<{ at: number; text: string }> = [];
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/memory/search/stream', headers: { 'x-api-key': t.key, 'content-type': 'application/json' } }, (res) => {
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('text/event-stream');
        res.on('data', (c: Buffer) => events.push({ at: Date.now() - started, text: c.toString() }));
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(JSON.stringify({ query: 'q' }));
    });
    expect(events[0]!.text).toContain('event: sources');
    expect(events[0]!.text).not.toContain('event: token');
    const last = events[events.length - 1]!;
    expect(last.text).toContain('event: done');
    // The first frame arrived well before the stream ended: nothing was buffered.
    expect(last.at - events[0]!.at).toBeGreaterThanOrEqual(200);
  });

  it('passes request bodies through unbuffered (the upstream answers on the first chunk)', async () => {
    const u = new URL(g.publicUrl);
    const boundary = `----lore${uid()}`;
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n`;
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        { host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/memory/uploads/early', headers: { 'x-api-key': t.key, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
            // Only now, after the upstream answered, does the client send the rest.
            if (!req.writableEnded) req.end(`${'x'.repeat(1024 * 1024)}\r\n--${boundary}--\r\n`);
          });
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.write(head);
    });
    expect(JSON.parse(body).first_chunk_bytes).toBeGreaterThan(0);
  });

  it('never hands the next request a connection an upstream left inside a body it refused (an early 413)', async () => {
    // A gateway of its own, whose upstream may take its time (this suite's answers in 800 ms): the bodies are large
    // enough to leave part of one unread on the connection, which a loaded machine needs a moment to move.
    const patient = await startGateway(database, { upstreams: { graph: echo.url }, proxy: { connectTimeoutMs: 5_000, responseTimeoutMs: 30_000, idleTimeoutMs: 30_000, maxBodyBytes: 16 * 1024 * 1024 } }, { redisPrefix: `gwfwd-413:${uid()}:` });
    try {
      const tenant = await makeTenant(patient);
      const u = new URL(patient.publicUrl);
      const send = (body: Buffer, chunked: boolean) =>
        new Promise<{ status: number; ms: number }>((resolve, reject) => {
          const started = Date.now();
          const headers: Record<string, string> = { 'x-api-key': tenant.key, 'content-type': 'application/octet-stream', ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }) };
          const req = request({ host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/memory/refuse-large', headers, agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: Date.now() - started }));
          });
          req.on('error', reject);
          req.end(body);
        });
      for (let round = 0; round < 3; round++) {
        expect((await send(Buffer.alloc(2_200_000, 'x'), true)).status).toBe(413);
        // The next request (any caller's) gets its own answer, not a timeout or a reset.
        const next = await send(Buffer.alloc(420 * 1024, 'y'), false);
        expect({ round, status: next.status }).toEqual({ round, status: 200 });
      }
      // A client still writing a body far past what the upstream reads gets the upstream's 413, not a reset (EPIPE):
      // the gateway reads and drops the rest instead of closing the connection under it.
      // A client keeping its connections, as Node's default agent does.
      const keepAlive = new Agent({ keepAlive: true });
      const streamed = (size: number) =>
        new Promise<{ status: number; connection: string | undefined } | { error: string }>((resolve) => {
          const req = request({ host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/memory/refuse-large', headers: { 'x-api-key': tenant.key, 'content-type': 'application/octet-stream', 'content-length': String(size) }, agent: keepAlive }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
          });
          req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
          // Written as a client streams a file: 64 KiB at a time, waiting whenever the socket is full.
          const chunk = Buffer.alloc(64 * 1024, 'z');
          let sent = 0;
          const pump = () => {
            while (sent < size) {
              sent += chunk.length;
              if (!req.write(chunk)) return void req.once('drain', pump);
            }
            req.end();
          };
          pump();
        });
      // The connection is kept (its rest drained), not closed under the client: `Connection: close` was what reset it.
      for (let round = 0; round < 6; round++) expect({ round, big: await streamed(128 * 64 * 1024) }).toEqual({ round, big: { status: 413, connection: 'keep-alive' } });
      keepAlive.destroy();
    } finally {
      await patient.close();
    }
  });

  it('sends a read once more on a fresh connection when a kept one is dropped under it before any answer; never a write', async () => {
    // An upstream that answers each connection's first request and drops the connection under its second, unread:
    // what a replica that closes its idle connections does to a caller writing on one at that moment.
    const seen: Array<{ connection: number; method: string; path: string }> = [];
    let connections = 0;
    const flaky = createNetServer((socket) => {
      const connection = ++connections;
      let buffered = '';
      let answered = 0;
      socket.on('data', (d: Buffer) => {
        buffered += d.toString('latin1');
        for (;;) {
          const end = buffered.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = buffered.slice(0, end);
          const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (buffered.length < end + 4 + length) return;
          buffered = buffered.slice(end + 4 + length);
          const [method, path] = head.split(' ');
          seen.push({ connection, method: method!, path: path! });
          if (answered++ > 0) return void socket.destroy();
          const payload = JSON.stringify({ connection });
          socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${payload.length}\r\nconnection: keep-alive\r\n\r\n${payload}`);
        }
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', () => r()));
    const flakyGateway = await startGateway(database, { upstreams: { graph: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}` } }, { redisPrefix: `gwfwd-replay:${uid()}:`, migrate: false });
    try {
      const tenant = await makeTenant(flakyGateway);
      const headers = { 'x-api-key': tenant.key };
      // A read warms a kept connection; the next is written to it, dropped, and sent again on a fresh one.
      expect((await http(flakyGateway.publicUrl, 'GET', '/api/v1/memory/documents', { headers })).status).toBe(200);
      const read = await http(flakyGateway.publicUrl, 'GET', '/api/v1/memory/documents', { headers });
      // Until 2026-11-30: 502 "upstream graph is unavailable (ECONNRESET)".
      expect([read.status, read.json]).toEqual([200, { connection: 2 }]);
      expect(seen.map((r) => [r.connection, r.method])).toEqual([[1, 'GET'], [1, 'GET'], [2, 'GET']]);
      // A write dropped the same way may have been read and acted on (the same error comes from an upstream that dies
      // after reading): it is never sent twice, and the caller is told it may have failed.
      const write = await http(flakyGateway.publicUrl, 'POST', '/api/v1/memory/ingest', { headers, body: { content: 'once' } });
      expect(write.status).toBe(502);
      expect(seen.slice(3).map((r) => [r.connection, r.method])).toEqual([[2, 'POST']]);
    } finally {
      await flakyGateway.close();
      await new Promise((r) => flaky.close(r));
    }
  });

  it('refuses bodies over the forwarding limit with 413', async () => {
    const r = await http(g.publicUrl, 'POST', '/api/v1/memory/uploads', { headers: { 'x-api-key': t.key, 'content-type': 'application/octet-stream' }, raw: Buffer.alloc(6 * 1024 * 1024) });
    expect(r.status).toBe(413);
  });

  it('answers 502 when the upstream is down and 504 when it is too slow, in the surface\'s error shape', async () => {
    // Core's paths answer spec 2's `{detail}` (the request id stays in x-request-id); the memory API the envelope.
    const down = await http(g.publicUrl, 'GET', '/api/chat/get-user-chat-sessions', { headers: { authorization: `Bearer ${t.key}` } });
    expect(down.status).toBe(502);
    expect(down.json).toEqual({ detail: expect.any(String) });
    expect(down.headers['x-request-id']).toEqual(expect.any(String));
    const slow = await http(g.publicUrl, 'POST', '/api/v1/memory/slow', { headers: { 'x-api-key': t.key }, body: {} });
    expect(slow.status).toBe(504);
    expect(slow.json.error.code).toBe('GATEWAY_TIMEOUT');
  });

  it('answers a /memory path it forwards nowhere 404 {detail}, as the graph answers its own; other paths keep the envelope', async () => {
    const before = echo.received.length;
    for (const path of ['/memory', '/memory/', '/memory/nope', '/memory/chatx', '/memory/departmentsX', '/memory//departments', '/memory/x/../departments']) {
      for (const headers of [{}, { authorization: `Bearer ${t.key}` }] as Array<Record<string, string>>) {
        const r = await http(g.publicUrl, 'GET', path, { headers });
        expect([path, r.status, r.json]).toEqual([path, 404, { detail: 'route not found' }]);
        expect(r.headers['x-request-id']).toEqual(expect.any(String));
      }
    }
    expect(echo.received.length).toBe(before);
    // Spec 1's memory API, and paths outside `/memory`, keep the gateway's envelope.
    for (const path of ['/memoryx', '/api/v1/memoryx', '/api/v1//memory', '/nowhere']) {
      const r = await http(g.publicUrl, 'GET', path, { headers: { 'x-api-key': t.key } });
      expect([path, r.status, r.json.error?.code]).toEqual([path, 404, 'NOT_FOUND']);
    }
  });

  it('forwards over a unix socket and keeps the caller\'s x-api-key only for the MCP server', async () => {
    const r = await http(g.publicUrl, 'POST', '/mcp', { headers: { 'x-api-key': t.key }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    expect(r.status).toBe(200);
    expect(r.json.headers['x-api-key']).toBe(t.key);
    expect((await g.signer.verify(r.json.headers['x-lore-identity'])).tenant_id).toBe(t.tenantId);
    const missing = await http(g.publicUrl, 'POST', '/mcp', { body: {} });
    expect(missing.status).toBe(401);
    expect(missing.json).toEqual({ success: false, error: 'Missing x-api-key header' });
    const health = await http(g.publicUrl, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.json.headers['x-lore-identity']).toBeUndefined();
  });

  it('serves open health routes without a credential and never with an identity', async () => {
    const r = await http(g.publicUrl, 'GET', '/api/health', { headers: { 'x-lore-identity': 'forged', 'x-tenant-id': 'forged' } });
    expect(r.status).toBe(200);
    expect(r.json.headers['x-lore-identity']).toBeUndefined();
    expect(r.json.headers['x-tenant-id']).toBeUndefined();
  });

  async function rawUpgrade(path: string): Promise<{ head: string; socket: import('node:net').Socket }> {
    const u = new URL(g.publicUrl);
    const socket = connect(Number(u.port), u.hostname);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    const head = await new Promise<string>((resolve) => {
      let buf = '';
      const onData = (d: Buffer) => {
        buf += d.toString();
        const end = buf.indexOf('\r\n\r\n');
        if (end >= 0) {
          socket.off('data', onData);
          resolve(buf);
        }
      };
      socket.on('data', onData);
    });
    return { head, socket };
  }

  it('authenticates websocket upgrades from ?api-key= and splices them to the upstream', async () => {
    const before = echo.received.length;
    const { head, socket } = await rawUpgrade(`/api/agent/web-and-research?api-key=${t.key}&thread_id=th1`);
    expect(head.startsWith('HTTP/1.1 101')).toBe(true);
    const echoed = await new Promise<string>((resolve) => {
      socket.once('data', (d: Buffer) => resolve(d.toString()));
      socket.write('hello through the gateway');
    });
    expect(echoed).toBe('hello through the gateway');
    socket.destroy();
    const seen = echo.received.slice(before).find((x) => x.url.startsWith('/api/agent/web-and-research'))!;
    expect(seen.url).toBe('/api/agent/web-and-research?thread_id=th1');
    expect((await g.signer.verify(String(seen.headers['x-lore-identity']))).tenant_id).toBe(t.tenantId);

    const refused = await rawUpgrade('/api/agent/web-and-research?thread_id=th1');
    expect(refused.head.startsWith('HTTP/1.1 401')).toBe(true);
    refused.socket.destroy();
    const unknown = await rawUpgrade(`/not-a-surface?api-key=${t.key}`);
    expect(unknown.head.startsWith('HTTP/1.1 404')).toBe(true);
    unknown.socket.destroy();

    // Each handshake has its access line, as a plain request does: its answer, its route, and no key.
    const requestIdOf = (head: string) => /x-request-id: ([^\r]+)/i.exec(head)?.[1];
    const lineOf = async (requestId: string | undefined) => {
      for (let i = 0; i < 100 && !logLines.some((l) => l.msg === 'request' && l.request_id === requestId); i++) await new Promise((r) => setTimeout(r, 20));
      return logLines.find((l) => l.msg === 'request' && l.request_id === requestId);
    };
    const upgradedLine = await lineOf(String(seen.headers['x-request-id']));
    expect(upgradedLine).toMatchObject({ method: 'GET', path: '/api/agent/web-and-research', route: 'forward agents', status: 101 });
    expect(typeof upgradedLine!.duration_ms).toBe('number');
    expect(await lineOf(requestIdOf(refused.head))).toMatchObject({ path: '/api/agent/web-and-research', status: 401 });
    expect(await lineOf(requestIdOf(unknown.head))).toMatchObject({ path: '/not-a-surface', route: 'unmatched', status: 404 });
    expect(JSON.stringify(logLines)).not.toContain(t.key);
    // And its count, as a plain request's: a refused handshake reaches the same alerts.
    const counted = (await g.gateway.context.metrics.getSingleMetric('lore_http_requests_total')!.get()).values;
    const count = (route: string, status: string) => counted.find((v) => v.labels.route === route && String(v.labels.status) === status)?.value ?? 0;
    expect(count('forward agents', '101')).toBeGreaterThanOrEqual(1);
    expect(count('forward agents', '401')).toBeGreaterThanOrEqual(1);
  });

  it('ends the open streams and sockets of a key once it is revoked; another key\'s go on', async () => {
    const doomed = await makeKey(g, t.tenantId, {});
    const kept = await makeKey(g, t.tenantId, {});
    const u = new URL(g.publicUrl);
    /** An endless event stream through the gateway: resolves with how it ended once it does. */
    const stream = (key: string) => {
      let ticks = 0;
      let stop: () => void = () => undefined;
      const ended = new Promise<string>((resolve) => {
        const req = request({ host: u.hostname, port: u.port, method: 'GET', path: '/api/v1/memory/documents/endless', headers: { 'x-api-key': key } }, (res) => {
          expect(res.statusCode).toBe(200);
          res.on('data', () => void (ticks += 1));
          res.on('end', () => resolve('ended'));
          res.on('error', () => resolve('broken'));
          res.on('close', () => resolve('closed'));
        });
        req.on('error', () => resolve('broken'));
        req.end();
        stop = () => req.destroy();
      });
      return { ended, ticks: () => ticks, stop };
    };
    const a = stream(doomed.key);
    const b = stream(kept.key);
    const socket = (await rawUpgrade(`/api/agent/web-and-research?api-key=${doomed.key}&thread_id=th2`)).socket;
    const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
    expect(a.ticks()).toBeGreaterThan(0);
    expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${t.tenantId}/keys/${doomed.keyId}`)).status).toBe(204);
    const within = <T>(p: Promise<T>) => Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 5_000))]);
    expect(await within(a.ended)).not.toBe('pending');
    expect(await within(socketClosed.then(() => 'closed'))).toBe('closed');
    // The other key's stream still flows.
    const before = b.ticks();
    await new Promise((r) => setTimeout(r, 300));
    expect(b.ticks()).toBeGreaterThan(before);
    b.stop();
  });

  it('ends the open streams and sockets of a key once it expires, as a revoked key\'s', async () => {
    const expiresAt = Date.now() + 3_000;
    const brief = await makeKey(g, t.tenantId, { expires_at: new Date(expiresAt).toISOString() });
    const u = new URL(g.publicUrl);
    let ticks = 0;
    const streamEnded = new Promise<number>((resolve) => {
      const req = request({ host: u.hostname, port: u.port, method: 'GET', path: '/api/v1/memory/documents/endless', headers: { 'x-api-key': brief.key } }, (res) => {
        expect(res.statusCode).toBe(200);
        res.on('data', () => void (ticks += 1));
        res.on('close', () => resolve(Date.now()));
        res.on('error', () => resolve(Date.now()));
      });
      req.on('error', () => resolve(Date.now()));
      req.end();
    });
    const { head, socket } = await rawUpgrade(`/api/agent/web-and-research?api-key=${brief.key}&thread_id=th3`);
    expect(head.startsWith('HTTP/1.1 101')).toBe(true);
    const socketClosed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    await new Promise((r) => setTimeout(r, 300));
    expect(ticks).toBeGreaterThan(0);
    const within = <T>(p: Promise<T>) => Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 8_000))]);
    const [streamAt, socketAt] = await Promise.all([within(streamEnded), within(socketClosed)]);
    // Both closed at the key's expiry (not before it, and not left open until they end by themselves).
    for (const at of [streamAt, socketAt]) {
      expect(at).not.toBe('pending');
      expect(at as number).toBeGreaterThanOrEqual(expiresAt - 50);
      expect(at as number).toBeLessThan(expiresAt + 2_000);
    }
    expect(logLines.some((l) => l.msg === 'closed an open stream or socket of an expired credential' && l.subject === brief.keyId)).toBe(true);
    // A key without an expiry is not touched by it.
    const { socket: kept } = await rawUpgrade(`/api/agent/web-and-research?api-key=${t.key}&thread_id=th4`);
    await new Promise((r) => setTimeout(r, 500));
    expect(kept.destroyed).toBe(false);
    kept.destroy();
  });

  it('reads ?api-key= on websockets only: a plain request carrying its key in the URL is 401 and never forwarded', async () => {
    const before = echo.received.length;
    const r = await http(g.publicUrl, 'GET', `/company-search/getLists?api-key=${t.key}`);
    expect(r.status).toBe(401);
    // The refusal names every place this route reads a credential from, not only the first.
    expect(JSON.stringify(r.json)).toContain('a credential is required: Authorization: Bearer <credential>, the lore_api_key cookie or the x-api-key header');
    expect(echo.received.slice(before).some((x) => x.url.startsWith('/company-search'))).toBe(false);
    // The same key as a bearer is forwarded.
    const ok = await http(g.publicUrl, 'GET', '/company-search/getLists', { headers: { authorization: `Bearer ${t.key}` } });
    expect(ok.status).not.toBe(401);
    expect(echo.received.slice(before).some((x) => x.url.startsWith('/company-search/getLists'))).toBe(true);
  });

  it('answers 404 for a surface whose upstream is not configured, like any unknown route', async () => {
    const bare = await startGateway(database, { upstreams: {} }, { redisPrefix: `gwfwd2:${uid()}:`, migrate: false });
    try {
      const r = await http(bare.publicUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': t.key }, body: {} });
      expect(r.status).toBe(404);
      expect(r.json.error.code).toBe('NOT_FOUND');
      expect((await http(bare.publicUrl, 'GET', '/api/health')).status).toBe(404);
    } finally {
      await bare.close();
    }
  });
});
