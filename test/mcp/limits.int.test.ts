import { gzipSync } from 'node:zlib';
import { IdentitySigner, createLogger, listen, type StartedServer } from '@lore/runtime';
// The service from its sources, as the tools the test hands it are (`test-tools` is no part of the package's API).
import { createMcpService, type McpService } from '../../services/mcp/src/index';
import { IDENTITY_SECRET, freshDatabase, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import type { TestDatabase } from '../support/infra';
import { mcpMessagesOf, resumedAnswer, sizedAnswerTools } from '../../services/mcp/src/test-tools';

jest.setTimeout(120_000);

const KiB = 1024;
const MiB = 1024 * KiB;
const PROTOCOL = '2025-11-25';

const sized = sizedAnswerTools();
const tools = sized.tools;
const release = sized.release;

const messagesOf = mcpMessagesOf;

/**
 * The limits of `/mcp` (docs/mcp.md, "Sessions"), through a real gateway: the event store bounded in bytes, each
 * tenant's share of the sessions, a content coding refused with 415, and a request id reused while in flight.
 */
describe('MCP tool server limits behind the gateway', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let mcp: McpService;
  let server: StartedServer;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    database = await freshDatabase('lore_mcplimits');
    mcp = createMcpService({
      targets: { agentCore: 'http://127.0.0.1:9', memory: 'http://127.0.0.1:9' },
      signer: new IdentitySigner(IDENTITY_SECRET),
      logger: createLogger({ level: 'silent', service: 'mcp-test' }),
      tools,
      limits: { maxSessionsPerKey: 2, maxSessionsPerTenant: 3, maxSessions: 6, eventStoreBytes: 4 * MiB, eventStoreSessionBytes: 2 * MiB },
    });
    server = await listen(mcp.app, 0, '127.0.0.1');
    g = await startGateway(database, { upstreams: { mcp: server.url } }, { redisPrefix: `mcplimits:${uid()}:` });
    [a, b] = [await makeTenant(g), await makeTenant(g)];
  });
  afterAll(async () => {
    release();
    await g?.close();
    await mcp?.close();
    await server?.close(100);
    await database?.drop();
  });

  const headers = (key: string, session?: string) => ({
    'x-api-key': key,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } : {}),
  });
  const post = async (key: string, body: unknown, session?: string) => {
    const res = await fetch(`${g.publicUrl}/mcp`, { method: 'POST', headers: headers(key, session), body: JSON.stringify(body) });
    return { status: res.status, text: await res.text(), sessionId: res.headers.get('mcp-session-id') };
  };
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'limits', version: '1' } } };
  /** An open session of `key` (initialized), or the refusal. */
  const open = async (key: string) => {
    const init = await post(key, initialize);
    if (init.status !== 200) return { status: init.status, json: messagesOf(init.text)[0]!.message as unknown, session: '' };
    expect((await post(key, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.sessionId!)).status).toBe(202);
    return { status: 200, json: undefined, session: init.sessionId! };
  };
  const close = (key: string, session: string) => fetch(`${g.publicUrl}/mcp`, { method: 'DELETE', headers: headers(key, session) }).then((r) => r.text());
  const callTool = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

  it('keeps the events of many large tool answers under the store\'s byte bound, and resumes the newest', async () => {
    const sessions = [await open(a.key), await open(a.key)].map((o) => o.session);
    let last: { session: string; primer: string; answer: unknown } | undefined;
    for (let i = 0; i < 30; i++) {
      const session = sessions[i % 2]!;
      const res = await post(a.key, callTool(100 + i, 'big', { kib: 256 }), session);
      expect(res.status).toBe(200);
      const [primer, answer] = messagesOf(res.text);
      expect(answer!.message).toMatchObject({ id: 100 + i, result: { structuredContent: { success: true } } });
      last = { session, primer: primer!.id!, answer: answer!.message };
      expect(mcp.storedEvents().bytes).toBeLessThanOrEqual(4 * MiB);
    }
    // 30 answers of over 512 KiB each went out; each session keeps at most 2 MiB of them.
    expect(mcp.storedEvents().bytes).toBeLessThanOrEqual(2 * 2 * MiB);
    const resumed = await resumedAnswer(`${g.publicUrl}/mcp`, headers(a.key, last!.session), last!.primer);
    expect(resumed.status).toBe(200);
    expect(messagesOf(resumed.text).map((m) => m.message)).toEqual([last!.answer]);
    for (const session of sessions) await close(a.key, session);
    expect(mcp.storedEvents()).toEqual({ count: 0, bytes: 0 });
  });

  it('one tenant at its share of sessions never locks another tenant out', async () => {
    const [a2, a3] = [(await makeKey(g, a.tenantId, {})).key, (await makeKey(g, a.tenantId, {})).key];
    const held = [await open(a.key), await open(a.key), await open(a2)];
    expect(held.map((o) => o.status)).toEqual([200, 200, 200]);
    const refused = await open(a3);
    expect(refused).toMatchObject({ status: 429, json: { error: { code: -32000, message: expect.stringMatching(/^this tenant has 3 open sessions/) } } });
    const theirs = await open(b.key);
    expect(theirs.status).toBe(200);
    await close(b.key, theirs.session);
    for (const [i, o] of held.entries()) await close(i < 2 ? a.key : a2, o.session);
  });

  it('refuses a gzip-encoded body with 415, as every other surface does', async () => {
    const res = await fetch(`${g.publicUrl}/mcp`, { method: 'POST', headers: { ...headers(a.key), 'content-encoding': 'gzip' }, body: gzipSync(JSON.stringify(initialize)) });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringMatching(/^request bodies are not decoded/) } });
  });

  it('refuses a request reusing an id in flight, and both answer streams end', async () => {
    const { session } = await open(a.key);
    const first = await fetch(`${g.publicUrl}/mcp`, { method: 'POST', headers: headers(a.key, session), body: JSON.stringify(callTool(7, 'gate')) });
    expect(first.status).toBe(200);
    const again = await post(a.key, callTool(7, 'big', { kib: 1 }), session);
    expect(again.status).toBe(400);
    expect(messagesOf(again.text)[0]!.message).toMatchObject({ id: 7, error: { code: -32600 } });
    release();
    expect(messagesOf(await first.text()).at(-1)!.message).toMatchObject({ id: 7, result: { structuredContent: { success: true, data: 'released' } } });
    expect((await post(a.key, callTool(7, 'big', { kib: 1 }), session)).status).toBe(200);
    await close(a.key, session);
  });
});
