import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { IDENTITY_HEADER, IdentitySigner, createLogger } from '@lore/runtime';
import WebSocket from 'ws';
import { clientFrame, clientMessage, sessionSockets, socketTarget } from './socket';

describe('socketTarget', () => {
  it('knows the three session socket paths and their thread', () => {
    expect(socketTarget('/api/service-deep-search/ws/abc?cursor=3')).toMatchObject({ kind: 'deep_search', threadId: 'abc', path: '/api/service-deep-search/ws/abc' });
    expect(socketTarget('/api/agent/web-and-research?thread_id=t1')).toMatchObject({ kind: 'web_research', threadId: 't1' });
    expect(socketTarget('/api/agent/agentic-crawler?thread_id=t2&cursor=9')?.query.get('cursor')).toBe('9');
    expect(socketTarget('/api/agent/agentic-crawler')).toMatchObject({ kind: 'agentic_crawler', threadId: null });
  });

  it('answers null for every other path', () => {
    for (const p of ['/api/agent', '/api/agent/other', '/api/service-deep-search/ws/a/b', '/agentic-crawler/start', '/']) expect(socketTarget(p)).toBeNull();
  });
});

describe('clientMessage', () => {
  const ids = { thread_id: 't', list_id: 'l' };
  it('reads a stop and a clarifying answer, exactly as the AsyncAPI document has them', () => {
    expect(clientMessage({ type: 'stop' })).toEqual({ kind: 'stop' });
    expect(clientMessage({ prompt: 'alpha', ...ids })).toEqual({ kind: 'answer', answer: { prompt: 'alpha', ...ids } });
  });

  it('says what is wrong with a message that is almost one of them', () => {
    const problem = (body: unknown) => (clientMessage(body) as { problem: string }).problem;
    expect(problem({ type: 'stop', reason: 'x' })).toMatch(/^invalid stop message: .*reason/);
    // A type other than stop is a message Lore does not know, not a broken stop.
    expect(problem({ type: 'pause' })).toMatch(/^unknown message: type "pause" is not one Lore reads/);
    expect(problem({ type: 'ping' })).toMatch(/^unknown message: /);
    expect(problem({ prompt: 'alpha', ...ids, extra: 1 })).toMatch(/^invalid clarifying answer: .*extra/);
    expect(problem({ prompt: '', ...ids })).toMatch(/^invalid clarifying answer: prompt: /);
    expect(problem({ prompt: 'x'.repeat(4001), ...ids })).toMatch(/^invalid clarifying answer: prompt: /);
    expect(problem({ prompt: 'alpha', thread_id: 't' })).toMatch(/^invalid clarifying answer: list_id: /);
    // A stop with an answer's fields is no stop (before, any object with type "stop" stopped the session).
    expect(clientMessage({ type: 'stop', prompt: 'alpha', ...ids }).kind).toBe('invalid');
    for (const other of [{ hello: 1 }, null, [], 'stop', 42, undefined]) expect(problem(other)).toMatch(/^unknown message/);
  });

  it('says an answer of only white space is empty', () => {
    expect(clientMessage({ prompt: ' \n\t ', ...ids })).toEqual({ kind: 'invalid', problem: 'invalid clarifying answer: prompt: the answer is empty (only white space)' });
    expect(clientMessage({ prompt: ' alpha ', ...ids })).toEqual({ kind: 'answer', answer: { prompt: ' alpha ', ...ids } });
  });

  it('quotes no more than a short prefix of what the client sent', () => {
    const key = 'k'.repeat(15_000);
    const problems = [{ type: 'stop', [key]: 1 }, { prompt: 'alpha', ...ids, [key]: 1 }, { type: key }, { type: { [key]: key } }].map((b) => (clientMessage(b) as { problem: string }).problem);
    for (const p of problems) expect(p.length).toBeLessThan(200);
    expect(problems[0]).toBe(`invalid stop message: unknown field "${'k'.repeat(40)}…"`);
    expect(problems[2]).toMatch(new RegExp(`^unknown message: type "${'k'.repeat(40)}…" is not one Lore reads`));
  });
});

