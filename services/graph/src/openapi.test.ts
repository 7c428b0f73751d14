import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Router from '@koa/router';
import { createLogger, createMetricsRegistry, openApiPath, validateOpenApiDocument, type IdentitySigner } from '@lore/runtime';
import { createGraphApp, documentedGraphOpenApi } from './app';
import type { MemoryDeps } from './application/context';

type Operation = {
  operationId: string;
  security?: unknown[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
};
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

const doc = () => documentedGraphOpenApi() as unknown as Doc;
const operations = (d: Doc) => Object.entries(d.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, op })));

/** The graph-internal routes (core's connectors), which the gateway never forwards. */
const INTERNAL_ROUTES = ['post /internal/v1/connector-documents', 'post /internal/v1/connector-documents/delete'];

/** The memory routes that read a JSON body, and the internal ones. */
const JSON_BODY_ROUTES = [
  ...INTERNAL_ROUTES,
  'patch /api/v1/memory/vaults/{vault_id}',
  'post /api/v1/memory/contradictions/{contradiction_id}/resolve',
  'post /api/v1/memory/ingest',
  'post /api/v1/memory/retrieve',
  'post /api/v1/memory/review/{doc_id}/file',
  'post /api/v1/memory/search',
  'post /api/v1/memory/search/stream',
  'post /api/v1/memory/vaults',
  // Spec 2's knowledge-graph routes.
  'post /memory/departments/create',
  'post /memory/ingest/connectors',
  'post /memory/generate',
  'post /memory/chat',
];

