import { extractEntities, extractFacts, findContradictions, normalizeValue, type StoredFact } from './entities';

describe('entity extraction', () => {
  it('finds multi-word names and classifies organisations, people and places', () => {
    const text =
      'Acme Corp signed a contract with Globex. The deal was negotiated by Dr. Jane Smith in Berlin. ' +
      'Acme Corp will deliver in March. NASA approved it.';
    const entities = extractEntities(text);
    const byKey = new Map(entities.map((e) => [e.key, e]));
    expect(byKey.get('acme corp')).toMatchObject({ kind: 'organization', mentions: 2 });
    expect(byKey.get('jane smith')?.kind).toBe('person');
    expect(byKey.get('berlin')?.kind).toBe('place');
    expect(byKey.has('globex')).toBe(true);
    expect(byKey.get('nasa')?.kind).toBe('organization');
    expect(byKey.has('the')).toBe(false);
    expect(byKey.has('march')).toBe(false);
  });

  it('never joins a name across a Markdown heading; a single line break in a paragraph reads as a space (wrapped text)', () => {
    const keys = extractEntities('# Team Overview\nAlice Walker leads research at Contoso Ltd.\n\n## Notes\r\nPeter Parker works at the Daily Bugle with Mary\nJane Watson.').map((e) => e.key);
    expect(keys).toEqual(expect.arrayContaining(['team overview', 'alice walker', 'contoso ltd', 'peter parker', 'mary jane watson']));
    expect(keys.filter((k) => /overview alice|notes peter/.test(k))).toEqual([]);
  });

  it('classes people without a title by a role before the name, or an apposition or "who" after it', () => {
    const text =
      'The launch was approved by Maria Gonzalez after a review. Tomas Berg, the CTO of Initech, objected. ' +
      'Our new supplier is Northwind. Priya Natarajan wrote the plan. A week later Priya Natarajan, who runs finance, signed it. ' +
      'The office was opened by founder Kenji Watanabe. Globex is led by Hank Scorpio. Project Falcon, the new platform, ships soon.';
    const kinds = new Map(extractEntities(text).map((e) => [e.key, e.kind]));
    expect(Object.fromEntries(['maria gonzalez', 'tomas berg', 'priya natarajan', 'kenji watanabe', 'hank scorpio', 'northwind', 'project falcon'].map((k) => [k, kinds.get(k)]))).toEqual({
      'maria gonzalez': 'person',
      'tomas berg': 'person',
      // The first mention said nothing; the second, with "who", does.
      'priya natarajan': 'person',
      'kenji watanabe': 'person',
      'hank scorpio': 'person',
      northwind: 'concept',
      'project falcon': 'concept',
    });
  });

  it('never makes a person of a company that a role or "by" stands before: one word, all capitals, or a company suffix', () => {
    const text =
      'The Series A round was led by Sequoia Capital. The project was led by IBM and finished in March. ' +
      'The deal was signed by Siemens last week. We hired the consultant McKinsey for the review. The fund is run by BlackRock.';
    const kinds = new Map(extractEntities(text).map((e) => [e.key, e.kind]));
    expect(Object.fromEntries(['sequoia capital', 'ibm', 'siemens', 'mckinsey', 'blackrock'].map((k) => [k, kinds.get(k)]))).toEqual({
      'sequoia capital': 'organization',
      ibm: 'organization',
      siemens: 'concept',
      mckinsey: 'concept',
      blackrock: 'concept',
    });
  });

  it('ignores sentence openers that are not names', () => {
    const entities = extractEntities('Refunds take five days. Shipping is free. Invoices are monthly.');
    expect(entities).toEqual([]);
  });

  it('never turns a masked value into an entity', () => {
    expect(extractEntities('Write to [REDACTED:email] today.').map((e) => e.key)).toEqual([]);
  });
});

/**
 * Business prose as memory documents and connector pages hold it: every row of the 2026-12-01 quality review's
 * table (roles and honorifics glued into names, "and"/"of" gluing two names, "at" read as a place) and the cases
 * that must keep working. `has`: entities found with their kind; `not`: names that must not be entities (a key).
 */
