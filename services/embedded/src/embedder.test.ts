import { EmbedderUpgrade, HashedEmbedder, SwitchingEmbedder, type Embedder } from '@lore/ai';
import { countChunksToReembed, createGraphService, reembedChunks, vectorSearch, type GraphService } from '@lore/graph';
import {
  IDENTITY_HEADER,
  IdentitySigner,
  MemoryBus,
  PgliteDb,
  PostgresBlobStore,
  createLogger,
  createMetricsRegistry,
  listen,
  type Identity,
  type StartedServer,
} from '@lore/runtime';

/**
 * The switch from the hashed embedder to the local model on embedded PostgreSQL (PGlite), with a stand-in model
 * (the real one is exercised by test/e2e/embedded-model.int.test.ts): an index built with the hashed embedder, a
 * model that becomes ready, the re-embed held half-way, the switch; searches answer at every step.
 */

/** A "model" with its own vector space: the hashed vectors of the reversed text. Its batches can be held. */
class StandInModel implements Embedder {
  readonly kind = 'local-model' as const;
  readonly model = 'stand-in-minilm';
  readonly dims = 384;
  readonly detail = 'stand-in';
  private readonly inner = new HashedEmbedder(384);
  gate: Promise<void> = Promise.resolve();
  calls = 0;
  async embed(texts: string[]): Promise<number[][]> {
    this.calls += 1;
    await this.gate;
    return this.inner.embed(texts.map((t) => [...t].reverse().join('')));
  }
}

const DOCS = [
  'The Heron depot in Lisbon stores spare turbine blades for the northern wind farms.',
  'Quarterly invoices are approved by the finance team before the fifth working day.',
  'The Falcon release ships in May with offline maps and a new onboarding flow.',
];

