import { createLogger, createMetricsRegistry, IdentitySigner, IDENTITY_HEADER, listen, MemoryBus, PgliteDb, PostgresBlobStore, type Identity, type StartedServer } from '@lore/runtime';
import { defaultModelDir, HashedEmbedder, hasLocalModel, LocalModelEmbedder, type Embedder } from '@lore/ai';
import { createGraphService, retrieve, vectorSearch, type GraphService } from '@lore/graph';

// The real local embedding model (all-MiniLM-L6-v2, int8 ONNX). The test command fetches it into the cache
// (`scripts/fetch-model.sh`) before the integration suites; without it these tests fail and say so.

jest.setTimeout(120_000);

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0);

/** Each: a sentence, a paraphrase sharing (almost) no words with it, and an unrelated sentence. */
const TRIPLES: Array<[string, string, string]> = [
  ['How do I reset my password?', 'What are the steps to recover a forgotten login credential?', 'How do I reset the router to factory settings?'],
  ['The invoice must be paid within thirty days.', 'Customers have one month to settle the bill.', 'The invoice template uses the company logo.'],
  ['Employees may work from home twice a week.', 'Staff are allowed two remote days weekly.', 'Employees must wear badges in the building.'],
  ['The server crashed because it ran out of memory.', 'An exhausted RAM supply brought the machine down.', 'The server room is cooled to eighteen degrees.'],
  ['The meeting was postponed until next week.', 'The gathering has been delayed by seven days.', 'The meeting room has a large whiteboard.'],
  ['The car would not start this morning.', 'My vehicle failed to turn on at dawn.', 'The car was painted red last year.'],
];

/** How many triples place the paraphrase closer to the sentence than the unrelated text with the same words. */
async function paraphraseWins(embedder: Embedder): Promise<number> {
  let wins = 0;
  for (const [a, p, u] of TRIPLES) {
    const [va, vp, vu] = await embedder.embed([a, p, u]);
    if (dot(va!, vp!) > dot(va!, vu!)) wins += 1;
  }
  return wins;
}

describe('local embedding model', () => {
  const dir = defaultModelDir();
  let model: LocalModelEmbedder;
  beforeAll(async () => {
    if (!hasLocalModel(dir)) throw new Error(`the local model is not in ${dir}: run bash scripts/fetch-model.sh (the test command does)`);
    model = await LocalModelEmbedder.load({ dir });
  });
  afterAll(async () => {
    await model?.close();
  });

  it('gives 384 unit-length dimensions, the same for the same text alone or in any batch', async () => {
    expect(model).toMatchObject({ kind: 'local-model', model: 'all-MiniLM-L6-v2-int8', dims: 384 });
    const text = 'Refunds are issued within five business days.';
    const [alone] = await model.embed([text]);
    const again = await model.embed(['A much longer sentence that makes the batch padded for the shorter ones around it.', text, 'Short.']);
    expect(alone).toHaveLength(384);
    expect(dot(alone!, alone!)).toBeCloseTo(1, 5);
    alone!.forEach((x, i) => expect(x).toBeCloseTo(again[1]![i]!, 5));
    const [repeat] = await model.embed([text]);
    expect(repeat).toEqual(alone);
  });

  it('places paraphrases closer than unrelated sentences with shared words (the hashed embedder does not)', async () => {
    expect(await paraphraseWins(model)).toBe(TRIPLES.length);
    // The same test on the lexical hashed embedder fails: it is a test of meaning, not of shared words.
    expect(await paraphraseWins(new HashedEmbedder(384))).toBeLessThan(TRIPLES.length - 2);
  });

  it('cuts long inputs to 256 word pieces', async () => {
    expect(model.tokenize('alpha '.repeat(5000))).toHaveLength(256);
    const [long, head] = await model.embed(['alpha '.repeat(5000), 'alpha '.repeat(254)]);
    long!.forEach((x, i) => expect(x).toBeCloseTo(head![i]!, 5));
  });

  it('keeps the event loop turning while it computes', async () => {
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 5);
    const started = Date.now();
    try {
      await model.embed(Array.from({ length: 16 }, (_, i) => `chunk ${i} `.repeat(100)));
    } finally {
      clearInterval(timer);
    }
    const ms = Date.now() - started;
    // A blocked loop would tick zero times; a free one about every 5 ms (generous bound for a loaded machine).
    expect(ticks).toBeGreaterThan(ms / 50);
  });
});

