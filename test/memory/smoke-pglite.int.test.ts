import { createLogger, Lifecycle } from '@lore/runtime';
import { startHarness, waitIndexed, type Harness } from './support';

jest.setTimeout(120_000);

describe('memory on embedded PostgreSQL (PGlite + memory bus)', () => {
  let h: Harness;
  const lifecycle = new Lifecycle(createLogger({ level: 'silent', service: 'smoke' }));
  beforeAll(async () => {
    h = await startHarness({ backend: 'pglite', graph: { lifecycle } });
    lifecycle.markStarted();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('ingests, indexes and answers with valid citations using hybrid retrieval', async () => {
    const who = h.identity('t_smoke');
    const ingest = await h.call('POST', '/api/v1/memory/ingest', who, {
      content: 'Refunds are issued within five business days after the return arrives. The Pro plan costs 49 dollars per month.',
      content_type: 'text',
      routing: { mode: 'auto' },
    });
    expect(ingest.status).toBe(200);
    expect(ingest.body).toMatchObject({ vault_id: 'v_unassigned', needs_review: true, dlp_matches: 0 });
    const doc = await waitIndexed(h, who, ingest.body.doc_id);
    expect(doc.status).toBe('indexed');
    const s = await h.call('POST', '/api/v1/memory/search', who, { query: 'How long do refunds take?' });
    expect(s.status).toBe(200);
    expect(s.body.retrieval).toBe('hybrid');
    expect(s.body.answer).toContain('[1]');
    expect(s.body.citations).toEqual([{ index: 1, title: expect.any(String), document_id: ingest.body.doc_id }]);
    expect(s.body.chunk_count).toBeGreaterThan(0);
  });

  it('says in readiness which language model, embedder and retrieval mode run', async () => {
    const r = await lifecycle.readiness();
    expect(r.ready).toBe(true);
    expect(r.checks.graph).toMatchObject({
      ok: true,
      retrieval: 'hybrid',
      vectors: true,
      language_model: { kind: 'extractive' },
      embedder: { kind: 'hashed', dims: 384 },
      ocr: 'disabled',
    });
  });
});

describe('memory without vectors', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ backend: 'pglite', graph: { vectors: false } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('runs lexical-only search, says so, and logs it at start', async () => {
    const who = h.identity('t_lexical');
    const ingest = await h.call('POST', '/api/v1/memory/ingest', who, { content: 'The Heron depot stores spare turbine blades.', routing: { mode: 'auto' } });
    await waitIndexed(h, who, ingest.body.doc_id);
    const s = await h.call('POST', '/api/v1/memory/search', who, { query: 'turbine blades depot' });
    expect(s.body.retrieval).toBe('lexical');
    expect(s.body.citations.map((c: any) => c.document_id)).toEqual([ingest.body.doc_id]);
    expect(h.graph.describe()).toMatchObject({ retrieval: 'lexical', vectors: false });
    expect(h.logs.text()).toContain('memory search runs lexical-only');
  });
});

describe('streamed search when the client goes away', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ backend: 'pglite' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('stops answering and keeps serving others', async () => {
    const who = h.identity('t_abort');
    const ingest = await h.call('POST', '/api/v1/memory/ingest', who, { content: 'The Gannet archive keeps invoices for ten years.', routing: { mode: 'auto' } });
    await waitIndexed(h, who, ingest.body.doc_id);
    const controller = new AbortController();
    const res = await fetch(`${h.url}/api/v1/memory/search/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lore-identity': await h.signer.sign(who) },
      body: JSON.stringify({ query: 'Gannet archive invoices' }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    controller.abort();
    await expect(res.text()).rejects.toThrow();
    const after = await h.call('POST', '/api/v1/memory/search', who, { query: 'Gannet archive invoices' });
    expect(after.status).toBe(200);
    expect(after.body.citations.map((c: any) => c.document_id)).toEqual([ingest.body.doc_id]);
  });
});
