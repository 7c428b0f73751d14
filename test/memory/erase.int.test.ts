import { Client } from 'pg';
import { TOPICS } from '@lore/contracts';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, IDENTITY_SECRET, makeKey, makeTenant, startGateway, uid, type GatewayUnderTest, type TenantFixture } from '../gateway/harness';
import { eventually, startHarness, type Harness } from './support';

jest.setTimeout(240_000);

/** Every graph table that holds rows of a memory (`graph.memories` keeps the tombstone and is checked apart). */
const GRAPH_TABLES = ['vaults', 'uploads', 'documents', 'chunks', 'postings', 'term_stats', 'corpus_stats', 'entities', 'entity_mentions', 'facts', 'contradictions'];

const DOCS = [
  'Acme Corp is headquartered in Berlin. Acme Corp was founded in 1999. The Falcon project ships in May.',
  'Acme Corp is headquartered in Munich according to the 2024 filing. Globex Industries supplies the turbines.',
  '# Field notes\n\nThe Heron depot stores spare turbine blades. Dr. Jane Smith runs the Heron depot in Lisbon.',
];

/**
 * Deleting a memory with `retain_data=false` erases its data in the graph service: client → gateway admin API →
 * outbox → Kafka (`lore.memory.lifecycle`) → graph worker, on real PostgreSQL, Redis and Kafka. Tables are read as
 * the owner (a superuser here: row-level security does not hide other tenants from the check).
 */
