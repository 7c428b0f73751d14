import { IdentitySigner, createLogger, listen, type StartedServer } from '@lore/runtime';
import { allTools, createMcpService, type McpService } from '@lore/mcp';
import { IDENTITY_SECRET, freshDatabase, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import type { TestDatabase } from '../support/infra';
import { connectMcp, rawInitialize } from './client';

jest.setTimeout(120_000);

/**
 * Every access level of a key may use the MCP surface (docs/gateway.md, "Forwarding"; docs/mcp.md, "Who sees which
 * tool"): the gateway lets read-only, write-only and read-write keys open, use and close their sessions, and the
 * server lists each the tools its scope allows. The real tool server behind a real gateway, the SDK's own client.
 */
describe('MCP sessions of read-only and write-only keys', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let mcp: McpService;
  let server: StartedServer;
  let t: TenantFixture;

  beforeAll(async () => {
    database = await freshDatabase('lore_mcpkeys');
    let publicUrl = '';
    mcp = createMcpService({
      targets: () => ({ agentCore: publicUrl, memory: publicUrl }),
      signer: new IdentitySigner(IDENTITY_SECRET),
      logger: createLogger({ level: 'silent', service: 'mcp-test' }),
      limits: { maxSessionsPerKey: 2 },
    });
    server = await listen(mcp.app, 0, '127.0.0.1');
    g = await startGateway(database, { upstreams: { mcp: server.url } }, { redisPrefix: `mcpkeys:${uid()}:` });
    publicUrl = g.publicUrl;
    t = await makeTenant(g);
  });
  afterAll(async () => {
    await g?.close();
    await mcp?.close();
    await server?.close();
    await database?.drop();
  });

  const toolsOf = (access: 'read' | 'write') => allTools().filter((x) => x.access === access).map((x) => x.name).sort();

  it('a read-only key closes its own sessions (DELETE), so it never runs into the per-key session limit', async () => {
    const key = (await makeKey(g, t.tenantId, { scopes: { access: 'read' } })).key;
    // Three times the per-key limit of 2, one after the other: each session is closed before the next opens.
    for (let i = 0; i < 6; i++) {
      const c = await connectMcp(g.publicUrl, key);
      const sessionId = c.transport.sessionId!;
      expect((await c.client.listTools()).tools.map((x) => x.name).sort()).toEqual(toolsOf('read'));
      expect(mcp.sessionCount()).toBe(1);
      // The SDK's own DELETE: it throws on any answer other than 2xx (or 405).
      await c.transport.terminateSession();
      expect(mcp.sessionCount()).toBe(0);
      await c.client.close();
      const gone = await fetch(`${g.publicUrl}/mcp`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'mcp-session-id': sessionId, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
      });
      expect({ i, status: gone.status }).toEqual({ i, status: 404 });
      await gone.text();
    }
  });

  it('a write-only key opens a session and sees the write tools only', async () => {
    const key = (await makeKey(g, t.tenantId, { scopes: { access: 'write' } })).key;
    const raw = await rawInitialize(g.publicUrl, { 'x-api-key': key });
    expect(raw.status).toBe(200);
    expect(raw.json).toMatchObject({ result: { serverInfo: { name: 'lore' } } });
    const c = await connectMcp(g.publicUrl, key);
    try {
      const { tools } = await c.client.listTools();
      expect(tools.map((x) => x.name).sort()).toEqual(toolsOf('write'));
      expect(tools.length).toBeGreaterThan(0);
      for (const tool of tools) expect(tool.annotations?.readOnlyHint).toBe(false);
      // Every tool's answer is one of spec 3's two envelopes, and its listing says so.
      for (const tool of tools) expect(tool.outputSchema).toMatchObject({ type: 'object', oneOf: [{ required: ['success', 'data'] }, { required: ['success', 'error'] }] });
      await c.transport.terminateSession();
    } finally {
      await c.client.close();
    }
    // The raw initialize's session, closed by the write-only key too.
    const closed = await fetch(`${g.publicUrl}/mcp`, { method: 'DELETE', headers: { 'x-api-key': key, 'mcp-session-id': raw.sessionId!, 'mcp-protocol-version': '2025-06-18' } });
    expect(closed.status).toBe(200);
    expect(mcp.sessionCount()).toBe(0);
  });

  it('still refuses a key scoped to other modules than mcp', async () => {
    const key = (await makeKey(g, t.tenantId, { scopes: { modules: ['memory'], access: 'read' } })).key;
    const r = await rawInitialize(g.publicUrl, { 'x-api-key': key });
    expect(r.status).toBe(403);
    expect(mcp.sessionCount()).toBe(0);
  });
});
