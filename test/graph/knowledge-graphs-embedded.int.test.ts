import { upsertDirectoryRecords } from '@lore/agents';
import { useEmbedded } from '../support/embedded';
import { companyKey, generateAgentsWorld, matchingCompanies, worldDirectoryRecords } from '../support/agents-world';

jest.setTimeout(180_000);

const PEOPLE = [
  'Name,Title,Company,Website,LinkedIn,City',
  'Ada Lovelace,CTO,Initech,initech.example,https://linkedin.com/in/ada-lovelace,Berlin',
  'Grace Hopper,VP Engineering,Umbrella,umbrella.example,https://linkedin.com/in/grace-hopper,Paris',
  'Alan Turing,Chief Scientist,Initech,https://www.initech.example/,https://linkedin.com/in/alan-turing,London',
].join('\n');

/**
 * Knowledge graphs in embedded mode (`npm start`: PGlite, the in-process bus, one relay) through the embedded
 * gateway: graphs and jobs, and a graph generated from a real saved list that the agents service built from a CSV
 * import, passed on in exactly the shape its restore route gives.
 */
describe('knowledge graphs in embedded mode', () => {
  const embedded = useEmbedded('graph-kg-embedded');
  const call = embedded.call;

  const settled = async (jobId: string) => {
    for (let i = 0; i < 600; i++) {
      const r = await call('GET', `/memory/jobs/${jobId}`);
      expect(r.status).toBe(200);
      if (r.json.status === 'completed' || r.json.status === 'failed') return r.json;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`job ${jobId} never ended`);
  };

  async function post(path: string, form: FormData) {
    const l = embedded.lore;
    const res = await fetch(`${l.url}${path}`, { method: 'POST', headers: { 'x-api-key': l.credentials.api_key }, body: form });
    return { status: res.status, text: await res.text() };
  }

  const labelsOf = async (graphId: string) => {
    const l = embedded.lore;
    return l.parts.db.withTenant(l.credentials.tenant_id, async (sql) =>
      (await sql.query<{ label: string; n: number }>(`SELECT label, count(*)::int AS n FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 GROUP BY label ORDER BY label`, [l.credentials.tenant_id, graphId])).rows,
    );
  };

  it('creates, lists and reads a graph, fills it from an upload, and answers 404 for unknown ids', async () => {
    const created = await call('POST', '/memory/departments/create', { name: 'Engineering', description: 'who builds what' });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ name: 'Engineering', status: 'empty', node_count: 0, edge_count: 0, tenant_id: embedded.lore.credentials.tenant_id });
    const graphId = created.json.graph_id as string;
    expect((await call('GET', '/memory/departments')).json.departments.map((d: { graph_id: string }) => d.graph_id)).toContain(graphId);

    const form = new FormData();
    form.append('file', new Blob([PEOPLE]), 'people.csv');
    form.append('list_id', graphId);
    const up = await post('/memory/upload', form);
    expect(up.status).toBe(200);
    const job = JSON.parse(up.text) as { jobId: string; status: string };
    expect(job.status).toBe('queued');
    expect(await settled(job.jobId)).toMatchObject({ status: 'completed', kind: 'upload' });
    const graph = (await call('GET', `/memory/departments/${graphId}`)).json;
    expect(graph).toMatchObject({ status: 'ready' });
    expect(await labelsOf(graphId)).toEqual([
      { label: 'Company', n: 2 },
      { label: 'Location', n: 3 },
      { label: 'Person', n: 3 },
      { label: 'Position', n: 3 },
      { label: 'ScanReport', n: 3 },
    ]);

    const bad = new FormData();
    bad.append('file', new Blob(['Name,Company\n"Ada,Initech\n']), 'broken.csv');
    bad.append('list_id', graphId);
    const failed = await settled(JSON.parse((await post('/memory/upload', bad)).text).jobId);
    expect(failed).toMatchObject({ status: 'failed', message: expect.stringMatching(/never closed/) });
    expect((await call('GET', `/memory/departments/${graphId}`)).json).toMatchObject({ status: 'error', node_count: graph.node_count, edge_count: graph.edge_count });

    expect((await call('GET', '/memory/departments/g_missing')).status).toBe(404);
    expect((await call('GET', '/memory/jobs/gj_missing')).status).toBe(404);
    const none = await call('POST', '/memory/ingest/connectors', { list_id: `conn-${graphId}`, source_types: null, mode: 'incremental', graph_name: 'Connectors' });
    expect(none.status).toBe(200);
    expect(await settled(none.json.jobId)).toMatchObject({ status: 'completed', stats: expect.objectContaining({ rows: 0 }) });
  });

  it('generates a graph from a list the agents service imported from a CSV, in the shape its restore route gives', async () => {
    const form = new FormData();
    form.append('file', new Blob([PEOPLE]), 'people.csv');
    const analysed = await post('/api/lists/csv/upload', form);
    expect(analysed.status).toBe(200);
    const first = JSON.parse(analysed.text.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as { thread_id: string };
    const reviewed = await call('POST', `/api/lists/csv/review/${first.thread_id}`, { listName: 'Fair contacts' });
    expect(reviewed.status).toBe(200);
    const listId = (reviewed.json as string).match(/[0-9a-f-]{36}/)![0];
    let status: any = null;
    for (let i = 0; i < 300 && status?.status !== 'completed'; i++) {
      await new Promise((res) => setTimeout(res, 100));
      status = (await call('GET', `/api/lists/csv/status/${first.thread_id}`)).json;
    }
    expect(status.status).toBe('completed');
    const restored = (await call('GET', `/api/lists/csv/restore/${listId}`)).json;
    const { columns, rows } = restored.table_structure as { columns: Array<Record<string, unknown>>; rows: Array<{ id: string; cells: Record<string, unknown>; step_source: string; metadata: Record<string, unknown> }> };
    expect(rows).toHaveLength(3);

    const records = rows.map((r) => ({ cells: r.cells, step_source: r.step_source, metadata: { ...r.metadata, _id: r.id, uniqueID: r.id } }));
    const generated = await call('POST', '/memory/generate', { listId, workflowCategory: restored.listType, records, columns });
    expect(generated.status).toBe(200);
    expect(generated.json).toMatchObject({ status: 'queued' });
    expect(await settled(generated.json.jobId)).toMatchObject({ status: 'completed', stats: expect.objectContaining({ rows: 3 }) });
    const graph = (await call('GET', `/memory/departments/${listId}`)).json;
    expect(graph).toMatchObject({ graph_id: listId, source_type: 'list', status: 'ready' });
    // Initech's two spellings of its site are one company; every person and place once.
    expect(await labelsOf(listId)).toEqual([
      { label: 'Company', n: 2 },
      { label: 'Location', n: 3 },
      { label: 'Person', n: 3 },
      { label: 'Position', n: 3 },
      { label: 'ScanReport', n: 3 },
    ]);
    const l = embedded.lore;
    const provenance = await l.parts.db.withTenant(l.credentials.tenant_id, async (sql) =>
      (await sql.query<{ source_id: string }>(
        `SELECT e.source_id FROM graph.kg_edges e JOIN graph.kg_nodes p ON p.tenant_id = e.tenant_id AND p.graph_id = e.graph_id AND p.node_id = e.from_node
          WHERE e.tenant_id = $1 AND e.graph_id = $2 AND e.label = 'WORKS_AT' AND p.name = 'Ada Lovelace'`,
        [l.credentials.tenant_id, listId],
      )).rows,
    );
    expect(provenance).toEqual([{ source_id: `${rows[0]!.id}:Company` }]);
  });
  it('generates a graph from a company search\'s list, its table rows and columns sent exactly as the status route gives them', async () => {
    const l = embedded.lore;
    const world = generateAgentsWorld(7, { companies: 60 });
    await upsertDirectoryRecords(l.parts.db, l.credentials.tenant_id, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
    const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' }).map(companyKey);
    expect(truth.length).toBeGreaterThan(0);
    const start = await call('POST', '/company-search/start', { prompt: 'Find fintech companies in Berlin' });
    expect(start.status).toBe(200);
    let snap: any = null;
    for (let i = 0; i < 600 && snap?.status !== 'completed'; i++) {
      await new Promise((res) => setTimeout(res, 100));
      snap = (await call('GET', `/company-search/status/${start.json.thread_id as string}`)).json;
      expect(snap.status).not.toBe('error');
    }
    expect(snap.status).toBe('completed');
    const { rows, columns } = snap.table_structure as { rows: Array<Record<string, unknown>>; columns: Array<Record<string, unknown>> };
    expect(rows.length).toBe(truth.length);

    const listId = `search-${start.json.thread_id as string}`;
    const generated = await call('POST', '/memory/generate', { listId, workflowCategory: 'company_search', records: rows, columns });
    expect(generated.status).toBe(200);
    expect(await settled(generated.json.jobId)).toMatchObject({ status: 'completed', stats: expect.objectContaining({ rows: rows.length }) });
    const companies = await l.parts.db.withTenant(l.credentials.tenant_id, async (sql) =>
      (await sql.query<{ name: string }>(`SELECT name FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 AND label = 'Company' ORDER BY name`, [l.credentials.tenant_id, listId])).rows.map((r) => r.name),
    );
    const names = rows.map((r) => String((r.cells as Record<string, { value: unknown }>).name?.value)).sort();
    expect(companies).toEqual(names);
  });
  describe('how rows become entities (docs/memory.md, "Mapping tables and lists to nodes and edges")', () => {
    const uploadText = async (graphId: string, name: string, text: string) => {
      const form = new FormData();
      form.append('file', new Blob([text]), name);
      form.append('list_id', graphId);
      const up = await post('/memory/upload', form);
      expect(up.status).toBe(200);
      expect(await settled((JSON.parse(up.text) as { jobId: string }).jobId)).toMatchObject({ status: 'completed' });
    };
    const newGraph = async (name: string) => (await call('POST', '/memory/departments/create', { name })).json.graph_id as string;
    const query = async <T>(text: string, params: unknown[]) => {
      const l = embedded.lore;
      return l.parts.db.withTenant(l.credentials.tenant_id, async (sql) => (await sql.query<T>(text, [l.credentials.tenant_id, ...params])).rows);
    };
    const nodes = (graphId: string, label: string) =>
      query<{ name: string; resolution_key: string; properties: Record<string, unknown> }>(
        `SELECT name, resolution_key, properties FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 AND label = $3 ORDER BY resolution_key`,
        [graphId, label],
      );
    const openFacts = async (graphId: string, label: string) =>
      (
        await query<{ fact: string }>(
          `SELECT f.resolution_key || ' ' || e.label || ' ' || t.resolution_key AS fact FROM graph.kg_edges e
             JOIN graph.kg_nodes f ON f.tenant_id = e.tenant_id AND f.graph_id = e.graph_id AND f.node_id = e.from_node
             JOIN graph.kg_nodes t ON t.tenant_id = e.tenant_id AND t.graph_id = e.graph_id AND t.node_id = e.to_node
            WHERE e.tenant_id = $1 AND e.graph_id = $2 AND e.label = $3 AND e.valid_to IS NULL ORDER BY 1`,
          [graphId, label],
        )
      ).map((r) => r.fact);

    it('keeps named companies apart from their people\'s mail domains, never makes a free-mail provider a company, and reads a contact list as people', async () => {
      const g = await newGraph('Mail domains');
      await uploadText(
        g,
        'people.csv',
        ['Full Name,Company,Title,Email', 'Alice Jones,Stripe,Engineer,alice.jones@gmail.com', 'Bob King,Shopify,Designer,bob.king@gmail.com', 'Carol White,Stripe,PM,carol@stripe.com', 'Dr. Dan Brown,Independent Consultant,Consultant,dan@outlook.com'].join('\n'),
      );
      expect((await nodes(g, 'Company')).map((c) => c.resolution_key)).toEqual(['name:independent consultant', 'name:shopify', 'name:stripe']);
      expect(await openFacts(g, 'WORKS_AT')).toEqual([
        'name:alice jones|stripe WORKS_AT name:stripe',
        'name:bob king|shopify WORKS_AT name:shopify',
        'name:carol white|stripe WORKS_AT name:stripe',
        'name:dan brown|independent consultant WORKS_AT name:independent consultant',
      ]);
      expect((await nodes(g, 'Person')).find((p) => p.resolution_key.startsWith('name:dan brown'))).toMatchObject({ name: 'Dan Brown', properties: { name: 'Dan Brown', honorific: 'Dr.' } });

      const contacts = await newGraph('Contacts');
      await uploadText(contacts, 'contacts.csv', ['Name,Email,Phone,City', 'Alice Jones,alice.jones@gmail.com,+1 555 0100,Boston', 'Bob King,bob.king@gmail.com,+1 555 0101,Denver', 'Carol White,carol@whiteconsulting.com,+1 555 0102,Austin'].join('\n'));
      expect((await nodes(contacts, 'Person')).map((p) => p.name)).toEqual(['Alice Jones', 'Bob King', 'Carol White']);
      expect((await nodes(contacts, 'Company')).map((c) => c.resolution_key)).toEqual(['domain:whiteconsulting.com']);
    });

    it('replaces a re-uploaded row\'s report with that row\'s values, where entities keep what earlier rows said', async () => {
      const g = await newGraph('Re-upload');
      const header = 'First Name,Last Name,Company Name,Job Title,Email,LinkedIn URL,City,Website';
      await uploadText(g, 'people.csv', [header, 'Anna,Müller,Acme GmbH,Head of Sales,anna@acme.de,https://www.linkedin.com/in/anna-mueller/,Berlin,acme.de', 'José,García,Globex Corporation,CTO,jose@globex.com,linkedin.com/in/josegarcia,Madrid,globex.com'].join('\n'));
      await uploadText(g, 'people.csv', [header, 'Anna,Müller,Acme GmbH,Head of Sales,,https://www.linkedin.com/in/anna-mueller/,Berlin,acme.de', 'Zoë,Brook,Globex Corporation,Engineer,zoe@globex.com,,Madrid,globex.com'].join('\n'));
      const reports = await nodes(g, 'ScanReport');
      expect(reports.find((r) => r.resolution_key === 'ref:people.csv#3')!.properties).toEqual({
        id: 'people.csv#3',
        name: 'people.csv row 3',
        'First Name': 'Zoë',
        'Last Name': 'Brook',
        'Company Name': 'Globex Corporation',
        'Job Title': 'Engineer',
        Email: 'zoe@globex.com',
        City: 'Madrid',
        Website: 'globex.com',
      });
      expect(reports.find((r) => r.resolution_key === 'ref:people.csv#2')!.properties).not.toHaveProperty('Email');
      // A blank cell never erases an entity's property (documented): Anna keeps her address.
      expect((await nodes(g, 'Person')).find((p) => p.name === 'Anna Müller')!.properties).toMatchObject({ email: 'anna@acme.de' });

      // A list's record renamed: its report's name is the new one, and graph chat no longer finds it by the old.
      const list = `kg-rename-${g}`;
      const generate = async (name: string) => {
        const r = await call('POST', '/memory/generate', { listId: list, columns: [{ id: 'name', header: 'Name', type: 'fixed' }, { id: 'company', header: 'Company', type: 'fixed' }], records: [{ id: 'r1', cells: { name: { value: name }, company: { value: 'Initech' } } }] });
        expect(await settled(r.json.jobId)).toMatchObject({ status: 'completed' });
      };
      await generate('Wanda Oldname');
      await generate('Xavier Newname');
      const [report] = await nodes(list, 'ScanReport');
      expect(report).toMatchObject({ name: 'Xavier Newname', properties: { id: `list:${list}:r1`, name: 'Xavier Newname', Name: 'Xavier Newname', Company: 'Initech' } });
      const keys = await query<{ match_key: string }>(
        `SELECT k.match_key FROM graph.kg_node_keys k JOIN graph.kg_nodes n ON n.tenant_id = k.tenant_id AND n.graph_id = k.graph_id AND n.node_id = k.node_id
          WHERE k.tenant_id = $1 AND k.graph_id = $2 AND n.label = 'ScanReport'`,
        [list],
      );
      expect(keys.map((k) => k.match_key)).toContain('xavier newname');
      expect(keys.map((k) => k.match_key)).not.toContain('wanda oldname');
    });

    it('makes one company of rows with and without its domain, and one person of rows with and without the profile; two candidates keep them apart', async () => {
      const g = await newGraph('Two forms');
      await uploadText(
        g,
        'companies.csv',
        ['Company;Website;Industry;HQ', 'ACME GMBH ;;Manufacturing;Berlin, Germany', 'Acme GmbH;https://acme.de/about;Manufacturing;Berlin', 'Société Générale;societegenerale.com;Banking;Paris', 'Societe Generale;;Banking;Paris'].join('\n'),
      );
      expect((await nodes(g, 'Company')).map((c) => [c.resolution_key, c.name])).toEqual([
        ['domain:acme.de', 'Acme GmbH'],
        ['domain:societegenerale.com', 'Société Générale'],
      ]);
      await uploadText(
        g,
        'people.csv',
        [
          'First Name,Last Name,Company Name,Job Title,Email,LinkedIn URL,City',
          'Anna,Müller,Acme GmbH,Head of Sales,anna@acme.de,https://www.linkedin.com/in/anna-mueller/,Berlin',
          'anna,muller,ACME GmbH,head of sales,,,berlin',
          'Bob,Smith,Acme GmbH,Engineer,bob@acme.de,,Berlin',
        ].join('\n'),
      );
      // Every row's company is the domain's; the profile-less Anna at it is the profiled one.
      expect((await nodes(g, 'Company')).map((c) => c.resolution_key)).toEqual(['domain:acme.de', 'domain:societegenerale.com']);
      expect((await nodes(g, 'Person')).map((p) => [p.resolution_key, p.name])).toEqual([
        ['name:bob smith|acme.de', 'Bob Smith'],
        ['profile:linkedin.com/in/anna-mueller', 'Anna Müller'],
      ]);
      // Later uploads resolve against the graph: a profile-less row of Anna at Acme is her again.
      await uploadText(g, 'later.csv', ['Name,Company,City', 'Anna Muller,Acme GmbH,Hamburg'].join('\n'));
      expect((await nodes(g, 'Person')).map((p) => p.resolution_key)).toEqual(['name:bob smith|acme.de', 'profile:linkedin.com/in/anna-mueller']);
      expect(await openFacts(g, 'LOCATED_IN')).toContain('profile:linkedin.com/in/anna-mueller LOCATED_IN name:hamburg');

      // Two companies called Globex with domains: a row naming Globex alone is neither.
      await uploadText(g, 'globex.csv', ['Company,Website', 'Globex,globex.com', 'Globex,globex.de', 'Globex,'].join('\n'));
      expect((await nodes(g, 'Company')).map((c) => c.resolution_key).filter((k) => k.includes('globex'))).toEqual(['domain:globex.com', 'domain:globex.de', 'name:globex']);
    });
  });
});
