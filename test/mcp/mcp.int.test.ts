import { IdentitySigner, createLogger, listen } from '@lore/runtime';
import { allTools, createMcpService } from '@lore/mcp';
import { startAgentsStack, type AgentsStack } from '../agents/harness';
import { IDENTITY_SECRET, type TenantFixture } from '../gateway/harness';
import { READ_TOOLS, SEARCH_TOOLS, connectMcp, rawInitialize, type McpClient } from './client';

jest.setTimeout(120_000);

/**
 * The MCP tool server in the cluster's shape: client → gateway → mcp, and the tools calling the API back through the
 * gateway with the caller's key (agents on real PostgreSQL and Redis). The SDK's own client over real HTTP.
 */
describe('MCP tool server behind the gateway', () => {
  let s: AgentsStack;
  let t: TenantFixture;
  let c: McpClient;
  beforeAll(async () => {
    s = await startAgentsStack({ mcp: { limits: { maxSessionsPerKey: 6 } } });
    t = await s.tenant();
    c = await connectMcp(s.gateway.publicUrl, t.key);
  });
  afterAll(async () => {
    await c?.close();
    await s?.close();
  });

  it('answers /health without a key', async () => {
    const res = await fetch(`${s.gateway.publicUrl}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', service: 'mcp' });
  });

  it('lists every tool with its output schema, destructive ones annotated', async () => {
    const { tools } = await c.client.listTools();
    // The registry's every tool (the memory and enterprise tools too), issue 16's among them.
    expect(tools.map((x) => x.name).sort()).toEqual(allTools().map((x) => x.name).sort());
    for (const name of SEARCH_TOOLS) expect(tools.map((x) => x.name)).toContain(name);
    for (const tool of tools.filter((x) => SEARCH_TOOLS.includes(x.name))) {
      expect(tool.outputSchema).toMatchObject({ type: 'object', properties: { success: { type: 'boolean' } } });
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(tool.annotations?.readOnlyHint).toBe(READ_TOOLS.includes(tool.name));
      expect(tool.annotations?.destructiveHint ?? false).toBe(['stop', 'stop_enrichment', 'stop_people_search'].includes(tool.name));
    }
    const start = tools.find((x) => x.name === 'start_workflow')!;
    expect(start.inputSchema).toMatchObject({ required: ['prompt'], properties: { prompt: { type: 'string', minLength: 1 } } });
    const cont = tools.find((x) => x.name === 'continue_workflow')!;
    expect(cont.inputSchema).toMatchObject({ properties: { total_target: { type: 'integer', minimum: 1 } } });
  });

  it('company search tools: each once valid, once invalid', async () => {
    const started = await c.call('start_workflow', { prompt: 'software companies in Berlin' });
    expect(started).toMatchObject({ success: true, data: { success: true, status: 'processing', thread_id: expect.any(String) } });
    const thread = started.data.thread_id as string;
    expect(await c.call('start_workflow', { prompt: '' })).toMatchObject({ success: false, error: expect.stringMatching(/prompt/) });

    const status = await c.call('get_status_workflows', { workflow_id: thread });
    expect(status).toMatchObject({ success: true, data: { thread_id: thread } });
    const missing = await c.call('get_status_workflows', { workflow_id: '00000000-0000-4000-8000-000000000000' });
    expect(missing).toMatchObject({ success: false, error: expect.stringMatching(/^HTTP 404/) });

    const cont = await c.call('continue_workflow', { thread_id: thread, total_target: 40 });
    expect(cont).toMatchObject({ success: true, data: { thread_id: thread, status: 'continuing' } });
    expect(await c.call('continue_workflow', { thread_id: thread, total_target: 0 })).toMatchObject({ success: false, error: expect.stringMatching(/total_target/) });

    const enrich = await c.call('start_enrichment', { thread_id: thread, list_id: 'list-1', column_name: 'ceo', enrichment_type: 'custom', instruction: 'the CEO' });
    expect(enrich).toMatchObject({ success: true });
    expect(await c.call('start_enrichment', { thread_id: thread, list_id: 'list-1', column_name: '', enrichment_type: 'custom' })).toMatchObject({ success: false, error: expect.stringMatching(/column_name/) });
    const stopEnrich = await c.call('stop_enrichment', { workflow_id: thread });
    expect(stopEnrich).toMatchObject({ success: true, data: { status: 'stopped' } });
    expect(await c.call('stop_enrichment', { workflow_id: 'x'.repeat(513) })).toMatchObject({ success: false, error: expect.stringMatching(/workflow_id/) });

    const stopped = await c.call('stop', { workflow_id: thread });
    expect(stopped).toMatchObject({ success: true, data: { thread_id: thread } });
    expect(await c.call('stop', {})).toMatchObject({ success: false, error: expect.stringMatching(/workflow_id/) });

    const lists = await c.call('get_lists');
    expect(lists).toMatchObject({ success: true, data: { success: true, data: expect.any(Array), total: expect.any(Number) } });
    expect(await c.call('get_lists', { limit: 5 })).toMatchObject({ success: false, error: expect.stringMatching(/limit|Unrecognized/i) });

    const results = await c.call('get_search_results', { thread_id: thread });
    expect(results).toMatchObject({ success: true, data: { thread_id: thread, data: expect.any(Array) } });
    expect(await c.call('get_search_results', { thread_id: 42 })).toMatchObject({ success: false, error: expect.stringMatching(/thread_id/) });

    const db = await c.call('company_database_search', { filter: { industry: 'software' }, limit: 5 });
    expect(db).toMatchObject({ success: true, data: { success: true, data: expect.any(Array), count: expect.any(Number), limit: 5 } });
    expect(await c.call('company_database_search', { limit: 0 })).toMatchObject({ success: false, error: expect.stringMatching(/limit/) });
    const badFilter = await c.call('company_database_search', { filter: { $where: 'x' } });
    expect(badFilter).toMatchObject({ success: false, error: expect.stringMatching(/^HTTP 4\d\d/) });
  });

  it('people search tools: each once valid, once invalid', async () => {
    const started = await c.call('start_people_search', { prompt: 'CTOs of fintech companies in Berlin' });
    expect(started).toMatchObject({ success: true, data: { status: 'processing', thread_id: expect.any(String) } });
    const thread = started.data.thread_id as string;
    expect(await c.call('start_people_search', {})).toMatchObject({ success: false, error: expect.stringMatching(/prompt/) });

    expect(await c.call('get_status_people_search', { workflow_id: thread })).toMatchObject({ success: true, data: { thread_id: thread } });
    expect(await c.call('get_status_people_search', { workflow_id: '' })).toMatchObject({ success: false, error: expect.stringMatching(/workflow_id/) });

    expect(await c.call('continue_people_search', { thread_id: thread, total_target: 30 })).toMatchObject({ success: true, data: { status: 'continuing' } });
    expect(await c.call('continue_people_search', { thread_id: thread, total_target: 2.5 })).toMatchObject({ success: false, error: expect.stringMatching(/total_target/) });

    expect(await c.call('stop_people_search', { workflow_id: thread })).toMatchObject({ success: true, data: { thread_id: thread } });
    expect(await c.call('stop_people_search', { workflow_id: '00000000-0000-4000-8000-000000000000' })).toMatchObject({ success: false, error: expect.stringMatching(/^HTTP 404/) });

    expect(await c.call('people_database_search', { filter: {} })).toMatchObject({ success: true, data: { data: expect.any(Array) } });
    expect(await c.call('people_database_search', { filter: 'title=cto' })).toMatchObject({ success: false, error: expect.stringMatching(/filter/) });
  });

  it('research tools: each once valid, once invalid', async () => {
    const started = await c.call('start_research', { query: 'fintech companies in Berlin', max_researcher_iterations: 1 });
    expect(started).toMatchObject({ success: true, data: { status: 'processing', thread_id: expect.any(String) } });
    const id = started.data.thread_id as string;
    expect(await c.call('start_research', { query: 'x', max_concurrent_research_units: 0 })).toMatchObject({ success: false, error: expect.stringMatching(/max_concurrent_research_units/) });

    const active = await c.call('get_active_workflow');
    expect(active).toMatchObject({ success: true, data: { success: true, workflows: expect.any(Array) } });
    expect(active.data.workflows.map((w: any) => w.thread_id)).toContain(id);
    expect(await c.call('get_active_workflow', { research_id: id })).toMatchObject({ success: false });

    expect(await c.call('get_result_of_search', { research_id: id })).toMatchObject({ success: true, data: { thread_id: id, query: 'fintech companies in Berlin', serviceId: 'mcp' } });
    expect(await c.call('get_result_of_search', { research_id: '' })).toMatchObject({ success: false, error: expect.stringMatching(/research_id/) });
  });

  it('refuses a call without a key, and a wrong key, before any session', async () => {
    const none = await rawInitialize(s.gateway.publicUrl, {});
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ success: false, error: 'Missing x-api-key header' });
    const wrong = await rawInitialize(s.gateway.publicUrl, { 'x-api-key': `${t.key.slice(0, -4)}abcd` });
    expect(wrong.status).toBe(401);
    await expect(connectMcp(s.gateway.publicUrl, 'ck_live_not-a-key')).rejects.toThrow(/UNAUTHORIZED/);
  });

  it('a read-only key sees only read tools, and cannot call a write tool', async () => {
    const ro = await connectMcp(s.gateway.publicUrl, await s.key(t.tenantId, { scopes: { access: 'read' } }));
    try {
      const { tools } = await ro.client.listTools();
      const names = tools.map((x) => x.name).sort();
      expect(names).toEqual(allTools().filter((x) => x.access === 'read').map((x) => x.name).sort());
      for (const name of READ_TOOLS) expect(names).toContain(name);
      for (const name of SEARCH_TOOLS.filter((n) => !READ_TOOLS.includes(n))) expect(names).not.toContain(name);
      for (const tool of tools) expect(tool.annotations?.readOnlyHint).toBe(true);
      expect(await ro.call('get_lists')).toMatchObject({ success: true });
      expect(await ro.call('start_workflow', { prompt: 'anything' })).toMatchObject({ success: false, error: expect.stringMatching(/start_workflow/) });
    } finally {
      await ro.close();
    }
  });

  it('a key scoped to one module sees that module\'s tools only', async () => {
    const agentsOnly = await connectMcp(s.gateway.publicUrl, await s.key(t.tenantId, { scopes: { modules: ['mcp', 'agents'] } }));
    const mcpOnly = await connectMcp(s.gateway.publicUrl, await s.key(t.tenantId, { scopes: { modules: ['mcp', 'memory'] } }));
    try {
      const agentsTools = allTools().filter((x) => x.module === 'agents').map((x) => x.name).sort();
      expect((await agentsOnly.client.listTools()).tools.map((x) => x.name).sort()).toEqual(agentsTools);
      for (const name of SEARCH_TOOLS) expect(agentsTools).toContain(name);
      const memoryTools = (await mcpOnly.client.listTools()).tools.map((x) => x.name);
      for (const name of SEARCH_TOOLS) expect(memoryTools).not.toContain(name);
      expect(await mcpOnly.call('get_lists')).toMatchObject({ success: false, error: expect.stringMatching(/get_lists/) });
    } finally {
      await agentsOnly.close();
      await mcpOnly.close();
    }
  });

  it('serves concurrent sessions of one key, each its own, up to the per-key limit', async () => {
    const key = await s.key(t.tenantId);
    const clients = await Promise.all(Array.from({ length: 6 }, () => connectMcp(s.gateway.publicUrl, key)));
    try {
      const ids = new Set(clients.map((x) => x.transport.sessionId));
      expect(ids.size).toBe(6);
      const answers = await Promise.all(clients.map((x, i) => x.call('start_workflow', { prompt: `companies number ${i} in Hamburg` })));
      const threads = new Set(answers.map((a) => a.data.thread_id));
      expect(threads.size).toBe(6);
      const over = await rawInitialize(s.gateway.publicUrl, { 'x-api-key': key });
      expect(over.status).toBe(429);
      expect(over.json.error.message).toMatch(/6 open sessions/);
      // Another key's session id is unknown to this key.
      const res = await fetch(`${s.gateway.publicUrl}/mcp`, {
        method: 'POST',
        headers: { 'x-api-key': t.key, 'mcp-session-id': clients[0]!.transport.sessionId!, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
      });
      expect(res.status).toBe(404);
      await clients.pop()!.close();
      const again = await connectMcp(s.gateway.publicUrl, key);
      clients.push(again);
      expect(await again.call('get_lists')).toMatchObject({ success: true });
    } finally {
      await Promise.all(clients.map((x) => x.close()));
    }
  });

  it('resumes a stream from Last-Event-ID (the bounded event store), and refuses a body over the limit', async () => {
    const base = s.gateway.publicUrl;
    const headers = { 'x-api-key': t.key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await (await fetch(`${base}/mcp`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
    const call = await fetch(`${base}/mcp`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_lists', arguments: {} } }) });
    const events = [...(await call.text()).matchAll(/^id: (\S+)\n(?:retry: \d+\n)?data: ?(.*)$/gm)].map((m) => ({ id: m[1]!, data: m[2]! }));
    // A priming event (no data), then the answer.
    expect(events).toHaveLength(2);
    expect(events[0]!.data).toBe('');
    const answer = JSON.parse(events[1]!.data);
    expect(answer).toMatchObject({ id: 7, result: { structuredContent: { success: true } } });
    // Reconnecting after the priming event replays the answer.
    const ac = new AbortController();
    const resumed = await fetch(`${base}/mcp`, { method: 'GET', headers: { ...session, accept: 'text/event-stream', 'last-event-id': events[0]!.id }, signal: ac.signal });
    expect(resumed.status).toBe(200);
    const reader = resumed.body!.getReader();
    let text = '';
    while (!text.includes('"id":7')) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
    }
    ac.abort();
    const replayed = /^id: (\S+)\ndata: (.*)$/m.exec(text)!;
    expect(replayed[1]).toBe(events[1]!.id);
    expect(JSON.parse(replayed[2]!)).toEqual(answer);
    // A body over the limit (the server's 1 MiB by default) is refused with 413.
    const big = await fetch(`${base}/mcp`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'company_database_search', arguments: { filter: { x: 'y'.repeat(1_100_000) } } } }) });
    expect(big.status).toBe(413);
    await big.text();
    await fetch(`${base}/mcp`, { method: 'DELETE', headers: session });
  });

  it('closes a session left idle', async () => {
    const signer = new IdentitySigner(IDENTITY_SECRET);
    const idle = createMcpService({ targets: { agentCore: s.gateway.publicUrl, memory: s.gateway.publicUrl }, signer, logger: createLogger({ level: 'silent', service: 'mcp-test' }), limits: { sessionIdleMs: 600 } });
    const server = await listen(idle.app, 0, '127.0.0.1');
    const identity = await signer.sign({ tenant_id: t.tenantId, workspace_id: 'w', memory_id: 'm', credential: 'ck_live', subject: 'k', role: 'tenant_admin' });
    const headers = { 'x-api-key': t.key, 'x-lore-identity': identity };
    try {
      const opened = await rawInitialize(server.url, headers);
      expect(opened.status).toBe(200);
      expect(idle.sessionCount()).toBe(1);
      await new Promise((r) => setTimeout(r, 1_200));
      expect(idle.sessionCount()).toBe(0);
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': opened.sessionId!, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
      });
      expect(res.status).toBe(404);
    } finally {
      await idle.close();
      await server.close();
    }
  });

  it('an upstream that fails answers a clear success:false without a stack trace', async () => {
    // A tool server whose API address refuses connections, called as the gateway calls it (signed identity).
    const dead = await listen((_req: unknown, res: any) => res.end(), 0, '127.0.0.1');
    const deadUrl = dead.url;
    await dead.close();
    const signer = new IdentitySigner(IDENTITY_SECRET);
    const broken = createMcpService({ targets: { agentCore: deadUrl, memory: deadUrl }, signer, logger: createLogger({ level: 'silent', service: 'mcp-test' }) });
    const server = await listen(broken.app, 0, '127.0.0.1');
    const identity = await signer.sign({ tenant_id: t.tenantId, workspace_id: 'w', memory_id: 'm', credential: 'ck_live', subject: 'k', role: 'tenant_admin' });
    const transportFetch: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), 'x-lore-identity': identity } });
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', server.url), { requestInit: { headers: { 'x-api-key': t.key } }, fetch: transportFetch });
    const client = new Client({ name: 'lore-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      const res = (await client.callTool({ name: 'get_lists', arguments: {} })) as any;
      const parsed = JSON.parse(res.content[0].text);
      expect(parsed).toEqual({ success: false, error: 'upstream unreachable' });
      expect(res.structuredContent).toEqual(parsed);
      expect(res.isError).toBe(true);
      // Without the gateway's identity the server refuses, and without a key it answers spec 3's body.
      const noIdentity = await rawInitialize(server.url, { 'x-api-key': t.key });
      expect(noIdentity).toMatchObject({ status: 401, json: { success: false, error: 'invalid gateway identity' } });
      expect(await rawInitialize(server.url, {})).toMatchObject({ status: 401, json: { success: false, error: 'Missing x-api-key header' } });
    } finally {
      await client.close();
      await broken.close();
      await server.close();
    }
  });
});
