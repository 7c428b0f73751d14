import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { gzipSync } from 'node:zlib';
import { z } from 'zod';
import { CLIENT_ADDRESS_HEADER, IDENTITY_HEADER, IdentitySigner, createLogger, listen, type StartedServer } from '@lore/runtime';
import { createMcpService, type McpLimits, type McpService } from './mcp-service';
import { mcpMessagesOf, resumedAnswer, sizedAnswerTools } from './test-tools';
import { defineTool, type AnyTool } from './tools/define';

const KiB = 1024;
const MiB = 1024 * KiB;
const PROTOCOL = '2025-11-25';

const sized = sizedAnswerTools();
const tools = sized.tools;
const release = sized.release;

interface Harness {
  service: McpService;
  url: string;
  close(): Promise<void>;
}

/** The tool server on its own listener, reached as the gateway reaches it (the key kept, a signed identity). */
async function start(limits: Partial<McpLimits>, api = 'http://127.0.0.1:9', served: AnyTool[] = tools): Promise<Harness & { signer: IdentitySigner }> {
  const signer = new IdentitySigner(randomBytes(32).toString('hex'));
  const service = createMcpService({ targets: { agentCore: api, memory: api }, signer, logger: createLogger({ level: 'silent', service: 'mcp-test' }), tools: served, limits });
  const server = await listen(service.app, 0, '127.0.0.1');
  return {
    service,
    signer,
    url: `${server.url}/mcp`,
    close: async () => {
      await service.close();
      // Streams the test let go of may still hold their sockets: no need to wait for them.
      await server.close(100);
    },
  };
}

type Caller = { key: string; tenant: string };

async function headersOf(h: { signer: IdentitySigner }, who: Caller, session?: string): Promise<Record<string, string>> {
  const identity = await h.signer.sign({ tenant_id: who.tenant, workspace_id: 'w', memory_id: 'm', credential: 'ck_live', subject: who.key, role: 'tenant_admin' });
  return {
    'x-api-key': who.key,
    [IDENTITY_HEADER]: identity,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } : {}),
  };
}

const messagesOf = mcpMessagesOf;

async function post(h: Harness & { signer: IdentitySigner }, who: Caller, body: unknown, session?: string, extra: Record<string, string> = {}) {
  const res = await fetch(h.url, { method: 'POST', headers: { ...(await headersOf(h, who, session)), ...extra }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, sessionId: res.headers.get('mcp-session-id') };
}

async function open(h: Harness & { signer: IdentitySigner }, who: Caller) {
  const init = await post(h, who, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'unit', version: '1' } } });
  if (init.status !== 200) return { status: init.status, json: messagesOf(init.text)[0]!.message, session: undefined };
  expect((await post(h, who, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.sessionId!)).status).toBe(202);
  return { status: 200, json: undefined, session: init.sessionId! };
}

const callTool = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

