import { useEmbedded } from '../support/embedded';

jest.setTimeout(180_000);

/**
 * Embedded mode (`npm start`) wires the tenant's knowledge into list building: the agents worker retrieves from the
 * graph's memory API over its unix socket, so a company document ingested into the memory becomes a row of a company
 * search with no directory and no web search provider.
 */
describe('the tenant\'s knowledge in embedded mode', () => {
  const embedded = useEmbedded('agents-knowledge-embedded');
  const call = embedded.call;

  it('builds a company list from a document of the memory, with the document as its provenance', async () => {
    const content = ['# Finovo GmbH', 'Company: Finovo GmbH', 'Website: https://finovo.example/', 'Industry: Fintech', 'Headquarters: Berlin, Germany', 'Employees: 120'].join('\n');
    const ingest = await call('POST', '/api/v1/memory/ingest', { content, content_type: 'markdown', title: 'Finovo GmbH', routing: { mode: 'auto' } });
    expect(ingest.status).toBe(200);
    const docId = ingest.json.doc_id as string;
    let indexed = false;
    for (let i = 0; i < 300 && !indexed; i++) {
      const r = await call('POST', '/api/v1/memory/retrieve', { query: 'Finovo fintech Berlin' });
      expect(r.status).toBe(200);
      indexed = r.json.chunks.some((c: { document_id: string }) => c.document_id === docId);
      if (!indexed) await new Promise((res) => setTimeout(res, 200));
    }
    expect(indexed).toBe(true);

    const start = await call('POST', '/company-search/start', { prompt: 'Find fintech companies in Berlin' });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    let snap: any = null;
    for (let i = 0; i < 600 && snap?.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      snap = (await call('GET', `/company-search/status/${thread}`)).json;
      expect(snap.status).not.toBe('error');
    }
    expect(snap).toMatchObject({ status: 'completed', current_step: 'completed' });
    expect(snap.table_structure.sources).toEqual(['directory', 'knowledge']);
    expect(snap.all_companies.map((r: any) => r.entity_key)).toEqual(['finovo.example']);
    expect(snap.table_structure.rows[0].cells.name.metadata).toMatchObject({ source: 'knowledge', document_id: docId, source_url: `knowledge:${docId}` });
  });
});
