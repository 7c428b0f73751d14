import { TRUST_HEADERS } from '@lore/runtime';
import { oauthScopesDeny, scopeDenies } from '../domain/scope';
import { FORWARD_ROUTES, errorBodyOf, isAmbiguousPath, matchForward } from './route-table';
import { parseUpstream, upstreamHeaders, upstreamPath } from './proxy';

describe('forwarding table', () => {
  it('sends each public surface to its upstream with the right module and access', () => {
    expect(matchForward('POST', '/api/v1/memory/search')).toMatchObject({ route: { upstream: 'graph' }, rule: { module: 'memory', access: 'read', operation: 'search' } });
    expect(matchForward('POST', '/api/v1/memory/ingest')?.rule).toMatchObject({ access: 'write', operation: 'ingest', metered: true });
    expect(matchForward('GET', '/memory/departments/g1')).toMatchObject({ route: { upstream: 'graph' }, rule: { module: 'graph', access: 'read' } });
    expect(matchForward('POST', '/api/manage/admin/connector')).toMatchObject({ route: { upstream: 'core' }, rule: { module: 'connectors', access: 'write' } });
    expect(matchForward('POST', '/api/chat/send-message')?.rule?.module).toBe('chat');
    expect(matchForward('POST', '/company-search/start')).toMatchObject({ route: { upstream: 'agents' }, rule: { module: 'agents' } });
    // The directory's database searches only read; starting a search writes.
    expect(matchForward('POST', '/company-search/database-search')?.rule).toMatchObject({ module: 'agents', access: 'read' });
    expect(matchForward('POST', '/people-search/database-search')?.rule).toMatchObject({ module: 'agents', access: 'read' });
    expect(matchForward('POST', '/company-search/start')?.rule).toMatchObject({ access: 'write' });
    // Service routing and company overview change nothing.
    expect(matchForward('POST', '/api/service-routing/route')?.rule).toMatchObject({ module: 'agents', access: 'read' });
    expect(matchForward('POST', '/api/company/companyOverview')?.rule).toMatchObject({ module: 'agents', access: 'read' });
    expect(matchForward('POST', '/api/company/companyOverview/html')?.rule).toMatchObject({ module: 'agents', access: 'read' });
    expect(matchForward('POST', '/api/company/companyOverview/other')?.rule).toMatchObject({ access: 'write' });
    expect(matchForward('POST', '/mcp')).toMatchObject({ route: { upstream: 'mcp', keepApiKey: true } });
  });

  it('names each operation for app_permissions, persona routes by their path and not by a persona id', () => {
    expect(matchForward('POST', '/api/chat/send-message')?.rule).toMatchObject({ module: 'chat', operation: 'send-message' });
    expect(matchForward('GET', '/api/persona')?.rule).toMatchObject({ module: 'chat', operation: 'persona' });
    expect(matchForward('PATCH', '/api/persona/6')?.rule).toMatchObject({ module: 'chat', operation: 'persona' });
    expect(matchForward('GET', '/api/manage/admin/cc-pair/3')?.rule).toMatchObject({ module: 'connectors', operation: 'admin' });
  });

  it('lets every access level use the MCP surface, whatever the method, under the mcp module and unmetered', () => {
    for (const method of ['POST', 'GET', 'DELETE']) {
      const m = matchForward(method, '/mcp');
      expect(m).toMatchObject({ route: { upstream: 'mcp' }, rule: { module: 'mcp', access: 'any', metered: false, countsQuota: false } });
      // What any access level may use: a read-only key and a write-only key alike (DELETE closes a session).
      for (const access of ['read', 'write', 'read_write'] as const) expect(scopeDenies({ access }, { ...m!.rule!, memoryId: null })).toBeNull();
      // The module check stays: a key scoped to other modules is refused.
      expect(scopeDenies({ modules: ['memory'] }, { ...m!.rule!, memoryId: null })).toMatch(/mcp module/);
      expect(oauthScopesDeny(['mcp:read'], m!.rule!)).toBeNull();
      expect(oauthScopesDeny(['memory:write'], m!.rule!)).toMatch(/mcp:read/);
    }
  });

  it('meters every other forwarded surface: credits and the monthly quota', () => {
    for (const [method, path] of [['POST', '/api/v1/memory/search'], ['GET', '/memory/departments'], ['POST', '/api/chat/send-message'], ['POST', '/company-search/start']] as const) {
      expect(matchForward(method, path)?.rule).toMatchObject({ metered: true, countsQuota: true });
    }
    // No other surface is open to any access level.
    expect(FORWARD_ROUTES.filter((r) => r.anyAccess).map((r) => r.name)).toEqual(['mcp']);
  });

  it('serves health and description routes without a credential', () => {
    expect(matchForward('GET', '/api/health')).toMatchObject({ route: { upstream: 'agents' }, rule: null });
    expect(matchForward('GET', '/health')).toMatchObject({ route: { upstream: 'mcp' }, rule: null });
    expect(matchForward('GET', '/openapi.json')).toMatchObject({ route: { upstream: 'graph' }, rule: null });
  });

  it("opens deep search's live page and its stream only (the agents service checks the link's token)", () => {
    const thread = '0b8f3c52-6a43-4c1e-9b7e-2f4d5a6b7c8d';
    expect(matchForward('GET', `/service-deep-search/live/${thread}`)).toMatchObject({ route: { upstream: 'agents' }, rule: null });
    expect(matchForward('GET', `/service-deep-search/live/${thread}/events`)).toMatchObject({ route: { upstream: 'agents' }, rule: null });
    // Any id is open there: the agents service answers the same 404 for a thread id that is no UUID as for a missing one.
    for (const id of ['not-a-thread', `${thread}x`, '0'.repeat(65), '%E0%A4%A']) {
      expect(matchForward('GET', `/service-deep-search/live/${id}`)).toMatchObject({ rule: null });
      expect(matchForward('GET', `/service-deep-search/live/${id}/events`)).toMatchObject({ rule: null });
    }
    for (const p of [`/service-deep-search/live/${thread}/other`, '/service-deep-search/live', '/service-deep-search/live/', '/service-deep-search/start', `/service-deep-search/live/${thread}/events/x`]) {
      expect(matchForward('GET', p)?.rule).toMatchObject({ module: 'agents' });
    }
  });

  it('matches prefixes on segment boundaries only and owns nothing else', () => {
    expect(matchForward('GET', '/api/v1/memoryx')).toBeNull();
    expect(matchForward('GET', '/mcpx')).toBeNull();
    expect(matchForward('GET', '/internal/v1/tenants')).toBeNull();
    expect(matchForward('GET', '/api/v1/projects')).toBeNull();
  });

  it("words the gateway's answers under spec 2's whole /memory prefix as {detail}, forwarded or not; spec 1's memory API keeps the envelope", () => {
    for (const p of ['/memory', '/memory/', '/memory/nope', '/memory//departments', '/memory/departments/g1']) expect([p, errorBodyOf(p)]).toEqual([p, 'detail']);
    expect(matchForward('GET', '/memory/nope')).toBeNull();
    for (const p of ['/memoryx', '/api/v1/memory/search', '/api/v1/memoryx']) expect([p, errorBodyOf(p)]).toEqual([p, undefined]);
  });

  it('refuses paths an upstream could normalise differently', () => {
    for (const p of ['/api/v1/memory/../projects', '/api/v1//x', '/a/%2e%2e/b', '/a\\b', '/a/./b', 'relative', '/a%2fb']) expect(isAmbiguousPath(p)).toBe(true);
    expect(isAmbiguousPath('/api/v1/memory/search')).toBe(false);
  });
});