describe('MCP tool server: limits of /mcp', () => {
  let h: Harness & { signer: IdentitySigner };
  afterEach(async () => {
    release();
    await h?.close();
  });

  it('keeps the stream events of many large answers under the event store\'s byte bounds, each answer once, and still resumes the newest', async () => {
    h = await start({ eventStoreBytes: 4 * MiB, eventStoreSessionBytes: 2 * MiB });
    const a = { key: 'ck_a', tenant: 'tenant-a' };
    const sessions = [(await open(h, a)).session!, (await open(h, a)).session!, (await open(h, a)).session!];
    let last: { session: string; primer: string; answer: { id?: string; message: any } } | undefined;
    let firstPrimer: string | undefined;
    for (let i = 0; i < 45; i++) {
      const session = sessions[i % sessions.length]!;
      const res = await post(h, a, callTool(100 + i, 'big', { kib: 256 }), session);
      expect(res.status).toBe(200);
      const [primer, answer] = messagesOf(res.text);
      expect(answer!.message.result.structuredContent.success).toBe(true);
      firstPrimer ??= primer!.id;
      last = { session, primer: primer!.id!, answer: answer! };
      // 256 KiB answers, sent with their envelope twice (over 512 KiB each): the store never passes its bound.
      expect(h.service.storedEvents().bytes).toBeLessThanOrEqual(4 * MiB);
    }
    // Each answer is kept once: a session's 2 MiB holds 7 answers of 256 KiB (3 if counted twice), three sessions
    // together are held to 4 MiB.
    expect(h.service.storedEvents().count).toBeGreaterThanOrEqual(2 * 15);
    const resume = async (session: string, lastEventId: string) => resumedAnswer(h.url, await headersOf(h, a, session), lastEventId);
    // The newest answer replays as it was sent (its text rebuilt from structuredContent).
    const resumed = await resume(last!.session, last!.primer);
    expect(resumed.status).toBe(200);
    expect(messagesOf(resumed.text)).toEqual([last!.answer]);
    // The oldest was dropped: the transport answers a reconnection naming it as it answers any unknown id.
    expect(await resume(sessions[0]!, firstPrimer!)).toMatchObject({ status: 400, text: expect.stringContaining('Invalid event ID format') });
  });

  it('gives each tenant its own share of sessions: one tenant at its cap never refuses another\'s, and the replica\'s cap stays the last guard', async () => {
    h = await start({ maxSessionsPerKey: 2, maxSessionsPerTenant: 3, maxSessions: 5 });
    const [a1, a2, a3] = ['ck_a1', 'ck_a2', 'ck_a3'].map((key) => ({ key, tenant: 'tenant-a' }));
    const [b1, b2] = ['ck_b1', 'ck_b2'].map((key) => ({ key, tenant: 'tenant-b' }));
    const c = { key: 'ck_c', tenant: 'tenant-c' };
    const mine = [await open(h, a1!), await open(h, a1!), await open(h, a2!)];
    expect(mine.map((s) => s.status)).toEqual([200, 200, 200]);
    // Another key of the same tenant: refused by the tenant's cap, with the JSON-RPC error and Retry-After.
    const refused = await post(h, a3!, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'unit', version: '1' } } });
    expect(refused.status).toBe(429);
    expect(messagesOf(refused.text)[0]!.message).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringMatching(/^this tenant has 3 open sessions on this replica/) }, id: null });
    // Another tenant is not locked out.
    expect((await open(h, b1!)).status).toBe(200);
    expect((await open(h, b2!)).status).toBe(200);
    // The replica's cap (5) is the last guard, for a third tenant too.
    expect((await open(h, c)).json).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'too many open sessions' }, id: null });
    // A session tenant a closes makes room for tenant a.
    await fetch(h.url, { method: 'DELETE', headers: await headersOf(h, a1!, mine[0]!.session) });
    expect((await open(h, a3!)).status).toBe(200);
    expect(h.service.sessionCount()).toBe(5);
  });

  it('holds the caps under concurrent initializes', async () => {
    h = await start({ maxSessionsPerKey: 16, maxSessionsPerTenant: 4, maxSessions: 100 });
    const keys = Array.from({ length: 12 }, (_, i) => ({ key: `ck_${i}`, tenant: 'tenant-a' }));
    const opened = await Promise.all(keys.map((k) => open(h, k)));
    expect(opened.filter((o) => o.status === 200)).toHaveLength(4);
    expect(h.service.sessionCount()).toBe(4);
  });

  it('refuses a body with a content coding with 415, as every other Lore body reader does', async () => {
    h = await start({});
    const a = { key: 'ck_a', tenant: 'tenant-a' };
    const body = gzipSync(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'unit', version: '1' } } }));
    const res = await fetch(h.url, { method: 'POST', headers: { ...(await headersOf(h, a)), 'content-encoding': 'gzip' }, body });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'request bodies are not decoded: send the body without Content-Encoding (got gzip)' }, id: null });
    expect(h.service.sessionCount()).toBe(0);
  });

  it('refuses a request reusing the id of one still in flight in its session, so every answer stream ends', async () => {
    h = await start({});
    const a = { key: 'ck_a', tenant: 'tenant-a' };
    const { session } = await open(h, a);
    const first = fetch(h.url, { method: 'POST', headers: await headersOf(h, a, session), body: JSON.stringify(callTool(7, 'gate')) });
    const firstRes = await first;
    expect(firstRes.status).toBe(200);
    // The same id while the first is unanswered: refused at once, with the id.
    const again = await post(h, a, callTool(7, 'big', { kib: 1 }), session);
    expect(again.status).toBe(400);
    expect(messagesOf(again.text)[0]!.message).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.stringMatching(/^Invalid Request: id 7 belongs to a request of this session that is not answered yet/) }, id: 7 });
    // Another session's id 7 is its own.
    const other = await open(h, a);
    expect((await post(h, a, callTool(7, 'big', { kib: 1 }), other.session)).status).toBe(200);
    // The first stream ends with its own answer.
    release();
    const answers = messagesOf(await firstRes.text()).map((m) => m.message);
    expect(answers).toEqual([null, { jsonrpc: '2.0', id: 7, result: expect.objectContaining({ structuredContent: { success: true, data: 'released' } }) }]);
    // Answered, the id is free again; so is one the SDK refused without running it (no Accept of a stream: 406).
    const reused = await post(h, a, callTool(7, 'big', { kib: 1 }), session);
    expect(reused.status).toBe(200);
    expect(messagesOf(reused.text).at(-1)!.message).toMatchObject({ id: 7, result: { structuredContent: { success: true } } });
    expect((await post(h, a, callTool(8, 'big', { kib: 1 }), session, { accept: 'application/json' })).status).toBe(406);
    expect((await post(h, a, callTool(8, 'big', { kib: 1 }), session)).status).toBe(200);
    // A cancelled request is never answered (MCP): its id is free once the cancellation arrives.
    const ac = new AbortController();
    const cancelled = await fetch(h.url, { method: 'POST', headers: await headersOf(h, a, session), body: JSON.stringify(callTool(9, 'gate')), signal: ac.signal });
    expect(cancelled.status).toBe(200);
    expect((await post(h, a, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } }, session)).status).toBe(202);
    ac.abort();
    expect((await post(h, a, callTool(9, 'big', { kib: 1 }), session)).status).toBe(200);
  });
});

