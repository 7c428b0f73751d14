import type { UpstreamName } from '../config';
import type { Module } from '../domain/scope';
import { matchForward } from './route-table';

/**
 * Every public path that specs 2 and 3 name, with the surface that must receive it. The list is written out (the
 * spec documents are not part of the repository); each block cites the section it was copied from, with the
 * placeholders filled in. Core routes are given relative to the core service's base path `/api` (spec 2,
 * "Versioning" 1), so `/chat/...` is `/api/chat/...`.
 */
type Expect = { upstream: UpstreamName; module: Module | null };
const core = (module: Module): Expect => ({ upstream: 'core', module });
const graph: Expect = { upstream: 'graph', module: 'graph' };
const agents: Expect = { upstream: 'agents', module: 'agents' };
const open = (upstream: UpstreamName): Expect => ({ upstream, module: null });

const SPEC_2: Array<[string, string, Expect]> = [
  // Spec 2, "Chat and password routes (core service)" (the password routes are the gateway's own, below).
  ['GET', '/api/chat/get-user-chat-sessions', core('chat')],
  ['PUT', '/api/chat/update-chat-session-temperature', core('chat')],
  ['PUT', '/api/chat/update-chat-session-model', core('chat')],
  ['GET', '/api/chat/get-chat-session/0b7d3f2e-1c7a-4c55-9a43-9c1b1f1d2e3a', core('chat')],
  ['POST', '/api/chat/create-chat-session', core('chat')],
  ['PUT', '/api/chat/rename-chat-session', core('chat')],
  ['PATCH', '/api/chat/chat-session/0b7d3f2e-1c7a-4c55-9a43-9c1b1f1d2e3a', core('chat')],
  ['DELETE', '/api/chat/delete-all-chat-sessions', core('chat')],
  ['DELETE', '/api/chat/delete-chat-session/0b7d3f2e-1c7a-4c55-9a43-9c1b1f1d2e3a', core('chat')],
  ['POST', '/api/chat/send-message', core('chat')],
  ['POST', '/api/chat/send-chat-message', core('chat')],
  ['PUT', '/api/chat/set-message-as-latest', core('chat')],
  ['POST', '/api/chat/create-chat-message-feedback', core('chat')],
  ['DELETE', '/api/chat/remove-chat-message-feedback', core('chat')],
  ['GET', '/api/chat/max-selected-document-tokens', core('chat')],
  ['GET', '/api/chat/available-context-tokens/0b7d3f2e-1c7a-4c55-9a43-9c1b1f1d2e3a', core('chat')],
  ['POST', '/api/chat/seed-chat-session', core('chat')],
  // Spec 2, "Enterprise connector routes (core service)".
  ['GET', '/api/manage/admin/connector/status', core('connectors')],
  ['GET', '/api/manage/admin/connector', core('connectors')],
  ['POST', '/api/manage/admin/connector', core('connectors')],
  ['GET', '/api/manage/admin/cc-pair/7', core('connectors')],
  // Spec 2, "Knowledge-graph routes (memory service)".
  ['GET', '/memory/departments', graph],
  ['GET', '/memory/departments/g_1', graph],
  ['POST', '/memory/departments/create', graph],
  ['POST', '/memory/upload', graph],
  ['POST', '/memory/ingest/connectors', graph],
  ['POST', '/memory/generate', graph],
  ['POST', '/memory/chat', graph],
  // Lore's own: a knowledge-graph job's status (docs/memory.md, "Knowledge graphs").
  ['GET', '/memory/jobs/gj_1', graph],
  // Spec 2, "Versioning" 2: the knowledge-graph service's own description, without a credential.
  ['GET', '/openapi.json', open('graph')],
];

