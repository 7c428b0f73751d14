import { useEmbedded } from '../support/embedded';
import { eventually } from '../memory/support';
import { seedChatGraph, storedEdges, storedNodes } from './graph-chat-support';
import { uniqueSuffix } from '../support/infra';

jest.setTimeout(240_000);

/**
 * Graph chat and a memory's entities in embedded mode (`npm start`'s composition: PGlite, the in-process bus), with
 * the development key: a graph built by a CSV upload job, then asked; the entities of an ingested document.
 */
describe('graph chat and memory entities (embedded mode)', () => {
  const e = useEmbedded('graph-chat');
  const run = uniqueSuffix();

  async function upload(listId: string, name: string, csv: string) {
    const form = new FormData();
    form.append('list_id', listId);
    form.append('file', new Blob([csv]), name);
    const res = await fetch(`${e.lore.url}/memory/upload`, { method: 'POST', headers: { 'x-api-key': e.lore.credentials.api_key }, body: form });
    return { status: res.status, json: (await res.json()) as any };
  }

  it('chats over a graph built by an upload: the answer\'s nodes and edges are the graph\'s', async () => {
    const created = await e.call('POST', '/memory/departments/create', { name: `Chat ${run}`, source_type: 'list' });
    expect(created.status).toBe(200);
    const graphId = created.json.graph_id as string;
    const csv = [
      'Name,Title,Company,Website,LinkedIn,Location',
      'Zoë Brook,CTO,Acme Corp,https://www.acme.example,https://www.linkedin.com/in/zoe-brook,Zürich',
      'Ada Park,CFO,Globex,globex.example,linkedin.com/in/ada-park,Berlin',
    ].join('\n');
    const accepted = await upload(graphId, 'people.csv', csv);
    expect(accepted.status).toBe(200);
    const job = await eventually(async () => {
      const r = await e.call('GET', `/memory/jobs/${accepted.json.jobId}`);
      return r.json?.status === 'completed' || r.json?.status === 'failed' ? r.json : undefined;
    }, 60_000);
    expect(job.status).toBe('completed');

    const r = await e.call('POST', '/memory/chat', { listId: graphId, question: 'Where does zoe brook work?' });
    expect(r.status).toBe(200);
    const names = r.json.nodes.map((n: any) => n.properties.name);
    expect(names).toEqual(expect.arrayContaining(['Zoë Brook', 'Acme Corp']));
    expect(names).not.toContain('Ada Park');
    expect(r.json.answer).toContain('Zoë Brook (Person) works at Acme Corp (Company)');
    const tenant = e.lore.credentials.tenant_id;
    const db = e.lore.parts.db;
    const stored = await storedNodes(db, tenant, graphId, r.json.nodes.map((n: any) => n.id));
    expect(stored.map((n) => n.node_id).sort()).toEqual(r.json.nodes.map((n: any) => n.id).sort());
    for (const n of r.json.nodes) expect(stored.find((s) => s.node_id === n.id)).toMatchObject({ label: n.label, name: n.properties.name });
    const edges = await storedEdges(db, tenant, graphId);
    expect(r.json.edges.length).toBeGreaterThan(0);
    for (const edge of r.json.edges) expect(edges.some((s) => s.from_node === edge.from && s.to_node === edge.to && s.label === edge.label && s.valid_to === null)).toBe(true);

    // The company's domain links it too; a question naming nothing of the graph gets an empty subgraph.
    const byDomain = await e.call('POST', '/memory/chat', { listId: graphId, question: 'Who is at acme.example?' });
    expect(byDomain.json.nodes.map((n: any) => n.properties.name)).toContain('Zoë Brook');
    const nothing = await e.call('POST', '/memory/chat', { listId: graphId, question: 'How deep is the ocean?' });
    expect(nothing.json).toEqual({ answer: expect.stringContaining('names no person, company'), nodes: [], edges: [] });
  });

  it('links people, not ordinary words, and tells history and several positions for what they are', async () => {
    const created = await e.call('POST', '/memory/departments/create', { name: `Linking ${run}`, source_type: 'list' });
    const graphId = created.json.graph_id as string;
    const rows = [
      'Name,Company,Title,Email,Website,LinkedIn,City',
      'Tom Ford,Acme,Engineer,tom@acme.example,acme.example,,Oslo',
      'Raj Patel,Work.com,Sales,raj@work.com,work.com,,Austin',
      'Kim Park,Data Inc,Analyst,kim@data.com,data.com,,Seoul',
      'Anna Müller,Acme,Head of Sales,anna.mueller@acme.example,acme.example,https://www.linkedin.com/in/anna-mueller/,Berlin',
      "Dr. Sarah O'Connor,Helios Robotics,Engineer,sarah@helios.example,helios.example,,Dublin",
      'José García,Globex,CTO,jose@globex.example,globex.example,linkedin.com/in/josegarcia,Madrid',
      'José García,Initech,Advisor,jose@initech.example,initech.example,linkedin.com/in/josegarcia,Madrid',
      'Bob Smith,Umbrella Corp,Manager,bob@umbrella.example,umbrella.example,,Paris',
    ];
    const build = async (csv: string) => {
      const accepted = await upload(graphId, 'people.csv', csv);
      expect(accepted.status).toBe(200);
      const job = await eventually(async () => {
        const r = await e.call('GET', `/memory/jobs/${accepted.json.jobId}`);
        return r.json?.status === 'completed' || r.json?.status === 'failed' ? r.json : undefined;
      }, 60_000);
      expect(job.status).toBe('completed');
    };
    await build(rows.join('\n'));
    const ask = async (question: string) => {
      const r = await e.call('POST', '/memory/chat', { listId: graphId, question });
      expect(r.status).toBe(200);
      return { answer: r.json.answer as string, names: (r.json.nodes as Array<{ label: string; properties: { name: string } }>).map((n) => `${n.properties.name} (${n.label})`) };
    };

    // Ordinary words do not link Work.com or Data Inc through their domains.
    const tom = await ask('Where does Tom Ford work?');
    expect(tom.answer).toMatch(/^Tom Ford \(Person\)/);
    expect(tom.names).not.toContain('Work.com (Company)');
    expect((await ask('Is there any data about Tom Ford?')).names).not.toContain('Data Inc (Company)');
    // An e-mail address, a profile URL, a lone first name, a plural.
    expect((await ask('Who is anna.mueller@acme.example?')).answer).toMatch(/^Anna Müller \(Person\)/);
    expect((await ask('Whose profile is https://linkedin.com/in/anna-mueller?')).answer).toMatch(/^Anna Müller \(Person\)/);
    expect((await ask('Where does Sarah work?')).answer).toMatch(/Sarah O'Connor \(Person\) works at Helios Robotics \(Company\)/);
    expect((await ask('How many engineers are there?')).names).toContain('Engineer (Position)');
    // Two current positions: neither is given as the person's one title.
    const jose = await ask('Where does José García work?');
    expect(jose.answer).toMatch(/^José García \(Person\) — .*?; positions at 2 companies\. José García \(Person\) works at /);
    expect(jose.answer).not.toContain('title: Advisor');

    // Bob's row is gone from the new export: he is history, not a current fact.
    await build(rows.filter((r) => !r.startsWith('Bob Smith')).join('\n'));
    expect((await ask('Who is Bob Smith?')).answer).toMatch(/^Bob Smith \(Person\) — history only, no current relation; recorded with /);
  });

  it('answers 404 for another tenant\'s graph and 422 for a bad body', async () => {
    const foreign = `g_foreign_${run}`;
    await seedChatGraph(e.lore.parts.db, `t_other_${run}`, foreign);
    const r = await e.call('POST', '/memory/chat', { listId: foreign, question: 'Who works at Acme Corp?' });
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ detail: 'graph not found' });
    const bad = await e.call('POST', '/memory/chat', { listId: foreign });
    expect(bad.status).toBe(422);
    expect(bad.json.detail.map((d: any) => d.loc.join('.'))).toEqual(['body.question']);
  });

  it('lists the entities of an ingested document', async () => {
    const ingested = await e.call('POST', '/api/v1/memory/ingest', { content: 'Initech Labs hired Dr. Maria Lopez in Madrid. Initech Labs grows.', routing: { mode: 'review' } });
    expect(ingested.status).toBe(200);
    const docId = ingested.json.doc_id as string;
    const entities = await eventually(async () => {
      const r = await e.call('GET', `/api/v1/memory/entities?doc_id=${docId}`);
      return r.status === 200 && r.json.count >= 3 ? r.json.entities : undefined;
    }, 60_000);
    expect(entities.map((x: any) => [x.name, x.kind, x.label])).toEqual(
      expect.arrayContaining([
        ['Initech Labs', 'organization', 'Company'],
        ['Madrid', 'place', 'Location'],
        ['Maria Lopez', 'person', 'Person'],
      ]),
    );
    const initech = entities.find((x: any) => x.name === 'Initech Labs');
    const one = await e.call('GET', `/api/v1/memory/entities/${initech.entity_id}`);
    expect(one.json).toMatchObject({ name: 'Initech Labs', mention_count: 2, documents: [{ doc_id: docId, mentions: 2 }] });
    expect((await e.call('GET', '/api/v1/memory/entities/ent_unknown')).status).toBe(404);
  });
});