describe('erasing a deleted memory end to end', () => {
  let database: TestDatabase;
  let graph: Harness;
  let g: GatewayUnderTest;
  let owner: Client;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    database = await freshDatabase('lore_mem_erase');
    // Batches of three rows: every loop of the erasure runs many times.
    graph = await startHarness({ backend: 'postgres', database, secret: IDENTITY_SECRET, graph: { config: { eraseBatchRows: 3 } } });
    g = await startGateway(database, { upstreams: { graph: graph.url } }, { redisPrefix: `mem-erase-${uid()}` });
    owner = new Client({ connectionString: database.ownerUrl });
    await owner.connect();
    a = await makeTenant(g);
    b = await makeTenant(g);
  });
  afterAll(async () => {
    await owner?.end();
    await g?.close();
    await graph?.close();
    await database?.drop();
  });

  const call = (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    http(g.publicUrl, method, path, { headers: { 'x-api-key': key, ...headers }, body });

  /** A second memory of a tenant, on its own hostname, with its mk_ key. */
  async function memoryWithKey(tenantId: string): Promise<{ memoryId: string; key: string; host: string }> {
    const memoryId = `mem_${uid()}`;
    const host = `${memoryId.replace(/_/g, '-')}.erase.test`;
    const put = await adminCall(g, 'PUT', `/internal/v1/tenants/${tenantId}/memories/${memoryId}`, { name: `memory ${memoryId}`, hostname: host });
    expect(put.status).toBe(200);
    const mk = await makeKey(g, tenantId, { type: 'memory', memory_id: memoryId });
    return { memoryId, key: mk.key, host };
  }

  async function ingestIndexed(key: string, content: string, host?: string): Promise<string> {
    const headers: Record<string, string> = host ? { host } : {};
    const r = await call(key, 'POST', '/api/v1/memory/ingest', { content, routing: { mode: 'auto' } }, headers);
    expect(r.status).toBe(200);
    await eventually(async () => {
      const d = await call(key, 'GET', `/api/v1/memory/documents/${r.json.doc_id}`, undefined, headers);
      return d.json?.status === 'indexed' ? true : undefined;
    }, 60_000, `document ${r.json.doc_id} indexed`);
    return r.json.doc_id;
  }

  async function rowsOf(tenantId: string, memoryId: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const table of GRAPH_TABLES) {
      const r = await owner.query<{ n: string }>(`SELECT count(*) AS n FROM graph.${table} WHERE tenant_id = $1 AND memory_id = $2`, [tenantId, memoryId]);
      out[table] = Number(r.rows[0]?.n);
    }
    return out;
  }
  const nothing = Object.fromEntries(GRAPH_TABLES.map((t) => [t, 0]));

  async function erasedAt(tenantId: string, memoryId: string): Promise<Date | undefined> {
    const r = await owner.query<{ erased_at: Date | null }>(`SELECT erased_at FROM graph.memories WHERE tenant_id = $1 AND memory_id = $2`, [tenantId, memoryId]);
    return r.rows[0]?.erased_at ?? undefined;
  }

  /** The worker's log lines (JSON) with this message and these fields. */
  function logged(msg: string, fields: Record<string, unknown>): number {
    return graph.logs
      .text()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === msg && Object.entries(fields).every(([k, v]) => l[k] === v)).length;
  }

  let second: { memoryId: string; key: string; host: string };
  let third: { memoryId: string; key: string; host: string };
  let primaryBefore: Record<string, number>;
  let thirdBefore: Record<string, number>;
  let otherTenantBefore: Record<string, number>;
  let waitingBlobKey: string;

  it('fills two memories of tenant A, a third one, and tenant B', async () => {
    second = await memoryWithKey(a.tenantId);
    third = await memoryWithKey(a.tenantId);
    for (const content of DOCS) {
      await ingestIndexed(a.key, content);
      await ingestIndexed(second.key, content, second.host);
      await ingestIndexed(third.key, content, third.host);
      await ingestIndexed(b.key, content);
    }
    // An upload through the gateway (completed: its bytes are already gone) and one still waiting with its bytes.
    const boundary = `----lore${uid()}`;
    const body = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="kite.txt"\r\nContent-Type: text/plain\r\n\r\nThe Kite warehouse ships parcels every Friday.\r\n--${boundary}--\r\n`,
    );
    const up = await http(g.publicUrl, 'POST', '/api/v1/memory/uploads', {
      headers: { 'x-api-key': second.key, host: second.host, 'content-type': `multipart/form-data; boundary=${boundary}` },
      raw: body,
    });
    expect(up.status).toBe(202);
    await eventually(async () => {
      const r = await call(second.key, 'GET', `/api/v1/memory/uploads/${up.json.upload_id}`, undefined, { host: second.host });
      return r.json?.status === 'completed' ? true : undefined;
    }, 60_000, 'upload completed');
    const waitingUpload = `upl_waiting${uid()}`;
    waitingBlobKey = `${a.tenantId}/uploads/${waitingUpload}`;
    await graph.graph.memory.blobs.put(a.tenantId, waitingBlobKey, Buffer.from('bytes of a file waiting for extraction'), 'text/plain');
    await graph.db.withTenant(a.tenantId, (sql) =>
      sql.query(
        `INSERT INTO graph.uploads (tenant_id, memory_id, workspace_id, upload_id, filename, content_type, size_bytes, blob_key) VALUES ($1, $2, 'ws', $3, 'waiting.txt', 'text/plain', 38, $4)`,
        [a.tenantId, second.memoryId, waitingUpload, waitingBlobKey],
      ),
    );

    const mine = await rowsOf(a.tenantId, second.memoryId);
    expect(mine).toMatchObject({ documents: 4, uploads: 2 });
    for (const table of ['vaults', 'chunks', 'postings', 'term_stats', 'corpus_stats', 'entities', 'entity_mentions', 'facts', 'contradictions']) {
      expect({ table, some: mine[table]! > 0 }).toEqual({ table, some: true });
    }
    primaryBefore = await rowsOf(a.tenantId, a.memoryId);
    thirdBefore = await rowsOf(a.tenantId, third.memoryId);
    otherTenantBefore = await rowsOf(b.tenantId, b.memoryId);
    expect(primaryBefore.chunks).toBeGreaterThan(0);
    expect(otherTenantBefore.chunks).toBeGreaterThan(0);
  });

  it('retain_data=false erases the memory, even while ingests signed before the delete keep arriving', async () => {
    // Requests whose identity the gateway signed before the delete may still reach the graph (tokens live 60 s):
    // they race the erasure straight at the graph service.
    const who = graph.identity(a.tenantId, second.memoryId);
    const accepted: string[] = [];
    const refused: number[] = [];
    let racing = true;
    const racer = (async () => {
      for (let i = 0; racing; i++) {
        const r = await graph.call('POST', '/api/v1/memory/ingest', who, { content: `Racing note ${i}: the Osprey data center runs on solar power.`, routing: { mode: 'auto' } });
        if (r.status === 200) accepted.push(r.body.doc_id);
        else refused.push(r.status);
      }
    })();
    await new Promise((r) => setTimeout(r, 300));

    const del = await adminCall(g, 'DELETE', `/internal/v1/tenants/${a.tenantId}/memories/${second.memoryId}?retain_data=false`);
    expect(del.status).toBe(204);
    const event = await owner.query<{ key: string; event_id: string; value: Record<string, unknown> }>(
      `SELECT key, event_id, value FROM runtime.outbox WHERE topic = $1 AND key = $2 AND value->>'type' = 'memory.deleted'`,
      [TOPICS.memoryLifecycle, second.memoryId],
    );
    expect(event.rows).toHaveLength(1);
    expect(event.rows[0]!.value).toEqual({
      event_id: event.rows[0]!.event_id,
      type: 'memory.deleted',
      tenant_id: a.tenantId,
      memory_id: second.memoryId,
      retain_data: false,
      occurred_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    expect((await call(second.key, 'GET', '/api/v1/memory/vaults', undefined, { host: second.host })).status).toBe(401);

    await eventually(() => erasedAt(a.tenantId, second.memoryId), 120_000, 'erasure complete');
    racing = false;
    await racer;
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused.filter((status) => status !== 404)).toEqual([]);
    const late = await graph.call('POST', '/api/v1/memory/ingest', who, { content: 'Written after the erasure.', routing: { mode: 'auto' } });
    expect(late.status).toBe(404);
    // Every document accepted before the tombstone had its ingest message handled (as missing): nothing came back.
    await eventually(async () => (accepted.every((id) => logged('ingest message handled', { doc_id: id }) > 0) ? true : undefined), 120_000, 'racing ingest messages handled');

    expect(await rowsOf(a.tenantId, second.memoryId)).toEqual(nothing);
    const blob = await owner.query(`SELECT 1 FROM runtime.blobs WHERE tenant_id = $1 AND key = $2`, [a.tenantId, waitingBlobKey]);
    expect(blob.rowCount).toBe(0);
  });

  it('keeps the tenant’s other memories and the other tenant as they were', async () => {
    expect(await rowsOf(a.tenantId, a.memoryId)).toEqual(primaryBefore);
    expect(await rowsOf(a.tenantId, third.memoryId)).toEqual(thirdBefore);
    expect(await rowsOf(b.tenantId, b.memoryId)).toEqual(otherTenantBefore);
    const s = await call(a.key, 'POST', '/api/v1/memory/search', { query: 'Heron depot turbine blades' });
    expect(s.status).toBe(200);
    expect(s.json.citations.length).toBeGreaterThan(0);
  });

  it('retain_data=true keeps the data and announces no erasure', async () => {
    const del = await adminCall(g, 'DELETE', `/internal/v1/tenants/${a.tenantId}/memories/${third.memoryId}?retain_data=true`);
    expect(del.status).toBe(204);
    const events = await owner.query(`SELECT 1 FROM runtime.outbox WHERE topic = $1 AND key = $2 AND value->>'type' = 'memory.deleted'`, [
      TOPICS.memoryLifecycle,
      third.memoryId,
    ]);
    expect(events.rowCount).toBe(0);
    // Give a (wrong) erasure every chance to run: the relay publishes within milliseconds.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await rowsOf(a.tenantId, third.memoryId)).toEqual(thirdBefore);
    expect(await erasedAt(a.tenantId, third.memoryId)).toBeUndefined();
  });

  // docs/operator.md, "Deleted Memories": find the retained memory as the schema owner, serve it again under another
  // hostname with a new mk_ key, then purge it.
  it('a retained memory is found by its deleted row, served again under a new hostname and key, then purged', async () => {
    const found = await owner.query<{ memory_id: string }>(
      `SELECT tenant_id, memory_id, name, hostname, deleted_at FROM gateway.memories WHERE deleted_at IS NOT NULL ORDER BY deleted_at DESC`,
    );
    expect(found.rows.map((r) => r.memory_id)).toContain(third.memoryId);

    const host = `retained-${uid()}.erase.test`;
    const put = await adminCall(g, 'PUT', `/internal/v1/tenants/${a.tenantId}/memories/${third.memoryId}`, { name: 'retained', hostname: host });
    expect(put.status).toBe(200);
    const mk = await makeKey(g, a.tenantId, { type: 'memory', memory_id: third.memoryId });
    const s = await call(mk.key, 'POST', '/api/v1/memory/search', { query: 'Heron depot turbine blades' }, { host });
    expect(s.status).toBe(200);
    expect(s.json.citations.length).toBeGreaterThan(0);
    expect((await call(third.key, 'POST', '/api/v1/memory/search', { query: 'Heron' }, { host })).status).toBe(401);

    const purge = await adminCall(g, 'DELETE', `/internal/v1/tenants/${a.tenantId}/memories/${third.memoryId}?retain_data=false`);
    expect(purge.status).toBe(204);
    expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${a.tenantId}/memories/${third.memoryId}?retain_data=false`)).status).toBe(204);
    await eventually(() => erasedAt(a.tenantId, third.memoryId), 120_000, 'retained memory erased');
    expect(await rowsOf(a.tenantId, third.memoryId)).toEqual(nothing);
  });

  it('a redelivered deletion is a no-op, even after the memory id was created again', async () => {
    const del = await owner.query<{ event_id: string; value: unknown }>(
      `SELECT event_id, value FROM runtime.outbox WHERE topic = $1 AND key = $2 AND value->>'type' = 'memory.deleted'`,
      [TOPICS.memoryLifecycle, second.memoryId],
    );
    const { event_id: eventId, value } = del.rows[0]!;

    // The same id again (the admin API allows it): `memory.created` lifts the tombstone; the memory starts empty.
    const put = await adminCall(g, 'PUT', `/internal/v1/tenants/${a.tenantId}/memories/${second.memoryId}`, { name: 'again', hostname: second.host });
    expect(put.status).toBe(200);
    const mk = await makeKey(g, a.tenantId, { type: 'memory', memory_id: second.memoryId });
    await eventually(async () => (logged('memory creation handled', { memory_id: second.memoryId, outcome: 'reopened' }) > 0 ? true : undefined), 60_000, 'erasure lifted');
    const fresh = await ingestIndexed(mk.key, 'The Kite warehouse ships parcels every Friday.', second.host);

    expect(logged('memory deletion handled', { memory_id: second.memoryId })).toBe(1);
    await graph.bus.publish(TOPICS.memoryLifecycle, [{ key: second.memoryId, value: JSON.stringify(value), headers: { 'event-id': eventId } }]);
    await eventually(async () => (logged('memory deletion handled', { memory_id: second.memoryId, outcome: 'duplicate' }) > 0 ? true : undefined), 60_000, 'redelivery handled');

    const doc = await call(mk.key, 'GET', `/api/v1/memory/documents/${fresh}`, undefined, { host: second.host });
    expect(doc.json.status).toBe('indexed');
    expect(await rowsOf(a.tenantId, second.memoryId)).toMatchObject({ documents: 1, vaults: 1 });
  });
});
