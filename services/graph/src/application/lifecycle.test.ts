import { TOPICS, type MemoryCreatedMessage, type MemoryDeletedMessage } from '@lore/contracts';
import { createMetricsRegistry, type BlobStore, type Identity, type MemoryBus, type PgliteDb, type StartedServer } from '@lore/runtime';
import type { GraphService } from '../graph-service';
import { startGraphTestStack, type GraphTestStack } from '../test-stack';
import { eraseMemory, reopenMemory } from './lifecycle';

/**
 * Erasing a memory on embedded PostgreSQL (PGlite), with batches of two rows so every loop runs several times.
 * Three memories share names on purpose: tenant A's `m_gone` (erased), A's `m_kept`, and tenant B's `m_gone`.
 */
const GRAPH_TABLES = [
  'vaults',
  'uploads',
  'documents',
  'chunks',
  'postings',
  'term_stats',
  'corpus_stats',
  'entities',
  'entity_mentions',
  'facts',
  'contradictions',
] as const;

const DOCS = [
  'Acme Corp is headquartered in Berlin. Acme Corp was founded in 1999. The Falcon project ships in May.',
  'Acme Corp is headquartered in Munich according to the 2024 filing. Globex Industries supplies the turbines.',
  '# Field notes\n\nThe Heron depot stores spare turbine blades. Dr. Jane Smith runs the Heron depot in Lisbon.',
];

