import Router from '@koa/router';
import pino from 'pino';
import { z } from 'zod';
import { validate as validateOpenApi } from './openapi-validate';
import { createHttpApp, type LoreState } from './app';
import { listen, type StartedServer } from './server';
import { AppError } from '../errors/app-error';
import { createMetricsRegistry } from '../metrics/registry';
import { jsonSchemaOf, openApiDocument, openApiPath, RouteTable, routeFor, withGatewayRefusal } from './routes';

const route = routeFor<LoreState>();

const itemView = z.object({ id: z.string(), name: z.string(), count: z.number().int() });
const createItem = z.object({ name: z.string().min(1).max(20), count: z.number().int().min(0) }).strict();

function table(checkResponses = true) {
  const t = new RouteTable<LoreState>({
    bodyLimitBytes: 256,
    checkResponses,
    commonResponses: () => ({ 401: { description: 'no credential' } }),
    successHeaders: (r) => (r.method === 'get' ? { 'RateLimit-Remaining': { schema: { type: 'string' } } } : undefined),
  });
  t.add(
    route({
      method: 'post',
      path: '/items',
      operationId: 'createItem',
      summary: 'create an item',
      body: createItem,
      ok: { status: 201, description: 'the item', schema: itemView },
      handler: (_ctx, { body }) => ({ id: 'it_1', name: body.name, count: body.count }),
    }),
    route({
      method: 'get',
      path: '/items/:item_id',
      operationId: 'getItem',
      summary: 'one item',
      params: z.object({ item_id: z.string().regex(/^it_[0-9]+$/) }),
      query: z.object({ verbose: z.enum(['true', 'false']).optional() }),
      ok: { status: 200, description: 'the item', schema: itemView },
      handler: (_ctx, { params, query }) => ({ id: params.item_id, name: query.verbose === 'true' ? 'long name' : 'name', count: 1 }),
    }),
    route({
      method: 'get',
      path: '/drift',
      operationId: 'drift',
      summary: 'answers what its schema does not declare',
      ok: { status: 200, description: 'never valid', schema: itemView },
      // The cast stands for a presenter that drifted from its view: the table must catch it.
      handler: () => ({ id: 1 }) as unknown as z.input<typeof itemView>,
    }),
    route({
      method: 'post',
      path: '/token',
      operationId: 'token',
      summary: 'JSON or form',
      body: z.object({ grant_type: z.literal('client_credentials') }),
      bodyKind: 'json-or-form',
      invalid: (issues) => new AppError('UNPROCESSABLE', 'bad token request', { body: { detail: issues } }),
      ok: { status: 200, description: 'ok', schema: z.object({ ok: z.boolean() }) },
      handler: () => ({ ok: true }),
    }),
    route({
      method: 'post',
      path: '/detail',
      operationId: 'detailShape',
      summary: 'words the reader\'s refusals in its own shape and reads a cookie',
      parameters: [{ name: 'session', in: 'cookie', required: false, schema: { type: 'string' } }],
      body: z.object({ note: z.string() }),
      bodyLimitBytes: 64,
      unreadable: (err) => new AppError(err.code, err.message, { body: { detail: err.message } }),
      ok: { status: 200, description: 'the note', schema: z.object({ note: z.string() }) },
      handler: (_ctx, { body }) => ({ note: body.note }),
    }),
    route({
      method: 'post',
      path: '/batch',
      operationId: 'batch',
      summary: 'reads a body larger than the table allows',
      body: z.object({ notes: z.array(z.string()) }),
      bodyLimitBytes: 1024,
      ok: { status: 200, description: 'how many notes', schema: z.object({ count: z.number().int() }) },
      handler: (_ctx, { body }) => ({ count: body.notes.length }),
    }),
    route({
      method: 'delete',
      path: '/items/:item_id',
      operationId: 'deleteItem',
      summary: 'answers itself',
      ok: { status: 204, description: 'gone' },
      handler: (ctx) => {
        ctx.status = 204;
      },
    }),
  );
  return t;
}

