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
