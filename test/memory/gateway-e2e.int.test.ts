import { request } from 'node:http';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, IDENTITY_SECRET, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import { OpenAiLanguageModel } from '@lore/ai';
import { LoopbackModel } from '../support/loopback-model';
import { eventually, parseSse, startHarness, type Harness } from './support';

jest.setTimeout(180_000);

/**
 * Memory routes end to end: client → gateway (keys, identity) → graph (real PostgreSQL, Redis, Kafka), with the
 * graph answering through its OpenAI-compatible LanguageModel against a loopback model server.
 */
describe('memory through the gateway', () => {
  let model: LoopbackModel;
  let database: TestDatabase;
  let graph: Harness;
  let g: GatewayUnderTest;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    model = await new LoopbackModel().start();
    database = await freshDatabase('lore_mem_e2e');
    const languageModel = new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 10_000, retries: 0 });
    graph = await startHarness({ backend: 'postgres', database, secret: IDENTITY_SECRET, graph: { languageModel } });
    g = await startGateway(database, { upstreams: { graph: graph.url } }, { redisPrefix: `mem-e2e-${uid()}` });
    a = await makeTenant(g);
    b = await makeTenant(g);
  });
  afterAll(async () => {
    await g?.close();
    await graph?.close();
    await database?.drop();
    await model?.stop();
  });
  afterEach(() => {
    model.script = null;
    model.failAfter = null;
  });

  const call = (t: { key: string }, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    http(g.publicUrl, method, path, { headers: { 'x-api-key': t.key, ...headers }, body });

  async function indexed(t: { key: string }, docId: string, headers: Record<string, string> = {}) {
    return eventually(async () => {
      const r = await call(t, 'GET', `/api/v1/memory/documents/${docId}`, undefined, headers);
      return r.status === 200 && r.json.status === 'indexed' ? r.json : undefined;
    }, 60_000, `document ${docId}`);
  }

  it('ingests with an API key and answers a cited search in the key’s memory', async () => {
    const ingest = await call(a, 'POST', '/api/v1/memory/ingest', { content: 'The Osprey data center runs on solar power since 2022.', content_type: 'text', routing: { mode: 'auto' } });
    expect(ingest.status).toBe(200);
    expect(Object.keys(ingest.json).sort()).toEqual(['dlp_matches', 'doc_id', 'needs_review', 'routing_confidence', 'vault_id']);
    await indexed(a, ingest.json.doc_id);
    const s = await call(a, 'POST', '/api/v1/memory/search', { query: 'What powers the Osprey data center?' });
    expect(s.status).toBe(200);
    expect(s.json.citations).toEqual([{ index: 1, title: expect.any(String), document_id: ingest.json.doc_id }]);
    expect(s.json.answer).toContain('[1]');
    // The graph saw the gateway's identity: the document lives in tenant A's primary memory.
    const rows = await graph.db.withTenant(a.tenantId, (sql) => sql.query<{ memory_id: string }>(`SELECT memory_id FROM graph.documents WHERE doc_id = $1`, [ingest.json.doc_id]));
    expect(rows.rows[0]?.memory_id).toBe(a.memoryId);
  });

  it('streams sources before the first token through the gateway', async () => {
    const u = new URL(g.publicUrl);
    const frames: Array<{ at: number; text: string }> = [];
    await new Promise<void>((resolve, reject) => {
      const req = request(
        { host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/memory/search/stream', headers: { 'x-api-key': a.key, 'content-type': 'application/json' } },
        (res) => {
          expect(res.statusCode).toBe(200);
          expect(res.headers['content-type']).toContain('text/event-stream');
          res.on('data', (c: Buffer) => frames.push({ at: Date.now(), text: c.toString('utf8') }));
          res.on('end', () => resolve());
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ query: 'Osprey solar power' }));
    });
    const parsed = parseSse(frames.map((f) => f.text).join(''));
    expect(parsed[0]?.event).toBe('sources');
    expect(parsed[parsed.length - 1]?.event).toBe('done');
    expect(parsed.filter((f) => f.event === 'token').length).toBeGreaterThan(0);
    expect(parsed.slice(1, -1).every((f) => f.event === 'token')).toBe(true);
  });

  async function streamed(t: { key: string }, query: string) {
    const res = await fetch(`${g.publicUrl}/api/v1/memory/search/stream`, {
      method: 'POST',
      headers: { 'x-api-key': t.key, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    expect(res.status).toBe(200);
    return parseSse(await res.text());
  }

  it('lets only checked single [n] markers out, whatever marker forms the model writes', async () => {
    model.script =
      'The Osprey data center runs on solar power since 2022 [1, 2]. Osprey runs on solar power [1-3]. ' +
      'Solar power runs the Osprey data center [ 1 ]. The moon is made of green cheese [1234][source 1][#1].';
    const json = await call(a, 'POST', '/api/v1/memory/search', { query: 'What powers the Osprey data center?' });
    expect(json.status).toBe(200);
    const frames = await streamed(a, 'What powers the Osprey data center?');
    const done = frames[frames.length - 1]!;
    expect(done.event).toBe('done');
    const tokens = frames.filter((f) => f.event === 'token').map((f) => f.data.text).join('');
    for (const answer of [json.json, done.data]) {
      // Every bracket left is a single [n]; each maps to a citation and each citation to a marker.
      expect(answer.answer).not.toMatch(/\[(?!\d+\])/);
      expect(answer.answer).not.toMatch(/1234|source 1|#1/);
      const markers = [...String(answer.answer).matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]));
      expect([...new Set(markers)].sort()).toEqual(answer.citations.map((c: any) => c.index));
      expect(markers.length).toBeGreaterThan(0);
      expect(answer.answer).toContain('The moon is made of green cheese.');
    }
    expect(tokens).toBe(done.data.answer);
    expect(done.data.answer).toBe(json.json.answer);
  });

  it('ends a stream whose model fails mid-answer with an error frame after the tokens sent', async () => {
    model.failAfter = 'The Osprey data center runs on solar power since 2022 [1]. It also has a wind';
    const frames = await streamed(a, 'What powers the Osprey data center?');
    expect(frames[0]?.event).toBe('sources');
    const last = frames[frames.length - 1]!;
    expect(last.event).toBe('error');
    expect(last.data).toEqual({ code: 'INTERNAL', message: 'the answer could not be completed' });
    expect(frames.some((f) => f.event === 'done')).toBe(false);
    // The complete, checked sentence went out before the failure; the unfinished one never did.
    const text = frames.filter((f) => f.event === 'token').map((f) => f.data.text).join('');
    expect(text).toBe('The Osprey data center runs on solar power since 2022 [1].');
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => i));
  });

  it('accepts an upload through the gateway and reports its status', async () => {
    const boundary = `----lore${uid()}`;
    const body = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="kite.txt"\r\nContent-Type: text/plain\r\n\r\nThe Kite warehouse ships parcels every Friday.\r\n--${boundary}--\r\n`,
    );
    const up = await http(g.publicUrl, 'POST', '/api/v1/memory/uploads', { headers: { 'x-api-key': a.key, 'content-type': `multipart/form-data; boundary=${boundary}` }, raw: body });
    expect(up.status).toBe(202);
    expect(up.json.status).toBe('pending');
    const done = await eventually(async () => {
      const r = await call(a, 'GET', `/api/v1/memory/uploads/${up.json.upload_id}`);
      return r.json?.status === 'completed' ? r.json : undefined;
    }, 60_000, 'upload completed');
    expect(done.doc_id).toMatch(/^doc_/);
    expect((await call(b, 'GET', `/api/v1/memory/uploads/${up.json.upload_id}`)).status).toBe(404);
  });

  it("keeps tenants apart: B sees none of A's documents", async () => {
    const mine = await call(b, 'POST', '/api/v1/memory/ingest', { content: 'The Osprey data center is being sold to a competitor.', routing: { mode: 'auto' } });
    await indexed(b, mine.json.doc_id);
    const s = await call(b, 'POST', '/api/v1/memory/search', { query: 'Osprey data center solar power' });
    expect(s.status).toBe(200);
    expect(s.json.citations.every((c: any) => c.document_id === mine.json.doc_id)).toBe(true);
    expect(s.text).not.toContain('runs on solar');
    const rows = await graph.db.withTenant(a.tenantId, (sql) => sql.query<{ doc_id: string }>(`SELECT doc_id FROM graph.documents LIMIT 1`));
    expect((await call(b, 'GET', `/api/v1/memory/documents/${rows.rows[0]?.doc_id}`)).status).toBe(404);
    // A tenant id in the query string or a trust header changes nothing.
    const spoof = await call(b, 'POST', `/api/v1/memory/search?tenant_id=${a.tenantId}`, { query: 'solar power' }, { 'x-tenant-id': a.tenantId });
    expect(spoof.text).not.toContain('runs on solar');
  });

  it('serves a memory on its own hostname with its mk_ key', async () => {
    const memoryId = `m-${uid()}`;
    const host = `h-${uid()}.memory.test`;
    const mem = await adminCall(g, 'PUT', `/internal/v1/tenants/${a.tenantId}/memories/${memoryId}`, { name: 'Second memory', hostname: host });
    expect(mem.status).toBeLessThan(300);
    const mk = await makeKey(g, a.tenantId, { type: 'memory', memory_id: memoryId });
    const onHost = { host };
    const ingest = await call(mk, 'POST', '/api/v1/memory/ingest', { content: 'The Merlin roadmap ends in December.', routing: { mode: 'auto' } }, onHost);
    expect(ingest.status).toBe(200);
    await indexed(mk, ingest.json.doc_id, onHost);
    const s = await call(mk, 'POST', '/api/v1/memory/search', { query: 'Merlin roadmap' }, onHost);
    expect(s.json.citations.map((c: any) => c.document_id)).toEqual([ingest.json.doc_id]);
    // The primary memory does not see the second memory's document, and vice versa.
    const primary = await call(a, 'POST', '/api/v1/memory/search', { query: 'Merlin roadmap December' });
    expect(primary.text).not.toContain(ingest.json.doc_id);
    const other = await call(mk, 'POST', '/api/v1/memory/search', { query: 'Osprey solar' }, onHost);
    expect(other.text).not.toContain('runs on solar');
  });

  it('refuses missing keys and read-only writes', async () => {
    expect((await http(g.publicUrl, 'POST', '/api/v1/memory/search', { body: { query: 'x' } })).status).toBe(401);
    const ro = await makeKey(g, a.tenantId, { scopes: { access: 'read' } });
    expect((await call(ro, 'POST', '/api/v1/memory/ingest', { content: 'nope', routing: { mode: 'auto' } })).status).toBe(403);
    expect((await call(ro, 'POST', '/api/v1/memory/search', { query: 'Osprey' })).status).toBe(200);
  });
});