describe('RouteTable', () => {
  let server: StartedServer;
  let base: string;

  beforeAll(async () => {
    const logger = pino({ level: 'silent' });
    const app = createHttpApp({ service: 'routes-test', logger, metrics: createMetricsRegistry('routes_test'), parseBodies: false });
    const router = new Router<LoreState>();
    table().mount(router);
    app.use(router.routes());
    server = await listen(app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => server.close());

  const post = (path: string, body: string | Buffer, type = 'application/json') => fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': type }, body });

  it('validates the body with every issue listed and answers with the declared status', async () => {
    const ok = await post('/items', JSON.stringify({ name: 'a', count: 2 }));
    expect(ok.status).toBe(201);
    expect(await ok.json()).toEqual({ id: 'it_1', name: 'a', count: 2 });

    const bad = await post('/items', JSON.stringify({ name: '', count: -1, extra: true }));
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error: { code: string; details: Array<{ path: string }> } };
    expect(body.error.code).toBe('VALIDATION_FAILED');
    expect(body.error.details.map((d) => d.path).sort()).toEqual(['', 'count', 'name']);
  });

  it.each([
    ['a NUL character', '{"name":"a\\u0000b","count":1}', 'NUL'],
    ['a NUL in a key', '{"na\\u0000me":"a","count":1}', 'NUL'],
    ['a lone high surrogate', '{"name":"a\\ud800","count":1}', 'surrogate'],
    ['a lone low surrogate', '{"name":"\\udc00a","count":1}', 'surrogate'],
    ['malformed JSON', '{"name":', 'not valid JSON'],
  ])('refuses %s with 400 and the error envelope', async (_what, text, words) => {
    const res = await post('/items', text);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string; request_id: string } };
    expect(body.error.code).toBe('BAD_REQUEST');
    expect(body.error.message).toContain(words);
    expect(body.error.request_id).toBeTruthy();
  });

  it('keeps a well-formed surrogate pair (an emoji) as it is', async () => {
    const res = await post('/items', JSON.stringify({ name: 'ok \u{1F600}', count: 1 }));
    expect(res.status).toBe(201);
    expect(((await res.json()) as { name: string }).name).toBe('ok \u{1F600}');
  });

  it('refuses invalid UTF-8 with 400', async () => {
    const bytes = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","count":1}')]);
    const res = await post('/items', bytes);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('UTF-8');
  });

  it('refuses a body over the limit with 413 and another media type with 415', async () => {
    const big = await post('/items', JSON.stringify({ name: 'x'.repeat(300), count: 1 }));
    expect(big.status).toBe(413);
    const text = await post('/items', 'name=a', 'text/plain');
    expect(text.status).toBe(415);
  });

  it('refuses a body nested deeper than the limit with 400 instead of exhausting the stack', async () => {
    const res = await post('/token', `${'['.repeat(100)}${']'.repeat(100)}`);
    expect(res.status).toBe(400);
  });

  it('validates path and query parameters', async () => {
    expect((await fetch(`${base}/items/it_7?verbose=true`)).status).toBe(200);
    expect(await (await fetch(`${base}/items/it_7?verbose=true`)).json()).toEqual({ id: 'it_7', name: 'long name', count: 1 });
    const badPath = await fetch(`${base}/items/nope`);
    expect(badPath.status).toBe(400);
    const badQuery = await fetch(`${base}/items/it_7?verbose=maybe`);
    expect(badQuery.status).toBe(400);
    expect(((await badQuery.json()) as { error: { message: string } }).error.message).toBe('query is invalid');
  });

  it('reads forms where the route takes them, refuses %00 in a form, and uses the route\'s own invalid shape', async () => {
    expect((await post('/token', 'grant_type=client_credentials', 'application/x-www-form-urlencoded')).status).toBe(200);
    expect((await post('/token', 'grant_type=client%00credentials', 'application/x-www-form-urlencoded')).status).toBe(400);
    const wrong = await post('/token', JSON.stringify({ grant_type: 'password' }));
    expect(wrong.status).toBe(422);
    expect(await wrong.json()).toEqual({ detail: [expect.objectContaining({ path: 'grant_type' })] });
  });

  it('answers the reader\'s refusals in the route\'s own shape with the reader\'s status', async () => {
    const nul = await post('/detail', '{"note":"a\\u0000"}');
    expect(nul.status).toBe(400);
    expect(((await nul.json()) as { detail: string }).detail).toContain('NUL');
    // Over the route's own limit (64 bytes), under the table's (256).
    const big = await post('/detail', JSON.stringify({ note: 'x'.repeat(100) }));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { detail: string }).detail).toContain('exceeds');
    const fine = await post('/detail', JSON.stringify({ note: 'x' }));
    expect(await fine.json()).toEqual({ note: 'x' });
  });

  it('reads a body up to the route\'s own limit when it is larger than the table\'s', async () => {
    // Over the table's limit (256), under the route's (1024).
    const fine = await post('/batch', JSON.stringify({ notes: Array.from({ length: 20 }, () => 'x'.repeat(30)) }));
    expect(fine.status).toBe(200);
    expect(await fine.json()).toEqual({ count: 20 });
    const big = await post('/batch', JSON.stringify({ notes: Array.from({ length: 40 }, () => 'x'.repeat(30)) }));
    expect(big.status).toBe(413);
  });

  it('turns a body its schema does not declare into a 500 when responses are checked', async () => {
    const res = await fetch(`${base}/drift`);
    expect(res.status).toBe(500);
  });

  it('lets a handler answer by itself', async () => {
    const res = await fetch(`${base}/items/it_1`, { method: 'DELETE' });
    expect(res.status).toBe(204);
  });
});

