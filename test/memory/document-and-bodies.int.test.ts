import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IDENTITY_HEADER, validateOpenApiDocument, type Identity } from '@lore/runtime';
import { uniqueSuffix } from '../support/infra';
import { startHarness, type Harness } from './support';

jest.setTimeout(180_000);

const BODY_LIMIT = 64 * 1024;

type Doc = { openapi: string; paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>> };

/**
 * Through the real gateway (API keys, Redis, PostgreSQL, Kafka), as clients reach the graph: its served OpenAPI
 * document, and the one body reader on every memory route that reads JSON.
 */
describe('the graph\'s served document and its body reader, through the gateway', () => {
  let h: Harness;
  const run = uniqueSuffix();
  let who: Identity;
  let scope: { tenant_id: string; workspace_id: string; memory_id: string };
  let reviewDoc: string;

  beforeAll(async () => {
    h = await startHarness({ backend: 'postgres', via: 'gateway', graph: { bodyLimitBytes: BODY_LIMIT, config: { connectorBodyLimitBytes: BODY_LIMIT } } });
    who = h.identity(`t_body_${run}`);
    scope = await h.scopeOf(who);
    const vault = await h.call('POST', '/api/v1/memory/vaults', who, { vault_id: 'v_target', name: 'Target', description: 'where filing would put it' });
    expect(vault.status).toBe(201);
    const doc = await h.call('POST', '/api/v1/memory/ingest', who, { content: 'Waiting for review: the Heron plan.', routing: { mode: 'review' } });
    expect(doc.status).toBe(200);
    reviewDoc = doc.body.doc_id;
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('GET /openapi.json', () => {
    it('is served by the graph through the gateway without a credential: valid OpenAPI 3.1, equal to the committed copy', async () => {
      const res = await fetch(`${h.url}/openapi.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const doc = (await res.json()) as Doc;
      expect(doc.openapi).toBe('3.1.0');
      expect(await validateOpenApiDocument(doc)).toEqual({ valid: true, errors: [] });
      const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', 'services', 'graph', 'openapi.json'), 'utf8')) as unknown;
      expect(doc).toEqual(committed);
      // The graph itself answers it without the gateway's identity, and nothing else without one.
      expect((await fetch(`${h.graphUrl}/openapi.json`)).status).toBe(200);
      expect((await fetch(`${h.graphUrl}/api/v1/memory/vaults`)).status).toBe(401);
    });
  });

  describe('every memory route that reads a JSON body', () => {
    /**
     * Each route with a body that would be accepted if its strings were clean; `%s` is where the bad string goes.
     * The graph-internal routes (`internal`) are called as core calls them: straight to the graph with an
     * administrator's signed identity (the gateway does not forward them).
     */
    const routes = (): Array<{ name: string; method: string; path: string; body: string; internal?: boolean }> => [
      {
        name: 'connector push', method: 'POST', path: '/internal/v1/connector-documents', internal: true,
        body: '{"cc_pair_id":1,"access":{"public":true,"groups":[]},"documents":[{"id":"a","title":"%s","text":"t","link":"l","source_type":"web","updated_at":null,"primary_owners":null,"secondary_owners":null,"metadata":{},"content_hash":"h"}]}',
      },
      { name: 'connector delete', method: 'POST', path: '/internal/v1/connector-documents/delete', internal: true, body: '{"cc_pair_id":1,"ids":["%s"]}' },
      { name: 'ingest', method: 'POST', path: '/api/v1/memory/ingest', body: '{"content":"%s","routing":{"mode":"auto"}}' },
      { name: 'vault create', method: 'POST', path: '/api/v1/memory/vaults', body: '{"name":"%s"}' },
      { name: 'vault update', method: 'PATCH', path: '/api/v1/memory/vaults/v_target', body: '{"name":"%s"}' },
      { name: 'search', method: 'POST', path: '/api/v1/memory/search', body: '{"query":"%s"}' },
      { name: 'streamed search', method: 'POST', path: '/api/v1/memory/search/stream', body: '{"query":"%s"}' },
      { name: 'retrieval', method: 'POST', path: '/api/v1/memory/retrieve', body: '{"query":"%s"}' },
      { name: 'review filing', method: 'POST', path: `/api/v1/memory/review/${reviewDoc}/file`, body: '{"vault_id":"v_target","%s":1}' },
      { name: 'contradiction resolve', method: 'POST', path: '/api/v1/memory/contradictions/c_none/resolve', body: '{"resolution":"dismissed","note":"%s"}' },
    ];
    /** Spec 2's knowledge-graph routes: the same refusals in spec 2's `{detail}` shape. */
    const spec2Routes = (): Array<{ name: string; method: string; path: string; body: string; ownLimit?: boolean }> => [
      { name: 'graph create', method: 'POST', path: '/memory/departments/create', body: '{"name":"%s"}' },
      { name: 'connector ingest', method: 'POST', path: '/memory/ingest/connectors', body: '{"list_id":"%s","source_types":null}' },
      // Generate reads a whole saved list: its body limit is its own (docs/memory.md, "Knowledge graphs"), far above this suite's.
      { name: 'generate', method: 'POST', path: '/memory/generate', body: '{"listId":"%s","records":[],"columns":[]}', ownLimit: true },
      { name: 'graph chat', method: 'POST', path: '/memory/chat', body: '{"listId":"g_none","question":"%s"}' },
    ];

    it('covers every JSON body route of the served document', async () => {
      const doc = (await (await fetch(`${h.url}/openapi.json`)).json()) as Doc;
      const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.requestBody?.content['application/json'] !== undefined)
          .map(([method]) => `${method.toUpperCase()} ${path}`),
      );
      const tested = [...routes(), ...spec2Routes()].map((r) => `${r.method} ${r.path.replace(reviewDoc, '{doc_id}').replace('v_target', '{vault_id}').replace('c_none', '{contradiction_id}')}`);
      expect(tested.sort()).toEqual(documented.sort());
    });

    const target = async (r: { path: string; internal?: boolean }) =>
      r.internal
        ? {
            url: `${h.graphUrl}${r.path}`,
            headers: { [IDENTITY_HEADER]: await h.signer.sign({ ...scope, credential: 'ck_test', subject: 'core', role: 'tenant_admin' }) },
          }
        : h.authorize(who, r.path);
    const fill = (template: string, inner: Buffer | string) => {
      const [before, after] = template.split('%s') as [string, string];
      return Buffer.concat([Buffer.from(before), Buffer.isBuffer(inner) ? inner : Buffer.from(inner), Buffer.from(after)]);
    };
    const cases: Array<[string, (template: string) => Buffer, number, string, RegExp]> = [
      ['a NUL character', (t) => fill(t, 'Heron\\u0000plan'), 400, 'BAD_REQUEST', /NUL/],
      ['a lone surrogate', (t) => fill(t, 'Heron\\ud800plan'), 400, 'BAD_REQUEST', /surrogate/],
      ['invalid UTF-8', (t) => fill(t, Buffer.from([0x48, 0xc3, 0x28, 0x6e])), 400, 'BAD_REQUEST', /UTF-8/],
      ['a body over the limit', (t) => fill(t, 'x'.repeat(BODY_LIMIT + 1024)), 413, 'PAYLOAD_TOO_LARGE', /exceeds/],
    ];

    it.each(cases)('refuses %s with the error envelope', async (_what, body, status, code, words) => {
      for (const r of routes()) {
        const to = await target(r);
        const res = await fetch(to.url, { method: r.method, headers: { ...to.headers, 'content-type': 'application/json' }, body: body(r.body) });
        const json = (await res.json()) as { error?: { code?: string; message?: string; request_id?: unknown } };
        expect({ route: r.name, status: res.status, code: json.error?.code, words: words.test(String(json.error?.message)), request_id: typeof json.error?.request_id }).toEqual({
          route: r.name,
          status,
          code,
          words: true,
          request_id: 'string',
        });
      }
    });

    it.each(cases)('refuses %s on spec 2\'s routes with {detail}', async (_what, body, status, _code, words) => {
      for (const r of spec2Routes().filter((x) => !(x.ownLimit && status === 413))) {
        const to = await h.authorize(who, r.path);
        const res = await fetch(to.url, { method: r.method, headers: { ...to.headers, 'content-type': 'application/json' }, body: body(r.body) });
        const json = (await res.json()) as { detail?: unknown };
        expect({ route: r.name, status: res.status, detail: typeof json.detail, words: words.test(String(json.detail)) }).toEqual({ route: r.name, status, detail: 'string', words: true });
      }
    });

    it('refuses another media type with 415', async () => {
      for (const r of routes()) {
        const to = await target(r);
        const res = await fetch(to.url, { method: r.method, headers: { ...to.headers, 'content-type': 'text/plain' }, body: fill(r.body, 'Heron') });
        expect({ route: r.name, status: res.status, code: ((await res.json()) as { error?: { code?: string } }).error?.code }).toEqual({ route: r.name, status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
      }
    });

    it('stored nothing of the refused bodies and answered no 500', async () => {
      const rows = await h.db.withTenant(scope.tenant_id, async (sql) => ({
        documents: (await sql.query<{ doc_id: string; vault_id: string; needs_review: boolean }>(`SELECT doc_id, vault_id, needs_review FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2`, [scope.tenant_id, scope.memory_id])).rows,
        vaults: (await sql.query<{ vault_id: string; name: string }>(`SELECT vault_id, name FROM graph.vaults WHERE tenant_id = $1 AND memory_id = $2 ORDER BY vault_id`, [scope.tenant_id, scope.memory_id])).rows,
      }));
      // Only what beforeAll made: the document still waits for review, and no vault was added or renamed.
      expect(rows.documents).toEqual([{ doc_id: reviewDoc, vault_id: 'v_unassigned', needs_review: true }]);
      expect(rows.vaults).toEqual([
        { vault_id: 'v_target', name: 'Target' },
        { vault_id: 'v_unassigned', name: 'Unassigned' },
      ]);
      expect(h.logs.text()).not.toMatch(/unhandled error/);
      expect(h.logs.text()).not.toMatch(/"status":5\d\d/);
    });
  });
});
