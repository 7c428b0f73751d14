jest.setTimeout(120_000);

import { createLogger, PgliteDb, runMigrations, runRuntimeMigrations } from '@lore/runtime';
import type { LanguageModel } from '@lore/ai';
import { GRAPH_MIGRATIONS } from '../graph-service';
import { CHAT_LIMITS } from '../domain/graph-chat';
import { closeEdgesOfSources, insertGraph, nodeRef, openEdges, upsertNodes, type EdgeInput, type NodeInput } from '../store/knowledge-graphs';
import { graphChat, walkNeighbourhood } from './graph-chat';
import type { GraphViewer } from './knowledge-graphs';

/**
 * Graph chat's linking, walk and deterministic answer over a real store (PGlite, the graph's migrations): a hub among
 * the named entities, ordinary words and domain labels, people found by e-mail, profile, a part of the name or
 * without an honorific, a plural, history, and what the answer says it left out.
 */
describe('graph chat over a stored graph', () => {
  const tenant = 't_chat_walk';
  const graphId = 'g_chat_walk';
  let db: PgliteDb;
  const ids = new Map<string, string>();
  const viewer: GraphViewer = { tenantId: tenant, admin: true, reach: { readsDocuments: true } as GraphViewer['reach'] };
  const deps = () => ({ db, languageModel: { kind: 'none' } as unknown as LanguageModel, logger: createLogger({ level: 'silent', service: 'graph-chat-test' }) });
  const ask = async (question: string) => graphChat(deps(), viewer, { listId: graphId, question });
  const id = (name: string) => ids.get(name) as string;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await runMigrations(db, GRAPH_MIGRATIONS);
    await db.withTenant(tenant, async (sql) => {
      await insertGraph(sql, tenant, { graph_id: graphId, name: 'Walk test graph', description: '', source_type: 'list' });
      const row = (n: number | string) => ({ kind: 'row' as const, id: `seed:${n}` });
      const company = (name: string, domain: string): NodeInput => ({ label: 'Company', key: `domain:${domain}`, name, properties: { name, domain }, source: row(name) });
      const person = (name: string, extra: Record<string, unknown> = {}, key = `name:${name.toLowerCase()}`): NodeInput => ({ label: 'Person', key, name, properties: { name, ...extra }, source: row(name) });
      const place = (name: string): NodeInput => ({ label: 'Location', key: `name:${name.toLowerCase()}`, name, properties: { name }, source: row(name) });
      // BigCo's 300 people (and a report of each row) come first, so their edges hold the lowest ids.
      const staff = Array.from({ length: 300 }, (_, i) => person(`Person${String(i).padStart(3, '0')} Tester`));
      const reports = staff.map((_, i): NodeInput => ({ label: 'ScanReport', key: `ref:hub.csv#${i}`, name: `hub.csv row ${i + 2}`, properties: { name: `hub.csv row ${i + 2}`, id: `hub.csv#${i}` }, source: row(i) }));
      const nodes: NodeInput[] = [
        company('BigCo', 'bigco.example'),
        company('SmallCo', 'smallco.example'),
        company('Work.com', 'work.com'),
        company('Data Inc', 'data.com'),
        company('International Business Machines', 'ibm.example'),
        company('Acme GmbH', 'acme.de'),
        place('Berlin'),
        place('Hamburg'),
        ...staff,
        ...reports,
        person('Hub Friend'),
        person('Tom Ford'),
        person('Raj Patel'),
        person('Anna Müller', { email: 'anna.mueller@acme.de', linkedin_url: 'https://www.linkedin.com/in/anna-mueller/' }, 'profile:linkedin.com/in/anna-mueller'),
        person("Dr. Sarah O'Connor"),
        person('Kim Park'),
        person('Kim Lee'),
        person('José García', { title: 'Advisor', company: 'Initech', company_domain: 'initech.example' }, 'profile:linkedin.com/in/josegarcia'),
        person('Bob Smith', { email: 'bob@umbrella.example', company: 'Umbrella Corp' }),
        person('李 雷'),
        { label: 'Company', key: 'name:腾讯', name: '腾讯', properties: { name: '腾讯' }, source: row('tencent') },
        { label: 'Position', key: 'title:engineer|smallco.example', name: 'Engineer', properties: { name: 'Engineer', title: 'Engineer' }, source: row('engineer') },
      ];
      const written = await upsertNodes(sql, tenant, graphId, nodes);
      for (const n of nodes) ids.set(n.name, written.ids.get(nodeRef(n.label, n.key)) as string);
      const edge = (from: string, label: string, to: string, source: string | number = `${from}>${to}`): EdgeInput => ({ from: id(from), to: id(to), label, source: row(source) });
      await openEdges(sql, tenant, graphId, 'seed-job', [
        ...staff.flatMap((p, i) => [edge(p.name, 'WORKS_AT', 'BigCo', i), edge(p.name, 'LOCATED_IN', i % 2 === 0 ? 'Berlin' : 'Hamburg', i), edge(`hub.csv row ${i + 2}`, 'DESCRIBES', p.name, i), edge(`hub.csv row ${i + 2}`, 'DESCRIBES', 'BigCo', i)]),
        edge('BigCo', 'LOCATED_IN', 'Berlin'),
        edge('Hub Friend', 'WORKS_AT', 'SmallCo'),
        edge('Hub Friend', 'LOCATED_IN', 'Hamburg'),
        edge('Hub Friend', 'HOLDS_POSITION', 'Engineer'),
        edge('Tom Ford', 'WORKS_AT', 'Acme GmbH'),
        edge('Raj Patel', 'WORKS_AT', 'Work.com'),
        edge('Anna Müller', 'WORKS_AT', 'Acme GmbH'),
        edge("Dr. Sarah O'Connor", 'WORKS_AT', 'SmallCo'),
        edge('Kim Park', 'WORKS_AT', 'Data Inc'),
        edge('Kim Lee', 'WORKS_AT', 'SmallCo'),
        edge('José García', 'WORKS_AT', 'SmallCo'),
        edge('José García', 'WORKS_AT', 'Acme GmbH'),
        edge('Bob Smith', 'WORKS_AT', 'Acme GmbH', 'bob-row'),
        edge('李 雷', 'WORKS_AT', '腾讯'),
      ]);
      // Bob's row is gone from the list: his one relation is history.
      await closeEdgesOfSources(sql, tenant, graphId, 'row', ['seed:bob-row'], new Set());
    });
  });
  afterAll(async () => {
    await db?.close();
  });

  it('reads every linked entity\'s own facts before a hub\'s fan-out, within the bounds, and says the hub was cut', async () => {
    const r = await ask('Tell me about Hub Friend and BigCo');
    expect(r.linked).toEqual(expect.arrayContaining([id('Hub Friend'), id('BigCo')]));
    expect(r.nodes.length).toBeLessThanOrEqual(CHAT_LIMITS.nodes);
    expect(r.edges.length).toBeLessThanOrEqual(CHAT_LIMITS.edges);
    const friend = r.edges.filter((e) => e.from === id('Hub Friend')).map((e) => e.label).sort();
    expect(friend).toEqual(['HOLDS_POSITION', 'LOCATED_IN', 'WORKS_AT']);
    expect(r.answer).toContain('Hub Friend (Person) works at SmallCo (Company)');
    expect(r.answer).toContain('Hub Friend (Person) located in Hamburg (Location)');
    // The true size of what the walk cut, by one count.
    expect(r.answer).toMatch(/This is only part of what the graph holds \(one answer reads at most 50 entities and 100 relations\): BigCo \(Company\) has 300 current "works at" relations \(\d+ stated here\), 300 current "describes" relations \(none stated here\)\.$/);
    // Each kind of the hub's own relations is read before the second of any: its one location is stated.
    expect(r.answer).toContain('BigCo (Company) located in Berlin (Location)');
    // Facts between entities are told before the rows that describe them.
    const hub = await ask('How many people work at BigCo?');
    expect(hub.answer).not.toMatch(/\(ScanReport\) describes/);
    expect(hub.answer).toMatch(/BigCo \(Company\) has 300 current "works at" relations \(\d+ stated here\)/);
  });

  it('links a company by its domain\'s first label only when the word is not an ordinary one', async () => {
    const tom = await ask('Where does Tom Ford work?');
    expect(tom.linked).toEqual([id('Tom Ford')]);
    expect(tom.answer).toMatch(/^Tom Ford \(Person\)/);
    const data = await ask('Is there any data about Tom Ford?');
    expect(data.linked).toEqual([id('Tom Ford')]);
    const people = await ask('Which people work at Acme GmbH?');
    expect(people.linked).toEqual([id('Acme GmbH')]);
    // Written as a domain, or a label that is no ordinary word: linked.
    expect((await ask('Who works at work.com?')).linked).toEqual([id('Work.com')]);
    expect((await ask('What does IBM do?')).linked).toEqual([id('International Business Machines')]);
  });

  it('links a person by e-mail address, profile URL, name without honorific, or one part of the name', async () => {
    // The address links Anna; her company's domain inside it links nothing by itself (she works there: it is read).
    const mail = await ask('Who is anna.mueller@acme.de?');
    expect(mail.linked).toEqual([id('Anna Müller')]);
    expect(mail.answer).toContain('Anna Müller (Person) works at Acme GmbH (Company)');
    expect((await ask('Whose profile is https://www.linkedin.com/in/anna-mueller/?trk=public')).linked).toEqual([id('Anna Müller')]);
    expect((await ask("Who is Sarah O'Connor?")).linked).toEqual([id("Dr. Sarah O'Connor")]);
    expect((await ask("Where does Dr. Sarah O'Connor work?")).linked).toEqual([id("Dr. Sarah O'Connor")]);
    // One person has the part: linked. Several: not, and said so.
    expect((await ask('Where does Sarah work?')).linked).toEqual([id("Dr. Sarah O'Connor")]);
    expect((await ask("What about O'Connor?")).linked).toEqual([id("Dr. Sarah O'Connor")]);
    const kim = await ask('Where does Kim work?');
    expect(kim.linked).toEqual([]);
    expect(kim.answer).toContain('"Kim" could be several people of this graph; name one in full.');
    // A full name the graph lacks is not half-linked by its first name.
    const other = await ask('Where does Kim Novak work?');
    expect(other.linked).toEqual([]);
    expect(other.answer).toContain('Not in this graph: Kim Novak.');
  });

  it('links names in a question written without spaces', async () => {
    const who = await ask('谁在腾讯工作？');
    expect(who.linked).toEqual([id('腾讯')]);
    expect(who.answer).toContain('李 雷 (Person) works at 腾讯 (Company)');
    expect((await ask('李雷是谁')).linked).toEqual([id('李 雷')]);
  });

  it('links the singular of a plural', async () => {
    expect((await ask('How many engineers are there?')).linked).toEqual([id('Engineer')]);
  });

  it('tells a person with no current relation as history, and several positions as no one title', async () => {
    const bob = await ask('Who is Bob Smith?');
    expect(bob.answer).toMatch(/^Bob Smith \(Person\) — history only, no current relation; recorded with email: bob@umbrella\.example; company: Umbrella Corp\. The graph holds no current relation of it\.$/);
    const jose = await ask('Where does José García work?');
    expect(jose.answer).toMatch(/^José García \(Person\) — positions at 2 companies\. /);
    expect(jose.answer).not.toContain('Advisor');
  });

  it('says which named entities the graph lacks, and which the seed limit left out', async () => {
    const ms = await ask('Does Microsoft have an office in Berlin?');
    expect(ms.linked).toEqual([id('Berlin')]);
    expect(ms.answer).toMatch(/^Not in this graph: Microsoft\. Berlin \(Location\)/);
    const none = await ask('What is the weather like on Mars?');
    expect(none.nodes).toEqual([]);
    expect(none.answer).toContain('names no person, company');
    expect(none.answer).toContain('Not in this graph: Mars.');
    const many = await ask(`Compare ${Array.from({ length: 12 }, (_, i) => `Person${String(i).padStart(3, '0')} Tester`).join(', ')}`);
    expect(many.linked).toHaveLength(CHAT_LIMITS.seeds);
    expect(many.answer).toContain('The question names more entities than one answer looks at (10); not looked at: entities named "Person010 Tester", "Person011 Tester".');
  });

  it('walks the same neighbourhood for the same question (deterministic)', async () => {
    const walk = () => db.withTenant(tenant, (sql) => walkNeighbourhood(sql, tenant, graphId, 'Tell me about Hub Friend and BigCo', false));
    const [a, b] = [await walk(), await walk()];
    expect(b.edges).toEqual(a.edges);
    expect(b.linked).toEqual(a.linked);
  });
});