describe('RouteTable OpenAPI', () => {
  it('documents exactly the mounted routes as a valid OpenAPI 3.1 document', async () => {
    const t = table();
    const doc = openApiDocument({ title: 'test', version: '1' }, t.openApiPaths());
    const result = await validateOpenApi(doc);
    expect(result).toEqual({ valid: true, errors: [] });
    const paths = doc.paths as Record<string, Record<string, { operationId: string; responses: Record<string, unknown>; parameters?: Array<{ name: string; in: string; required: boolean }> }>>;
    expect(Object.keys(paths).sort()).toEqual(['/batch', '/detail', '/drift', '/items', '/items/{item_id}', '/token']);
    expect(paths['/detail']!.post!.parameters).toEqual([{ name: 'session', in: 'cookie', required: false, schema: { type: 'string' } }]);
    const get = paths['/items/{item_id}']!.get!;
    expect(get.operationId).toBe('getItem');
    expect(get.parameters).toEqual([
      expect.objectContaining({ name: 'item_id', in: 'path', required: true }),
      expect.objectContaining({ name: 'verbose', in: 'query', required: false }),
    ]);
    // Every route under the document's default security may find a dependency down: 503 (docs/faults.md).
    expect(Object.keys(paths['/items']!.post!.responses).sort()).toEqual(['201', '400', '401', '503']);
    expect(paths['/items']!.post!.responses['503']).toMatchObject({ headers: { 'Retry-After': { schema: { type: 'integer' } } } });
    // A validated query or path can be refused too; a route that answers by itself declares nothing more.
    expect(Object.keys(get.responses).sort()).toEqual(['200', '400', '401', '503']);
    expect(Object.keys(paths['/drift']!.get!.responses).sort()).toEqual(['200', '401', '503']);
    // Headers a guard sets on every success are declared there, and only where the table says so.
    const okOf = (op: { responses: Record<string, unknown> }, status: string) => op.responses[status] as { headers?: Record<string, unknown> };
    expect(Object.keys(okOf(get, '200').headers ?? {})).toEqual(['RateLimit-Remaining']);
    expect(okOf(paths['/items']!.post!, '201').headers).toBeUndefined();
    expect(Object.keys(paths['/token']!.post!.responses).sort()).toEqual(['200', '401', '503']);
    const router = new Router<LoreState>();
    t.mount(router);
    const mounted = router.stack.flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m.toLowerCase()} ${openApiPath(String(layer.path))}`));
    const documented = Object.entries(paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`));
    expect(mounted.sort()).toEqual(documented.sort());
  });

  it('declares 503 on routes under a credential, and not on open ones (security [])', () => {
    const t = new RouteTable<LoreState>({ bodyLimitBytes: 1024 });
    const ok = { status: 200, description: 'ok' };
    t.add(
      route({ method: 'get', path: '/open', operationId: 'open', summary: 'open', security: [], ok, handler: () => undefined }),
      route({ method: 'get', path: '/keyed', operationId: 'keyed', summary: 'keyed', security: [{ apiKey: [] }], ok, handler: () => undefined }),
    );
    const paths = t.openApiPaths() as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    expect(Object.keys(paths['/open']!.get!.responses)).toEqual(['200']);
    expect(Object.keys(paths['/keyed']!.get!.responses).sort()).toEqual(['200', '503']);
  });

  it('refuses a route declared twice', () => {
    const t = table();
    expect(() => t.add(route({ method: 'get', path: '/items/:id', operationId: 'other', summary: 'x', ok: { status: 200, description: 'x' }, handler: () => undefined }))).toThrow(/declared twice/);
  });

  it('reports an invalid document', async () => {
    const result = await validateOpenApi({ openapi: '3.1.0', info: { title: 't' }, paths: {} });
    expect(result.valid).toBe(false);
  });
});