describe('the graph\'s OpenAPI document', () => {
  it('is committed as generated (node --conditions=lore-src --import tsx services/graph/src/cli/write-openapi.ts)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc())));
  });

  it('is valid OpenAPI 3.1', async () => {
    const d = doc();
    expect(d.openapi).toBe('3.1.0');
    expect(await validateOpenApiDocument(d)).toEqual({ valid: true, errors: [] });
  });

  it('documents exactly the routes the graph\'s app registers', () => {
    // The real app, with dependencies that are never called: registering routes only reads their declarations.
    const inert: unknown = new Proxy(() => inert, { get: () => inert, apply: () => inert });
    const app = createGraphApp({
      memory: inert as MemoryDeps,
      signer: inert as IdentitySigner,
      logger: createLogger({ level: 'silent', service: 'graph-openapi-test' }),
      metrics: createMetricsRegistry('graph-openapi-test', { defaultMetrics: false }),
      bodyLimitBytes: 1,
    });
    const routers = app.middleware.filter((m) => 'router' in m).map((m) => (m as unknown as { router: Router }).router);
    expect(routers).toHaveLength(1);
    const mounted = routers[0]!.stack.flatMap((l) => l.methods.filter((m) => m !== 'HEAD').map((m) => `${m.toLowerCase()} ${openApiPath(String(l.path))}`));
    const documented = operations(doc()).map((o) => o.key);
    expect(mounted.length).toBeGreaterThanOrEqual(20);
    expect(mounted.sort()).toEqual(documented.sort());
  });

  it('documents every memory route of docs/memory.md and the served document', () => {
    const keys = operations(doc()).map((o) => o.key);
    expect(keys.sort()).toEqual(
      [
        ...JSON_BODY_ROUTES,
        'get /openapi.json',
        'get /api/v1/memory/contradictions', 'get /api/v1/memory/documents', 'get /api/v1/memory/documents/{doc_id}', 'delete /api/v1/memory/documents/{doc_id}',
        'get /api/v1/memory/health', 'post /api/v1/memory/health/assess', 'get /api/v1/memory/review', 'post /api/v1/memory/uploads', 'get /api/v1/memory/uploads/{upload_id}',
        'get /api/v1/memory/vaults', 'get /api/v1/memory/vaults/{vault_id}', 'delete /api/v1/memory/vaults/{vault_id}',
        'get /memory/departments', 'get /memory/departments/{graph_id}', 'delete /memory/departments/{graph_id}', 'post /memory/upload', 'get /memory/jobs/{job_id}',
        'get /api/v1/memory/entities', 'get /api/v1/memory/entities/{entity_id}',
      ].sort(),
    );
  });

  it('declares what the routes answer: bodies, the stream, uploads, writes and the open document', () => {
    const d = doc();
    const op = (method: string, path: string) => d.paths[path]![method]!;
    for (const { key, op: o } of operations(d)) {
      const json = o.requestBody?.content['application/json'] !== undefined;
      expect({ key, jsonBody: json }).toEqual({ key, jsonBody: JSON_BODY_ROUTES.includes(key) });
      // Every JSON body route declares the reader's refusals; every route behind the identity its 401, the gateway's
      // refusals (402 credits, 403 scope, 429 rate) and a 404 where an id or a memory can be missing.
      if (json) expect({ key, statuses: ['400', '413', '415'].filter((s) => o.responses[s]) }).toEqual({ key, statuses: ['400', '413', '415'] });
      if (key === 'get /openapi.json' || key.includes(' /internal/')) continue;
      const spec2 = key.includes(' /memory/');
      const expected = ['401', '402', '403', ...(spec2 && !key.includes('{') && !o.responses['404'] ? [] : ['404']), '429'];
      expect({ key, statuses: ['401', '402', '403', '404', '429'].filter((s) => o.responses[s]) }).toEqual({ key, statuses: expected });
      // Each in its surface's body: spec 2's `{detail}` on the knowledge-graph routes, the platform envelope on the
      // memory routes; a 402 is the gateway's envelope everywhere (its details.reason tells the two kinds apart).
      for (const status of ['400', '401', '402', '403', '413', '415', '429'].filter((s) => o.responses[s])) {
        const schema = o.responses[status]!.content?.['application/json']?.schema as { required?: string[] } | undefined;
        expect({ key, status, required: schema?.required }).toEqual({ key, status, required: spec2 && status !== '402' ? ['detail'] : ['error'] });
      }
    }
    expect(Object.keys(op('post', '/api/v1/memory/search/stream').responses['200']!.content!)).toEqual(['text/event-stream']);
    const upload = op('post', '/api/v1/memory/uploads');
    expect(Object.keys(upload.requestBody!.content)).toEqual(['multipart/form-data']);
    expect(Object.keys(upload.responses).sort()).toEqual(['202', '400', '401', '402', '403', '404', '413', '415', '429', '503']);
    expect(op('post', '/api/v1/memory/vaults').responses['201']).toBeDefined();
    expect(op('delete', '/api/v1/memory/documents/{doc_id}').responses['204']).toBeDefined();
    for (const [method, path] of [['post', '/api/v1/memory/ingest'], ['delete', '/api/v1/memory/vaults/{vault_id}'], ['post', '/api/v1/memory/health/assess']] as const) {
      expect(op(method, path).responses['403']).toBeDefined();
    }
    // A read-only key may search: a search's 403 is the gateway's scope refusal alone.
    expect(op('post', '/api/v1/memory/search').responses['403']).toMatchObject({ description: expect.stringMatching(/^the key's scope/) });
    expect(op('get', '/openapi.json').security).toEqual([]);
    expect(Object.keys(op('get', '/openapi.json').responses)).toEqual(['200']);
  });

  it('marks the graph-internal routes: tag internal, the signed identity as their security, 403 and 422 declared', () => {
    const d = doc() as Doc & { components: { securitySchemes: Record<string, { name?: string }> } };
    const internal = operations(d).filter((o) => o.key.includes(' /internal/'));
    expect(internal.map((o) => o.key).sort()).toEqual([...INTERNAL_ROUTES].sort());
    for (const { key, op } of internal) {
      const o = op as Operation & { tags?: string[] };
      expect({ key, tags: o.tags, security: o.security }).toEqual({ key, tags: ['internal'], security: [{ loreIdentity: [] }] });
      expect({ key, statuses: Object.keys(o.responses).sort() }).toEqual({ key, statuses: ['200', '400', '401', '403', '404', '413', '415', '422', '503'] });
    }
    expect(d.components.securitySchemes.loreIdentity?.name).toBe('x-lore-identity');
    // Every other route is a memory route or one of spec 2's knowledge-graph routes, under the prefixes the gateway forwards.
    for (const { key } of operations(d).filter((o) => !o.key.includes(' /internal/') && o.key !== 'get /openapi.json')) expect(key).toMatch(/^\w+ \/(api\/v1\/memory|memory)\//);
  });

  it('gives the contradiction\'s two sources as one item schema, not an array of schemas', () => {
    const list = doc().paths['/api/v1/memory/contradictions']!.get!.responses['200']!.content!['application/json']!.schema as {
      properties: { contradictions: { items: { properties: { sources: { items: unknown; minItems: number; maxItems: number } } } } };
    };
    const sources = list.properties.contradictions.items.properties.sources;
    expect(Array.isArray(sources.items)).toBe(false);
    expect(sources).toMatchObject({ minItems: 2, maxItems: 2, items: { type: 'object' } });
  });
});
