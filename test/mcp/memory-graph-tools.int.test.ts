import { startAgentsStack, type AgentsStack } from '../agents/harness';
import type { TenantFixture } from '../gateway/harness';
import { until } from '../e2e/processes';
import { connectMcp, type McpClient } from './client';
import { memoryGraphTools } from '../../services/mcp/src/tools/memory-graph';
import { memoryTools } from '../../services/mcp/src/tools/memory';

jest.setTimeout(120_000);

/**
 * The memory-graph and memory tools in the cluster's shape: the SDK's client → gateway → MCP server → gateway →
 * graph service and its worker on real PostgreSQL and Kafka. A CSV upload builds a graph the tool then asks; a text
 * ingested through the tool is found by the search tool; keys scoped to a module or read-only see only their tools;
 * another tenant's graph is not found.
 */
describe('memory-graph and memory tools behind the gateway', () => {
  let s: AgentsStack;
  let t: TenantFixture;
  let c: McpClient;
  beforeAll(async () => {
    s = await startAgentsStack({ graph: true, mcp: true });
    t = await s.tenant();
    c = await connectMcp(s.gateway.publicUrl, t.key);
  });
  afterAll(async () => {
    await c?.close();
    await s?.close();
  });

  it('builds a graph from a CSV given as text and answers from it; another tenant does not find it', async () => {
    const created = await c.call('memory_create_department', { name: 'Harbour staff' });
    expect(created).toMatchObject({ success: true, data: { name: 'Harbour staff', status: 'empty' } });
    const graphId = created.data.graph_id as string;
    const job = await c.call('memory_upload_data', { list_id: graphId, csv: 'name,company,title\nAda Quay,Pier Works,Harbour master\n' });
    expect(job).toMatchObject({ success: true, data: { status: 'queued', jobId: expect.any(String) } });
    await until('the graph to be built', async () => {
      const g = await c.call('memory_get_department', { graph_id: graphId });
      return g.success && g.data.status === 'ready' ? g : undefined;
    }, 60_000);
    const answer = await c.call('memory_chat', { list_id: graphId, question: 'Where does Ada Quay work?' });
    expect(answer).toMatchObject({ success: true, data: { answer: expect.stringMatching(/Pier Works/) } });
    expect((await c.call('memory_list_departments')).data.departments.map((g: { graph_id: string }) => g.graph_id)).toContain(graphId);

    const other = await s.tenant();
    const oc = await connectMcp(s.gateway.publicUrl, other.key);
    try {
      expect(await oc.call('memory_get_department', { graph_id: graphId })).toMatchObject({ success: false, error: expect.stringMatching(/^HTTP 404/) });
      expect(await oc.call('memory_chat', { list_id: graphId, question: 'Where does Ada Quay work?' })).toMatchObject({ success: false, error: expect.stringMatching(/^HTTP 404/) });
    } finally {
      await oc.close();
    }
  });

  it('ingests a text into the memory and finds it by searching', async () => {
    const stored = await c.call('memory_ingest', { content: 'The pilot boat leaves berth four at six every morning.', title: 'Pilot log' });
    expect(stored).toMatchObject({ success: true, data: { doc_id: expect.any(String) } });
    const found = await until('the text to be searchable', async () => {
      const r = await c.call('memory_search', { query: 'When does the pilot boat leave berth four?' });
      return r.success && r.data.citations.some((x: { document_id: string }) => x.document_id === stored.data.doc_id) ? r : undefined;
    }, 60_000);
    expect(found.data.answer.length).toBeGreaterThan(0);
  });

  it('a key scoped to a memory uses the tools in the memory its session was opened in, and no other', async () => {
    const created = await s.call('POST', '/api/v1/workspaces', { 'x-api-key': t.key }, { name: `Quay ${Date.now()}` });
    expect(created.status).toBe(201);
    const other = created.json as { workspace_id: string; primary_memory_id: string };
    const scoped = await s.key(t.tenantId, { scopes: { memories: [other.primary_memory_id] } });
    // Opened without naming its memory, the key acts in its memory, as over HTTP (docs/gateway.md: the workspace whose
    // primary memory it names).
    const unnamed = await connectMcp(s.gateway.publicUrl, scoped);
    try {
      expect(await unnamed.call('memory_search', { query: 'How much does the harbour crane lift?' })).toMatchObject({ success: true });
    } finally {
      await unnamed.close();
    }
    const m = await connectMcp(s.gateway.publicUrl, scoped, undefined, `/mcp?memory_id=${other.primary_memory_id}`);
    try {
      const stored = await m.call('memory_ingest', { content: 'The harbour crane lifts forty tonnes at most.', title: 'Crane sheet' });
      expect(stored).toMatchObject({ success: true, data: { doc_id: expect.any(String) } });
      await until('the text to be searchable in its memory', async () => {
        const r = await m.call('memory_search', { query: 'How much does the harbour crane lift?' });
        return r.success && r.data.citations.some((x: { document_id: string }) => x.document_id === stored.data.doc_id) ? r : undefined;
      }, 60_000);
      // It went into the key's memory, not the tenant's first one.
      const first = await c.call('memory_search', { query: 'How much does the harbour crane lift?' });
      expect(first.success).toBe(true);
      expect(first.data.citations.map((x: { document_id: string }) => x.document_id)).not.toContain(stored.data.doc_id);
    } finally {
      await m.close();
    }
    // A session opened in a memory beyond the key's scope is refused at the door.
    await expect(connectMcp(s.gateway.publicUrl, scoped, undefined, `/mcp?memory_id=${t.memoryId}`)).rejects.toThrow(/does not include this memory/);
  });

  it('a key scoped to the graph module sees the graph tools only; a read-only one no write tool of them', async () => {
    const graphOnly = await connectMcp(s.gateway.publicUrl, await s.key(t.tenantId, { scopes: { modules: ['mcp', 'graph'] } }));
    const readOnly = await connectMcp(s.gateway.publicUrl, await s.key(t.tenantId, { scopes: { access: 'read' } }));
    try {
      expect((await graphOnly.client.listTools()).tools.map((x) => x.name).sort()).toEqual(memoryGraphTools.map((x) => x.name).sort());
      const ro = (await readOnly.client.listTools()).tools.map((x) => x.name);
      for (const tool of [...memoryGraphTools, ...memoryTools]) expect([tool.name, ro.includes(tool.name)]).toEqual([tool.name, tool.access === 'read']);
      expect(await readOnly.call('memory_create_department', { name: 'x' })).toMatchObject({ success: false, error: expect.stringMatching(/memory_create_department/) });
    } finally {
      await graphOnly.close();
      await readOnly.close();
    }
  });
});
