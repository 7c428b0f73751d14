import { deleteMemory } from '@lore/gateway';
import { useEmbedded } from '../support/embedded';
import { eventually } from './support';

jest.setTimeout(180_000);

const GRAPH_TABLES = ['vaults', 'uploads', 'documents', 'chunks', 'postings', 'term_stats', 'corpus_stats', 'entities', 'entity_mentions', 'facts', 'contradictions'];

/**
 * Embedded mode (`npm start`) as composed by `startEmbedded`: PGlite, the in-process bus, one outbox relay for the
 * gateway and the graph. A memory deleted without retaining its data is erased there too.
 */
describe('erasing a deleted memory in embedded mode', () => {
  const embedded = useEmbedded('erase-embedded');
  const call = embedded.call;

  async function ingestIndexed(workspaceId: string, content: string): Promise<string> {
    const r = await call('POST', `/api/v1/memory/ingest?workspace_id=${workspaceId}`, { content, routing: { mode: 'auto' } });
    expect(r.status).toBe(200);
    await eventually(async () => {
      const d = await call('GET', `/api/v1/memory/documents/${r.json.doc_id}?workspace_id=${workspaceId}`);
      return d.json?.status === 'indexed' ? true : undefined;
    }, 60_000, `document ${r.json.doc_id} indexed`);
    return r.json.doc_id;
  }

  async function rowsOf(tenantId: string, memoryId: string): Promise<Record<string, number>> {
    return embedded.lore.parts.db.withTenant(tenantId, async (sql) => {
      const out: Record<string, number> = {};
      for (const table of GRAPH_TABLES) {
        const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM graph.${table} WHERE tenant_id = $1 AND memory_id = $2`, [tenantId, memoryId]);
        out[table] = Number(r.rows[0]?.n);
      }
      return out;
    });
  }

  it('erases the deleted memory through the in-process bus and keeps the other one', async () => {
    const tenantId = embedded.lore.credentials.tenant_id;
    const list = await call('GET', '/api/v1/workspaces');
    const keptWs = list.json.workspaces[0];
    const created = await call('POST', '/api/v1/workspaces', { name: 'Doomed' });
    expect(created.status).toBe(201);
    const goneWs = created.json;
    for (const content of ['Acme Corp is headquartered in Berlin. The Falcon project ships in May.', 'Acme Corp is headquartered in Munich since 2024.']) {
      await ingestIndexed(keptWs.workspace_id, content);
      await ingestIndexed(goneWs.workspace_id, content);
    }
    const keptBefore = await rowsOf(tenantId, keptWs.primary_memory_id);
    expect((await rowsOf(tenantId, goneWs.primary_memory_id)).chunks).toBeGreaterThan(0);

    await deleteMemory(embedded.lore.parts.gateway.context, tenantId, goneWs.primary_memory_id, false);
    await eventually(async () => {
      const r = await embedded.lore.parts.db.withTenant(tenantId, (sql) =>
        sql.query(`SELECT 1 FROM graph.memories WHERE tenant_id = $1 AND memory_id = $2 AND erased_at IS NOT NULL`, [tenantId, goneWs.primary_memory_id]),
      );
      return r.rowCount === 1 ? true : undefined;
    }, 60_000, 'erasure complete');

    expect(await rowsOf(tenantId, goneWs.primary_memory_id)).toEqual(Object.fromEntries(GRAPH_TABLES.map((t) => [t, 0])));
    expect(await rowsOf(tenantId, keptWs.primary_memory_id)).toEqual(keptBefore);
    const s = await call('POST', `/api/v1/memory/search?workspace_id=${keptWs.workspace_id}`, { query: 'Where is Acme Corp headquartered?' });
    expect(s.status).toBe(200);
    expect(s.json.citations.length).toBeGreaterThan(0);
  });
});
