import { OpenAiLanguageModel } from '@lore/ai';
import type { Db } from '@lore/runtime';
import { ingestOk, seedChatGraph, storedEdges, storedNodes, type SeededGraph } from './graph-chat-support';
import { eventually, startHarness, waitIndexed, type Harness } from '../memory/support';
import { LoopbackModel } from '../support/loopback-model';
import { uniqueSuffix } from '../support/infra';

jest.setTimeout(240_000);

/** Every node and edge of an answer is a row of the graph: read back from the store, same ids, labels and ends. */
async function expectRealSubgraph(db: Db, tenant: string, graphId: string, body: { nodes: any[]; edges: any[] }) {
  const nodes = await storedNodes(db, tenant, graphId, body.nodes.map((n) => n.id));
  expect(nodes.map((n) => ({ id: n.node_id, label: n.label, name: n.name })).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
    body.nodes.map((n) => ({ id: n.id, label: n.label, name: n.properties.name })).sort((a, b) => a.id.localeCompare(b.id)),
  );
  const stored = await storedEdges(db, tenant, graphId);
  for (const e of body.edges) {
    expect(stored.some((s) => s.from_node === e.from && s.to_node === e.to && s.label === e.label)).toBe(true);
    expect(body.nodes.some((n) => n.id === e.from) && body.nodes.some((n) => n.id === e.to)).toBe(true);
  }
}

/**
 * Graph chat and a memory's entities as clients reach them: through a real gateway (API keys, PostgreSQL, Redis)
 * in front of the graph on PostgreSQL and Kafka with the worker indexing.
 */
