import {
  answerFromSubgraph,
  asksAboutThePast,
  boundsNote,
  factLines,
  modelPrompt,
  NO_ENTITY_ANSWER,
  noEntityAnswer,
  propertyLine,
  rankLinks,
  readQuestion,
  relationPhrase,
  singularForms,
  tellingOrder,
  type KeyMatch,
  type SubgraphEdge,
  type SubgraphNode,
} from './graph-chat';

const acme: SubgraphNode = { id: '1', label: 'Company', name: 'Acme', properties: { name: 'Acme', domain: 'acme.example' } };
const zoe: SubgraphNode = { id: '2', label: 'Person', name: 'Zoë', properties: { name: 'Zoë', nested: { a: 1 } } };
const now: SubgraphEdge = { id: '10', from: '2', to: '1', label: 'WORKS_AT', valid_from: '2026-01-01T00:00:00.000Z', valid_to: null };
const then: SubgraphEdge = { id: '11', from: '2', to: '1', label: 'HOLDS_POSITION', valid_from: '2025-01-01T00:00:00.000Z', valid_to: '2025-06-30T00:00:00.000Z' };

describe('graph chat rules', () => {
  it('reads the past only when the question asks about it', () => {
    expect(asksAboutThePast('Who works at Acme?')).toBe(false);
    expect(asksAboutThePast('Who used to work at Acme?')).toBe(true);
    expect(asksAboutThePast('Who was the CTO in 2024?')).toBe(true);
    expect(asksAboutThePast('Who formerly led Acme')).toBe(true);
  });

  it('states edges as sentences, closed ones with their period', () => {
    expect(relationPhrase('POSITION__AT')).toBe('position at');
    expect(factLines([acme, zoe], [now, then])).toEqual([
      'Zoë (Person) works at Acme (Company)',
      'Zoë (Person) holds position Acme (Company) (from 2025-01-01 until 2025-06-30)',
    ]);
  });

  it('answers from the subgraph alone, current facts first', () => {
    const answer = answerFromSubgraph([acme], [acme, zoe], [then, now], true);
    expect(answer).toBe('Acme (Company) — domain: acme.example. Zoë (Person) works at Acme (Company). Zoë (Person) holds position Acme (Company) (from 2025-01-01 until 2025-06-30).');
    expect(answerFromSubgraph([], [], [], false)).toBe(NO_ENTITY_ANSWER);
    // A node without a current relation is history, not a present fact (2026-12-01).
    expect(answerFromSubgraph([acme], [acme], [], false)).toBe('Acme (Company) — history only, no current relation; recorded with domain: acme.example. The graph holds no current relation of it.');
  });

  it('gives the model the question, the entities and the relations only', () => {
    const [system, user] = modelPrompt('Who works at Acme?', [acme], [acme, zoe], [now]);
    expect(system?.role).toBe('system');
    expect(user?.content).toContain('Question: Who works at Acme?');
    expect(user?.content).toContain('- Zoë (Person) works at Acme (Company)');
    expect(user?.content).not.toContain('nested');
  });

  it('reads the names a question writes, its lone words and its weak words', () => {
    const q = readQuestion('Which people work at Acme GmbH, Data Inc and Work.com?');
    const weak = (t: string) => q.phrases.find((p) => p.text === t)?.weak;
    // An ordinary word alone is weak, whatever its case; the domain as written is not.
    expect([weak('people'), weak('work'), weak('Data'), weak('Work'), weak('Work.com'), weak('Acme'), weak('Data Inc')]).toEqual([true, true, true, true, false, false, false]);
    expect(q.names.map((n) => n.text)).toEqual(['Acme GmbH', 'Data Inc', 'Work.com']);
    // A lone word may be a first name or a surname; a word beside another name word is part of a full name.
    expect(readQuestion('Tell me about Sarah').parts.map((p) => p.text)).toEqual(['Sarah']);
    expect(readQuestion('Where does Tom Ford work?').parts).toEqual([]);
    expect(readQuestion('Where does Tom Ford work?').names.map((n) => n.text)).toEqual(['Tom Ford']);
    // Honorifics name no one, and are not part of the name the question writes.
    const dr = readQuestion("Who is Dr. Sarah O'Connor?");
    expect(dr.phrases.map((p) => p.text)).toEqual(expect.arrayContaining(["Sarah O'Connor", "Dr. Sarah O'Connor"]));
    expect(dr.phrases.map((p) => p.text)).not.toContain('Dr');
    expect(dr.names.map((n) => n.text)).toEqual(["Sarah O'Connor"]);
    expect(readQuestion('Is Prof Smith in?').parts.map((p) => p.text)).toEqual(['Smith']);
    // Question words and roles are no names.
    expect(readQuestion('Tell me: Who is the CEO? List them').names).toEqual([]);
    expect(readQuestion('What does IBM do with Windows 11?').names.map((n) => n.text)).toEqual(['IBM', 'Windows 11']);
    // One capitalised word: a name inside an English sentence, or when it looks like one in any language; not the
    // first word of a sentence, nor the nouns German capitalises.
    expect(readQuestion('Does Microsoft have an office in Berlin?').names.map((n) => n.text)).toEqual(['Microsoft', 'Berlin']);
    expect(readQuestion('Summarize everything. Microsoft has offices where?').names).toEqual([]);
    expect(readQuestion('Wo ist das Büro von Acme?').names).toEqual([]);
    expect(readQuestion('Wo ist das Büro von BigCo und Hans Müller?').names.map((n) => n.text)).toEqual(['BigCo', 'Hans Müller']);
  });

  it('reads a question written without spaces word by word (Chinese, Japanese, Thai)', () => {
    // However the platform's segmenter cuts them, the name is a run of its words, and a run it cut is also read spaced.
    expect(readQuestion('谁在腾讯工作？').phrases.map((p) => p.text)).toContain('腾讯');
    expect(readQuestion('トヨタで働いているのは誰ですか').phrases.map((p) => p.text)).toContain('トヨタ');
    const lei = readQuestion('李雷是谁').phrases.map((p) => p.text);
    expect(lei).toContain('李雷');
    expect(readQuestion('Who is 李 雷?').phrases.map((p) => p.text)).toContain('李 雷');
  });

  it('reads plurals in the singular too, and e-mail addresses and profile URLs whole', () => {
    expect(singularForms('engineers')).toEqual(['engineer']);
    expect(singularForms('Companies')).toEqual(['Company']);
    // An ordinary word is not read in the singular: "works" is no "work".
    expect(readQuestion('Who works at Acme?').phrases.map((p) => p.text)).not.toContain('work');
    expect(singularForms('branches')).toEqual(['branch', 'branche']);
    expect([singularForms('boss'), singularForms('status'), singularForms('bus'), singularForms('its')]).toEqual([[], [], [], []]);
    const plural = readQuestion('How many software engineers are there?').phrases.map((p) => p.text);
    expect(plural).toEqual(expect.arrayContaining(['engineers', 'engineer', 'software engineer']));
    const q = readQuestion('Who is jose.maria.garcia.lopez@initech.example, or https://www.linkedin.com/in/jose-maria-garcia-lopez-1a2b/?trk=x.');
    const texts = q.phrases.map((p) => p.text);
    // Longer than six words, so no run of words is either.
    expect(texts).toEqual(expect.arrayContaining(['jose.maria.garcia.lopez@initech.example', 'linkedin.com/in/jose-maria-garcia-lopez-1a2b']));
    expect(q.phrases.find((p) => p.text === 'jose.maria.garcia.lopez@initech.example')?.spans).toEqual([{ first: 2, last: 7 }]);
  });

  it('links the longest matches, never a phrase inside a longer one that matched, and says what it left out', () => {
    const q = readQuestion('Is anna.mueller@acme.de at Acme or Globex Corp, and who is Sarah, or Kim, with Microsoft?');
    const at = (t: string) => q.phrases.findIndex((p) => p.text === t);
    const part = (t: string) => q.parts.findIndex((p) => p.text === t);
    const keys: KeyMatch[] = [
      { node_id: '5', match_key: 'anna mueller acme de', phrases: [at('anna.mueller@acme.de')] },
      // acme.de lies inside the e-mail address that matched: it links nothing itself.
      { node_id: '1', match_key: 'acme de', phrases: [at('acme.de')] },
      // "acme" (inside the address) and "Acme" (alone, inside nothing) fold alike: Acme links by the second.
      { node_id: '1', match_key: 'acme', phrases: [at('acme'), at('Acme')] },
      { node_id: '9', match_key: 'globex corp', phrases: [at('Globex Corp')] },
      { node_id: '10', match_key: 'globex', phrases: [at('Globex')] },
    ];
    const parts = [
      { node_id: '20', part: part('Sarah') },
      { node_id: '21', part: part('Kim') },
      { node_id: '22', part: part('Kim') },
    ];
    const linking = rankLinks(q, keys, parts, 3);
    expect(linking.linked).toEqual(['5', '9', '1']);
    expect(linking.unlooked).toEqual(['Sarah']);
    expect(linking.ambiguous).toEqual(['Kim']);
    expect(linking.missing).toEqual(['Microsoft']);
    expect(rankLinks(q, keys, parts, 10).linked).toEqual(['5', '9', '1', '20']);
  });

  it('tells a node without current relations as history, and no one position as a person\'s when they hold several', () => {
    const jose: SubgraphNode = { id: '3', label: 'Person', name: 'José García', properties: { name: 'José García', email: 'jose@initech.example', title: 'Advisor', company: 'Initech', company_domain: 'initech.example' } };
    const globex: SubgraphNode = { id: '4', label: 'Company', name: 'Globex', properties: { name: 'Globex' } };
    const edge = (id: string, from: string, to: string, label: string, validTo: string | null = null): SubgraphEdge => ({ id, from, to, label, valid_from: '2026-01-01T00:00:00.000Z', valid_to: validTo });
    expect(propertyLine(jose, { current: true, positions: 2 })).toBe('José García (Person) — email: jose@initech.example; positions at 2 companies');
    expect(propertyLine(jose, { current: true, positions: 1 })).toBe('José García (Person) — email: jose@initech.example; title: Advisor; company: Initech; company_domain: initech.example');
    expect(propertyLine(jose, { current: false, positions: 0 })).toBe('José García (Person) — history only, no current relation; recorded with email: jose@initech.example; title: Advisor; company: Initech; company_domain: initech.example');
    const both = answerFromSubgraph([jose], [jose, acme, globex], [edge('1', '3', '1', 'WORKS_AT'), edge('2', '3', '4', 'WORKS_AT')], false);
    expect(both).toMatch(/^José García \(Person\) — email: jose@initech\.example; positions at 2 companies\. José García \(Person\) works at Acme/);
    // A closed relation only: history, in a question about the past too.
    const gone = answerFromSubgraph([jose], [jose, acme], [edge('1', '3', '1', 'WORKS_AT', '2026-06-01T00:00:00.000Z')], true);
    expect(gone).toMatch(/^José García \(Person\) — history only, no current relation; recorded with /);
  });

  it('tells the facts between entities before the rows that describe them', () => {
    const report: SubgraphNode = { id: '7', label: 'ScanReport', name: 'people.csv row 2', properties: {} };
    const describes: SubgraphEdge = { id: '12', from: '7', to: '1', label: 'DESCRIBES', valid_from: '2026-01-01T00:00:00.000Z', valid_to: null };
    expect(tellingOrder([describes, then, now]).map((e) => e.id)).toEqual(['10', '11', '12']);
    const answer = answerFromSubgraph([acme], [acme, zoe, report], [describes, now], false);
    expect(answer.indexOf('works at')).toBeLessThan(answer.indexOf('describes'));
  });

  it('says when the walk\'s bounds cut the neighbourhood, with the true count of each relation', () => {
    const people = Array.from({ length: 30 }, (_, i): SubgraphNode => ({ id: String(100 + i), label: 'Person', name: `P${i}`, properties: {} }));
    const works = people.map((p, i): SubgraphEdge => ({ id: String(1000 + i), from: p.id, to: '1', label: 'WORKS_AT', valid_from: '2026-01-01T00:00:00.000Z', valid_to: null }));
    const counts = [
      { node: '1', label: 'DESCRIBES', count: 300, atLeast: false },
      { node: '1', label: 'WORKS_AT', count: 300, atLeast: false },
      { node: '1', label: 'LOCATED_IN', count: 1, atLeast: false },
    ];
    expect(boundsNote([acme], works.slice(0, 20), counts)).toBe(
      'This is only part of what the graph holds (one answer reads at most 50 entities and 100 relations): Acme (Company) has 300 current "works at" relations (20 stated here), 1 current "located in" relation (none stated here), 300 current "describes" relations (none stated here).',
    );
    expect(boundsNote([acme], works.slice(0, 1), [{ node: '1', label: 'WORKS_AT', count: 1, atLeast: false }])).toBeNull();
    expect(boundsNote([acme], [], [{ node: '1', label: 'WORKS_AT', count: 100_000, atLeast: true }])).toContain('at least 100000 current "works at" relations');
    const answer = answerFromSubgraph([acme], [acme, ...people], works, false, { counts });
    expect(answer).toContain('(and 10 more relations). This is only part of what the graph holds');
    expect(answer).toContain('has 300 current "works at" relations (20 stated here)');
    // The model is told the same, against every relation it is given.
    expect(modelPrompt('Who works at Acme?', [acme], [acme, ...people], works, { counts })[1]?.content).toContain('300 current "works at" relations (30 stated here)');
  });

  it('says which names of the question the graph does not hold, and which it did not look at', () => {
    expect(noEntityAnswer({ missing: ['Mars'] })).toBe(`${NO_ENTITY_ANSWER} Not in this graph: Mars.`);
    const answer = answerFromSubgraph([acme], [acme, zoe], [now], false, { missing: ['Microsoft'], unlooked: ['Engineer'], ambiguous: ['Kim'] });
    expect(answer).toBe(
      'Not in this graph: Microsoft. Acme (Company) — domain: acme.example. Zoë (Person) works at Acme (Company). "Kim" could be several people of this graph; name one in full. ' +
        'The question names more entities than one answer looks at (10); not looked at: entities named "Engineer".',
    );
  });
});

