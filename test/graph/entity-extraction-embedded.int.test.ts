import { useEmbedded } from '../support/embedded';
import { eventually } from '../memory/support';
import { uniqueSuffix } from '../support/infra';

jest.setTimeout(240_000);

/** Business prose as a board's minutes hold it: roles, honorifics, names joined by "and", "of" and "&". */
const MINUTES = [
  'Board minutes, March 2026.',
  'Yesterday our CEO Jane Doe opened the review. Dr. Maria Schmidt, the CTO of Nordwind Logistics GmbH, presented the roadmap.',
  'Bob Martin, the CFO, presented the budget. Tom Becker previously worked at Initech in Austin.',
  'The panel compared Microsoft and Google. Attendees: Alice Walker (Chair) and Jonathan Price from Bluefin Capital.',
].join('\n\n');

/**
 * Entity extraction and connector Document names in embedded mode (`npm start`'s composition, the development key):
 * a memory document's entities (docs/memory.md, "Entity extraction"), and a knowledge graph built from a `file`
 * connector's uploads, whose Document nodes are named by their file names and found by them in graph chat
 * ("Mapping a connector document").
 */
describe('entity extraction and connector Document names (embedded mode)', () => {
  const e = useEmbedded('entity-extraction');
  const run = uniqueSuffix();

  it('lists people, companies and places of business prose, with no role, honorific or glued name among them', async () => {
    const ingested = await e.call('POST', '/api/v1/memory/ingest', { content: MINUTES, routing: { mode: 'review' } });
    expect(ingested.status).toBe(200);
    const docId = ingested.json.doc_id as string;
    const entities = await eventually(async () => {
      const r = await e.call('GET', `/api/v1/memory/entities?doc_id=${docId}&limit=200`);
      return r.status === 200 && r.json.count > 0 ? (r.json.entities as Array<{ name: string; kind: string; label: string | null }>) : undefined;
    }, 60_000);
    const kinds = Object.fromEntries(entities.map((x) => [x.name, x.kind]));
    expect(kinds).toMatchObject({
      'Jane Doe': 'person',
      'Maria Schmidt': 'person',
      'Nordwind Logistics GmbH': 'organization',
      'Bob Martin': 'person',
      'Tom Becker': 'person',
      Initech: 'organization',
      Austin: 'place',
      Microsoft: 'concept',
      Google: 'concept',
      'Alice Walker': 'person',
      'Jonathan Price': 'person',
      'Bluefin Capital': 'organization',
    });
    const names = entities.map((x) => x.name);
    expect(names.filter((n) => /^(?:CEO|CTO|CFO|Dr|Chair)\b|\band\b|CTO of/.test(n))).toEqual([]);
  });

  it('names the Document nodes of a file connector\'s graph by their file names, and graph chat finds them by the file name', async () => {
    const form = new FormData();
    form.append('files', new Blob([MINUTES], { type: 'text/plain' }), 'board.txt');
    form.append('files', new Blob(['Hiring plan for the platform team: Kim Lee joins Hooli Labs in Lisbon.\n'], { type: 'text/markdown' }), 'hiring.md');
    const res = await fetch(`${e.lore.url}/api/manage/admin/connector/file/upload`, { method: 'POST', headers: { 'x-api-key': e.lore.credentials.api_key }, body: form });
    const uploaded = (await res.json()) as { file_paths: string[] };
    expect(res.status).toBe(200);
    const connector = await e.call('POST', '/api/manage/admin/connector', {
      name: `Files ${run}`, source: 'file', input_type: 'load_state', connector_specific_config: { file_locations: uploaded.file_paths }, access_type: 'public',
    });
    expect(connector.status).toBe(200);
    const credential = await e.call('POST', '/api/manage/credential', { name: `files ${run}`, source: 'file', credential_json: {} });
    expect(credential.status).toBe(201);
    const pair = await e.call('PUT', `/api/manage/connector/${connector.json.id}/credential/${credential.json.id}`, {});
    expect(pair.status).toBe(200);
    const started = await e.call('POST', '/api/manage/admin/connector/run-once', { connector_id: connector.json.id });
    expect(started.status).toBe(200);
    const attemptId = started.json.attempts[0].id as number;
    const attempt = await eventually(async () => {
      const r = await e.call('GET', `/api/manage/admin/cc-pair/${pair.json.id}/index-attempts`);
      const found = (r.json?.index_attempts as Array<{ id: number; status: string }> | undefined)?.find((x) => x.id === attemptId);
      return found && !['not_started', 'in_progress'].includes(found.status) ? found : undefined;
    }, 120_000);
    expect(attempt).toMatchObject({ status: 'success' });

    const graphId = `files-${run}`;
    const ingest = await e.call('POST', '/memory/ingest/connectors', { list_id: graphId, source_types: ['file'], mode: 'full', graph_name: 'Files' });
    expect(ingest.status).toBe(200);
    const job = await eventually(async () => {
      const r = await e.call('GET', `/memory/jobs/${ingest.json.jobId}`);
      return r.json?.status === 'completed' || r.json?.status === 'failed' ? r.json : undefined;
    }, 120_000);
    expect(job.status).toBe('completed');

    const tenant = e.lore.credentials.tenant_id;
    const nodes = await e.lore.parts.db.withTenant(tenant, async (sql) =>
      (await sql.query<{ label: string; name: string; properties: Record<string, unknown> }>(
        `SELECT label, name, properties FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 ORDER BY node_id`,
        [tenant, graphId],
      )).rows,
    );
    const documents = nodes.filter((n) => n.label === 'Document');
    // One rule for both files: the text file is no longer named by its first line, the Markdown file keeps its name.
    expect(documents.map((d) => d.name).sort()).toEqual(['board.txt', 'hiring.md']);
    expect(documents.find((d) => d.name === 'board.txt')?.properties).toMatchObject({ title: 'Board minutes, March 2026.', file_name: 'board.txt' });
    const others = nodes.filter((n) => n.label !== 'Document').map((n) => `${n.label}:${n.name}`);
    expect(others).toEqual(expect.arrayContaining(['Person:Jane Doe', 'Person:Maria Schmidt', 'Company:Nordwind Logistics GmbH', 'Company:Initech', 'Location:Austin', 'Company:Bluefin Capital']));
    expect(others.join(' ')).not.toMatch(/Person:Dr\b|Company:CFO|CEO Jane Doe|Location:Initech/);

    // Graph chat finds the file by its file name, and by its title too.
    for (const question of ['What does board.txt say?', 'Who is in the Board minutes, March 2026?']) {
      const asked = await e.call('POST', '/memory/chat', { listId: graphId, question });
      expect(asked.status).toBe(200);
      expect((asked.json.nodes as Array<{ label: string; properties: { name?: string } }>).filter((n) => n.label === 'Document').map((n) => n.properties.name)).toContain('board.txt');
    }
  });
});
