import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { IDENTITY_HEADER, IdentitySigner, createLogger, listen } from '@lore/runtime';
import { createMcpService, type McpLimits, type McpService } from './mcp-service';
import { mcpMessagesOf, resumedAnswer, sizedAnswerTools } from './test-tools';

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
async function start(limits: Partial<McpLimits>): Promise<Harness & { signer: IdentitySigner }> {
  const signer = new IdentitySigner(randomBytes(32).toString('hex'));
  const service = createMcpService({ targets: { agentCore: 'http://127.0.0.1:9', memory: 'http://127.0.0.1:9' }, signer, logger: createLogger({ level: 'silent', service: 'mcp-test' }), tools, limits });
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