describe('switching embedded search from the hashed embedder to the local model (PGlite)', () => {
  let db: PgliteDb;
  let graph: GraphService;
  let server: StartedServer;
  let switching: SwitchingEmbedder;
  const hashed = new HashedEmbedder(384, 'test');
  const signer = new IdentitySigner('embedder-switch-identity-secret-0123456789');
  const lines: Array<{ level: string; msg: string }> = [];
  const logger = createLogger({
    level: 'info',
    service: 'embedder-switch-test',
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as { level: string; msg: string }) },
  });
  const who: Identity = { tenant_id: 't_a', workspace_id: 'ws_a', memory_id: 'm_a', credential: 'ck_test', subject: 'key_a', role: 'admin' };
  const other: Identity = { ...who, tenant_id: 't_b', workspace_id: 'ws_b', memory_id: 'm_b', subject: 'key_b' };

  async function call(identity: Identity, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { [IDENTITY_HEADER]: await signer.sign(identity) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${server.url}/api/v1/memory${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  async function until(what: string, fn: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!(await fn())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function ingest(identity: Identity, content: string): Promise<string> {
    const r = await call(identity, 'POST', '/ingest', { content, content_type: 'text', routing: { mode: 'auto' } });
    expect(r.status).toBe(200);
    const docId = r.body.doc_id as string;
    await until(`${docId} indexed`, async () => (await call(identity, 'GET', `/documents/${docId}`)).body?.status === 'indexed');
    return docId;
  }

  /** The models of the chunks' vectors, over every tenant. */
  async function chunkModels(): Promise<Record<string, number>> {
    const r = await db.asOwner((sql) => sql.query<{ m: string | null; n: string }>(`SELECT embedding_model AS m, count(*)::text AS n FROM graph.chunks GROUP BY 1`));
    return Object.fromEntries(r.rows.map((row) => [row.m ?? 'none', Number(row.n)]));
  }

  /** A search through the route: answers 200 with a cited source for the question. */
  async function searchFinds(identity: Identity, question: string, needle: string): Promise<void> {
    const r = await call(identity, 'POST', '/search', { query: question });
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).toContain(needle);
  }

  beforeAll(async () => {
    db = await PgliteDb.open();
    switching = new SwitchingEmbedder(hashed);
    graph = await createGraphService({
      db,
      bus: new MemoryBus({ logger }),
      blobs: new PostgresBlobStore(db),
      logger: createLogger({ level: 'silent', service: 'graph' }),
      metrics: createMetricsRegistry('embedder-switch', { defaultMetrics: false }),
      signer,
      embedder: switching,
      ocr: null,
    });
    server = await listen(graph.app, 0, '127.0.0.1');
    await graph.worker.start();
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await graph?.close();
    await db?.close();
  });

  it('re-embeds what the hashed embedder indexed, indexes new documents with the model, and switches queries last', async () => {
    expect(graph.memory.vectors).toBe(true);
    for (const d of DOCS) await ingest(who, d);
    await ingest(other, 'Tenant B keeps its own notes about the Heron depot.');
    expect(await chunkModels()).toEqual({ [hashed.model]: 4 });
    await searchFinds(who, 'Where are the turbine blades stored?', 'Lisbon');

    const model = new StandInModel();
    let release!: () => void;
    model.gate = new Promise<void>((r) => (release = r));
    const upgrade = new EmbedderUpgrade({
      switching,
      logger,
      fetch: async () => {},
      load: async () => model,
      reembed: (embedder, onBatch) => reembedChunks(graph.memory, embedder, onBatch, 2),
      remaining: (name) => countChunksToReembed(db, name),
    });
    const done = upgrade.start();
    await until('the re-embed to start', async () => model.calls > 0);
    // Held half-way: indexing already uses the model, queries still the hashed embedder, and search answers.
    expect(upgrade.status().state).toBe('re-embedding');
    expect(switching.model).toBe(hashed.model);
    expect(switching.indexEmbedder).toBe(model);
    await searchFinds(who, 'Where are the turbine blades stored?', 'Lisbon');
    const ingestDuring = call(who, 'POST', '/ingest', { content: 'The Osprey team moved its standup to nine in the morning.', content_type: 'text', routing: { mode: 'auto' } });

    release();
    const final = await done;
    expect(final.state).toBe('done');
    expect((await ingestDuring).status).toBe(200);
    await until('the document ingested during the re-embed', async () => Object.values(await chunkModels()).reduce((a, b) => a + b, 0) === 5);
    // Every chunk, of both tenants and the one ingested meanwhile, carries the model; queries use it now.
    expect(await chunkModels()).toEqual({ [model.model]: 5 });
    expect(final.reembedded).toBeGreaterThanOrEqual(4);
    expect(switching.model).toBe(model.model);
    expect(switching.kind).toBe('local-model');
    await searchFinds(who, 'Where are the turbine blades stored?', 'Lisbon');
    // And the vectors are the model's: a query embedded by it finds its nearest chunk by vector alone.
    const [q] = await model.embed(['Quarterly invoices are approved by the finance team']);
    const hits = await db.withTenant('t_a', (sql) => vectorSearch(sql, { tenantId: 't_a', memoryId: 'm_a' }, q!, model.model, 1));
    const top = await db.withTenant('t_a', (sql) => sql.query<{ content: string }>(`SELECT content FROM graph.chunks WHERE chunk_id = $1`, [hits[0]!.chunk_id]));
    expect(top.rows[0]!.content).toContain('invoices');
    expect(lines.some((l) => l.msg.includes('search now answers with it'))).toBe(true);
  }, 120_000);

  it('waits for a document embedded with the old model before it switches', async () => {
    const start = new SwitchingEmbedder(hashed);
    const held = start.leaseForIndexing();
    expect(held.embedder).toBe(hashed);
    const model = new StandInModel();
    start.indexWith(model);
    let drained = false;
    const waiting = start.drained().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(drained).toBe(false);
    // A lease taken now is the model's and does not hold the switch.
    const fresh = start.leaseForIndexing();
    expect(fresh.embedder).toBe(model);
    held.release();
    await waiting;
    expect(drained).toBe(true);
    fresh.release();
  });

  it('keeps the hashed embedder when the model does not load, and says so in one log line', async () => {
    const before = lines.length;
    const fresh = new SwitchingEmbedder(hashed);
    const upgrade = new EmbedderUpgrade({
      switching: fresh,
      logger,
      fetch: async () => {},
      load: async () => {
        throw new Error('model.onnx is truncated');
      },
      reembed: async () => 0,
      remaining: async () => 0,
    });
    const status = await upgrade.start();
    expect(status.state).toBe('fallback');
    expect(status.detail).toContain('model.onnx is truncated');
    expect(fresh.model).toBe(hashed.model);
    expect(fresh.indexEmbedder).toBe(hashed);
    const warnings = lines.slice(before).filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain('keeps the hashed embedder');
  });
});
