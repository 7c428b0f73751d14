import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiPath, validateOpenApiDocument } from '@lore/runtime';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from './harness';

jest.setTimeout(120_000);

type Operation = {
  operationId: string;
  security?: unknown[];
  parameters?: Array<{ name: string; in: string; schema?: { pattern?: string } }>;
  requestBody?: { content: Record<string, unknown> };
};
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

const PASSWORD = 'a long enough password';
const BODY_LIMIT = 64 * 1024;

describe('the gateway\'s served OpenAPI document and its body reader', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let t: TenantFixture;
  let session: string;

  beforeAll(async () => {
    database = await freshDatabase('lore_gwdoc');
    g = await startGateway(database, { bodyLimitBytes: BODY_LIMIT }, { redisPrefix: `gwdoc:${uid()}:` });
    t = await makeTenant(g);
    const email = `admin-${uid()}@example.test`;
    expect((await adminCall(g, 'POST', `/internal/v1/tenants/${t.tenantId}/users`, { email, password: PASSWORD, role: 'admin' })).status).toBe(201);
    const signedIn = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } });
    expect(signedIn.status).toBe(200);
    session = signedIn.json.token;
  });
  afterAll(async () => {
    await g?.close();
    await database?.drop();
  });

  const served = async (): Promise<Doc> => {
    const r = await http(g.publicUrl, 'GET', '/api/v1/openapi.json');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    return r.json as Doc;
  };

  describe('GET /api/v1/openapi.json', () => {
    it('is served without a credential, valid OpenAPI 3.1, and equal to the committed copy', async () => {
      const doc = await served();
      expect(doc.openapi).toBe('3.1.0');
      expect(await validateOpenApiDocument(doc)).toEqual({ valid: true, errors: [] });
      const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', 'services', 'gateway', 'openapi.json'), 'utf8')) as unknown;
      expect(doc).toEqual(committed);
    });

    it('documents every route the public listener registers, and nothing else', async () => {
      type Layer = { path: string; methods: string[] };
      const mounted = g.gateway.publicApp.middleware.find((m) => 'router' in m) as unknown as { router: { stack: Layer[] } };
      const registered = mounted.router.stack.flatMap((l) => l.methods.filter((m) => m !== 'HEAD').map((m) => `${m.toLowerCase()} ${openApiPath(l.path)}`));
      const doc = await served();
      const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`));
      expect(registered.length).toBeGreaterThan(25);
      expect(registered.sort()).toEqual(documented.sort());
    });

    it('is not served on a memory\'s own hostname, nor outside /api/v1', async () => {
      const host = `doc-${uid()}.example.test`;
      expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${t.tenantId}/memories/m-${uid()}`, { name: 'm', hostname: host })).status).toBe(200);
      expect((await http(g.publicUrl, 'GET', '/api/v1/openapi.json', { headers: { host } })).status).toBe(404);
      // No graph upstream here: the graph's own /openapi.json is not the gateway's to answer.
      expect((await http(g.publicUrl, 'GET', '/openapi.json')).status).toBe(404);
      expect((await http(g.publicUrl, 'GET', '/api/openapi.json')).status).toBe(404);
    });
  });

  it('answers another method on a route of its own with 405 and the methods the path has in Allow', async () => {
    const cases = [['PUT', '/api/v1/workspaces', 'HEAD, GET, POST'], ['DELETE', '/api/v1/pages/ping', 'HEAD, GET'], ['GET', '/api/v1/oauth/token', 'POST'], ['POST', '/api/v1/openapi.json', 'HEAD, GET']] as const;
    for (const [method, path, allow] of cases) {
      const r = await http(g.publicUrl, method, path, { headers: { 'x-api-key': t.key } });
      expect({ method, path, status: r.status, allow: r.headers.allow, code: r.json?.error?.code }).toEqual({ method, path, status: 405, allow, code: 'METHOD_NOT_ALLOWED' });
    }
    // A path nothing serves or forwards stays an unknown route.
    const unknown = await http(g.publicUrl, 'PUT', '/api/v1/no-such-route', { headers: { 'x-api-key': t.key } });
    expect({ status: unknown.status, code: unknown.json?.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
  });

  describe('every route that reads a body', () => {
    /** The routes of the served document that take a body, with the credential each one asks for. */
    async function bodyRoutes(): Promise<Array<{ name: string; method: string; path: string; headers: Record<string, string>; shape: 'envelope' | 'detail' | 'rfc' }>> {
      const doc = await served();
      const out = [];
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          if (!op.requestBody) continue;
          const security = JSON.stringify(op.security ?? []);
          const headers: Record<string, string> = security.includes('apiKey') ? { 'x-api-key': t.key } : security.includes('portalSession') ? { authorization: `Bearer ${session}` } : {};
          // Spec 2's routes (the password routes, the user groups under /api/manage) answer in its `detail` shape.
          const shape = path.startsWith('/api/password/') || path.startsWith('/api/manage/') ? 'detail' : path === '/api/v1/oauth/token' ? 'rfc' : 'envelope';
          // Bodies are read after the guards and the path's check and before the handler, so any id of the path's
          // form will do: an integer where the path takes one.
          const integerIds = new Set((op.parameters ?? []).filter((p) => p.in === 'path' && p.schema?.pattern?.includes('\\d')).map((p) => p.name));
          const filled = path.replace(/\{([^}]+)\}/g, (_m, name: string) => (integerIds.has(name) ? '1' : 'x_1'));
          out.push({ name: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path: filled, headers, shape } as const);
        }
      }
      return out;
    }

    const json = (text: string | Buffer) => ({ raw: text, type: 'application/json' });
    const cases: Array<[string, { raw: string | Buffer; type: string }, number, RegExp]> = [
      ['a NUL character', json('{"name":"a\\u0000b"}'), 400, /NUL/],
      ['a lone surrogate', json('{"name":"a\\ud800"}'), 400, /surrogate/],
      ['invalid UTF-8', json(Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')])), 400, /UTF-8/],
      ['a body over the limit', json(JSON.stringify({ name: 'x'.repeat(BODY_LIMIT + 1024) })), 413, /exceeds/],
    ];

    it('covers the routes it should', async () => {
      const names = (await bodyRoutes()).map((r) => r.name);
      expect(names.sort()).toEqual([
        'PATCH /api/manage/admin/user-group/{group_id}', 'PATCH /api/v1/webhooks/{webhook_id}', 'POST /api/auth/login', 'POST /api/manage/admin/user-group',
        'POST /api/password/change-password', 'POST /api/password/reset_password',
        'POST /api/v1/api-keys', 'POST /api/v1/api-keys/{key_id}/rotate', 'POST /api/v1/oauth-clients', 'POST /api/v1/oauth/token', 'POST /api/v1/projects',
        'POST /api/v1/webhooks', 'POST /api/v1/webhooks/{webhook_id}/dead-letters/replay', 'POST /api/v1/webhooks/{webhook_id}/rotate-secret', 'POST /api/v1/workspaces',
      ]);
    });

    it.each(cases)('refuses %s on every body route with the status and shape the route declares', async (_what, body, status, words) => {
      for (const r of await bodyRoutes()) {
        const res = await http(g.publicUrl, r.method, r.path, { headers: { ...r.headers, 'content-type': body.type }, raw: body.raw });
        // The OAuth token endpoint answers RFC 6749's invalid_request for a body it cannot read; a body over the
        // limit has no RFC code, so it gets the gateway's envelope like everywhere else.
        const shape = r.shape === 'rfc' && status === 413 ? 'envelope' : r.shape;
        const message =
          shape === 'envelope' ? res.json?.error?.message : shape === 'detail' ? res.json?.detail : res.json?.error === 'invalid_request' ? res.json.error_description : undefined;
        const code = shape === 'envelope' ? res.json?.error?.code : undefined;
        expect({ route: r.name, status: res.status, message: typeof message === 'string' && words.test(message) }).toEqual({ route: r.name, status, message: true });
        if (shape === 'envelope') {
          expect({ route: r.name, code, request_id: typeof res.json.error.request_id }).toEqual({ route: r.name, code: status === 413 ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST', request_id: 'string' });
        }
      }
    });

    it('answers 413 (not 400) for an oversized token request, form-encoded too', async () => {
      const res = await http(g.publicUrl, 'POST', '/api/v1/oauth/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        raw: `grant_type=client_credentials&scope=${'x'.repeat(20 * 1024)}`,
      });
      expect(res.status).toBe(413);
      expect(res.json.error.code).toBe('PAYLOAD_TOO_LARGE');
    });
  });
});
