import { EventEnvelopeSchema, TOPICS } from '@lore/contracts';
import { IngestResultSchema, memorySchemas, SearchAnswerSchema } from '@lore/graph';
import type { BusMessage, Subscription } from '@lore/runtime';
import { Client } from 'pg';
import { uniqueSuffix } from '../support/infra';
import { secretDocument, secretNeedles, SEEDED_SECRETS, seededKinds, VAULTS } from './fixtures';
import { eventually, parseSse, startHarness, waitIndexed, type Harness } from './support';

jest.setTimeout(180_000);

/** Every marker in the answer maps to a citation, and every citation to a marker and a document of the tenant. */
function expectValidCitations(body: any, allowedDocs: Set<string>) {
  const markers = [...String(body.answer).matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]));
  const indexes = new Set(body.citations.map((c: any) => c.index));
  for (const m of markers) expect(indexes.has(m)).toBe(true);
  for (const c of body.citations) {
    expect(markers).toContain(c.index);
    expect(allowedDocs.has(c.document_id)).toBe(true);
    expect(typeof c.title).toBe('string');
  }
  expect(Number.isInteger(body.chunk_count)).toBe(true);
  expect(Array.isArray(body.suggested_followups)).toBe(true);
}

/** Clients reach the graph through the real gateway (API keys, Redis), as in production. */
describe('memory data plane through the gateway on PostgreSQL, Redis and Kafka', () => {
  let h: Harness & { database?: { ownerUrl: string } };
  const events: Array<{ key: string; envelope: any }> = [];
  let sub: Subscription;
  const run = uniqueSuffix();
  const tenantA = `t_a_${run}`;
  const tenantB = `t_b_${run}`;
  const docsA = new Set<string>();

  beforeAll(async () => {
    h = await startHarness({ backend: 'postgres', via: 'gateway' });
    sub = await h.bus.subscribe({ groupId: `events-probe-${run}`, topics: [TOPICS.events], fromBeginning: true }, async (m: BusMessage) => {
      const envelope = JSON.parse(m.value.toString('utf8'));
      if (String(envelope.scope?.tenant_id).endsWith(run)) events.push({ key: m.key, envelope });
    });
  });
  afterAll(async () => {
    await sub?.stop();
    await h?.close();
  });

  const ingest = async (who: any, content: string, routing: any = { mode: 'auto' }, extra: Record<string, unknown> = {}) => {
    const r = await h.call('POST', '/api/v1/memory/ingest', who, { content, content_type: 'text', routing, ...extra });
    expect(r.status).toBe(200);
    return r.body;
  };

  it('creates a memory lazily with v_unassigned and manages vaults', async () => {
    const who = h.identity(tenantA);
    const list = await h.call('GET', '/api/v1/memory/vaults', who);
    expect(list.status).toBe(200);
    expect(list.body.vaults.map((v: any) => v.vault_id)).toEqual(['v_unassigned']);
    for (const v of VAULTS) {
      const r = await h.call('POST', '/api/v1/memory/vaults', who, v);
      expect(r.status).toBe(201);
      expect(r.body.vault_id).toBe(`v_${v.name.toLowerCase()}`);
    }
    expect((await h.call('POST', '/api/v1/memory/vaults', who, VAULTS[0])).status).toBe(409);
    // The review queue's id is taken in every memory, given or derived from the name alike.
    for (const body of [{ name: 'Another', vault_id: 'v_unassigned' }, { name: 'Unassigned' }]) {
      const taken = await h.call('POST', '/api/v1/memory/vaults', who, body);
      expect({ body, status: taken.status }).toEqual({ body, status: 409 });
    }
    const patched = await h.call('PATCH', '/api/v1/memory/vaults/v_finance', who, { examples: [...VAULTS[0]!.examples, 'The annual budget review is in May.'] });
    expect(patched.status).toBe(200);
    expect(patched.body.examples).toHaveLength(3);
    expect((await h.call('DELETE', '/api/v1/memory/vaults/v_unassigned', who)).status).toBe(409);
    const tmp = await h.call('POST', '/api/v1/memory/vaults', who, { name: 'Scratch' });
    expect(tmp.status).toBe(201);
    expect((await h.call('DELETE', '/api/v1/memory/vaults/v_scratch', who)).body).toEqual({ moved_documents: 0 });
    expect((await h.call('GET', '/api/v1/memory/vaults/v_scratch', who)).status).toBe(404);
  });

  it('routes confidently on-topic content to its vault and the rest to review', async () => {
    const who = h.identity(tenantA);
    const finance = await ingest(who, 'The quarterly revenue report shows expenses above budget and two unpaid invoices from March.');
    expect(finance).toMatchObject({ vault_id: 'v_finance', needs_review: false, dlp_matches: 0 });
    expect(finance.routing_confidence).toBeGreaterThanOrEqual(0.7);
    expect(finance.routing_confidence).toBeLessThanOrEqual(1);
    const unrelated = await ingest(who, 'The cat sat on the mat and watched the birds in the garden all afternoon.');
    expect(unrelated).toMatchObject({ vault_id: 'v_unassigned', needs_review: true });
    expect(unrelated.routing_confidence).toBeLessThan(0.7);
    const manual = await ingest(who, 'Garden birds prefer sunflower seeds.', { mode: 'manual', vault_id: 'v_engineering' });
    expect(manual).toMatchObject({ vault_id: 'v_engineering', routing_confidence: 1, needs_review: false });
    // By hand into the review queue itself: a request for review, confidence 0 (needs_review means below 0.70).
    const queued = await ingest(who, 'Garden birds also like peanuts.', { mode: 'manual', vault_id: 'v_unassigned' });
    expect(queued).toMatchObject({ vault_id: 'v_unassigned', routing_confidence: 0, needs_review: true });
    docsA.add(queued.doc_id);
    expect((await h.call('POST', '/api/v1/memory/ingest', who, { content: 'x', routing: { mode: 'manual', vault_id: 'v_nope' } })).status).toBe(404);
    for (const d of [finance, unrelated, manual]) {
      docsA.add(d.doc_id);
      expect((await waitIndexed(h, who, d.doc_id)).status).toBe('indexed');
    }
    const routed = await eventually(async () => {
      const e = events.find((x) => x.envelope.event === 'memory.ingest.auto_routed' && x.envelope.payload.doc_id === unrelated.doc_id);
      return e;
    }, 60_000, 'auto_routed event');
    expect(routed.envelope.payload).toMatchObject({ vault_id: 'v_unassigned', needs_review: true });

    const queue = await h.call('GET', '/api/v1/memory/review', who);
    expect(queue.body.documents.map((d: any) => d.doc_id)).toContain(unrelated.doc_id);
    expect(queue.body.documents.map((d: any) => d.doc_id)).not.toContain(finance.doc_id);
    const filed = await h.call('POST', `/api/v1/memory/review/${unrelated.doc_id}/file`, who, { vault_id: 'v_engineering' });
    expect(filed.status).toBe(200);
    expect(filed.body).toMatchObject({ vault_id: 'v_engineering', needs_review: false });
    expect((await h.call('POST', `/api/v1/memory/review/${unrelated.doc_id}/file`, who, { vault_id: 'v_unassigned' })).status).toBe(422);
    const after = await h.call('GET', '/api/v1/memory/review', who);
    expect(after.body.documents.map((d: any) => d.doc_id)).not.toContain(unrelated.doc_id);
  });

  it('makes ingested content searchable with an answer whose every marker is a valid citation', async () => {
    const who = h.identity(tenantA);
    const a = await ingest(who, 'Refunds are issued within five business days after the return arrives at the Rotterdam warehouse.');
    const b = await ingest(who, 'Express shipping from the Rotterdam warehouse takes one business day within the Netherlands.');
    docsA.add(a.doc_id);
    docsA.add(b.doc_id);
    await waitIndexed(h, who, a.doc_id);
    await waitIndexed(h, who, b.doc_id);
    for (const query of ['How long do refunds take?', 'express shipping Netherlands', 'Rotterdam warehouse', 'quarterly revenue invoices', 'zebra migration patterns']) {
      const r = await h.call('POST', '/api/v1/memory/search', who, { query });
      expect(r.status).toBe(200);
      expectValidCitations(r.body, docsA);
    }
    const refunds = await h.call('POST', '/api/v1/memory/search', who, { query: 'How long do refunds take?' });
    expect(refunds.body.answer).toMatch(/five business days[^.]*\[\d+\]\./);
    expect(refunds.body.citations.map((c: any) => c.document_id)).toContain(a.doc_id);
    expect(['hybrid', 'lexical']).toContain(refunds.body.retrieval);
    const completed = await eventually(
      async () => events.find((x) => x.envelope.event === 'memory.ingest.completed' && x.envelope.payload.doc_id === a.doc_id),
      60_000,
      'ingest.completed',
    );
    expect(completed.key).toBe(tenantA);
    expect(completed.envelope.payload).toMatchObject({ doc_id: a.doc_id, vault_id: expect.any(String) });
    expect(completed.envelope.scope).toEqual(await h.scopeOf(who));
  });

  it('streams sources first, then answer tokens, then a done frame', async () => {
    const who = h.identity(tenantA);
    const target = await h.authorize(who, '/api/v1/memory/search/stream');
    const res = await fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...target.headers },
      body: JSON.stringify({ query: 'How long do refunds take?' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const frames = parseSse(await res.text());
    expect(frames[0]?.event).toBe('sources');
    expect(frames[frames.length - 1]?.event).toBe('done');
    const tokens = frames.filter((f) => f.event === 'token');
    expect(tokens.length).toBeGreaterThan(1);
    expect(frames.slice(1, -1).every((f) => f.event === 'token')).toBe(true);
    const done = frames[frames.length - 1]!.data;
    expect(tokens.map((t) => t.data.text).join('')).toBe(done.answer);
    const sourceIndexes = new Set(frames[0]!.data.sources.map((s: any) => s.index));
    for (const c of done.citations) expect(sourceIndexes.has(c.index)).toBe(true);
    expectValidCitations(done, docsA);
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => i));
  });

  it('masks every seeded secret: none appears in stored rows, answers, events or logs', async () => {
    const who = h.identity(tenantA);
    const r = await ingest(who, secretDocument());
    docsA.add(r.doc_id);
    expect(r.dlp_matches).toBe(SEEDED_SECRETS.length);
    const doc = await waitIndexed(h, who, r.doc_id);
    expect(doc.status).toBe('indexed');
    expect(doc.dlp_kinds).toEqual(seededKinds());
    const answers: string[] = [];
    for (const query of ['Falcon card number', 'Falcon AWS key and model key', 'Falcon database password', 'Falcon owner e-mail and phone', 'Falcon deploy key']) {
      const s = await h.call('POST', '/api/v1/memory/search', who, { query });
      expect(s.status).toBe(200);
      expectValidCitations(s.body, docsA);
      answers.push(s.text);
    }
    const flagged = await eventually(
      async () => events.find((x) => x.envelope.event === 'memory.ingest.dlp_flagged' && x.envelope.payload.doc_id === r.doc_id),
      60_000,
      'dlp_flagged',
    );
    expect(flagged.envelope.payload.dlp_matches).toBe(SEEDED_SECRETS.length);
    // A value masked in the title counts like one in the text.
    const titled = await ingest(who, 'The Falcon roadmap is due in spring.', { mode: 'auto' }, { title: 'Notes for jane.roe@example.com' });
    docsA.add(titled.doc_id);
    expect(titled.dlp_matches).toBe(1);
    expect((await waitIndexed(h, who, titled.doc_id))).toMatchObject({ title: 'Notes for [REDACTED:email]', dlp_matches: 1, dlp_kinds: { email: 1 } });
    await eventually(async () => events.find((x) => x.envelope.event === 'memory.ingest.completed' && x.envelope.payload.doc_id === r.doc_id), 60_000, 'completed');

    const owner = new Client({ connectionString: h.database!.ownerUrl });
    await owner.connect();
    let dump = '';
    try {
      for (const table of ['documents', 'chunks', 'postings', 'entities', 'facts', 'contradictions', 'uploads', 'term_stats']) {
        const rows = await owner.query(`SELECT * FROM graph.${table}`);
        dump += JSON.stringify(rows.rows);
      }
      dump += JSON.stringify((await owner.query(`SELECT value FROM runtime.outbox`)).rows);
    } finally {
      await owner.end();
    }
    // The logs are the graph's and the gateway's (the harness captures both).
    expect(h.logs.text()).toContain('gateway-test');
    const haystacks = { database: dump, answers: answers.join('\n'), events: JSON.stringify(events), logs: h.logs.text() };
    for (const needle of secretNeedles()) {
      for (const [where, text] of Object.entries(haystacks)) {
        if (text.includes(needle)) throw new Error(`secret ${needle.slice(0, 6)}… leaked into ${where}`);
      }
    }
    expect(dump).toContain('[REDACTED:card_number]');
  });

  it('detects a contradiction between two sources, lists both and resolves it once', async () => {
    const who = h.identity(tenantA);
    const one = await ingest(who, 'Acme Corp is headquartered in Berlin. Acme Corp was founded in 1999.');
    await waitIndexed(h, who, one.doc_id);
    const two = await ingest(who, 'Acme Corp is headquartered in Munich according to the 2024 filing.');
    await waitIndexed(h, who, two.doc_id);
    docsA.add(one.doc_id);
    docsA.add(two.doc_id);
    const list = await h.call('GET', '/api/v1/memory/contradictions?status=open', who);
    expect(list.status).toBe(200);
    const c = list.body.contradictions.find((x: any) => x.entity === 'Acme Corp' && x.attribute === 'location');
    expect(c).toBeDefined();
    expect(c.sources.map((s: any) => s.document_id).sort()).toEqual([one.doc_id, two.doc_id].sort());
    expect(c.sources.map((s: any) => s.value).sort()).toEqual(['Berlin', 'Munich']);
    const detected = await eventually(
      async () => events.find((x) => x.envelope.event === 'memory.entity.contradiction_detected' && x.envelope.payload.contradiction_id === c.contradiction_id),
      60_000,
      'contradiction_detected',
    );
    expect(detected.envelope.payload.sources).toHaveLength(2);
    expect(events.some((x) => x.envelope.event === 'memory.entity.created' && x.envelope.payload.name === 'Acme Corp')).toBe(true);
    const resolved = await h.call('POST', `/api/v1/memory/contradictions/${c.contradiction_id}/resolve`, who, { resolution: 'keep_second', note: 'moved in 2024' });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ status: 'resolved', resolution: 'keep_second', kept_document_id: c.sources[1].document_id });
    expect((await h.call('POST', `/api/v1/memory/contradictions/${c.contradiction_id}/resolve`, who, { resolution: 'dismissed' })).status).toBe(409);
    await eventually(
      async () => events.find((x) => x.envelope.event === 'memory.entity.contradiction_resolved' && x.envelope.payload.contradiction_id === c.contradiction_id),
      60_000,
      'contradiction_resolved',
    );
  });

  it('scores memory health with diagnostics and publishes the assessment', async () => {
    const who = h.identity(tenantA);
    const g = await h.call('GET', '/api/v1/memory/health', who);
    expect(g.status).toBe(200);
    expect(g.body.score).toBeGreaterThanOrEqual(0);
    expect(g.body.score).toBeLessThanOrEqual(100);
    expect(g.body.inputs.documents).toBeGreaterThan(0);
    expect(Array.isArray(g.body.diagnostics)).toBe(true);
    const p = await h.call('POST', '/api/v1/memory/health/assess', who);
    expect(p.status).toBe(200);
    await eventually(async () => events.find((x) => x.envelope.event === 'memory.health.assessed' && x.envelope.scope.tenant_id === tenantA), 60_000, 'health');
  });

  it('publishes only valid envelopes keyed by tenant', async () => {
    const mine = events.filter((e) => e.envelope.scope.tenant_id === tenantA);
    expect(mine.length).toBeGreaterThan(5);
    for (const e of mine) {
      expect(EventEnvelopeSchema.safeParse(e.envelope).success).toBe(true);
      expect(e.key).toBe(tenantA);
    }
    const kinds = new Set(mine.map((e) => e.envelope.event));
    for (const k of ['memory.ingest.completed', 'memory.ingest.dlp_flagged', 'memory.ingest.auto_routed', 'memory.entity.created', 'memory.entity.contradiction_detected', 'memory.entity.contradiction_resolved', 'memory.health.assessed']) {
      expect(kinds.has(k)).toBe(true);
    }
  });

  it("never shows another tenant's documents, even to crafted queries or the same memory id", async () => {
    const a = h.identity(tenantA);
    const b = h.identity(tenantB);
    const secret = await ingest(b, 'Project Nightingale budget is 77 million and Nightingale launches in Reykjavik.');
    await waitIndexed(h, b, secret.doc_id);
    // Another tenant whose memory has the same id as A's: the gateway cannot make one (its memory ids are
    // global), so its document goes straight to the graph with a signed identity; A must not see it either.
    const sameId = h.identity(`t_c_${run}`, (await h.scopeOf(a)).memory_id);
    const twin = await h.callGraph('POST', '/api/v1/memory/ingest', sameId, { content: 'Nightingale twin memory: the Reykjavik budget is 77 million.', routing: { mode: 'auto' } });
    expect(twin.status).toBe(200);
    await eventually(async () => {
      const r = await h.callGraph('GET', `/api/v1/memory/documents/${twin.body.doc_id}`, sameId);
      return r.body?.status === 'indexed' ? r.body : undefined;
    }, 60_000, 'twin indexed');
    const own = await h.call('POST', '/api/v1/memory/search', b, { query: 'Nightingale budget' });
    expect(own.body.citations.map((c: any) => c.document_id)).toContain(secret.doc_id);
    const crafted = [
      'Nightingale budget',
      "Nightingale' OR '1'='1",
      `Nightingale'); SELECT * FROM graph.chunks; --`,
      'Nightingale | Reykjavik & !zzz',
      '*',
      '%Nightingale%',
      `tenant_id = '${tenantB}' Nightingale`,
      'Nightingale'.repeat(50),
    ];
    for (const query of crafted) {
      const r = await h.call('POST', '/api/v1/memory/search', a, { query });
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(secret.doc_id);
      expect(r.text).not.toContain(twin.body.doc_id);
      expect(r.text).not.toMatch(/77 million|Reykjavik/);
      expectValidCitations(r.body, docsA);
    }
    const target = await h.authorize(a, '/api/v1/memory/search/stream');
    const stream = await fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...target.headers },
      body: JSON.stringify({ query: 'Nightingale Reykjavik budget' }),
    });
    expect(await stream.text()).not.toMatch(/Reykjavik|77 million/);
    expect((await h.call('GET', `/api/v1/memory/documents/${secret.doc_id}`, a)).status).toBe(404);
    expect((await h.call('POST', `/api/v1/memory/review/${secret.doc_id}/file`, a, { vault_id: 'v_finance' })).status).toBe(404);
    expect((await h.call('DELETE', `/api/v1/memory/documents/${secret.doc_id}`, a)).status).toBe(404);
    const listA = await h.call('GET', '/api/v1/memory/documents?limit=200', a);
    expect(listA.body.documents.map((d: any) => d.doc_id)).not.toContain(secret.doc_id);
    const bVaults = await h.call('GET', '/api/v1/memory/vaults', b);
    expect(bVaults.body.vaults.map((v: any) => v.vault_id)).toEqual(['v_unassigned']);
  });

  it('rejects missing or forged identities, read-only writes and invalid bodies', async () => {
    const who = h.identity(tenantA);
    expect((await h.call('POST', '/api/v1/memory/search', null, { query: 'x' })).status).toBe(401);
    const forged = await fetch(`${h.url}/api/v1/memory/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lore-identity': 'eyJhbGciOiJub25lIn0.eyJpZG4iOnsidGVuYW50X2lkIjoieCJ9fQ.', 'x-tenant-id': tenantA },
      body: JSON.stringify({ query: 'refunds' }),
    });
    expect(forged.status).toBe(401);
    const readOnly = h.identity(tenantA, `mem_${tenantA}`, { scopes: { access: 'read' } });
    expect((await h.call('POST', '/api/v1/memory/ingest', readOnly, { content: 'hello there', routing: { mode: 'auto' } })).status).toBe(403);
    expect((await h.call('POST', '/api/v1/memory/search', readOnly, { query: 'refunds' })).status).toBe(200);
    const bad = await h.call('POST', '/api/v1/memory/ingest', who, { content: '', routing: { mode: 'sideways' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: any) => d.path).sort()).toEqual(['content', 'routing.mode']);
    expect((await h.call('POST', '/api/v1/memory/search', who, { query: '' })).status).toBe(400);
    expect((await h.call('GET', '/api/v1/memory/nothing-here', who)).status).toBe(404);
  });

  it('answers in the documented shapes', async () => {
    const who = h.identity(tenantA);
    const ing = await h.call('POST', '/api/v1/memory/ingest', who, { content: 'The Lark office has a rooftop garden.', routing: { mode: 'manual', vault_id: 'v_finance' } });
    expect(IngestResultSchema.strict().safeParse(ing.body).error).toBeUndefined();
    const doc = await waitIndexed(h, who, ing.body.doc_id);
    expect(memorySchemas.DocumentSchema.strict().safeParse(doc).error).toBeUndefined();
    const search = await h.call('POST', '/api/v1/memory/search', who, { query: 'Lark rooftop garden', vault_ids: ['v_finance'] });
    expect(SearchAnswerSchema.strict().safeParse(search.body).error).toBeUndefined();
    expect(search.body.citations.map((c: any) => c.document_id)).toEqual([ing.body.doc_id]);
    const elsewhere = await h.call('POST', '/api/v1/memory/search', who, { query: 'Lark rooftop garden', vault_ids: ['v_engineering'] });
    expect(elsewhere.body.citations.map((c: any) => c.document_id)).not.toContain(ing.body.doc_id);
    const checks: Array<[string, any]> = [
      ['/api/v1/memory/vaults', memorySchemas.VaultListSchema],
      ['/api/v1/memory/documents?limit=5', memorySchemas.DocumentListSchema],
      ['/api/v1/memory/review', memorySchemas.DocumentListSchema],
      ['/api/v1/memory/contradictions', memorySchemas.ContradictionListSchema],
      ['/api/v1/memory/health', memorySchemas.HealthSchema],
    ];
    for (const [path, schema] of checks) {
      const r = await h.call('GET', path, who);
      expect({ path, error: schema.safeParse(r.body).error }).toEqual({ path, error: undefined });
    }
    const bad = await h.call('POST', '/api/v1/memory/search', who, { query: '' });
    expect(memorySchemas.ErrorSchema.safeParse(bad.body).success).toBe(true);
  });

  it('indexes words written between angle brackets, so lexical search finds them', async () => {
    const who = h.identity(tenantA);
    const d = await ingest(who, 'Planning notes <!-- the Zanzibar budget freeze --> and the a<Quokka estimate> for spring.');
    docsA.add(d.doc_id);
    await waitIndexed(h, who, d.doc_id);
    const owner = new Client({ connectionString: h.database!.ownerUrl });
    await owner.connect();
    try {
      const rows = await owner.query<{ lexemes: string[] }>(`SELECT tsvector_to_array(tsv) AS lexemes FROM graph.chunks WHERE doc_id = $1`, [d.doc_id]);
      const lexemes = rows.rows.flatMap((r) => r.lexemes);
      // PostgreSQL's parser alone drops the comment and the tag-like run: these three would be missing.
      expect(lexemes).toEqual(expect.arrayContaining(['zanzibar', 'freez', 'quokka']));
    } finally {
      await owner.end();
    }
    const found = await h.call('POST', '/api/v1/memory/search', who, { query: 'Zanzibar budget <freeze>' });
    expect(found.status).toBe(200);
    expect(found.body.citations.map((c: any) => c.document_id)).toContain(d.doc_id);
  });

  it('deletes a document and keeps it out of search', async () => {
    const who = h.identity(tenantA);
    const d = await ingest(who, 'The Orion cluster runs on twelve nodes in Frankfurt.');
    await waitIndexed(h, who, d.doc_id);
    expect((await h.call('POST', '/api/v1/memory/search', who, { query: 'Orion cluster nodes' })).body.citations.map((c: any) => c.document_id)).toContain(d.doc_id);
    expect((await h.call('DELETE', `/api/v1/memory/documents/${d.doc_id}`, who)).status).toBe(204);
    const after = await h.call('POST', '/api/v1/memory/search', who, { query: 'Orion cluster nodes' });
    expect(after.text).not.toContain(d.doc_id);
  });
});