const PROSE: Array<{ text: string; has: Record<string, string>; not?: string[] }> = [
  // The review's rows.
  { text: 'Yesterday our CEO Jane Doe spoke at the town hall.', has: { 'Jane Doe': 'person' }, not: ['ceo jane doe', 'ceo', 'yesterday'] },
  { text: 'According to the CEO Jane Doe, revenue grew by a third.', has: { 'Jane Doe': 'person' }, not: ['ceo jane doe', 'ceo', 'according'] },
  {
    text: 'The contract was drafted by Dr. Maria Schmidt, the CTO of Nordwind Logistics GmbH.',
    has: { 'Maria Schmidt': 'person', 'Nordwind Logistics GmbH': 'organization' },
    not: ['dr', 'cto', 'cto of nordwind logistics gmbh'],
  },
  {
    text: 'We hosted Mr. Liu Yang of Tencent Holdings and Prof. Dr. Hans-Peter Müller last week.',
    has: { 'Liu Yang': 'person', 'Tencent Holdings': 'organization', 'Hans-Peter Müller': 'person' },
    not: ['mr', 'prof', 'dr', 'liu yang of tencent holdings', 'tencent holdings and prof'],
  },
  { text: 'The analysts compared AT&T and Johnson & Johnson on margins.', has: { 'AT&T': 'concept', 'Johnson & Johnson': 'concept' }, not: ['at&t and johnson & johnson'] },
  { text: 'The panel compared Microsoft and Google on cloud pricing.', has: { Microsoft: 'concept', Google: 'concept' }, not: ['microsoft and google'] },
  { text: 'The review was run by Peter Novak and Ana Lima in the spring.', has: { 'Peter Novak': 'person', 'Ana Lima': 'person' }, not: ['peter novak and ana lima'] },
  { text: 'Containers move between Rotterdam and New York every week.', has: { Rotterdam: 'concept', 'New York': 'concept' }, not: ['rotterdam and new york'] },
  { text: 'Our offices in São Paulo and Zürich opened this year.', has: { 'São Paulo': 'place', Zürich: 'concept' }, not: ['são paulo and zürich'] },
  { text: 'Bob Martin, the CFO, presented the budget.', has: { 'Bob Martin': 'person' }, not: ['cfo'] },
  { text: 'Tom Becker previously worked at Initech in Austin.', has: { 'Tom Becker': 'person', Initech: 'organization', Austin: 'place' } },
  { text: 'Apple, Amazon and Netflix were discussed.', has: { Apple: 'concept', Amazon: 'concept', Netflix: 'concept' }, not: ['amazon and netflix'] },
  { text: 'The board met. Alice Walker (Chair) opened the meeting.', has: { 'Alice Walker': 'person' }, not: ['chair'] },
  {
    text: 'Sarah Connor (VP Engineering at Cyberdyne Systems) joined the call.',
    has: { 'Sarah Connor': 'person', 'Cyberdyne Systems': 'organization' },
    not: ['vp', 'vp engineering', 'engineering', 'vp engineering at cyberdyne systems'],
  },
  { text: 'Jonathan Price from Bluefin Capital joined the call.', has: { 'Jonathan Price': 'person', 'Bluefin Capital': 'organization' } },
  // Roles in other places and shapes: cues, never names.
  {
    text: 'Microsoft CEO Satya Nadella met Chief Financial Officer Ken Adams and Senior Vice President Anna Weber.',
    has: { Microsoft: 'organization', 'Satya Nadella': 'person', 'Ken Adams': 'person', 'Anna Weber': 'person' },
    not: ['microsoft ceo satya nadella', 'chief financial officer ken adams', 'senior vice president anna weber', 'ceo'],
  },
  { text: "Acme's CEO Jane Doe met Jane Roe, CEO of Initech, at the fair.", has: { Acme: 'organization', 'Jane Doe': 'person', 'Jane Roe': 'person', Initech: 'organization' } },
  { text: 'The Head of Sales, Maria Lopez, reports to the COO. Our CFOs met the VP.', has: { 'Maria Lopez': 'person' }, not: ['head of sales', 'sales', 'coo', 'cfos', 'vp'] },
  { text: 'Founder and CEO Jane Doe spoke. The Director thanked the Chair.', has: { 'Jane Doe': 'person' }, not: ['founder', 'director', 'chair'] },
  { text: 'Minister of Finance Christian Lindner met the Mayor of London.', has: { 'Christian Lindner': 'person', London: 'place' }, not: ['minister of finance christian lindner', 'mayor of london', 'finance'] },
  // Honorifics without a stop and alone.
  { text: 'Sir Alex Ferguson and Dame Judi Dench were thanked by Dr. Smith.', has: { 'Alex Ferguson': 'person', 'Judi Dench': 'person', Smith: 'person' }, not: ['sir alex ferguson', 'dame judi dench', 'dr'] },
  // All capitals: an organisation by context only.
  { text: 'IBM announced a partnership. Kim Park joined IBM in 2020.', has: { IBM: 'organization', 'Kim Park': 'person' } },
  { text: 'The KPI improved after HR agreed to the plan.', has: { KPI: 'concept', HR: 'concept' } },
  // What must keep working: suffixes, "&" and "of" inside known name forms, places after "in", people by context.
  {
    text: 'Procter & Gamble hired Baker & McKenzie LLP. Nordwind Logistics & Partners GmbH replied.',
    has: { 'Procter & Gamble': 'concept', 'Baker & McKenzie LLP': 'organization', 'Nordwind Logistics & Partners GmbH': 'organization' },
  },
  {
    text: 'The Bank of America and the University of Oxford signed with the Royal Bank of Canada near the Gulf of Mexico.',
    has: { 'Bank of America': 'organization', 'University of Oxford': 'organization', 'Royal Bank of Canada': 'organization', 'Gulf of Mexico': 'place' },
  },
  { text: 'Acme Corp opened an office in Berlin. Ursula von der Leyen, who chairs the commission, visited.', has: { 'Acme Corp': 'organization', Berlin: 'place', 'Ursula von der Leyen': 'person' } },
  { text: 'The delegation landed at Heathrow Airport and met Kim Lee, a senior engineer at Hooli.', has: { 'Heathrow Airport': 'place', 'Kim Lee': 'person', Hooli: 'organization' } },
  { text: 'Separately, Globex and Hooli merged. Still, the deal closed.', has: { Globex: 'concept', Hooli: 'concept' }, not: ['separately', 'still'] },
];

