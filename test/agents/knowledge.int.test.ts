import type { TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack } from './harness';

jest.setTimeout(180_000);

type Json = Record<string, any>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The tenant's knowledge as a list-building source: company documents ingested into a tenant's memory through the
 * gateway (`POST /api/v1/memory/ingest`), indexed by the graph worker, then a company search with an empty directory
 * and no web search builds its list from them, with each document as the cells' provenance, and only from the
 * tenant's own memory.
 */

const company = (name: string, domain: string, industry: string, city: string, employees: number, founded: number) =>
  [
    `# ${name}`,
    `Company: ${name}`,
    `Website: https://${domain}/`,
    `Industry: ${industry}`,
    `Headquarters: ${city}, Germany`,
    `Employees: ${employees}`,
    `Founded: ${founded}`,
    `${name} is a ${industry.toLowerCase()} company from ${city} with about ${employees} people on its team.`,
  ].join('\n');

interface Doc {
  title: string;
  content: string;
}

const A_DOCS: Record<string, Doc> = {
  finovo: { title: 'Finovo GmbH', content: company('Finovo GmbH', 'finovo.example', 'Fintech', 'Berlin', 120, 2016) },
  kontobank: { title: 'Kontobank', content: company('Kontobank', 'kontobank.example', 'Fintech', 'Berlin', 45, 2019) },
  zahlwerk: { title: 'Zahlwerk', content: company('Zahlwerk', 'zahlwerk.example', 'Fintech', 'Munich', 80, 2014) },
  medinova: { title: 'Medinova', content: company('Medinova', 'medinova.example', 'Healthcare', 'Berlin', 300, 2008) },
  notes: { title: 'Team offsite notes', content: 'Notes from the offsite in Berlin: we talked about fintech trends, the roadmap and hiring plans for next year.' },
};
const B_DOCS: Record<string, Doc> = {
  berlinpay: { title: 'Berlinpay', content: company('Berlinpay', 'berlinpay.example', 'Fintech', 'Berlin', 60, 2020) },
};

