import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { CLIENT_ADDRESS_HEADER, IdentitySigner, createLogger, listen, type StartedServer } from '@lore/runtime';
import { allTools, createMcpService, defineTool, type McpService } from '@lore/mcp';
import { IDENTITY_SECRET, freshDatabase, http, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import type { TestDatabase } from '../support/infra';
import { connectMcp, rawInitialize } from './client';

jest.setTimeout(120_000);

/** The tool server behind a gateway of its own on a fresh database, calling the API back through that gateway. */
interface McpStack {
  database: TestDatabase;
  g: GatewayUnderTest;
  mcp: McpService;
  server: StartedServer;
  t: TenantFixture;
  close(): Promise<void>;
}

async function mcpStack(name: string, options: Partial<Parameters<typeof createMcpService>[0]>, gateway: Parameters<typeof startGateway>[1] = {}): Promise<McpStack> {
  const database = await freshDatabase(`lore_${name}`);
  let publicUrl = '';
  const mcp = createMcpService({
    targets: () => ({ agentCore: publicUrl, memory: publicUrl }),
    signer: new IdentitySigner(IDENTITY_SECRET),
    logger: createLogger({ level: 'silent', service: 'mcp-test' }),
    ...options,
  });
  const server = await listen(mcp.app, 0, '127.0.0.1');
  const g = await startGateway(database, { ...gateway, upstreams: { mcp: server.url } }, { redisPrefix: `${name}:${uid()}:` });
  publicUrl = g.publicUrl;
  const t = await makeTenant(g);
  return {
    database, g, mcp, server, t,
    close: async () => {
      await g.close();
      await mcp.close();
      await server.close();
      await database.drop();
    },
  };
}

/**
 * Every access level of a key may use the MCP surface (docs/gateway.md, "Forwarding"; docs/mcp.md, "Who sees which
 * tool"): the gateway lets read-only, write-only and read-write keys open, use and close their sessions, and the
 * server lists each the tools its scope allows. The real tool server behind a real gateway, the SDK's own client.
 */
describe('MCP sessions of read-only and write-only keys', () => {
  let g: GatewayUnderTest;
  let mcp: McpService;
  let t: TenantFixture;
  let stack: McpStack | undefined;

  beforeAll(async () => {
    stack = await mcpStack('mcpkeys', { limits: { maxSessionsPerKey: 2 } });
    ({ g, mcp, t } = stack);
  });
  afterAll(async () => {
    await stack?.close();
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

/**
 * A key with an IP allowlist uses the tools from an address it allows (docs/gateway.md, "IP allowlists"): the tool
 * server calls the API back from its own address, carrying the client's, signed and bound to the key. The gateway
 * trusts 127.0.0.0/8 as its proxy here, so a test client can speak for any address with X-Forwarded-For, and the tool
 * server's calls back (from 127.0.0.1, naming no one) are seen as coming from 127.0.0.1, as a pod's would be from the
 * pod's address.
 */
describe('MCP tool calls of a key with an IP allowlist', () => {
  let g: GatewayUnderTest;
  let t: TenantFixture;
  const ALLOWED = '203.0.113.9';
  const OTHER = '198.51.100.7';

  let stack: McpStack | undefined;

  beforeAll(async () => {
    // A tool calling one of the gateway's own routes back with the caller's key (no other upstream needed).
    const workspaces = defineTool({
      name: 'list_workspaces',
      description: 'The workspaces the key sees.',
      input: z.object({}),
      access: 'read',
      module: 'workspaces',
      call: (_a, upstream) => upstream.call('memory', { method: 'GET', path: '/api/v1/workspaces', keyHeader: 'x-api-key' }),
    });
    stack = await mcpStack('mcpaddr', { tools: [workspaces] }, { trustedProxies: ['127.0.0.0/8'] });
    ({ g, t } = stack);
  });
  afterAll(async () => {
    await stack?.close();
  });

  const from = (address: string) => async () => ({ 'x-forwarded-for': address });

  it('answers the tool calls of a client at an allowed address (every one was refused 403), and refuses the others', async () => {
    const fenced = await makeKey(g, t.tenantId, { ip_allowlist: ['203.0.113.0/24'] });
    const c = await connectMcp(g.publicUrl, fenced.key, from(ALLOWED));
    try {
      const answer = await c.call('list_workspaces');
      expect(answer).toMatchObject({ success: true, data: { active_workspace_id: t.workspaceId } });
      const sessionId = c.transport.sessionId!;
      // The same session from an address the key does not allow: refused at /mcp, before any tool runs.
      const elsewhere = await fetch(`${g.publicUrl}/mcp`, {
        method: 'POST',
        headers: { 'x-api-key': fenced.key, 'x-forwarded-for': OTHER, 'mcp-session-id': sessionId, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 90, method: 'tools/call', params: { name: 'list_workspaces', arguments: {} } }),
      });
      expect(elsewhere.status).toBe(403);
      await elsewhere.text();
      await c.transport.terminateSession();
    } finally {
      await c.client.close();
    }
    await expect(connectMcp(g.publicUrl, fenced.key, from(OTHER))).rejects.toThrow();
    // The key's REST calls go by the client's own address, as before.
    expect((await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': fenced.key, 'x-forwarded-for': ALLOWED } })).status).toBe(200);
    expect((await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': fenced.key, 'x-forwarded-for': OTHER } })).status).toBe(403);
  });

  it('ignores a client address header a client writes: unsigned, signed with another secret, made for another key or not an address token', async () => {
    const fenced = await makeKey(g, t.tenantId, { ip_allowlist: ['203.0.113.0/24'] });
    const other = await makeKey(g, t.tenantId, {});
    const hash = (key: string) => createHash('sha256').update(key).digest('hex');
    const ours = new IdentitySigner(IDENTITY_SECRET);
    const forged = [
      ALLOWED,
      await new IdentitySigner(randomBytes(32).toString('hex')).signClientAddress(ALLOWED, hash(fenced.key)),
      await ours.signClientAddress(ALLOWED, hash(other.key)),
      await ours.sign({ tenant_id: t.tenantId, workspace_id: t.workspaceId, memory_id: t.memoryId, credential: 'ck_live', subject: fenced.keyId, role: 'tenant_admin' }),
    ];
    for (const value of forged) {
      const r = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': fenced.key, 'x-forwarded-for': OTHER, [CLIENT_ADDRESS_HEADER]: value } });
      expect({ value: value.slice(0, 24), status: r.status }).toEqual({ value: value.slice(0, 24), status: 403 });
    }
    // Nor can such a header shut a client at an allowed address out.
    const shut = await ours.signClientAddress(OTHER, hash(fenced.key));
    expect((await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': fenced.key, 'x-forwarded-for': ALLOWED, [CLIENT_ADDRESS_HEADER]: `x${shut}` } })).status).toBe(200);
    // What the tool server sends (the deployment's secret, this key) is what the gateway believes.
    const genuine = await ours.signClientAddress(ALLOWED, hash(fenced.key));
    expect((await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': fenced.key, 'x-forwarded-for': OTHER, [CLIENT_ADDRESS_HEADER]: genuine } })).status).toBe(200);
  });
});