describe('clientFrame', () => {
  it('refuses a binary frame as one, whatever it holds, and reads a text frame as JSON', () => {
    expect(clientFrame(Buffer.from('{"type":"stop"}'), true)).toEqual({ kind: 'invalid', problem: expect.stringMatching(/^binary frames are not accepted: /) });
    expect(clientFrame(Buffer.from('{"type":"stop"}'), false)).toEqual({ kind: 'stop' });
    expect(clientFrame([Buffer.from('{"type":'), Buffer.from('"stop"}')], false)).toEqual({ kind: 'stop' });
    expect(clientFrame(Buffer.from('{not json'), false)).toEqual({ kind: 'invalid', problem: expect.stringMatching(/^unknown message \(not a JSON object\)/) });
  });
});

describe('session socket access lines', () => {
  const THREAD = '0b7a3c1e-5f2d-4e8a-9c6b-1d2e3f4a5b6c';
  const signer = new IdentitySigner('a-test-secret-of-enough-length-for-hs256');
  const lines: Array<Record<string, unknown>> = [];
  let server: Server;
  let url: string;
  let close: () => void;

  beforeAll(async () => {
    const logger = createLogger({
      level: 'info',
      service: 'agents-test',
      destination: new Writable({ write: (c: Buffer, _e, done) => (lines.push(...c.toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)), done()) }),
    });
    const sockets = sessionSockets({
      signer,
      logger,
      find: async (_p, _kind, threadId) => ({ thread_id: threadId, list_id: 'l-1', last_cursor: 0 }),
      connect: async () => [],
      follow: async (_tenant, _thread, _list, _cursor, _send, signal) => {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      },
      answer: async () => false,
      stop: async () => 'stopping',
    });
    close = sockets.close;
    server = createServer((_req, res) => res.end());
    server.on('upgrade', sockets.handleUpgrade);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    close();
    await new Promise((resolve) => server.close(resolve));
  });

  const identity = (access?: 'read') =>
    signer.sign({ tenant_id: 't-1', workspace_id: 'w-1', memory_id: 'm-1', credential: 'ck_live', subject: 'k-1', role: 'admin', ...(access ? { scopes: { access } } : {}) });
  /** Connects, and answers the handshake's status (101 once open). */
  const handshake = (path: string, headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${url}${path}`, { headers });
      ws.on('open', () => (ws.close(), resolve(101)));
      ws.on('unexpected-response', (_req, res) => (res.resume(), resolve(res.statusCode ?? 0)));
      ws.on('error', reject);
    });
  const lineOf = async (requestId: string) => {
    for (let i = 0; i < 100 && !lines.some((l) => l.request_id === requestId); i++) await new Promise((r) => setTimeout(r, 10));
    return lines.find((l) => l.request_id === requestId);
  };

  it('writes one access line per handshake, opened or refused, with its route and without the query', async () => {
    expect(await handshake(`/api/agent/agentic-crawler?thread_id=${THREAD}&cursor=0`, { [IDENTITY_HEADER]: await identity(), 'x-request-id': 'r-open' })).toBe(101);
    expect(await lineOf('r-open')).toMatchObject({ msg: 'request', method: 'GET', path: '/api/agent/agentic-crawler', route: '/api/agent/agentic-crawler', status: 101 });
    expect(typeof (await lineOf('r-open'))!.duration_ms).toBe('number');

    expect(await handshake(`/api/service-deep-search/ws/${THREAD}`, { [IDENTITY_HEADER]: await identity('read'), 'x-request-id': 'r-read' })).toBe(403);
    expect(await lineOf('r-read')).toMatchObject({ path: `/api/service-deep-search/ws/${THREAD}`, route: '/api/service-deep-search/ws/:thread_id', status: 403 });

    expect(await handshake('/api/agent/elsewhere?thread_id=x', { 'x-request-id': 'r-none' })).toBe(404);
    expect(await lineOf('r-none')).toMatchObject({ path: '/api/agent/elsewhere', route: 'unmatched', status: 404 });
    expect(JSON.stringify(lines)).not.toContain('cursor=');
  });
});