describe('the tenant\'s knowledge as a list-building source (graph service and its worker beside agents, through the gateway)', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const ids: Record<string, string> = {};
  const auth = (t: TenantFixture) => ({ authorization: `Bearer ${t.key}` });

  async function ingest(t: TenantFixture, docs: Record<string, Doc>): Promise<void> {
    for (const [key, d] of Object.entries(docs)) {
      const r = await s.call('POST', '/api/v1/memory/ingest', { 'x-api-key': t.key }, { content: d.content, content_type: 'markdown', title: d.title, routing: { mode: 'auto' } });
      expect(r.status).toBe(200);
      ids[key] = r.json.doc_id as string;
    }
    // Indexing runs in the graph worker (Kafka): wait until retrieval finds every document.
    for (const [key, d] of Object.entries(docs)) {
      let found = false;
      for (let i = 0; i < 300 && !found; i++) {
        const r = await s.call('POST', '/api/v1/memory/retrieve', { 'x-api-key': t.key }, { query: d.title });
        expect(r.status).toBe(200);
        found = r.json.chunks.some((c: { document_id: string }) => c.document_id === ids[key]);
        if (!found) await sleep(200);
      }
      if (!found) throw new Error(`document ${key} was not indexed within 60 s`);
    }
  }

  async function search(t: TenantFixture, prompt: string): Promise<Json> {
    const start = await s.call('POST', '/company-search/start', auth(t), { prompt });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    for (let i = 0; i < 600; i++) {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(t));
      expect(r.status).toBe(200);
      if (['completed', 'stopped', 'error'].includes(r.json.status as string)) return r.json as Json;
      await sleep(100);
    }
    throw new Error(`the search ${thread} did not end within 60 s`);
  }

  beforeAll(async () => {
    s = await startAgentsStack({ graph: true, worker: { settings: { heartbeatMs: 200, leaseMs: 3_000, stopPollMs: 100, batchRows: 3 } } });
    a = await s.tenant();
    b = await s.tenant();
    await ingest(a, A_DOCS);
    await ingest(b, B_DOCS);
  }, 150_000);
  afterAll(async () => {
    await s?.close();
  });

  it('builds the list from the tenant\'s documents: exactly the matching companies, every fixed cell naming its document', async () => {
    const snap = await search(a, 'Find fintech companies in Berlin');
    expect(snap).toMatchObject({ status: 'completed', current_step: 'completed', error_message: '' });
    expect(snap.table_structure.sources).toEqual(['directory', 'knowledge']);
    expect(snap.table_structure.notes).toContain("no web search provider is configured: candidates come from the directory and the tenant's knowledge");
    const keys = snap.all_companies.map((r: Json) => r.entity_key);
    expect(new Set(keys)).toEqual(new Set(['finovo.example', 'kontobank.example']));
    expect(keys).toHaveLength(2);
    const byKey = Object.fromEntries(snap.table_structure.rows.map((r: Json) => [r.metadata.entity_key, r]));
    const docOf: Record<string, string> = { 'finovo.example': ids.finovo!, 'kontobank.example': ids.kontobank! };
    for (const [key, docId] of Object.entries(docOf)) {
      const row = byKey[key];
      expect(row.metadata.source).toMatchObject({ source: 'knowledge', document_id: docId, source_url: `knowledge:${docId}` });
      for (const id of ['name', 'domain', 'industry', 'location']) {
        const cell = row.cells[id];
        expect({ id, status: cell.status }).toEqual({ id, status: 'completed' });
        expect(cell.metadata).toMatchObject({ source: 'knowledge', document_id: docId, source_url: `knowledge:${docId}` });
        expect(cell.metadata.snippet.length).toBeGreaterThan(0);
        expect(Date.parse(cell.metadata.fetched_at)).toBeGreaterThan(Date.now() - 120_000);
      }
    }
    const finovo = snap.all_companies.find((r: Json) => r.entity_key === 'finovo.example');
    expect(finovo).toMatchObject({ name: 'Finovo GmbH', domain: 'finovo.example', industry: 'Fintech', location: 'Berlin, Germany' });
  });

  it('never shows another tenant\'s documents: each tenant\'s list holds its own companies only', async () => {
    const snap = await search(b, 'Find fintech companies in Berlin');
    expect(snap.status).toBe('completed');
    expect(snap.all_companies.map((r: Json) => r.entity_key)).toEqual(['berlinpay.example']);
    expect(snap.table_structure.rows[0].metadata.source).toMatchObject({ source: 'knowledge', document_id: ids.berlinpay });
    const again = await search(a, 'Find fintech companies in Berlin');
    expect(again.all_companies.map((r: Json) => r.entity_key)).not.toContain('berlinpay.example');
  });

  it('reads no knowledge for a key scoped away from the memory module: the list comes from the directory alone', async () => {
    const key = await s.key(a.tenantId, { scopes: { modules: ['agents'] } });
    const snap = await search({ ...a, key }, 'Find fintech companies in Berlin');
    expect(snap.status).toBe('completed');
    expect(snap.table_structure.sources).toEqual(['directory']);
    expect(snap.all_companies).toEqual([]);
  });

  it('keeps a list built from a memory from credentials beyond that memory, as the memory itself', async () => {
    const fromMemory = await search(a, 'Find fintech companies in Berlin');
    expect(fromMemory.all_companies.length).toBeGreaterThan(0);
    const withoutMemory = await search({ ...a, key: await s.key(a.tenantId, { scopes: { modules: ['agents'] } }) }, 'Find fintech companies in Munich');
    expect(withoutMemory.table_structure.sources).toEqual(['directory']);
    const listOf = async (thread: string): Promise<string> => {
      const r = await s.call('GET', '/company-search/getLists?limit=100', auth(a));
      const item = (r.json.data as Json[]).find((l) => l.listLinkID === thread);
      if (!item) throw new Error(`no list of ${thread}`);
      return item.id as string;
    };
    const listId = await listOf(fromMemory.thread_id as string);
    const otherListId = await listOf(withoutMemory.thread_id as string);
    const created = await s.call('POST', '/api/v1/workspaces', { 'x-api-key': a.key }, { name: `Elsewhere ${Date.now()}` });
    expect(created.status).toBe(201);
    const elsewhere = created.json as { workspace_id: string };

    const seen = async (key: string) => {
      const h = auth({ ...a, key });
      const status = await s.call('GET', `/company-search/status/${fromMemory.thread_id}`, h);
      const result = await s.call('GET', `/company-search/getSearchResult/${fromMemory.thread_id}`, h);
      const generic = await s.call('GET', `/api/workflow/status/${fromMemory.thread_id}`, h);
      const restored = await s.call('GET', `/api/workflow/restore/${listId}`, h);
      const lists = await s.call('GET', '/company-search/getLists?limit=100', h);
      const threads = await s.call('GET', '/api/workflow/threads', h);
      const stream = await s.call('GET', `/api/stream/stream-status/workflow:${fromMemory.thread_id}`, h);
      const active = await s.call('GET', '/api/stream/active-streams', h);
      const enrich = await s.call('POST', '/company-search/start-enrichment', h, { thread_id: fromMemory.thread_id, column_name: 'Founders', instruction: 'who founded it' });
      // Continuing reads the memory again, as the list's starter: never for a credential beyond it.
      const cont = await s.call('POST', '/company-search/continue', h, { thread_id: fromMemory.thread_id, total_target: 50 });
      const contGeneric = await s.call('POST', '/api/workflow/continue', h, { thread_id: fromMemory.thread_id, total_target: 50, current_criteria: [{ name: 'industry', value: 'Healthcare' }] });
      expect(lists.status).toBe(200);
      expect(threads.status).toBe(200);
      expect(active.status).toBe(200);
      const listIds = (lists.json.data as Json[]).map((l) => l.id);
      const threadIds = (threads.json as Json[]).map((t) => t.thread_id);
      return {
        statuses: [status.status, result.status, generic.status, restored.status, stream.status, enrich.status, cont.status, contGeneric.status],
        listed: listIds.includes(listId),
        threaded: threadIds.includes(fromMemory.thread_id),
        streamed: JSON.stringify(active.json).includes(fromMemory.thread_id),
        other: listIds.includes(otherListId),
      };
    };
    // A key bound to another workspace, and a tenant key denied the memory module: as if the list did not exist. A
    // list that read no memory stays the tenant's.
    for (const key of [await s.key(a.tenantId, { workspace_id: elsewhere.workspace_id }), await s.key(a.tenantId, { scopes: { modules: ['agents'] } })]) {
      const v = await seen(key);
      expect(v.statuses).toEqual([404, 404, 404, 404, 404, 404, 404, 404]);
      expect({ listed: v.listed, threaded: v.threaded, streamed: v.streamed, other: v.other }).toEqual({ listed: false, threaded: false, streamed: false, other: true });
    }
    // A key scoped to the list's memory, and one bound to its workspace, see it as its maker does.
    for (const key of [await s.key(a.tenantId, { scopes: { memories: [a.memoryId] } }), await s.key(a.tenantId, { workspace_id: a.workspaceId })]) {
      const v = await seen(key);
      expect(v.statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
      expect(v.statuses.slice(5)).not.toContain(404);
      expect({ listed: v.listed, threaded: v.threaded, other: v.other }).toEqual({ listed: true, threaded: true, other: true });
    }
  });
});