describe('the graph service with the local model (PGlite)', () => {
  const secret = 'local-model-test-identity-secret-0123456789';
  const signer = new IdentitySigner(secret);
  let db: PgliteDb;
  let graph: GraphService;
  let server: StartedServer;
  let model: LocalModelEmbedder;
  const who = (tenant: string): Identity => ({ tenant_id: tenant, workspace_id: `ws_${tenant}`, memory_id: `mem_${tenant}`, credential: 'ck_test', subject: 'test', role: 'admin' });
  const call = async (method: string, path: string, identity: Identity, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', [IDENTITY_HEADER]: await signer.sign(identity) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const ingest = async (identity: Identity, content: string, title: string) => {
    const r = await call('POST', '/api/v1/memory/ingest', identity, { content, title, content_type: 'text', routing: { mode: 'review' } });
    expect(r.status).toBe(200);
    for (let i = 0; i < 400; i += 1) {
      const s = await call('GET', `/api/v1/memory/documents/${r.body.doc_id}`, identity);
      if (s.body.status === 'indexed') return r.body.doc_id as string;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`document ${r.body.doc_id} was not indexed`);
  };

  beforeAll(async () => {
    const dir = defaultModelDir();
    if (!hasLocalModel(dir)) throw new Error(`the local model is not in ${dir}: run bash scripts/fetch-model.sh (the test command does)`);
    model = await LocalModelEmbedder.load({ dir });
    db = await PgliteDb.open();
    const logger = createLogger({ level: 'silent', service: 'local-model-test' });
    const metrics = createMetricsRegistry('local_model_test', { defaultMetrics: false });
    graph = await createGraphService({ db, bus: new MemoryBus({ logger }), blobs: new PostgresBlobStore(db), logger, metrics, signer, ocr: null, embedder: model, consumerGroup: 'local-model-test' });
    await graph.worker.start();
    server = await listen(graph.app, 0, '127.0.0.1');
  });
  afterAll(async () => {
    await server?.close(500);
    await graph?.close();
    await db?.close();
    await model?.close();
  });

  it('finds a document by meaning when the question shares no word with it', async () => {
    expect(graph.describe()).toMatchObject({ retrieval: 'hybrid', embedder: { kind: 'local-model', model: 'all-MiniLM-L6-v2-int8', dims: 384 } });
    const t = who('t_local_model');
    const target = await ingest(t, 'Staff can claim reimbursement for train tickets to client sites.', 'Expenses');
    await ingest(t, 'The cafeteria serves vegetarian lunches every Friday.', 'Cafeteria');
    await ingest(t, 'Quarterly planning meetings happen in the large conference room.', 'Planning');
    const query = 'How do I get my travel costs paid back?';
    const r = await retrieve(graph.memory, { tenantId: t.tenant_id, workspaceId: t.workspace_id, memoryId: t.memory_id }, query, { topK: 3 });
    expect(r.mode).toBe('hybrid');
    expect(r.sources[0]).toMatchObject({ document_id: target, ranks: { vector: 1 } });
    // Through the route too: the search answers (hybrid) and the full-text side alone had nothing to offer.
    const s = await call('POST', '/api/v1/memory/search', t, { query });
    expect(s.status).toBe(200);
    expect(s.body.retrieval).toBe('hybrid');
    expect(r.sources[0]?.ranks).not.toHaveProperty('full_text');
  });

  it('never compares vectors of another model: chunks embedded by the hashed embedder stay out of vector search', async () => {
    const t = who('t_model_mix');
    const hashed = new HashedEmbedder(384);
    graph.memory.embedder = hashed;
    try {
      await ingest(t, 'Parking permits are renewed every January at the front desk.', 'Parking');
    } finally {
      graph.memory.embedder = model;
    }
    const scope = { tenantId: t.tenant_id, memoryId: t.memory_id };
    const [q] = await model.embed(['parking permits']);
    const [qh] = await hashed.embed(['parking permits']);
    expect(await db.withTenant(t.tenant_id, (sql) => vectorSearch(sql, scope, q!, model.model, 10))).toEqual([]);
    expect(await db.withTenant(t.tenant_id, (sql) => vectorSearch(sql, scope, qh!, hashed.model, 10))).toHaveLength(1);
  });
});