const SPEC_3: Array<[string, string, Expect]> = [
  // Spec 3, "Company search".
  ['POST', '/company-search/start', agents],
  ['POST', '/company-search/continue', agents],
  ['GET', '/company-search/status/t_1', agents],
  ['POST', '/company-search/stop/t_1', agents],
  ['POST', '/company-search/start-enrichment', agents],
  ['POST', '/company-search/stop-enrichment/t_1', agents],
  ['GET', '/company-search/getLists', agents],
  ['GET', '/company-search/getSearchResult/t_1', agents],
  // Spec 3, "People search".
  ['POST', '/people-search/start', agents],
  ['POST', '/people-search/continue', agents],
  ['GET', '/people-search/status/t_1', agents],
  ['POST', '/people-search/stop/t_1', agents],
  ['POST', '/people-search/start-enrichment', agents],
  ['POST', '/people-search/stop-enrichment/t_1', agents],
  // Spec 3, "Deep search", with its progress websocket.
  ['POST', '/service-deep-search/start', agents],
  ['POST', '/service-deep-search/upload', agents],
  ['GET', '/api/service-deep-search/ws/t_1', agents],
  // Spec 3, "Web research" and "Agentic crawler", with their websockets.
  ['POST', '/webandreasearch/start', agents],
  ['GET', '/api/agent/web-and-research', agents],
  ['POST', '/agentic-crawler/start', agents],
  ['GET', '/api/agent/agentic-crawler', agents],
  // Spec 3, "Deep research".
  ['POST', '/research/start', agents],
  ['GET', '/research/stream/t_1', agents],
  ['GET', '/research/status/t_1', agents],
  ['GET', '/research/active', agents],
  ['POST', '/research/respond/t_1', agents],
  ['DELETE', '/research/stop/t_1', agents],
  // Spec 3, "Generic workflow API".
  ['POST', '/api/workflow/start', agents],
  ['POST', '/api/workflow/continue', agents],
  ['GET', '/api/workflow/status/t_1', agents],
  ['GET', '/api/workflow/threads', agents],
  ['GET', '/api/workflow/restore/l_1', agents],
  ['POST', '/api/workflow/stop/t_1', agents],
  ['POST', '/api/workflow/remove-criteria', agents],
  ['POST', '/api/workflow/people/start', agents],
  ['POST', '/api/workflow/people/continue', agents],
  ['GET', '/api/workflow/people/status/t_1', agents],
  ['GET', '/api/workflow/people/threads', agents],
  ['POST', '/api/workflow/people/stop/t_1', agents],
  ['POST', '/api/workflow/people/remove-criteria', agents],
  // Spec 3, "CSV import".
  ['POST', '/api/lists/csv/upload', agents],
  ['POST', '/api/lists/csv/review/t_1', agents],
  ['GET', '/api/lists/csv/status/t_1', agents],
  ['GET', '/api/lists/csv/restore/l_1', agents],
  // Spec 3, "Utility and seed routes" (health, routing health and the root description are open).
  ['GET', '/api/health', open('agents')],
  ['POST', '/api/service-routing/route', agents],
  ['GET', '/api/service-routing/health', open('agents')],
  ['GET', '/api/stream/active-streams', agents],
  ['GET', '/api/stream/stream-status/lore:stream:1', agents],
  ['POST', '/api/company/companyOverview', agents],
  ['POST', '/api/company/companyOverview/html', agents],
  ['POST', '/api/seed/start/company', agents],
  ['POST', '/api/seed/start/people', agents],
  ['GET', '/api/seed/status', agents],
  ['DELETE', '/api/seed/status', agents],
  ['GET', '/', open('agents')],
  // Spec 3, "Tool server (MCP)": the endpoint takes x-api-key, liveness is open.
  ['POST', '/mcp', { upstream: 'mcp', module: 'mcp' }],
  ['GET', '/health', open('mcp')],
];

describe('forwarding table against specs 2 and 3', () => {
  it.each([...SPEC_2, ...SPEC_3])('%s %s reaches its surface', (method, path, expected) => {
    const match = matchForward(method, path);
    expect({ upstream: match?.route.upstream ?? null, module: match?.rule ? match.rule.module : null }).toEqual(expected);
  });

  it('keeps the gateway\'s own identity routes of spec 2 off the forwarding table', () => {
    // Spec 2 "Authentication" 4 and the password routes: the gateway serves them itself (docs/gateway.md).
    for (const path of ['/api/auth/refresh', '/api/password/change-password', '/api/password/reset_password']) expect(matchForward('POST', path)).toBeNull();
  });

  it('keeps the gateway\'s own user-group routes under /api/manage off the forwarding table, whatever the method', () => {
    for (const method of ['GET', 'POST', 'PATCH', 'PUT', 'DELETE']) {
      for (const path of ['/api/manage/admin/user-group', '/api/manage/admin/user-group/7', '/api/manage/admin/user-group/7/x']) expect(matchForward(method, path)).toBeNull();
    }
    // The rest of /api/manage is core's, a path that merely begins alike too.
    expect(matchForward('GET', '/api/manage/admin/user-groups')?.route.upstream).toBe('core');
    expect(matchForward('GET', '/api/manage/admin/connector/status')?.route.upstream).toBe('core');
  });

  it('lets the websocket routes take the key from the api-key query parameter (spec 3, "Authentication" 2)', () => {
    for (const path of ['/api/service-deep-search/ws/t_1', '/api/agent/web-and-research', '/api/agent/agentic-crawler']) {
      expect(matchForward('GET', path)?.rule?.sources).toContain('query');
    }
  });
});
