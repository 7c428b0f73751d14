/** Every public route the gateway serves or forwards, as the security suite exercises them. */
export interface PublicRoute {
  name: string;
  method: string;
  path: string;
  /** Where this surface expects the credential. */
  via: 'x-api-key' | 'bearer';
  module: string;
  body?: unknown;
  /** Forwarded to an upstream (the echo server in tests). */
  forwarded: boolean;
}

export function publicRoutes(ids: { projectId: string; workspaceId: string }): PublicRoute[] {
  return [
    { name: 'ping', method: 'GET', path: '/api/v1/pages/ping', via: 'x-api-key', module: 'pages', forwarded: false },
    { name: 'list workspaces', method: 'GET', path: '/api/v1/workspaces', via: 'x-api-key', module: 'workspaces', forwarded: false },
    { name: 'create workspace', method: 'POST', path: '/api/v1/workspaces', via: 'x-api-key', module: 'workspaces', body: { name: 'Extra' }, forwarded: false },
    { name: 'activate workspace', method: 'POST', path: `/api/v1/workspaces/${ids.workspaceId}/activate`, via: 'x-api-key', module: 'workspaces', forwarded: false },
    { name: 'list projects', method: 'GET', path: '/api/v1/projects', via: 'x-api-key', module: 'projects', forwarded: false },
    { name: 'create project', method: 'POST', path: '/api/v1/projects', via: 'x-api-key', module: 'projects', body: { name: 'P' }, forwarded: false },
    { name: 'get project', method: 'GET', path: `/api/v1/projects/${ids.projectId}`, via: 'x-api-key', module: 'projects', forwarded: false },
    { name: 'list webhooks', method: 'GET', path: '/api/v1/webhooks', via: 'x-api-key', module: 'webhooks', forwarded: false },
    { name: 'memory ingest', method: 'POST', path: '/api/v1/memory/ingest', via: 'x-api-key', module: 'memory', body: { content: 'x', content_type: 'text', routing: { mode: 'auto' } }, forwarded: true },
    { name: 'memory search', method: 'POST', path: '/api/v1/memory/search', via: 'x-api-key', module: 'memory', body: { query: 'x' }, forwarded: true },
    { name: 'memory search stream', method: 'POST', path: '/api/v1/memory/search/stream', via: 'x-api-key', module: 'memory', body: { query: 'x' }, forwarded: true },
    { name: 'memory uploads', method: 'POST', path: '/api/v1/memory/uploads', via: 'x-api-key', module: 'memory', body: { file: 'x' }, forwarded: true },
    { name: 'graph departments', method: 'GET', path: '/memory/departments', via: 'bearer', module: 'graph', forwarded: true },
    { name: 'graph chat', method: 'POST', path: '/memory/chat', via: 'bearer', module: 'graph', body: { listId: 'l', question: 'q' }, forwarded: true },
    { name: 'core chat sessions', method: 'GET', path: '/api/chat/get-user-chat-sessions', via: 'bearer', module: 'chat', forwarded: true },
    { name: 'core connectors', method: 'GET', path: '/api/manage/admin/connector/status', via: 'bearer', module: 'connectors', forwarded: true },
    { name: 'agents company search', method: 'POST', path: '/company-search/start', via: 'bearer', module: 'agents', body: { prompt: 'x' }, forwarded: true },
    { name: 'agents workflow', method: 'GET', path: '/api/workflow/list', via: 'bearer', module: 'agents', forwarded: true },
    { name: 'mcp', method: 'POST', path: '/mcp', via: 'x-api-key', module: 'mcp', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, forwarded: true },
  ];
}

export function credentialHeaders(route: PublicRoute, key: string): Record<string, string> {
  return route.via === 'x-api-key' ? { 'x-api-key': key } : { authorization: `Bearer ${key}` };
}

/** The same key in a header this surface does not read. */
export function wrongHeader(route: PublicRoute, key: string): Record<string, string> {
  return route.via === 'x-api-key' ? { authorization: `Bearer ${key}` } : { 'x-api-token': key, 'api-key': key };
}

/** One character of the body changed: the checksum no longer matches. */
export function mistype(key: string): string {
  const i = key.length - 10;
  const c = key[i] === 'a' ? 'b' : 'a';
  return key.slice(0, i) + c + key.slice(i + 1);
}

export function otherModule(module: string): string {
  return module === 'pages' ? 'projects' : 'pages';
}