describe('RouteTable: what fuzzing the served documents found (docs/fuzzing.md)', () => {
  const fuzzed = () =>
    new RouteTable<LoreState>({ bodyLimitBytes: 1024 }).add(
      route({ method: 'post', path: '/graphs/create', operationId: 'createGraph', summary: 'create', body: z.object({ name: z.string() }), ok: { status: 201, description: 'made', schema: z.object({ ok: z.boolean() }) }, handler: () => ({ ok: true }) }),
      route({ method: 'get', path: '/graphs/:graph_id', operationId: 'getGraph', summary: 'one', ok: { status: 200, description: 'it', schema: z.object({ ok: z.boolean() }) }, handler: () => ({ ok: true }) }),
      route({
        method: 'get', path: '/list', operationId: 'list', summary: 'a page', query: z.object({ limit: z.coerce.number().int().min(0).max(50).default(10) }),
        ok: { status: 200, description: 'the limit read', schema: z.object({ limit: z.number() }) }, handler: (_ctx, { query }) => ({ limit: query.limit }),
      }),
      route({ method: 'post', path: '/search', operationId: 'search', summary: 'all optional', body: z.object({ q: z.string().optional() }), ok: { status: 200, description: 'q', schema: z.object({ q: z.string().nullable() }) }, handler: (_ctx, { body }) => ({ q: body.q ?? null }) }),
      route({ method: 'get', path: '/events', operationId: 'events', summary: 'a stream', ok: { status: 200, description: 'events', content: { 'text/event-stream': { schema: { type: 'string', description: 'frames', 'x-frames': { done: {} } } } } }, handler: () => undefined }),
    );
  let server: StartedServer;
  let base: string;

  beforeAll(async () => {
    const app = createHttpApp({ service: 'routes-fuzz-test', logger: pino({ level: 'silent' }), metrics: createMetricsRegistry('routes_fuzz_test'), parseBodies: false });
    const router = new Router<LoreState>();
    const t = fuzzed();
    t.mount(router);
    app.use(router.routes());
    app.use(t.methodNotAllowed());
    server = await listen(app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => server.close());

  it('answers a method a known path does not declare with 405 and Allow from its most specific patterns', async () => {
    for (const [method, path, allow] of [['PUT', '/graphs/g1', 'HEAD, GET'], ['DELETE', '/graphs/create', 'POST'], ['POST', '/list', 'HEAD, GET']] as const) {
      const r = await fetch(`${base}${path}`, { method });
      expect({ method, path, status: r.status, allow: r.headers.get('allow'), code: ((await r.json()) as { error: { code: string } }).error.code }).toEqual({ method, path, status: 405, allow, code: 'METHOD_NOT_ALLOWED' });
    }
    expect((await fetch(`${base}/graphs/g1`)).status).toBe(200);
    expect((await fetch(`${base}/nowhere`, { method: 'PUT' })).status).toBe(404);
  });

  it('refuses a body sent with a content coding (415) rather than read its coded bytes as they are', async () => {
    const { gzipSync } = await import('node:zlib');
    for (const [coding, body] of [['gzip', gzipSync('{"name":"gz"}')], ['gzip', Buffer.from('{"name":"plain"}')], ['br', Buffer.from('{"name":"b"}')]] as const) {
      const r = await fetch(`${base}/graphs/create`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': coding }, body });
      expect({ coding, status: r.status }).toEqual({ coding, status: 415 });
    }
    const identity = await fetch(`${base}/graphs/create`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, body: '{"name":"x"}' });
    expect(identity.status).toBe(201);
  });

  it('refuses an empty number in the query instead of reading it as 0', async () => {
    const empty = await fetch(`${base}/list?limit=`);
    expect(empty.status).toBe(400);
    expect(JSON.stringify(await empty.json())).toContain('limit');
    expect(await (await fetch(`${base}/list?limit=3`)).json()).toEqual({ limit: 3 });
    expect(await (await fetch(`${base}/list`)).json()).toEqual({ limit: 10 });
  });

  it('refuses a NUL in a query value or a path parameter with 400 instead of passing it on to PostgreSQL', async () => {
    for (const url of [`${base}/list?limit=3&cursor=%F2%85%00%09`, `${base}/graphs/g%001`]) {
      const r = await fetch(url);
      const body = (await r.json()) as { error: { code: string; details: Array<{ path: string; message: string }> } };
      expect({ url, status: r.status, code: body.error.code, message: body.error.details[0]?.message }).toEqual({ url, status: 400, code: 'VALIDATION_FAILED', message: 'must not contain NUL characters or lone surrogates' });
    }
    expect((await fetch(`${base}/list?limit=3&cursor=%F2%85%09`)).status).toBe(200);
  });

  it('documents a body its schema takes as {} as optional, and server-sent events as the events a client parses', async () => {
    const doc = openApiDocument({ title: 't', version: '1' }, fuzzed().openApiPaths()) as { paths: Record<string, Record<string, any>> };
    expect(doc.paths['/search']!.post.requestBody.required).toBe(false);
    expect(doc.paths['/graphs/create']!.post.requestBody.required).toBe(true);
    expect(await (await fetch(`${base}/search`, { method: 'POST' })).json()).toEqual({ q: null });
    const events = doc.paths['/events']!.get.responses['200'].content['text/event-stream'].schema;
    expect(events).toEqual({ type: 'object', description: 'frames', 'x-frames': { done: {} }, properties: { event: expect.any(Object), data: expect.any(Object), id: expect.any(Object), retry: { type: 'integer', minimum: 0 } } });
    expect(await validateOpenApi(doc)).toEqual({ valid: true, errors: [] });
  });

  it('declares the gateway\'s refusal beside a parameterised path\'s own answer', () => {
    const refusal = z.object({ error: z.object({ code: z.string() }) });
    const paths = withGatewayRefusal(fuzzed().openApiPaths(), 404, 'the gateway refused the path', refusal) as Record<string, Record<string, any>>;
    expect(paths['/graphs/{graph_id}']!.get.responses['404'].content['application/json'].schema).toEqual(jsonSchemaOf(refusal));
    expect(paths['/list']!.get.responses['404']).toBeUndefined();
  });
});