describe('upstream requests', () => {
  it('strips trust, credential and hop-by-hop headers and adds the signed identity', () => {
    const incoming: Record<string, string> = { host: 'gw', connection: 'keep-alive, x-drop', 'x-drop': '1', 'content-type': 'application/json', authorization: 'Bearer k', 'x-api-key': 'k', cookie: 'lore_api_key=k; theme=dark', 'x-lore-anything': 'x' };
    for (const h of TRUST_HEADERS) incoming[h] = 'spoofed';
    const out = upstreamHeaders(incoming, { identityToken: 'signed', requestId: 'req-1', clientAddress: '203.0.113.1', keepApiKey: false, apiKeyCookie: 'lore_api_key' });
    for (const h of TRUST_HEADERS) if (h !== 'x-lore-identity') expect(out[h]).toBeUndefined();
    expect(out['x-lore-identity']).toBe('signed');
    expect(out.authorization).toBeUndefined();
    expect(out['x-api-key']).toBeUndefined();
    expect(out['x-drop']).toBeUndefined();
    expect(out['x-lore-anything']).toBeUndefined();
    expect(out.cookie).toBe('theme=dark');
    expect(out['content-type']).toBe('application/json');
    expect(out['x-forwarded-for']).toBe('203.0.113.1');
    // The client's own X-Forwarded-Proto never passes; the gateway's finding does.
    expect(upstreamHeaders({ 'x-forwarded-proto': 'https' }, { identityToken: null, requestId: 'r', clientAddress: null, keepApiKey: false, apiKeyCookie: 'c' })['x-forwarded-proto']).toBeUndefined();
    expect(upstreamHeaders({ 'x-forwarded-proto': 'http' }, { identityToken: null, requestId: 'r', clientAddress: null, clientProto: 'https', keepApiKey: false, apiKeyCookie: 'c' })['x-forwarded-proto']).toBe('https');
    expect(upstreamHeaders({ 'x-api-key': 'k' }, { identityToken: null, requestId: 'r', clientAddress: null, keepApiKey: true, apiKeyCookie: 'c' })['x-api-key']).toBe('k');
  });

  it('drops the api-key query parameter and keeps a base path', () => {
    const target = parseUpstream('agents', 'http://agents:8000/base');
    expect(upstreamPath(target, '/api/agent/x?api-key=secret&thread_id=1')).toBe('/base/api/agent/x?thread_id=1');
    expect(upstreamPath(target, '/api/health')).toBe('/base/api/health');
    expect(parseUpstream('mcp', 'unix:/run/lore/mcp.sock')).toMatchObject({ socketPath: '/run/lore/mcp.sock', basePath: '' });
  });
});