/** An API that records what reaches it: `/hold` is never answered (until its request is aborted), anything else 200. */
async function startApi(): Promise<{ url: string; seen: IncomingMessage[]; aborted: Promise<void>; holding: Promise<void>; close(): Promise<void> }> {
  const seen: IncomingMessage[] = [];
  let onHold: () => void = () => undefined;
  let onAbort: () => void = () => undefined;
  const holding = new Promise<void>((resolve) => (onHold = resolve));
  const aborted = new Promise<void>((resolve) => (onAbort = resolve));
  const server: StartedServer = await listen((req: IncomingMessage, res: import('node:http').ServerResponse) => {
    seen.push(req);
    if (req.url?.startsWith('/hold')) {
      onHold();
      res.once('close', () => onAbort());
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  }, 0, '127.0.0.1');
  return { url: server.url, seen, aborted, holding, close: () => server.close(100) };
}

/** Tools that call the API back: `api_get` a path of the caller's choosing. */
const apiTools = [
  defineTool({
    name: 'api_get',
    description: 'GET a path of the API.',
    input: z.object({ path: z.string().min(1) }),
    access: 'read',
    module: 'memory',
    call: ({ path }, upstream) => upstream.get('agentCore', path),
  }),
];

/** `p`, or a failure naming `what` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe('MCP tool server: the call back to the API', () => {
  let h: Harness & { signer: IdentitySigner };
  let api: Awaited<ReturnType<typeof startApi>>;
  afterEach(async () => {
    await h?.close();
    await api?.close();
  });

  it('carries the client\'s address as the gateway forwarded it, signed and bound to the key, so the gateway can check the key\'s IP allowlist', async () => {
    api = await startApi();
    h = await start({}, api.url, apiTools);
    const a = { key: 'ck_a', tenant: 'tenant-a' };
    const { session } = await open(h, a);
    const res = await post(h, a, callTool(2, 'api_get', { path: '/ping' }), session, { 'x-forwarded-for': '203.0.113.9' });
    expect(messagesOf(res.text).at(-1)!.message).toMatchObject({ id: 2, result: { structuredContent: { success: true, data: { ok: true } } } });
    const token = api.seen.at(-1)!.headers[CLIENT_ADDRESS_HEADER] as string;
    const keyHash = createHash('sha256').update(a.key).digest('hex');
    expect(await h.signer.verifyClientAddress(token, keyHash)).toBe('203.0.113.9');
    // Bound to the key: it speaks for no other; and only this deployment's secret makes one.
    expect(await h.signer.verifyClientAddress(token, createHash('sha256').update('ck_other').digest('hex'))).toBeNull();
    expect(await new IdentitySigner(randomBytes(32).toString('hex')).verifyClientAddress(token, keyHash)).toBeNull();
    // Not an identity either.
    await expect(h.signer.verify(token)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    // A request that names no client address (none forwarded) carries none.
    await post(h, a, callTool(3, 'api_get', { path: '/ping' }), session);
    expect(api.seen.at(-1)!.headers[CLIENT_ADDRESS_HEADER]).toBeUndefined();
  });

  it('aborts the request to the API when the client cancels the tool call (it ran on until the API answered)', async () => {
    api = await startApi();
    h = await start({ upstreamTimeoutMs: 60_000 }, api.url, apiTools);
    const a = { key: 'ck_a', tenant: 'tenant-a' };
    const { session } = await open(h, a);
    const ac = new AbortController();
    const call = await fetch(h.url, { method: 'POST', headers: await headersOf(h, a, session), body: JSON.stringify(callTool(5, 'api_get', { path: '/hold' })), signal: ac.signal });
    expect(call.status).toBe(200);
    await within(api.holding, 5_000, 'the call back');
    expect((await post(h, a, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'no longer needed' } }, session)).status).toBe(202);
    await within(api.aborted, 5_000, 'the call back aborted');
    ac.abort();
  });
});

describe('MCP tool server: JSON-RPC at the edges', () => {
  let h: Harness & { signer: IdentitySigner };
  afterEach(async () => {
    release();
    await h?.close();
  });
  const a = { key: 'ck_a', tenant: 'tenant-a' };
  /** A POST with the session id but without `MCP-Protocol-Version`, as a client may send it. */
  const bare = async (body: unknown, session: string) => {
    const headers = await headersOf(h, a, session);
    delete headers['mcp-protocol-version'];
    const res = await fetch(h.url, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    // A batch refused whole is answered as one JSON array.
    const messages = text.startsWith('[') ? (JSON.parse(text) as unknown[]) : text ? messagesOf(text).map((m) => m.message).filter((m) => m !== null) : [];
    return { status: res.status, messages };
  };
  const openAt = async (version: string) => {
    const init = await post(h, a, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'unit', version: '1' } } });
    expect(init.status).toBe(200);
    expect((await bare({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.sessionId!)).status).toBe(202);
    return init.sessionId!;
  };

  it('keeps id 0 reserved after its cancellation, which the SDK ignores, until its answer is sent', async () => {
    h = await start({});
    const { session } = await open(h, a);
    const first = await fetch(h.url, { method: 'POST', headers: await headersOf(h, a, session), body: JSON.stringify(callTool(0, 'gate')) });
    expect(first.status).toBe(200);
    expect((await post(h, a, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 0 } }, session)).status).toBe(202);
    // The SDK runs id 0 on: a second request with it is refused, as for any id in flight.
    const again = await post(h, a, callTool(0, 'big', { kib: 1 }), session);
    expect(again.status).toBe(400);
    expect(messagesOf(again.text)[0]!.message).toMatchObject({ id: 0, error: { code: -32600 } });
    release();
    expect(messagesOf(await first.text()).at(-1)!.message).toMatchObject({ id: 0, result: { structuredContent: { success: true, data: 'released' } } });
    expect((await post(h, a, callTool(0, 'big', { kib: 1 }), session)).status).toBe(200);
  });

  it('refuses a fractional id as an Invalid Request (-32600), not a parse error', async () => {
    h = await start({});
    const { session } = await open(h, a);
    const res = await post(h, a, { jsonrpc: '2.0', id: 1.5, method: 'ping' }, session);
    expect(res.status).toBe(400);
    expect(messagesOf(res.text)[0]!.message).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: "id" must be a string or an integer' }, id: null });
  });

  it('refuses an initialize sent as a notification, and opens no session for it', async () => {
    h = await start({});
    const res = await post(h, a, { jsonrpc: '2.0', method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'unit', version: '1' } } });
    expect(res.status).toBe(400);
    expect(messagesOf(res.text)[0]!.message).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: initialize is a request: it needs an "id"' }, id: null });
    expect(h.service.sessionCount()).toBe(0);
  });

  it('decides batches by the revision the session negotiated when a request leaves out MCP-Protocol-Version', async () => {
    h = await start({});
    const batch = [{ jsonrpc: '2.0', id: 101, method: 'ping' }, { jsonrpc: '2.0', id: 102, method: 'tools/list' }];
    const current = await openAt(PROTOCOL);
    expect(await bare(batch, current)).toMatchObject({ status: 400, messages: [{ error: { code: -32600, message: expect.stringMatching(/MCP 2025-11-25 has no JSON-RPC batches/) } }] });
    // A session of 2025-03-26, which has batches, runs them.
    const older = await openAt('2025-03-26');
    const ran = await bare(batch, older);
    expect(ran.status).toBe(200);
    expect(ran.messages.map((m) => (m as { id: number }).id).sort()).toEqual([101, 102]);
  });

  it('answers every request of a batch holding a bad message, and runs none of it', async () => {
    h = await start({});
    const older = await openAt('2025-03-26');
    const res = await bare([{ jsonrpc: '2.0', id: 24, method: 'tools/call', params: { name: 'big', arguments: { kib: 1 } } }, { jsonrpc: '2.0', id: 25, method: 'tools/call', params: {} }, { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } }], older);
    expect(res).toEqual({
      status: 200,
      messages: [
        { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: not run: message 2 of this batch is invalid, so none of it ran; send the batch again without it' }, id: 24 },
        { jsonrpc: '2.0', error: { code: -32602, message: 'Invalid params: tools/call needs "params.name", the tool\'s name' }, id: 25 },
      ],
    });
    // A message that is none makes the batch a bad request; its answer has no id to carry.
    const worse = await bare([{ jsonrpc: '2.0', id: 26, method: 'ping' }, 42], older);
    expect(worse).toEqual({
      status: 400,
      messages: [
        { jsonrpc: '2.0', error: { code: -32600, message: expect.stringMatching(/^Invalid Request: not run: message 2 /) }, id: 26 },
        { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: a message is a JSON object' }, id: null },
      ],
    });
    // Neither id is in flight: both run once sent alone.
    expect((await bare({ jsonrpc: '2.0', id: 24, method: 'ping' }, older)).status).toBe(200);
  });
});
