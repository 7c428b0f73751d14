import { Readable, Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { request as httpRequest, Agent } from 'node:http';
import { connect } from 'node:net';
import Router from '@koa/router';
import pino from 'pino';
import { createHttpApp, createRouter, opsRouter, type LoreState } from './app';
import { listen, type StartedServer } from './server';
import { AppError } from '../errors/app-error';
import { createLogger } from '../log/logger';
import { createMetricsRegistry } from '../metrics/registry';
import { Lifecycle } from '../lifecycle/lifecycle';
import { startTelemetry } from '../telemetry/setup';

describe('createHttpApp', () => {
  const lines: Record<string, unknown>[] = [];
  let server: StartedServer;
  let lifecycle: Lifecycle;
  /** Settles when `/socket-breaks-later` has broken its connection (after its answer was sent). */
  let brokeLater: Promise<void> | undefined;
  let dbOk = true;

  beforeAll(async () => {
    startTelemetry({}); // propagation only (no exporter), as in a process without an OTLP endpoint
    const destination = new Writable({
      write(chunk: Buffer, _e, done) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const logger = createLogger({ level: 'info', service: 'app-test', destination });
    const metrics = createMetricsRegistry('app_test');
    lifecycle = new Lifecycle(pino({ level: 'silent' }));
    lifecycle.addCheck('db', async () => ({ ok: dbOk }));
    const app = createHttpApp({ service: 'app-test', logger, metrics, bodyLimitBytes: 64 });
    const router = new Router<LoreState>();
    router.get('/items/:id', (ctx) => {
      ctx.body = { id: ctx.params.id, request_id: ctx.state.requestId };
    });
    router.post('/echo', (ctx) => {
      ctx.body = { got: ctx.request.body };
    });
    router.patch('/echo', (ctx) => {
      ctx.body = { got: ctx.request.body };
    });
    router.delete('/echo', (ctx) => {
      ctx.body = { got: ctx.request.body ?? null };
    });
    router.get('/bound', (ctx) => {
      ctx.state.log = ctx.state.log.child({ tenant_id: 't_1' });
      ctx.state.log.info('inside');
      ctx.body = {};
    });
    router.get('/text', (ctx) => {
      ctx.body = 'plain words';
    });
    router.get('/emptied', (ctx) => {
      ctx.body = { dropped: true };
      ctx.status = 204;
    });
    router.get('/circular', (ctx) => {
      const body: Record<string, unknown> = {};
      body.self = body;
      ctx.body = body;
    });
    router.get('/socket-breaks', (ctx) => {
      // The connection fails while the handler still works on the answer.
      ctx.req.socket.destroy(Object.assign(new Error('socket broke mid-request'), { code: 'ECONNRESET' }));
      ctx.body = { late: true };
    });
    router.get('/socket-breaks-later', (ctx) => {
      const socket = ctx.req.socket;
      // After this answer is sent, while the kept-alive connection waits for its next request.
      brokeLater = new Promise((resolve) => socket.once('close', () => setImmediate(resolve)));
      ctx.res.once('finish', () => setTimeout(() => socket.destroy(new Error('idle socket broke')), 10));
      ctx.body = { sent: true };
    });
    router.put('/raw', async (ctx) => {
      // Reads its body itself, as the gateway's proxy and the upload routes do.
      let size = 0;
      for await (const chunk of ctx.req) size += (chunk as Buffer).length;
      ctx.body = { size };
    });
    router.get('/endless', (ctx) => {
      ctx.type = 'text/plain';
      ctx.body = new Readable({
        read() {
          setTimeout(() => this.push('more '), 5);
        },
      });
    });
    // The client's connection breaks under a streamed answer (what a write to a socket the client closed reports).
    router.get('/broken-pipe', (ctx) => {
      ctx.type = 'text/plain';
      let sent = false;
      ctx.body = new Readable({
        read() {
          if (sent) return;
          sent = true;
          this.push('first ');
          setTimeout(() => ctx.req.socket.destroy(Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' })), 20);
        },
      });
    });
    // An upstream's connection error while the client is still connected: a real failure.
    router.get('/upstream-reset', (ctx) => {
      ctx.type = 'text/plain';
      let sent = false;
      ctx.body = new Readable({
        read() {
          if (sent) return;
          sent = true;
          this.push('first ');
          setTimeout(() => this.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' })), 20);
        },
      });
    });
    router.get('/streamed', (ctx) => {
      ctx.type = 'text/plain';
      ctx.body = Readable.from(['one ', 'two ', 'three']);
    });
    router.get('/conflict', () => {
      throw new AppError('CONFLICT', 'already there', { headers: { 'retry-after': '3' } });
    });
    router.get('/crash', () => {
      throw new Error('secret internals');
    });
    router.get('/database-down', () => {
      throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' });
    });
    app.use(opsRouter(lifecycle, metrics).routes());
    app.use(router.routes());
    server = await listen(app, 0, '127.0.0.1');
  });
  afterAll(() => server.close(100));

  it('gives every request an id, echoing a well-formed incoming one', async () => {
    const fresh = await fetch(`${server.url}/items/7`);
    const id = fresh.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await fresh.json()).toEqual({ id: '7', request_id: id });
    const kept = await fetch(`${server.url}/items/7`, { headers: { 'x-request-id': 'client-req-0001' } });
    expect(kept.headers.get('x-request-id')).toBe('client-req-0001');
    const bad = await fetch(`${server.url}/items/7`, { headers: { 'x-request-id': 'no spaces <allowed>' } });
    expect(bad.headers.get('x-request-id')).not.toBe('no spaces <allowed>');
  });

  it('writes one access line per request with the route template, status and duration', async () => {
    lines.length = 0;
    await fetch(`${server.url}/items/42`, { headers: { 'x-request-id': 'access-log-0001' } });
    await new Promise((r) => setTimeout(r, 20));
    const line = lines.find((l) => l.request_id === 'access-log-0001');
    expect(line).toMatchObject({ msg: 'request', method: 'GET', path: '/items/42', route: '/items/:id', status: 200 });
    expect(typeof line!.duration_ms).toBe('number');
  });

  it("joins a handler's own lines and the access line through the request's child logger", async () => {
    lines.length = 0;
    await fetch(`${server.url}/bound`, { headers: { 'x-request-id': 'bound-log-0001' } });
    await new Promise((r) => setTimeout(r, 20));
    const mine = lines.filter((l) => l.request_id === 'bound-log-0001');
    expect(mine.map((l) => l.msg)).toEqual(['inside', 'request']);
    for (const l of mine) expect(l.tenant_id).toBe('t_1');
    expect(mine.filter((l) => l.msg === 'request')).toHaveLength(1);
  });

  it("continues the caller's W3C trace: the request's log lines carry its trace id", async () => {
    lines.length = 0;
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await fetch(`${server.url}/bound`, { headers: { 'x-request-id': 'traced-req-0001', traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    await new Promise((r) => setTimeout(r, 20));
    const mine = lines.filter((l) => l.request_id === 'traced-req-0001');
    expect(mine).toHaveLength(2);
    for (const l of mine) expect(l.trace_id).toBe(traceId);
    await fetch(`${server.url}/items/1`, { headers: { 'x-request-id': 'untraced-req-01' } });
    await new Promise((r) => setTimeout(r, 20));
    expect(lines.find((l) => l.request_id === 'untraced-req-01')?.trace_id).toBeUndefined();
  });

  it('maps AppError to its status, headers and the error body', async () => {
    const res = await fetch(`${server.url}/conflict`, { headers: { 'x-request-id': 'conflict-00001' } });
    expect(res.status).toBe(409);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(await res.json()).toEqual({ error: { code: 'CONFLICT', message: 'already there', request_id: 'conflict-00001' } });
  });

  it('hides unexpected errors behind a 500 INTERNAL body', async () => {
    const res = await fetch(`${server.url}/crash`);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('INTERNAL');
    expect(JSON.stringify(body)).not.toContain('secret internals');
  });

  it('answers 503 UNAVAILABLE with Retry-After when the database cannot be reached, without its address', async () => {
    const res = await fetch(`${server.url}/database-down`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: 'UNAVAILABLE', message: 'the database is unavailable; retry shortly' });
    expect(JSON.stringify(body)).not.toContain('10.0.0.5');
  });

  it('answers unknown routes with the closed 404 body', async () => {
    const res = await fetch(`${server.url}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
  });

  it('parses JSON bodies, answers 400 to malformed JSON and 413 past the body limit', async () => {
    const ok = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(await ok.json()).toEqual({ got: { a: 1 } });
    const bad = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('BAD_REQUEST');
    const big = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 'x'.repeat(200) }) });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses a coded body (415) before reading it, instead of inflating it', async () => {
    const coded = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync('{"a":1}') });
    expect(coded.status).toBe(415);
    expect(((await coded.json()) as { error: { code: string } }).error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const plain = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, body: '{"a":2}' });
    expect(await plain.json()).toEqual({ got: { a: 2 } });
  });

  it('parses PATCH bodies too, and leaves bodies of other methods to the handler', async () => {
    const json = { 'content-type': 'application/json' };
    const patched = await fetch(`${server.url}/echo`, { method: 'PATCH', headers: json, body: '{"b":2}' });
    expect(await patched.json()).toEqual({ got: { b: 2 } });
    const tooBig = await fetch(`${server.url}/echo`, { method: 'PATCH', headers: json, body: JSON.stringify({ a: 'x'.repeat(200) }) });
    expect(tooBig.status).toBe(413);
    const deleted = await fetch(`${server.url}/echo`, { method: 'DELETE', headers: json, body: '{"c":3' });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ got: null });
  });

  it('counts each request once in the RED metrics, by method, route template and status', async () => {
    const count = async (series: string) => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`lore_http_requests_total{${series},`));
      return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
    };
    const before = await count('method="GET",route="/items/:id",status="200"');
    const notFound = await count('method="GET",route="unmatched",status="404"');
    await fetch(`${server.url}/items/1`);
    await fetch(`${server.url}/items/2`);
    await fetch(`${server.url}/nope/at/all`);
    expect(await count('method="GET",route="/items/:id",status="200"')).toBe(before + 2);
    expect(await count('method="GET",route="unmatched",status="404"')).toBe(notFound + 1);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/lore_http_request_duration_seconds_bucket\{[^}]*route="\/items\/:id"[^}]*le="\+Inf"[^}]*\} \d+/);
  });

  it('answers JSON bodies with their type and exact length, and leaves other bodies, HEAD and empty statuses to Koa', async () => {
    const json = await fetch(`${server.url}/items/caf%C3%A9`, { headers: { 'x-request-id': 'json-body-0001' } });
    const text = await json.text();
    expect(JSON.parse(text)).toEqual({ id: 'café', request_id: 'json-body-0001' });
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(json.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    const head = await fetch(`${server.url}/items/caf%C3%A9`, { method: 'HEAD', headers: { 'x-request-id': 'json-body-0001' } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    expect(await head.text()).toBe('');
    const plain = await fetch(`${server.url}/text`);
    expect(plain.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await plain.text()).toBe('plain words');
    const emptied = await fetch(`${server.url}/emptied`);
    expect(emptied.status).toBe(204);
    expect(await emptied.text()).toBe('');
    lines.length = 0;
    const circular = await fetch(`${server.url}/circular`, { headers: { 'x-request-id': 'circular-00001' } });
    expect(circular.status).toBe(500);
    await new Promise((r) => setTimeout(r, 20));
    expect(lines.find((l) => l.msg === 'response failed')).toMatchObject({ level: 'error', request_id: 'circular-00001' });
  });

  it('writes no error line when a client leaves a streamed body before its end, only an info line', async () => {
    lines.length = 0;
    const ac = new AbortController();
    const res = await fetch(`${server.url}/endless`, { headers: { 'x-request-id': 'client-left-001' }, signal: ac.signal });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await new Promise((r) => setTimeout(r, 100));
    expect(lines.filter((l) => l.msg === 'response failed')).toEqual([]);
    expect(lines.find((l) => l.msg === 'the client left before the response ended')).toMatchObject({ level: 'info', request_id: 'client-left-001' });
  });

  it('logs a broken client connection under a streamed answer (EPIPE) at info, and an upstream reset at error', async () => {
    lines.length = 0;
    const res = await fetch(`${server.url}/broken-pipe`, { headers: { 'x-request-id': 'broken-pipe-01' } });
    await res.text().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    expect(lines.filter((l) => l.msg === 'response failed')).toEqual([]);
    expect(lines.find((l) => l.msg === 'the client left before the response ended')).toMatchObject({ level: 'info', request_id: 'broken-pipe-01', code: 'EPIPE' });
    lines.length = 0;
    const ac = new AbortController();
    const upstream = await fetch(`${server.url}/upstream-reset`, { headers: { 'x-request-id': 'upstream-rst-1' }, signal: ac.signal });
    await upstream.body!.getReader().read();
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    expect(lines.find((l) => l.msg === 'response failed')).toMatchObject({ level: 'error', request_id: 'upstream-rst-1' });
  });

  it('counts a client that left in the middle of its request body as 499, with an info line and no error line', async () => {
    lines.length = 0;
    await new Promise<void>((resolve) => {
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1', () => {
        socket.write('PUT /raw HTTP/1.1\r\nhost: x\r\nx-request-id: left-mid-body-1\r\ncontent-type: application/octet-stream\r\ncontent-length: 100000\r\n\r\nfirst bytes');
        setTimeout(() => socket.destroy(), 100);
      });
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(lines.filter((l) => l.level === 'error' || l.msg === 'response failed')).toEqual([]);
    expect(lines.find((l) => l.msg === 'request' && l.request_id === 'left-mid-body-1')).toMatchObject({ route: '/raw', status: 499 });
  });

  it("reports a socket error during a request as Koa does (an error line with the request's id), and none between requests", async () => {
    lines.length = 0;
    const failed = await new Promise<Error | number>((resolve) => {
      const req = httpRequest(`${server.url}/socket-breaks`, { headers: { 'x-request-id': 'socket-broke-01' } }, (res) => resolve(res.statusCode ?? 0));
      req.on('error', resolve);
      req.end();
    });
    expect(typeof failed).toBe('object'); // an error, not a status: the client saw the connection go
    await new Promise((r) => setTimeout(r, 50));
    expect(lines.find((l) => l.msg === 'response failed')).toMatchObject({ level: 'error', request_id: 'socket-broke-01', err: { message: 'socket broke mid-request' } });
    // The access line still closes the request.
    expect(lines.find((l) => l.msg === 'request' && l.request_id === 'socket-broke-01')).toMatchObject({ route: '/socket-breaks' });

    lines.length = 0;
    const agent = new Agent({ keepAlive: true });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${server.url}/socket-breaks-later`, { agent, headers: { 'x-request-id': 'idle-broke-001' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(200);
      // Wait for the server side of the connection to have broken (and its error to have been handled).
      await brokeLater;
      expect(lines.filter((l) => l.msg === 'request' && l.request_id === 'idle-broke-001')).toHaveLength(1);
      expect(lines.filter((l) => l.msg === 'response failed')).toEqual([]);
    } finally {
      agent.destroy();
    }
  });

  it('leaves streamed bodies to Koa, which sends them whole', async () => {
    const res = await fetch(`${server.url}/streamed`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('one two three');
  });

  it('serves livez always, readyz from the checks and the lifecycle, and metrics with per-route series', async () => {
    expect((await fetch(`${server.url}/livez`)).status).toBe(200);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503); // not started yet
    lifecycle.markStarted();
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { db: { ok: true } } });
    dbOk = false;
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    dbOk = true;
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/route="\/items\/:id"/);
    expect(metrics).toMatch(/status="409"/);
  });
});

describe('createRouter', () => {
  it('matches a path only as written: another case or a trailing slash is 404', async () => {
    const app = createHttpApp({ service: 'router-test', logger: createLogger({ level: 'silent', service: 'router-test' }), metrics: createMetricsRegistry('router_test'), bodyLimitBytes: 64 });
    const router = createRouter<LoreState>({ prefix: '/api/v1' });
    router.get('/company-search/getLists', (ctx) => {
      ctx.body = { ok: true };
    });
    router.get('/items/:id', (ctx) => {
      ctx.body = { id: ctx.params.id };
    });
    app.use(router.routes());
    const server = await listen(app, 0, '127.0.0.1');
    try {
      const status = async (path: string) => (await fetch(`${server.url}${path}`)).status;
      expect(await status('/api/v1/company-search/getLists')).toBe(200);
      expect(await fetch(`${server.url}/api/v1/items/AbC`).then((r) => r.json())).toEqual({ id: 'AbC' });
      for (const path of ['/api/v1/company-search/getlists', '/API/V1/company-search/getLists', '/api/v1/company-search/getLists/', '/api/v1/items/1/', '/api/v1/Items/1']) {
        expect({ path, status: await status(path) }).toEqual({ path, status: 404 });
      }
    } finally {
      await server.close(100);
    }
  });
});