describe('erasing a memory (PGlite)', () => {
  let db: PgliteDb;
  let bus: MemoryBus;
  let graph: GraphService;
  let server: StartedServer;
  let stack: GraphTestStack;
  const busMetrics = createMetricsRegistry('graph-lifecycle-bus', { defaultMetrics: false });

  const who = (tenant: string, memory: string): Identity => ({
    tenant_id: tenant,
    workspace_id: `ws_${tenant}`,
    memory_id: memory,
    credential: 'ck_test',
    subject: `key_${tenant}`,
    role: 'admin',
  });
  const gone = who('t_a', 'm_gone');
  const kept = who('t_a', 'm_kept');
  const otherTenant = who('t_b', 'm_gone');

  async function call(identity: Identity, method: string, path: string, body?: unknown, raw?: { type: string; data: Buffer }): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = await stack.identify(identity);
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (raw) headers['content-type'] = raw.type;
    const res = await fetch(`${server.url}/api/v1/memory${path}`, { method, headers, body: raw ? raw.data : body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  function multipart(filename: string, content: string): { type: string; data: Buffer } {
    const boundary = `----lore${Math.random().toString(16).slice(2)}`;
    return {
      type: `multipart/form-data; boundary=${boundary}`,
      data: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`),
    };
  }

  async function until<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function ingestIndexed(identity: Identity, content: string): Promise<string> {
    const r = await call(identity, 'POST', '/ingest', { content, routing: { mode: 'auto' } });
    expect(r.status).toBe(200);
    await until(`document ${r.body.doc_id} indexed`, async () => {
      const d = await call(identity, 'GET', `/documents/${r.body.doc_id}`);
      return d.body?.status === 'indexed' ? true : undefined;
    });
    return r.body.doc_id;
  }

  /** Rows per table of one memory, read in its tenant's transaction (row-level security on). */
  async function rowsOf(identity: Identity): Promise<Record<string, number>> {
    return db.withTenant(identity.tenant_id, async (sql) => {
      const out: Record<string, number> = {};
      for (const table of GRAPH_TABLES) {
        const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM graph.${table} WHERE tenant_id = $1 AND memory_id = $2`, [identity.tenant_id, identity.memory_id]);
        out[table] = Number(r.rows[0]?.n);
      }
      return out;
    });
  }

  /** Until the outbox is published and every published message of the worker's topics was handled. */
  async function settled(): Promise<void> {
    await until('outbox published and messages handled', async () => {
      const pending = await db.query<{ n: string }>(`SELECT count(*) AS n FROM runtime.outbox WHERE published_at IS NULL`);
      if (Number(pending.rows[0]?.n) > 0) return undefined;
      const metrics = await busMetrics.getMetricsAsJSON();
      const byTopic = (name: string) =>
        new Map((metrics.find((m) => m.name === name)?.values ?? []).map((v) => [String(v.labels.topic), Number(v.value)]));
      const published = byTopic('lore_bus_messages_published_total');
      const consumed = byTopic('lore_bus_messages_consumed_total');
      const behind = [TOPICS.memoryIngest, TOPICS.memoryUploads, TOPICS.memoryLifecycle].some((t) => (published.get(t) ?? 0) !== (consumed.get(t) ?? 0));
      return behind ? undefined : true;
    });
  }

  async function blobCount(tenant: string): Promise<number> {
    const r = await db.withTenant(tenant, (sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM runtime.blobs`));
    return Number(r.rows[0]?.n);
  }

  const deleted = (identity: Identity, eventId: string): MemoryDeletedMessage => ({
    event_id: eventId,
    type: 'memory.deleted',
    tenant_id: identity.tenant_id,
    memory_id: identity.memory_id,
    retain_data: false,
    occurred_at: new Date().toISOString(),
  });

  beforeAll(async () => {
    stack = await startGraphTestStack('lifecycle', { bus: { metrics: busMetrics }, service: { config: { eraseBatchRows: 2 } } });
    ({ db, bus, graph, server } = stack);
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
  });

  let keptBefore: Record<string, number>;
  let otherBefore: Record<string, number>;
  let waitingDoc: string;
  let waitingUpload: string;

  it('fills three memories: documents, a custom vault, a contradiction, and (worker paused) a waiting document and upload', async () => {
    for (const identity of [gone, kept, otherTenant]) {
      for (const content of DOCS) await ingestIndexed(identity, content);
      expect((await call(identity, 'POST', '/vaults', { name: 'Suppliers', description: 'who supplies what', examples: ['turbines'] })).status).toBe(201);
    }
    const open = await call(gone, 'GET', '/contradictions?status=open');
    expect(open.body.count).toBeGreaterThan(0);

    // With the worker stopped, an accepted document and a stored upload wait for it (their messages too).
    await graph.worker.stop();
    const doc = await call(gone, 'POST', '/ingest', { content: 'The Osprey data center runs on solar power since 2022.', routing: { mode: 'auto' } });
    expect(doc.status).toBe(200);
    waitingDoc = doc.body.doc_id;
    const up = await call(gone, 'POST', '/uploads', undefined, multipart('osprey.txt', 'The Osprey data center has two backup generators.'));
    expect(up.status).toBe(202);
    waitingUpload = up.body.upload_id;
    expect(await blobCount('t_a')).toBe(1);

    const mine = await rowsOf(gone);
    expect(mine.documents).toBe(4);
    expect(mine.chunks).toBeGreaterThan(2);
    expect(mine.postings).toBeGreaterThan(2);
    expect(mine.entities).toBeGreaterThan(2);
    expect(mine.facts).toBeGreaterThan(0);
    expect(mine.contradictions).toBeGreaterThan(0);
    expect(mine.uploads).toBe(1);
    expect(mine.vaults).toBe(2);
    keptBefore = await rowsOf(kept);
    otherBefore = await rowsOf(otherTenant);
    expect(keptBefore.chunks).toBeGreaterThan(2);
    expect(otherBefore.chunks).toBeGreaterThan(2);
  });

  it('resumes an erasure that failed part-way, and refuses writes from the moment it started', async () => {
    let deletes = 0;
    const failing: BlobStore = {
      kind: 'postgres',
      put: (...a) => graph.memory.blobs.put(...a),
      get: (...a) => graph.memory.blobs.get(...a),
      stat: (...a) => graph.memory.blobs.stat(...a),
      delete: async () => {
        deletes++;
        throw new Error('blob store unavailable');
      },
    };
    await expect(eraseMemory({ ...graph.memory, blobs: failing }, deleted(gone, 'mle_first'), 'mle_first')).rejects.toThrow('blob store unavailable');
    expect(deletes).toBe(1);

    // The tombstone committed before any deletion: writes refuse already, and a refused upload keeps no bytes.
    expect((await call(gone, 'POST', '/ingest', { content: 'Written after the delete.', routing: { mode: 'auto' } })).status).toBe(404);
    expect((await call(gone, 'POST', '/uploads', undefined, multipart('late.txt', 'Uploaded after the delete.'))).status).toBe(404);
    expect(await blobCount('t_a')).toBe(1);

    const result = await eraseMemory(graph.memory, deleted(gone, 'mle_first'), 'mle_first');
    expect(result.outcome).toBe('erased');
    expect(result.deleted).toMatchObject({ blobs: 1, uploads: 1, documents: 4 });
  });

  it('leaves no row of the erased memory, and every other memory as it was', async () => {
    const after = await rowsOf(gone);
    expect(after).toEqual(Object.fromEntries(GRAPH_TABLES.map((t) => [t, 0])));
    expect(await blobCount('t_a')).toBe(0);
    const tomb = await db.withTenant('t_a', (sql) =>
      sql.query<{ erase_event_id: string; erased_at: Date | null }>(`SELECT erase_event_id, erased_at FROM graph.memories WHERE tenant_id = 't_a' AND memory_id = 'm_gone'`),
    );
    expect(tomb.rows).toEqual([{ erase_event_id: 'mle_first', erased_at: expect.any(Date) }]);
    expect(await rowsOf(kept)).toEqual(keptBefore);
    expect(await rowsOf(otherTenant)).toEqual(otherBefore);
  });

  it('answers 404 to writes and memory-state reads of the erased memory; its messages that were waiting leave nothing', async () => {
    expect((await call(gone, 'POST', '/vaults', { name: 'Late' })).status).toBe(404);
    expect((await call(gone, 'GET', '/vaults')).status).toBe(404);
    expect((await call(gone, 'POST', '/health/assess')).status).toBe(404);
    expect((await call(gone, 'GET', `/documents/${waitingDoc}`)).status).toBe(404);
    // The waiting ingest and upload messages are consumed now: the document and the upload are gone, nothing returns.
    await graph.worker.start();
    await settled();
    expect((await call(gone, 'GET', `/uploads/${waitingUpload}`)).status).toBe(404);
    expect(await rowsOf(gone)).toEqual(Object.fromEntries(GRAPH_TABLES.map((t) => [t, 0])));
    expect(await blobCount('t_a')).toBe(0);
    // The other memories still work.
    expect((await call(kept, 'POST', '/search', { query: 'Heron depot turbine blades' })).body.citations.length).toBeGreaterThan(0);
  });

  it('handles a redelivery as a no-op and lifts the tombstone when the id is created again', async () => {
    expect((await eraseMemory(graph.memory, deleted(gone, 'mle_first'), 'mle_first')).outcome).toBe('duplicate');
    const created: MemoryCreatedMessage = { event_id: 'mle_again', type: 'memory.created', tenant_id: 't_a', memory_id: 'm_gone', occurred_at: new Date().toISOString() };
    expect(await reopenMemory(graph.memory, created, 'mle_again')).toBe('reopened');
    expect(await reopenMemory(graph.memory, created, 'mle_again')).toBe('duplicate');
    const fresh = await ingestIndexed(gone, 'The Kite warehouse ships parcels every Friday.');
    const vaults = await call(gone, 'GET', '/vaults');
    expect(vaults.body.vaults.map((v: { vault_id: string }) => v.vault_id)).toEqual(['v_unassigned']);
    // The old deletion delivered once more (a consumer rewound before the creation) must not touch the new memory.
    expect((await eraseMemory(graph.memory, deleted(gone, 'mle_first'), 'mle_first')).outcome).toBe('duplicate');
    expect((await call(gone, 'GET', `/documents/${fresh}`)).body.status).toBe('indexed');
  });

  it('erases through the worker when the message arrives on lore.memory.lifecycle', async () => {
    const msg = deleted(kept, 'mle_bus');
    await bus.publish(TOPICS.memoryLifecycle, [{ key: kept.memory_id, value: JSON.stringify(msg), headers: { 'event-id': msg.event_id } }]);
    await until('kept memory erased', async () => {
      const r = await db.withTenant('t_a', (sql) => sql.query(`SELECT 1 FROM graph.memories WHERE tenant_id = 't_a' AND memory_id = 'm_kept' AND erased_at IS NOT NULL`));
      return r.rowCount === 1 ? true : undefined;
    });
    expect(await rowsOf(kept)).toEqual(Object.fromEntries(GRAPH_TABLES.map((t) => [t, 0])));
    expect(await rowsOf(otherTenant)).toEqual(otherBefore);
    expect((await rowsOf(gone)).documents).toBe(1);
  });
});
