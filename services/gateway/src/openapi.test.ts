import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Router from '@koa/router';
import { openApiPath, validateOpenApiDocument } from '@lore/runtime';
import { documentedGatewayOpenApi, publicRouteTable, type PublicRouteDeps } from './app';
import type { GatewayRequestState } from './http/state';

type Operation = { operationId: string; security?: unknown[]; parameters?: Array<{ name: string; in: string }>; requestBody?: unknown; responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema?: unknown }> }> };
type Doc = { paths: Record<string, Record<string, Operation>> };

const doc = () => documentedGatewayOpenApi() as unknown as Doc;
const operations = (d: Doc) => Object.entries(d.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, method, path, op })));

describe('the gateway\'s OpenAPI document', () => {
  it('is committed as generated (npm run openapi -w @lore/gateway)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc())));
  });

  it('is valid OpenAPI 3.1', async () => {
    expect(await validateOpenApiDocument(doc())).toEqual({ valid: true, errors: [] });
  });

  it('documents exactly the routes the table mounts', () => {
    const never = (): never => {
      throw new Error('not called');
    };
    const inert: unknown = new Proxy(never, { get: () => inert, apply: () => inert });
    const router = new Router<GatewayRequestState>();
    publicRouteTable(inert as PublicRouteDeps, { bodyLimitBytes: 1 }).mount(router);
    const mounted = router.stack.flatMap((l) => l.methods.filter((m) => m !== 'HEAD').map((m) => `${m.toLowerCase()} ${openApiPath(String(l.path))}`));
    const documented = operations(doc()).map((o) => o.key);
    expect(mounted.sort()).toEqual(documented.sort());
  });

  it('documents the webhook routes, the served document and the spec 2 identity routes', () => {
    const keys = operations(doc()).map((o) => o.key);
    // docs/webhooks.md lists ten routes (the issue that found them undocumented counted eleven).
    expect(keys.filter((k) => k.includes('/api/v1/webhooks')).sort()).toEqual([
      'delete /api/v1/webhooks/{webhook_id}', 'get /api/v1/webhooks', 'get /api/v1/webhooks/{webhook_id}', 'get /api/v1/webhooks/{webhook_id}/dead-letters',
      'get /api/v1/webhooks/{webhook_id}/deliveries', 'get /api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}', 'patch /api/v1/webhooks/{webhook_id}',
      'post /api/v1/webhooks', 'post /api/v1/webhooks/{webhook_id}/dead-letters/replay', 'post /api/v1/webhooks/{webhook_id}/rotate-secret',
    ]);
    expect(keys).toEqual(expect.arrayContaining(['get /api/v1/openapi.json', 'post /api/auth/refresh', 'post /api/password/change-password', 'post /api/password/reset_password', 'post /api/v1/oauth/token']));
  });

  it('declares the answers the specs fix', () => {
    const d = doc();
    const op = (method: string, path: string) => d.paths[path]![method]!;
    // Spec 2: refresh answers 200, 400 without the cookie, 401 and 500, and reads the refresh_token cookie.
    expect(Object.keys(op('post', '/api/auth/refresh').responses).sort()).toEqual(['200', '400', '401', '500']);
    expect(op('post', '/api/auth/refresh').parameters).toEqual([expect.objectContaining({ name: 'refresh_token', in: 'cookie' })]);
    // Spec 1: key management answers 404 to an API key.
    for (const [method, path] of [['get', '/api/v1/api-keys'], ['post', '/api/v1/api-keys/{key_id}/rotate'], ['delete', '/api/v1/api-keys/{key_id}']] as const) {
      expect(op(method, path).responses['404']).toBeDefined();
    }
    // The served document is open; the token endpoint too; the API takes a credential.
    expect(op('get', '/api/v1/openapi.json').security).toEqual([]);
    expect(op('post', '/api/v1/oauth/token').security).toEqual([]);
    expect(op('get', '/api/v1/pages/ping').security).toEqual([{ apiKey: [] }, { oauth2: [] }]);
    for (const { key, op: o } of operations(d)) {
      // Every body route may answer 413; every 429 carries Retry-After and the RateLimit fields where a credential is limited.
      if (o.requestBody) expect({ key, has413: o.responses['413'] !== undefined }).toEqual({ key, has413: true });
      const limited = o.responses['429'];
      if (limited && !key.includes('/oauth/token') && !key.includes('/api/auth/login')) {
        expect({ key, headers: Object.keys(limited.headers ?? {}).sort() }).toEqual({ key, headers: ['RateLimit-Limit', 'RateLimit-Policy', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'] });
      }
    }
    // A credential's success answers carry the RateLimit fields; the open routes' do not.
    expect(Object.keys(op('get', '/api/v1/pages/ping').responses['200']!.headers ?? {}).sort()).toEqual(['RateLimit-Limit', 'RateLimit-Policy', 'RateLimit-Remaining', 'RateLimit-Reset']);
    expect(op('post', '/api/password/change-password').responses['200']!.headers).toBeDefined();
    expect(op('post', '/api/auth/login').responses['200']!.headers).toEqual({ 'Set-Cookie': expect.anything() });
    expect(op('get', '/api/v1/openapi.json').responses['200']!.headers).toBeUndefined();
    // Spec 2's password routes keep their `detail` shape for the reader's refusals too.
    expect(op('post', '/api/password/change-password').responses['413']!.content!['application/json']!.schema).toMatchObject({ properties: { detail: { type: 'string' } } });
  });
});
