/**
 * Where a route takes its credential:
 * - `x-api-key`: the gateway API (keys and OAuth access tokens in `x-api-key`);
 * - `bearer`: forwarded surfaces that read `Authorization: Bearer <key, token or session>`;
 * - `session`: portal routes (key and OAuth-client management) that take only a signed-in user's session JWT;
 * - `client`: the OAuth token endpoint, where the credential is the client's id and secret (HTTP Basic).
 */
export type Via = 'x-api-key' | 'bearer' | 'session' | 'client';

/** Every public route the gateway serves or forwards, as the security suite exercises them. */
export interface PublicRoute {
  name: string;
  method: string;
  path: string;
  via: Via;
  module: string;
  body?: unknown;
  /** A raw body with its content type (form-encoded token requests). */
  raw?: { contentType: string; text: string };
  /** Forwarded to an upstream (the echo server in tests). */
  forwarded: boolean;
  /**
   * The path or body names a resource of the world the route was built for (a project, webhook, delivery, key,
   * OAuth client, workspace): built from another tenant's ids, the call must answer 404.
   */
  namesResource: boolean;
  /** Spec 2's password routes and the user-group routes: errors are `{ detail }`, not the gateway's error object. */
  detailErrors?: boolean;
  /**
   * Served by the gateway itself for administrators only, whatever the credential: a member's session and an OAuth
   * token (an integration) are refused by role (403), as on core's `/api/manage` routes.
   */
  adminOnly?: boolean;
}

/** The resources of one tenant that routes name. "Spare" ones exist to be consumed (deleted, rotated) once. */
export interface WorldIds {
  projectId: string;
  workspaceId: string;
  webhookId: string;
  spareWebhookId: string;
  deliveryId: string;
  spareKeyIds: { rotate: string; revoke: string };
  spareOauthClientId: string;
  /** A user of the tenant whose password an administrator may reset. */
  resettableEmail: string;
  /** User groups (integer ids): one to read and change, a spare to delete. */
  groupId: number;
  spareGroupId: number;
}

export const WEBHOOK_URL = 'https://hooks.example.com/lore';
/** The password of every user the suite creates. */
export const PASSWORD = 'a long enough password';

