import { IdentitySigner, createLogger, listen } from '@lore/runtime';
import { createMcpService } from '@lore/mcp';
import { startAgentsStack, type AgentsStack } from '../agents/harness';
import { IDENTITY_SECRET, type TenantFixture } from '../gateway/harness';
import { rawInitialize } from './client';
import { describeSearchTools } from './search-tools';

jest.setTimeout(120_000);

/**
 * The MCP tool server in the cluster's shape: client → gateway → mcp, and the tools calling the API back through the
 * gateway with the caller's key (agents on real PostgreSQL and Redis). The SDK's own client over real HTTP. The
 * company, people and research tools, keys and sessions: test/mcp/search-tools.ts, shared with embedded mode; here
 * what only this shape configures (a resumed stream, the body limit, an idle session closed).
 */
let s: AgentsStack;
let t: TenantFixture;
beforeAll(async () => {
  s = await startAgentsStack({ mcp: { limits: { maxSessionsPerKey: 6 } } });
  t = await s.tenant();
});
afterAll(async () => {
  await s?.close();
});

describeSearchTools('cluster shape', () => ({
  url: s.gateway.publicUrl,
  key: t.key,
  newKey: (scopes = {}) => s.key(t.tenantId, { scopes }),
  db: s.db,
  tenantId: t.tenantId,
  sessionsPerKey: 6,
}));

describe('MCP tool server behind the gateway: streams and session lifetime', () => {
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
    // Another tenant's session (and another session of the same key) naming that event id replays nothing: a
    // stream's events belong to the session that sent them.
    const other = await s.tenant();
    for (const key of [other.key, t.key]) {
      const theirs = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'x-api-key': key },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
      });
      expect(theirs.status).toBe(200);
      await theirs.text();
      const theirSession = { ...headers, 'x-api-key': key, 'mcp-session-id': theirs.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
      const stolen = await fetch(`${base}/mcp`, { method: 'GET', headers: { ...theirSession, accept: 'text/event-stream', 'last-event-id': events[0]!.id } });
      const body = await stolen.text();
      expect({ status: stolen.status, leaked: body.includes('"id":7') }).toEqual({ status: 400, leaked: false });
      await fetch(`${base}/mcp`, { method: 'DELETE', headers: theirSession });
    }
    // A body over the limit (the server's 1 MiB by default) is refused with 413.
    const big = await fetch(`${base}/mcp`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'company_database_search', arguments: { filter: { x: 'y'.repeat(1_100_000) } } } }) });
    expect(big.status).toBe(413);
    await big.text();
    await fetch(`${base}/mcp`, { method: 'DELETE', headers: session });
  });

  it('speaks JSON-RPC as MCP 2025-11-25 asks: no other origin, no batches, -32600 for what is no message, -32602 for bad params', async () => {
    const base = s.gateway.publicUrl;
    const headers = { 'x-api-key': t.key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const post = async (body: unknown, extra: Record<string, string> = {}) => {
      const r = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...headers, ...extra }, body: typeof body === 'string' ? body : JSON.stringify(body) });
      const text = await r.text();
      const data = /^data: (.+)$/m.exec(text)?.[1];
      return { status: r.status, json: text ? JSON.parse(data ?? text) : null, sessionId: r.headers.get('mcp-session-id') };
    };
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
    // A page of another origin (DNS rebinding) is refused before anything, a key notwithstanding.
    for (const origin of ['http://evil.example', 'null']) {
      expect(await post(initialize, { origin })).toMatchObject({ status: 403, json: { success: false, error: expect.stringMatching(/another origin/) }, sessionId: null });
    }
    const own = await post(initialize, { origin: new URL(base).origin });
    expect(own.status).toBe(200);
    const session = { 'mcp-session-id': own.sessionId!, 'mcp-protocol-version': '2025-11-25' };
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status).toBe(202);
    // Batches were removed in 2025-06-18; an empty one is no request in any revision.
    const batch = await post([{ jsonrpc: '2.0', id: 5, method: 'ping' }, { jsonrpc: '2.0', id: 6, method: 'ping' }], session);
    expect(batch).toMatchObject({ status: 400, json: { error: { code: -32600, message: expect.stringMatching(/no JSON-RPC batches/) } } });
    expect(await post([], session)).toMatchObject({ status: 400, json: { error: { code: -32600 } } });
    // Valid JSON that is no JSON-RPC message: Invalid Request, not a parse error (which stays for what is no JSON).
    for (const notAMessage of [{ id: 3, method: 'ping' }, { jsonrpc: '2.0', id: null, method: 'ping' }, { jsonrpc: '2.0', id: 3, method: 5 }, 42]) {
      expect(await post(notAMessage, session)).toMatchObject({ status: 400, json: { jsonrpc: '2.0', error: { code: -32600 } } });
    }
    expect(await post('{"jsonrpc":', session)).toMatchObject({ status: 400, json: { error: { code: -32700 } } });
    // Params a request cannot run with: Invalid params with the request's id, no validation dump.
    for (const params of [{}, { name: 'get_lists', arguments: 'str' }]) {
      const bad = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params }, session);
      expect(bad).toMatchObject({ status: 200, json: { id: 9, error: { code: -32602, message: expect.stringMatching(/^Invalid params: /) } } });
    }
    const noVersion = await post({ ...initialize, params: { capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(noVersion).toMatchObject({ status: 400, json: { id: 1, error: { code: -32602, message: expect.stringMatching(/protocolVersion/) } } });
    // An id that is a dot segment would take the tool's request to another route: refused as an input error.
    const dots = await post({ jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'get_status_workflows', arguments: { workflow_id: '..' } } }, session);
    expect(dots).toMatchObject({ status: 200, json: { id: 11, result: { isError: true, structuredContent: { success: false, error: 'Input validation error: ".." is not an id' } } } });
    // What still works in the session.
    expect(await post({ jsonrpc: '2.0', id: 10, method: 'ping' }, session)).toMatchObject({ status: 200, json: { id: 10, result: {} } });
    await fetch(`${base}/mcp`, { method: 'DELETE', headers: { ...headers, ...session } });
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
});