describe('graph chat and memory entities (through the gateway)', () => {
  let h: Harness;
  const model = new LoopbackModel();
  let modelled: Harness;
  const run = uniqueSuffix();
  const tenant = `t_gchat_${run}`;
  const other = `t_gchat_other_${run}`;
  let seeded: SeededGraph;
  let seededModelled: SeededGraph;

  beforeAll(async () => {
    h = await startHarness({ backend: 'postgres', via: 'gateway' });
    await model.start();
    modelled = await startHarness({
      backend: 'postgres', via: 'gateway', worker: false,
      graph: { languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 10_000, retries: 0 }) },
    });
    seeded = await seedChatGraph(h.db, tenant, `g_chat_${run}`);
    seededModelled = await seedChatGraph(modelled.db, tenant, `g_chat_model_${run}`);
  });
  afterAll(async () => {
    await modelled?.close();
    await h?.close();
    await model.stop();
  });

  const chat = (who: ReturnType<Harness['identity']>, body: unknown, via: Harness = h) => via.call('POST', '/memory/chat', who, body);

  /** A new graph of the tenant, built from one uploaded CSV by its job (through the gateway): its id. */
  async function uploadedGraph(who: ReturnType<Harness['identity']>, name: string, file: string, csv: string): Promise<string> {
    const created = await h.call('POST', '/memory/departments/create', who, { name });
    expect(created.status).toBe(200);
    const target = await h.authorize(who, '/memory/upload');
    const form = new FormData();
    form.append('list_id', created.body.graph_id);
    form.append('file', new Blob([csv]), file);
    const accepted = await fetch(target.url, { method: 'POST', headers: target.headers, body: form });
    expect(accepted.status).toBe(200);
    const { jobId } = (await accepted.json()) as { jobId: string };
    const job = await eventually(async () => {
      const r = await h.call('GET', `/memory/jobs/${jobId}`, who);
      return r.body?.status === 'completed' || r.body?.status === 'failed' ? r.body : undefined;
    }, 90_000, `job ${jobId}`);
    expect(job.status).toBe('completed');
    return created.body.graph_id as string;
  }

  it('answers from the neighbourhood of the entities the question names, every node and edge real', async () => {
    const who = h.identity(tenant);
    // Lower case, no accent, the domain: all link the same company.
    for (const question of ['Who works at ÁCME Corp?', 'who works at acme corp', 'Who works at acme.example?']) {
      const r = await chat(who, { listId: seeded.graphId, question });
      expect(r.status).toBe(200);
      const names = r.body.nodes.map((n: any) => n.properties.name);
      expect(names).toEqual(expect.arrayContaining(['Acme Corp', 'Zoë Brook', 'Chief Technology Officer', 'Zürich']));
      expect(r.body.edges).toEqual(expect.arrayContaining([{ from: seeded.ids.zoe, to: seeded.ids.acme, label: 'WORKS_AT' }]));
      // Current edges only: Ada's closed job at Acme is not read for a present-tense question.
      expect(r.body.edges).not.toContainEqual({ from: seeded.ids.ada, to: seeded.ids.acme, label: 'WORKS_AT' });
      expect(r.body.answer).toContain('Zoë Brook (Person) works at Acme Corp (Company)');
      await expectRealSubgraph(h.db, tenant, seeded.graphId, r.body);
    }
    const person = (await chat(who, { listId: seeded.graphId, question: 'What does zoe brook do?' })).body;
    expect(person.nodes.find((n: any) => n.id === seeded.ids.zoe)).toMatchObject({ label: 'Person', properties: { name: 'Zoë Brook', linkedin_url: 'https://www.linkedin.com/in/zoe-brook' } });
  });

  it('reads closed edges when the question asks about the past', async () => {
    const r = await chat(h.identity(tenant), { listId: seeded.graphId, question: 'Who used to work at Acme Corp before?' });
    expect(r.status).toBe(200);
    expect(r.body.edges).toContainEqual({ from: seeded.ids.ada, to: seeded.ids.acme, label: 'WORKS_AT' });
    expect(r.body.answer).toMatch(/Ada Park \(Person\) works at Acme Corp \(Company\) \(from \d{4}-\d\d-\d\d until \d{4}-\d\d-\d\d\)/);
    await expectRealSubgraph(h.db, tenant, seeded.graphId, r.body);
  });

  it('bounds the neighbourhood to two hops', async () => {
    // Zürich is one hop from Acme, the Swiss Region node two hops from it, the Alps three.
    const r = await chat(h.identity(tenant), { listId: seeded.graphId, question: 'Tell me about Acme Corp' });
    const ids = r.body.nodes.map((n: any) => n.id);
    expect(ids).toContain(seeded.ids.region);
    expect(ids).not.toContain(seeded.ids.alps);
  });

  it('says so clearly when the question names no entity of the graph, with an empty subgraph', async () => {
    const r = await chat(h.identity(tenant), { listId: seeded.graphId, question: 'What is the weather like on Mars?' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ answer: expect.stringContaining('names no person, company'), nodes: [], edges: [] });
  });

  it('lets the configured language model phrase the answer from the subgraph', async () => {
    model.script = 'Zoë Brook is the CTO of Acme Corp, based in Zürich.';
    const before = model.bodies.length;
    const r = await chat(modelled.identity(tenant), { listId: seededModelled.graphId, question: 'Who leads technology at Acme Corp?' }, modelled);
    model.script = null;
    expect(r.status).toBe(200);
    expect(r.body.answer).toBe('Zoë Brook is the CTO of Acme Corp, based in Zürich.');
    expect(r.body.nodes.map((n: any) => n.properties.name)).toEqual(expect.arrayContaining(['Acme Corp', 'Zoë Brook']));
    await expectRealSubgraph(modelled.db, tenant, seededModelled.graphId, r.body);
    // The model saw the subgraph's facts, and only those.
    const prompt = model.bodies.slice(before).flatMap((b) => b.messages ?? []).find((m) => m.role === 'user')?.content ?? '';
    expect(prompt).toContain('Zoë Brook (Person) works at Acme Corp (Company)');
    expect(prompt).not.toContain('Ada Park');
    // No entity: the model is not asked.
    const asked = model.bodies.length;
    const none = await chat(modelled.identity(tenant), { listId: seededModelled.graphId, question: 'Anything about volcanoes?' }, modelled);
    expect(none.body.nodes).toEqual([]);
    expect(model.bodies.length).toBe(asked);
  });

  it('answers 404 for an unknown graph and another tenant\'s, 422 with every issue for a bad body', async () => {
    const unknown = await chat(h.identity(tenant), { listId: `g_missing_${run}`, question: 'Who works at Acme Corp?' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: expect.any(String) });
    const foreign = await chat(h.identity(other), { listId: seeded.graphId, question: 'Who works at Acme Corp?' });
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(foreign.body)).not.toContain('Zoë');
    const bad = await chat(h.identity(tenant), { listId: 7, question: '' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => d.loc.join('.')).sort()).toEqual(['body.listId', 'body.question']);
    const missing = await chat(h.identity(tenant), {});
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toHaveLength(2);
    const long = await chat(h.identity(tenant), { listId: seeded.graphId, question: 'x'.repeat(2001) });
    expect(long.status).toBe(422);
    // A read-only key may ask (asking only reads).
    const reader = await chat(h.identity(tenant, undefined, { scopes: { access: 'read' } } as any), { listId: seeded.graphId, question: 'Who works at Acme Corp?' });
    expect(reader.status).toBe(200);
    expect((await h.call('POST', '/memory/chat', null, { listId: seeded.graphId, question: 'Acme Corp?' })).status).toBe(401);
  });

  it('chats over a graph an upload job built, asked with Authorization: Bearer', async () => {
    const who = h.identity(tenant);
    const graphId = await uploadedGraph(who, `Upload ${run}`, 'people.csv', 'Name,Title,Company,Website,LinkedIn,Location\nGrace Hopper,Rear Admiral,Navy Labs,navylabs.example,linkedin.com/in/grace-hopper,Arlington\n');
    const ask = await h.authorize(who, '/memory/chat');
    const res = await fetch(ask.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${ask.headers['x-api-key']}`, 'content-type': 'application/json' },
      body: JSON.stringify({ listId: graphId, question: 'Where does grace hopper work?' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { answer: string; nodes: any[]; edges: any[] };
    expect(body.nodes.map((n) => n.properties.name)).toEqual(expect.arrayContaining(['Grace Hopper', 'Navy Labs', 'Arlington']));
    expect(body.answer).toContain('Grace Hopper (Person) works at Navy Labs (Company)');
    await expectRealSubgraph(h.db, tenant, graphId, body);
  });

  it('links names that start or end with a stop word, are stop words joined, or hold a symbol the fold spells out', async () => {
    const who = h.identity(tenant);
    const graphId = await uploadedGraph(who, `Stop words ${run}`, 'stop.csv', 'company,city\nAT&T,Dallas\nAcme™,Oslo\nWill Smith Holdings,Rome\nOn Holding,Zurich\n');
    for (const [question, company, city] of [
      ['Where is AT&T?', 'AT&T', 'Dallas'],
      ['Where is Acme™?', 'Acme™', 'Oslo'],
      ['Where is Will Smith Holdings?', 'Will Smith Holdings', 'Rome'],
      ['Where is On Holding?', 'On Holding', 'Zurich'],
    ]) {
      const r = await h.call('POST', '/memory/chat', who, { listId: graphId, question });
      expect(r.status).toBe(200);
      expect([question, r.body.nodes.map((n: any) => n.properties.name)]).toEqual([question, expect.arrayContaining([company, city])]);
      await expectRealSubgraph(h.db, tenant, graphId, r.body);
    }
  });

  it('keeps a row\'s every cell through the store and the answer, a `__proto__` column\'s included', async () => {
    const who = h.identity(tenant);
    const graphId = await uploadedGraph(who, `Proto ${run}`, 'proto.csv', 'company,__proto__,constructor\nProtoworks,protoval,ctorval\n');
    const stored = await h.db.withTenant(tenant, async (sql) => (await sql.query<{ p: Record<string, unknown> }>(`SELECT properties AS p FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 AND label = 'ScanReport'`, [tenant, graphId])).rows);
    expect(stored).toHaveLength(1);
    expect(Object.getOwnPropertyDescriptor(stored[0]!.p, '__proto__')?.value).toBe('protoval');
    const r = await h.call('POST', '/memory/chat', who, { listId: graphId, question: 'What about Protoworks?' });
    expect(r.status).toBe(200);
    const report = (r.body.nodes as Array<{ label: string; properties: Record<string, unknown> }>).find((n) => n.label === 'ScanReport');
    expect(report).toBeDefined();
    expect(Object.getOwnPropertyDescriptor(report!.properties, '__proto__')?.value).toBe('protoval');
    expect(report!.properties.constructor).toBe('ctorval');
  });

  it('tells a fact many rows say once, and spends the edge budget on distinct facts', async () => {
    const who = h.identity(tenant);
    const rows = Array.from({ length: 40 }, (_, i) => `Person ${String.fromCharCode(65 + (i % 26))}${i},Engineer,Quayside Hub`);
    const graphId = await uploadedGraph(who, `Hub ${run}`, 'hub.csv', ['name,title,company', ...rows].join('\n'));
    const r = await h.call('POST', '/memory/chat', who, { listId: graphId, question: 'Who is at Quayside Hub?' });
    expect(r.status).toBe(200);
    const lines = (r.body.answer as string).split('. ');
    const repeated = lines.filter((l, i) => lines.indexOf(l) !== i);
    expect(repeated).toEqual([]);
    // Every edge of the answer is a distinct fact.
    const facts = (r.body.edges as Array<{ from: string; label: string; to: string }>).map((e) => `${e.from}|${e.label}|${e.to}`);
    expect(new Set(facts).size).toBe(facts.length);
    await expectRealSubgraph(h.db, tenant, graphId, r.body);
  });

  it('reads every named entity\'s own facts beside a hub, says what the bounds cut, and links people, not ordinary words', async () => {
    const who = h.identity(tenant);
    const staff = Array.from({ length: 300 }, (_, i) => `Person${String(i).padStart(3, '0')} Tester,BigCo,Tester,p${i}@bigco.example,bigco.example,Berlin`);
    const rows = [
      ...staff,
      'Hub Friend,SmallCo,CTO,hub@smallco.example,smallco.example,Hamburg',
      'Tom Ford,Acme,Engineer,tom@acme.example,acme.example,Oslo',
      'Raj Patel,Work.com,Sales,raj@work.com,work.com,Austin',
      'Anna Müller,Acme,Head of Sales,anna.mueller@acme.example,acme.example,Berlin',
    ];
    const graphId = await uploadedGraph(who, `Hub and words ${run}`, 'hub.csv', ['Name,Company,Title,Email,Website,City', ...rows].join('\n'));
    const ask = async (question: string) => {
      const r = await chat(who, { listId: graphId, question });
      expect(r.status).toBe(200);
      await expectRealSubgraph(h.db, tenant, graphId, r.body);
      return r.body as { answer: string; nodes: Array<{ id: string; label: string; properties: { name: string } }>; edges: Array<{ from: string; to: string; label: string }> };
    };
    const named = (body: { nodes: Array<{ id: string; label: string; properties: { name: string } }> }, name: string, label: string) => body.nodes.find((n) => n.properties.name === name && n.label === label)?.id;

    // The hub's 1,200 older facts do not crowd out Hub Friend's own, and the answer says how much it left out.
    const both = await ask('Tell me about Hub Friend and BigCo');
    expect(both.nodes.length).toBeLessThanOrEqual(50);
    expect(both.edges.length).toBeLessThanOrEqual(100);
    const friend = named(both, 'Hub Friend', 'Person');
    expect(both.edges).toEqual(expect.arrayContaining([
      { from: friend, to: named(both, 'SmallCo', 'Company'), label: 'WORKS_AT' },
      { from: friend, to: named(both, 'Hamburg', 'Location'), label: 'LOCATED_IN' },
    ]));
    expect(both.answer).toContain('BigCo (Company) has 300 current "works at" relations (');

    // "work" is no company, though Work.com's domain starts with it.
    const tom = await ask('Where does Tom Ford work?');
    expect(tom.answer).toMatch(/^Tom Ford \(Person\)/);
    expect(named(tom, 'Work.com', 'Company')).toBeUndefined();
    // A person's e-mail address links the person (the company's domain inside it links nothing of its own).
    const anna = await ask('Who is anna.mueller@acme.example?');
    expect(anna.answer).toMatch(/^Anna Müller \(Person\)/);
    expect(anna.answer).toContain('Anna Müller (Person) works at Acme (Company)');
    // A name the graph lacks is said so.
    expect((await ask('Does Microsoft have an office in Hamburg?')).answer).toMatch(/^Not in this graph: Microsoft\. Hamburg \(Location\)/);
  });

  it('lists a memory\'s entities after a real ingest, page by page, only to its tenant', async () => {
    const who = h.identity(tenant, `mem_ent_${run}`);
    const doc = await ingestOk(h, who, 'Acme Corp opened an office in Berlin. Dr. Jane Smith leads Acme Corp. Globex Labs competes with Acme Corp in Berlin.');
    await waitIndexed(h, who, doc);
    const seen: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await h.call('GET', `/api/v1/memory/entities?limit=2${cursor ? `&cursor=${cursor}` : ''}`, who);
      expect(r.status).toBe(200);
      expect(r.body.count).toBe(r.body.entities.length);
      expect(r.body.entities.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.entities);
      cursor = r.body.next_cursor;
      pages += 1;
    } while (cursor && pages < 20);
    const byName = new Map(seen.map((e) => [e.name, e]));
    expect(byName.get('Acme Corp')).toMatchObject({ kind: 'organization', label: 'Company', mention_count: 3, document_count: 1 });
    expect(byName.get('Jane Smith')).toMatchObject({ kind: 'person', label: 'Person' });
    expect(byName.get('Berlin')).toMatchObject({ kind: 'place', label: 'Location', mention_count: 2 });
    expect(pages).toBeGreaterThan(1);
    expect(new Set(seen.map((e) => e.entity_id)).size).toBe(seen.length);
    // Name order across pages (the key is the lower-cased name).
    const keys = seen.map((e) => e.name.toLowerCase());
    expect(keys).toEqual([...keys].sort());

    const acme = byName.get('Acme Corp');
    const detail = await h.call('GET', `/api/v1/memory/entities/${acme.entity_id}`, who);
    expect(detail.status).toBe(200);
    expect(detail.body.documents).toEqual([{ doc_id: doc, title: expect.any(String), mentions: 3 }]);
    const ofDoc = await h.call('GET', `/api/v1/memory/entities?doc_id=${doc}&kind=organization`, who);
    expect(ofDoc.body.entities.map((e: any) => e.name).sort()).toEqual(['Acme Corp', 'Globex Labs']);

    // Another tenant: the entity, the document filter and the list all keep the first tenant's entities out.
    const stranger = h.identity(other, `mem_ent_${run}`);
    expect((await h.call('GET', `/api/v1/memory/entities/${acme.entity_id}`, stranger)).status).toBe(404);
    expect((await h.call('GET', `/api/v1/memory/entities?doc_id=${doc}`, stranger)).status).toBe(404);
    const list = await h.call('GET', '/api/v1/memory/entities', stranger);
    expect(list.status).toBe(200);
    expect(list.body.entities).toEqual([]);
    expect((await h.call('GET', '/api/v1/memory/entities?cursor=!!!', who)).status).toBe(400);
    expect((await h.call('GET', '/api/v1/memory/entities?limit=500', who)).status).toBe(400);
    expect((await h.call('GET', '/api/v1/memory/entities', null)).status).toBe(401);
  });
});