export function publicRoutes(ids: WorldIds): PublicRoute[] {
  const wh = `/api/v1/webhooks/${ids.webhookId}`;
  const api = (name: string, method: string, path: string, module: string, extra: Partial<PublicRoute> = {}): PublicRoute => ({
    name, method, path, via: 'x-api-key', module, forwarded: false, namesResource: false, ...extra,
  });
  const session = (name: string, method: string, path: string, extra: Partial<PublicRoute> = {}): PublicRoute => ({
    name, method, path, via: 'session', module: 'portal', forwarded: false, namesResource: false, ...extra,
  });
  /** The gateway's own routes under spec 2's /api/manage: any /api/manage credential, of an administrator. */
  const manage = (name: string, method: string, path: string, extra: Partial<PublicRoute> = {}): PublicRoute => ({
    name, method, path, via: 'bearer', module: 'connectors', forwarded: false, namesResource: false, detailErrors: true, adminOnly: true, ...extra,
  });
  const group = `/api/manage/admin/user-group/${ids.groupId}`;
  return [
    api('ping', 'GET', '/api/v1/pages/ping', 'pages'),
    api('list workspaces', 'GET', '/api/v1/workspaces', 'workspaces'),
    api('create workspace', 'POST', '/api/v1/workspaces', 'workspaces', { body: { name: 'Extra' } }),
    api('activate workspace', 'POST', `/api/v1/workspaces/${ids.workspaceId}/activate`, 'workspaces', { namesResource: true }),
    api('list projects', 'GET', '/api/v1/projects', 'projects'),
    api('create project', 'POST', '/api/v1/projects', 'projects', { body: { name: 'P' } }),
    api('get project', 'GET', `/api/v1/projects/${ids.projectId}`, 'projects', { namesResource: true }),
    api('create webhook', 'POST', '/api/v1/webhooks', 'webhooks', { body: { url: WEBHOOK_URL, events: ['memory.ingest.completed'] } }),
    api('list webhooks', 'GET', '/api/v1/webhooks', 'webhooks'),
    api('get webhook', 'GET', wh, 'webhooks', { namesResource: true }),
    // `enabled: true` is also how a disabled endpoint is re-enabled.
    api('update webhook', 'PATCH', wh, 'webhooks', { body: { description: 'updated', enabled: true }, namesResource: true }),
    api('delete webhook', 'DELETE', `/api/v1/webhooks/${ids.spareWebhookId}`, 'webhooks', { namesResource: true }),
    api('rotate webhook secret', 'POST', `${wh}/rotate-secret`, 'webhooks', { body: { overlap_seconds: 60 }, namesResource: true }),
    api('list webhook deliveries', 'GET', `${wh}/deliveries`, 'webhooks', { namesResource: true }),
    api('get webhook delivery', 'GET', `${wh}/deliveries/${ids.deliveryId}`, 'webhooks', { namesResource: true }),
    api('list dead letters', 'GET', `${wh}/dead-letters`, 'webhooks', { namesResource: true }),
    api('replay dead letters', 'POST', `${wh}/dead-letters/replay`, 'webhooks', { body: { delivery_ids: [ids.deliveryId] }, namesResource: true }),
    api('memory ingest', 'POST', '/api/v1/memory/ingest', 'memory', { body: { content: 'x', content_type: 'text', routing: { mode: 'auto' } }, forwarded: true }),
    api('memory search', 'POST', '/api/v1/memory/search', 'memory', { body: { query: 'x' }, forwarded: true }),
    api('memory search stream', 'POST', '/api/v1/memory/search/stream', 'memory', { body: { query: 'x' }, forwarded: true }),
    api('memory retrieve', 'POST', '/api/v1/memory/retrieve', 'memory', { body: { query: 'x' }, forwarded: true }),
    api('memory uploads', 'POST', '/api/v1/memory/uploads', 'memory', { body: { file: 'x' }, forwarded: true }),
    { name: 'graph departments', method: 'GET', path: '/memory/departments', via: 'bearer', module: 'graph', forwarded: true, namesResource: false },
    { name: 'graph chat', method: 'POST', path: '/memory/chat', via: 'bearer', module: 'graph', body: { listId: 'l', question: 'q' }, forwarded: true, namesResource: false },
    { name: 'core chat sessions', method: 'GET', path: '/api/chat/get-user-chat-sessions', via: 'bearer', module: 'chat', forwarded: true, namesResource: false },
    { name: 'core connectors', method: 'GET', path: '/api/manage/admin/connector/status', via: 'bearer', module: 'connectors', forwarded: true, namesResource: false },
    { name: 'agents company search', method: 'POST', path: '/company-search/start', via: 'bearer', module: 'agents', body: { prompt: 'x' }, forwarded: true, namesResource: false },
    { name: 'agents workflow', method: 'GET', path: '/api/workflow/list', via: 'bearer', module: 'agents', forwarded: true, namesResource: false },
    api('mcp', 'POST', '/mcp', 'mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, forwarded: true }),
    api('mcp close session', 'DELETE', '/mcp', 'mcp', { forwarded: true }),
    session('list api keys', 'GET', '/api/v1/api-keys'),
    session('create api key', 'POST', '/api/v1/api-keys', { body: { type: 'live', name: 'matrix', workspace_id: ids.workspaceId, project_id: ids.projectId }, namesResource: true }),
    session('get api key', 'GET', `/api/v1/api-keys/${ids.spareKeyIds.rotate}`, { namesResource: true }),
    session('rotate api key', 'POST', `/api/v1/api-keys/${ids.spareKeyIds.rotate}/rotate`, { body: { overlap_seconds: 0 }, namesResource: true }),
    session('revoke api key', 'DELETE', `/api/v1/api-keys/${ids.spareKeyIds.revoke}`, { namesResource: true }),
    session('list oauth clients', 'GET', '/api/v1/oauth-clients'),
    session('create oauth client', 'POST', '/api/v1/oauth-clients', { body: { name: 'matrix', scopes: ['pages:read'], workspace_id: ids.workspaceId, project_id: ids.projectId }, namesResource: true }),
    session('revoke oauth client', 'DELETE', `/api/v1/oauth-clients/${ids.spareOauthClientId}`, { namesResource: true }),
    // Spec 2's password routes. Changing a password ends the sessions of the account, so the suite's sanity call
    // of this route uses a session of its own (see the suite).
    session('change password', 'POST', '/api/password/change-password', { body: { old_password: PASSWORD, new_password: 'a different long password' }, detailErrors: true }),
    session('reset password', 'POST', '/api/password/reset_password', { body: { user_email: ids.resettableEmail }, namesResource: true, detailErrors: true }),
    manage('list user groups', 'GET', '/api/manage/admin/user-group'),
    manage('create user group', 'POST', '/api/manage/admin/user-group', { body: { name: `matrix ${ids.groupId}` } }),
    manage('get user group', 'GET', group, { namesResource: true }),
    manage('update user group', 'PATCH', group, { body: { name: `matrix renamed ${ids.groupId}` }, namesResource: true }),
    manage('delete user group', 'DELETE', `/api/manage/admin/user-group/${ids.spareGroupId}`, { namesResource: true }),
    {
      name: 'oauth token', method: 'POST', path: '/api/v1/oauth/token', via: 'client', module: 'oauth', forwarded: false, namesResource: false,
      raw: { contentType: 'application/x-www-form-urlencoded', text: 'grant_type=client_credentials' },
    },
  ];
}

/** The credentials of one tenant, one per kind of route. */
export interface Credentials {
  /** A ck_ key (x-api-key and bearer routes). */
  key: string;
  /** An administrator's session JWT (session routes). */
  session: string;
  /** An OAuth client's id and secret (the token endpoint). */
  client: { id: string; secret: string };
}

export function basic(client: { id: string; secret: string }): string {
  return `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`;
}

/** The headers that carry `secret` the way this route expects its credential. */
export function credentialHeaders(route: PublicRoute, secret: string): Record<string, string> {
  if (route.via === 'x-api-key') return { 'x-api-key': secret };
  if (route.via === 'client') return { authorization: secret };
  return { authorization: `Bearer ${secret}` };
}

/** The route's own credential out of a tenant's set. */
export function credentialOf(route: PublicRoute, c: Credentials): string {
  if (route.via === 'session') return c.session;
  if (route.via === 'client') return basic(c.client);
  return c.key;
}

/** The same credential in a header this surface does not read. */
export function wrongHeader(route: PublicRoute, secret: string): Record<string, string> {
  if (route.via === 'x-api-key') return { authorization: `Bearer ${secret}` };
  // A session route seeing any x-api-key answers 404 (key management is invisible to API keys), so the wrong
  // places for a session are ones nothing reads: a cookie and a made-up header.
  if (route.via === 'session') return { cookie: `session=${secret}`, 'x-session-token': secret };
  if (route.via === 'client') return { 'x-api-key': secret, 'proxy-authorization': secret };
  return { 'x-api-token': secret, 'api-key': secret };
}

/** One character of the body changed: the checksum (or a JWT's signature) no longer matches. */
export function mistype(key: string): string {
  const i = key.length - 10;
  const c = key[i] === 'a' ? 'b' : 'a';
  return key.slice(0, i) + c + key.slice(i + 1);
}

export function otherModule(module: string): string {
  return module === 'pages' ? 'projects' : 'pages';
}
