import { http } from '../support/http';
import { startFuzzStack, type FuzzStack } from './stack';

/**
 * What Schemathesis found in the served documents (docs/fuzzing.md, "Findings"), each as the request that showed it,
 * on the same cluster-mode stack the fuzzing suite runs: every one of these failed before its fix.
 */
jest.setTimeout(120_000);

type Json = Record<string, any>;

describe('the fuzzing findings, one request each', () => {
  let stack: FuzzStack;
  let key: string;
  const docs: Record<string, Json> = {};
  const call = (method: string, path: string, options: { headers?: Record<string, string>; body?: unknown } = {}) =>
    http(stack.gateway.publicUrl, method, path, { headers: { 'x-api-key': key, ...options.headers }, body: options.body });
  /** The declared response of an operation of a served document. */
  const declared = (doc: string, method: string, path: string, status: number): Json | undefined => docs[doc]?.paths?.[path]?.[method]?.responses?.[String(status)];

  beforeAll(async () => {
    stack = await startFuzzStack();
    ({ key } = await stack.credentials());
    for (const [name, path] of [['gateway', '/api/v1/openapi.json'], ['graph', '/openapi.json'], ['core', '/api/openapi.json'], ['agents', '/api/agents/openapi.json']]) {
      const r = await http(stack.gateway.publicUrl, 'GET', path!);
      expect(r.status).toBe(200);
      docs[name!] = r.json as Json;
    }
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('a method a known path does not declare is 405 with Allow, on the gateway and behind it; an unknown path stays 404', async () => {
    const cases: Array<[string, string, string]> = [
      ['TRACE', '/api/v1/workspaces', 'HEAD, GET, POST'],
      ['PUT', '/api/v1/memory/search', 'POST'],
      ['DELETE', '/api/chat/get-user-chat-sessions', 'HEAD, GET'],
      ['PATCH', '/api/workflow/people/threads', 'HEAD, GET'],
      // A literal segment is its own path: not also GET /memory/departments/{graph_id} with the id `create`.
      ['OPTIONS', '/memory/departments/create', 'POST'],
    ];
    for (const [method, path, allow] of cases) {
      const r = await call(method, path);
      // Core's paths, the agents' under /api/ and spec 2's /memory/* answer `{detail}`, as every answer there
      // (docs/core.md, docs/agents.md "Errors", docs/memory.md "Knowledge graphs"); the others the platform's envelope.
      const detail = path.startsWith('/api/chat') || path.startsWith('/api/workflow') || path.startsWith('/memory/');
      const said = detail ? r.json?.detail : r.json?.error?.code;
      expect({ method, path, status: r.status, allow: r.headers.allow, said }).toEqual({ method, path, status: 405, allow, said: detail ? expect.stringMatching(/not allowed on this path/) : 'METHOD_NOT_ALLOWED' });
    }
    const unknown = await call('TRACE', '/api/v1/no-such-route');
    expect({ status: unknown.status, code: unknown.json?.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
    const unknownCore = await call('GET', '/api/chat/no-such-route');
    expect([unknownCore.status, unknownCore.json]).toEqual([404, { detail: 'route not found' }]);
    // Under a prefix the gateway forwards to the graph: the graph's own 404, in spec 2's `{detail}`.
    const unknownGraph = await call('GET', '/memory/departments/');
    expect([unknownGraph.status, unknownGraph.json]).toEqual([404, { detail: 'route not found' }]);
  });

  it('a credential cookie that is no valid percent-encoding is a malformed credential (401), not a 500', async () => {
    for (const path of ['/api/manage/admin/user-group', '/api/chat/get-user-chat-sessions', '/api/workflow/people/threads']) {
      const r = await http(stack.gateway.publicUrl, 'GET', path, { headers: { cookie: 'lore_api_key=%F2%B7' } });
      expect({ path, status: r.status }).toEqual({ path, status: 401 });
    }
  });

  it('core and agents answer a bad key in the error body of the path, as declared: core\'s and agents\' /api paths detail, agents\' others the envelope', async () => {
    const cases: Array<[string, string, string, string[]]> = [
      ['core', 'get', '/api/chat/get-user-chat-sessions', ['detail']],
      ['agents', 'get', '/api/workflow/people/threads', ['detail']],
      ['agents', 'get', '/company-search/getLists', ['data', 'errors', 'message', 'status_code']],
    ];
    for (const [doc, method, path, keys] of cases) {
      const r = await http(stack.gateway.publicUrl, method.toUpperCase(), path, { headers: { 'x-api-key': 'ck_live_not-a-key' } });
      expect({ path, status: r.status, keys: Object.keys(r.json as Json).sort() }).toEqual({ path, status: 401, keys });
      const schema = declared(doc, method, path, 401)?.content?.['application/json']?.schema as Json;
      expect({ path, declared: Object.keys(schema.properties as Json).sort() }).toEqual({ path, declared: keys });
    }
  });

  it('a path the gateway refuses as ambiguous answers 404 in the body of the path\'s surface, as declared', async () => {
    const cases: Array<[string, string, string, string, string[]]> = [
      ['agents', 'get', `/company-search/getSearchResult/${encodeURIComponent('a/../b')}`, '/company-search/getSearchResult/{thread_id}', ['data', 'errors', 'message', 'status_code']],
      ['core', 'patch', `/api/persona/${encodeURIComponent('a/../b')}`, '/api/persona/{persona_id}', ['detail']],
      ['gateway', 'patch', `/api/manage/admin/user-group/${encodeURIComponent('a\\b')}`, '/api/manage/admin/user-group/{group_id}', ['detail']],
    ];
    for (const [doc, method, path, template, keys] of cases) {
      const r = await call(method.toUpperCase(), path, { body: {} });
      expect({ path, status: r.status, keys: Object.keys(r.json as Json).sort() }).toEqual({ path, status: 404, keys });
      const schema = declared(doc, method, template, 404)?.content?.['application/json']?.schema as Json;
      const shapes = ((schema.anyOf as Json[] | undefined) ?? [schema]).map((x) => Object.keys(x.properties as Json).sort());
      expect({ path, declared: shapes }).toEqual({ path, declared: expect.arrayContaining([keys]) });
    }
  });

  it('a persona\'s temperature closer to 0 than single precision reaches is stored (as 0), not a 500', async () => {
    const created = await call('POST', '/api/persona', { body: { name: 'tiny temperature', temperature: 8.25e-244 } });
    expect({ status: created.status, temperature: created.json?.temperature }).toEqual({ status: 201, temperature: 0 });
    const id = created.json.id as number;
    const patched = await call('PATCH', `/api/persona/${id}`, { body: { temperature: 1e-300 } });
    expect({ status: patched.status, temperature: patched.json?.temperature }).toEqual({ status: 200, temperature: 0 });
    const half = await call('PATCH', `/api/persona/${id}`, { body: { temperature: 0.5 } });
    expect(half.json?.temperature).toBe(0.5);
  });

  it('create-chat-session with a project that is not the caller\'s answers the 404 its document declares', async () => {
    const r = await call('POST', '/api/chat/create-chat-session', { body: { persona_id: 0, project_id: 2_147_483_646 } });
    expect({ status: r.status, body: r.json }).toEqual({ status: 404, body: { detail: 'chat project not found' } });
    expect(declared('core', 'post', '/api/chat/create-chat-session', 404)).toBeDefined();
  });

  it('a NUL in a query value (a webhook list cursor) is refused with 400, not passed to PostgreSQL as a 500', async () => {
    const r = await call('GET', '/api/v1/webhooks?limit=19&cursor=%F2%85%A9%84%C3%9F%5C%00%09%EA%A7%BE%C2%8C');
    expect({ status: r.status, code: r.json?.error?.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
    expect(declared('gateway', 'get', '/api/v1/webhooks', 400)).toBeDefined();
    expect((await call('GET', `/api/v1/webhooks?limit=19&cursor=wh_${'0'.repeat(24)}`)).status).toBe(200);
  });

  it('an empty number in a query is refused, not read as 0', async () => {
    const empty = await call('GET', '/api/workflow/people/threads?limit=5&offset=');
    expect(empty.status).toBe(422);
    expect(JSON.stringify(empty.json)).toContain('offset');
    expect((await call('GET', '/api/workflow/people/threads?limit=5&offset=0')).status).toBe(200);
    expect((await call('GET', '/api/workflow/people/threads')).status).toBe(200);
  });

  it('a live page path that is no deep search id answers the 404 the document declares, as a missing one does', async () => {
    const r = await http(stack.gateway.publicUrl, 'GET', `/service-deep-search/live/${'0'.repeat(65)}?token=x`);
    expect({ status: r.status, keys: Object.keys(r.json as Json).sort() }).toEqual({ status: 404, keys: ['data', 'errors', 'message', 'status_code'] });
    const schema = declared('agents', 'get', '/service-deep-search/live/{thread_id}', 404)?.content?.['application/json']?.schema as Json;
    expect(Object.keys(schema.properties as Json).sort()).toEqual(['data', 'errors', 'message', 'status_code']);
    expect(declared('agents', 'get', '/service-deep-search/live/{thread_id}', 401)).toBeUndefined();
    const param = (docs.agents!.paths['/service-deep-search/live/{thread_id}'].get.parameters as Json[]).find((p) => p.name === 'thread_id')!;
    expect(param.schema.pattern).toBeUndefined();
  });

  it('a body whose every field is optional is documented as optional (an empty body reads as {})', async () => {
    const op = docs.agents!.paths['/company-search/database-search'].post;
    expect(op.requestBody.required).toBe(false);
    const r = await http(stack.gateway.publicUrl, 'POST', '/company-search/database-search', { headers: { 'x-api-key': key } });
    expect(r.status).toBe(200);
  });

  it('server-sent events are documented as the events a client parses, and a workflow state refusal\'s 422 as `{detail}`', async () => {
    const stream = docs.graph!.paths['/api/v1/memory/search/stream'].post.responses['200'].content['text/event-stream'].schema as Json;
    expect({ type: stream.type, fields: Object.keys(stream.properties as Json) }).toEqual({ type: 'object', fields: ['event', 'data', 'id', 'retry'] });
    const invalid = declared('agents', 'post', '/api/workflow/people/continue', 422)?.content?.['application/json']?.schema as Json;
    expect((invalid.anyOf as Json[]).map((s) => (s.properties as Json).detail.type)).toEqual(['array', 'string']);
  });
});