describe('entity extraction from business prose', () => {
  it.each(PROSE)('$text', ({ text, has, not }) => {
    const entities = extractEntities(text);
    const kinds = Object.fromEntries(entities.map((e) => [e.name, e.kind]));
    expect(Object.fromEntries(Object.keys(has).map((n) => [n, kinds[n]]))).toEqual(has);
    const keys = entities.map((e) => e.key);
    expect((not ?? []).filter((k) => keys.includes(k))).toEqual([]);
  });

  it('reads facts of the name a run holds, not of the role or honorific around it', () => {
    expect(extractFacts('CEO Jane Doe is based in Lisbon.', 0).map((f) => [f.entity_name, f.value])).toEqual([['Jane Doe', 'Lisbon']]);
    expect(extractFacts('Mr Liu Yang of Tencent Holdings is based in Shenzhen.', 0).map((f) => [f.entity_name, f.value])).toEqual([['Liu Yang', 'Shenzhen']]);
    expect(extractFacts('The Bank of England was founded in 1694.', 0).map((f) => [f.entity_name, f.value])).toEqual([['Bank of England', '1694']]);
  });
});

describe('fact extraction', () => {
  it('reads location, founding year, leader, price and counts', () => {
    const facts = extractFacts(
      'Acme Corp is headquartered in Berlin. Acme Corp was founded in 1999. Globex is led by Hank Scorpio. ' +
        'The Pro Plan costs $49 per month. Initech has 250 employees. The CEO of Umbrella is Albert Wesker.',
      0,
    );
    const simple = facts.map((f) => [f.entity_key, f.attribute, f.value_norm]);
    expect(simple).toEqual([
      ['acme corp', 'location', 'berlin'],
      ['acme corp', 'founded', '1999'],
      ['globex', 'leader', 'hank scorpio'],
      ['pro plan', 'price', '49 per month'],
      ['initech', 'employe', '250'],
      ['umbrella', 'ceo', 'albert wesker'],
    ]);
  });

  it('stops a value before qualifiers', () => {
    expect(extractFacts('Acme Corp is headquartered in Munich according to the 2024 filing.', 0).map((f) => f.value)).toEqual(['Munich']);
    expect(extractFacts('Acme Corp is based in Oslo since 2021.', 0).map((f) => f.value)).toEqual(['Oslo']);
  });

  it('skips sentences with masked values', () => {
    expect(extractFacts("Acme Corp's password is [REDACTED:secret_assignment].", 0)).toEqual([]);
  });

  it('stays linear on text built to make the name pattern backtrack: runs of all-caps words, one long token', () => {
    // Each of these took from minutes to days before: 2^n ways to split an all-caps run, every start position of a
    // long token tried again. Now each is read in a few milliseconds; the bound leaves room for a slow machine.
    const inputs = [
      'ACME '.repeat(60),
      `${'R2D2 '.repeat(40)}is based in`,
      '4'.repeat(200_000),
      'A'.repeat(200_000),
      `${'Acme '.repeat(30)}and ${'Beta Gamma '.repeat(30)}`,
      // Runs read word by word for roles, honorifics and joiners: each word is looked at a bounded number of times.
      'CEO '.repeat(25_000),
      'Dr Mr '.repeat(16_000),
      `${'Bank of '.repeat(12_000)}America`,
      `${'Acme & '.repeat(14_000)}Corp`,
      `${'Senior Sales Director '.repeat(5_000)}Jane Doe`,
      `${'Anna de la '.repeat(9_000)}Cruz`,
      `${'Jane Doe, the CEO, met Bob Martin (Chair) at Initech and '.repeat(1_800)}Acme.`,
    ];
    for (const text of inputs) {
      const started = Date.now();
      extractFacts(text, 0);
      extractEntities(text);
      expect({ text: text.slice(0, 30), ms: Date.now() - started < 2_000 }).toEqual({ text: text.slice(0, 30), ms: true });
    }
    // Names still read as before: all-caps words, digit-led codes and joined runs.
    expect(extractFacts('ACME Corp is headquartered in Berlin.', 0)).toEqual([expect.objectContaining({ entity_name: 'ACME Corp', value: 'Berlin' })]);
    expect(extractFacts('3M was founded in 1902.', 0)).toEqual([expect.objectContaining({ entity_name: '3M', value: '1902' })]);
    expect(extractEntities('We met IBM and the Bank of England in Paris.').map((e) => e.name).sort()).toEqual(['Bank of England', 'IBM', 'Paris']);
  });

  it('normalises numbers for comparison', () => {
    expect(normalizeValue('$1,200.00')).toBe('1200');
    expect(normalizeValue('1200')).toBe('1200');
  });
});

describe('contradictions', () => {
  const fact = (doc: string, value: string): StoredFact => ({
    doc_id: doc,
    entity_key: 'acme corp',
    entity_name: 'Acme Corp',
    attribute: 'location',
    value,
    value_norm: normalizeValue(value),
    sentence: `Acme Corp is headquartered in ${value}.`,
    chunk_ord: 0,
  });

  it('reports two documents that disagree', () => {
    const pairs = findContradictions([fact('d2', 'Munich')], [fact('d1', 'Berlin')]);
    expect(pairs).toHaveLength(1);
    expect(pairs[0]?.a.doc_id).toBe('d1');
    expect(pairs[0]?.b.value).toBe('Munich');
  });

  it('ignores agreement and a document disagreeing with itself', () => {
    expect(findContradictions([fact('d2', 'Berlin')], [fact('d1', 'berlin')])).toEqual([]);
    expect(findContradictions([fact('d1', 'Munich')], [fact('d1', 'Berlin')])).toEqual([]);
  });
});
