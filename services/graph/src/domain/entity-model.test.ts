import { boundedKey, entityKey, foldName, kindOfLabel, labelOfKind, normalizeDomain, questionPhrases, resolutionKey } from './entity-model';

describe('the shared entity model', () => {
  it('maps memory entity kinds to node labels and back', () => {
    expect(labelOfKind('organization')).toBe('Company');
    expect(labelOfKind('person')).toBe('Person');
    expect(labelOfKind('place')).toBe('Location');
    expect(labelOfKind('concept')).toBeNull();
    expect(labelOfKind('anything else')).toBeNull();
    expect(kindOfLabel('Company')).toBe('organization');
    expect(kindOfLabel('Position')).toBeNull();
  });

  it('keeps the memory entity key of the first migration', () => {
    expect(entityKey('The Acme  Corp’s')).toBe('acme corp');
    expect(entityKey('Café')).toBe('café');
  });

  it('bounds a long key: its start and the SHA-256 of the whole, never splitting a character', () => {
    expect(boundedKey('name:acme')).toBe('name:acme');
    const long = `name:${'🌊'.repeat(600)}x`;
    const bounded = boundedKey(long);
    expect(bounded).toMatch(/^name:(🌊){395}#sha256:[0-9a-f]{64}$/u);
    expect(boundedKey(long)).toBe(bounded);
    expect(boundedKey(`${long}y`)).not.toBe(bounded);
    expect(resolutionKey('Location', { name: 'b'.repeat(10_000) })).toHaveLength(400 + '#sha256:'.length + 64);
  });

  it('keeps apart names that differ by a mark of another script than an accent', () => {
    expect(foldName('कमल')).not.toBe(foldName('कमला'));
    expect(foldName('ガス太郎')).not.toBe(foldName('カス太郎'));
    expect(foldName('Zoë Müller')).toBe(foldName('Zoe Muller'));
    // A question's words keep their marks too: the name is one word, as written.
    expect(questionPhrases('कमला कौन है')).toContain('कमला');
  });

  it('folds names without case, accents or punctuation', () => {
    expect(foldName('Café Nöel GmbH')).toBe('cafe noel gmbh');
    expect(foldName('The CAFÉ-Noël GmbH')).toBe('cafe noel gmbh');
    expect(foldName('Ｚürich')).toBe('zurich');
    expect(foldName("Acme's")).toBe('acme');
    expect(foldName('   ')).toBe('');
  });

  it('resolves a company by its domain, a person by profile or name with company', () => {
    expect(resolutionKey('Company', { name: 'Acme', website: 'https://www.Acme.com/about' })).toBe('domain:acme.com');
    expect(resolutionKey('Company', { name: 'Ácme Inc' })).toBe('name:acme inc');
    expect(resolutionKey('Person', { name: 'Ada', linkedin_url: 'https://www.linkedin.com/in/Ada/?x=1' })).toBe('profile:linkedin.com/in/ada');
    expect(resolutionKey('Person', { name: 'Ada Brook', company: 'Acme' })).toBe('name:ada brook|acme');
    expect(resolutionKey('Person', { name: 'Ada Brook', company_domain: 'acme.com' })).toBe('name:ada brook|acme.com');
    expect(resolutionKey('Position', { title: 'CTO', company: 'Acme' })).toBe('title:cto|acme');
    expect(resolutionKey('Location', { name: 'Zürich' })).toBe('name:zurich');
    expect(resolutionKey('ScanReport', { url: 'https://scan.example/R1' })).toBe('ref:https://scan.example/r1');
    expect(resolutionKey('ScanReport', { id: 'job:7', url: 'https://acme.example' })).toBe('ref:job:7');
    expect(resolutionKey('Person', {})).toBeNull();
  });

  it('reads the phrases of a question that may name a node', () => {
    const phrases = questionPhrases('Who works at ÁCME Corp, and what does acme.com sell?');
    expect(phrases).toEqual(expect.arrayContaining(['ÁCME Corp', 'ÁCME', 'acme.com', 'acme', 'works']));
    expect(phrases).not.toContain('Who');
    // A name may start or end with a stop word, or be made of stop words joined without a space.
    for (const [q, name] of [
      ['What about AT&T?', 'AT&T'],
      ['Tell me about Will Smith Holdings', 'Will Smith Holdings'],
      ['Where is On Holding based?', 'On Holding'],
      ['Who founded No Name Ltd', 'No Name Ltd'],
      ['What is Acme™ worth?', 'AcmeTM'],
    ] as const) expect([q, questionPhrases(q)]).toEqual([q, expect.arrayContaining([name])]);
    expect(questionPhrases('What about AT&T?')).not.toContain('about');
    expect(questionPhrases('Where is Zoë O’Brien-Smith?')).toContain('Zoë O’Brien-Smith');
    expect(questionPhrases('Who backs Plan B and Company 5?')).toEqual(expect.arrayContaining(['Plan B', 'Company 5']));
    expect(normalizeDomain('not a domain')).toBe('');
    expect(questionPhrases('who is it?')).toEqual([]);
    expect(questionPhrases(Array.from({ length: 1000 }, (_, i) => `w${i}`).join(' '), 50)).toHaveLength(50);
    // A question of chat's longest length: a name at its end is still read in full.
    const pair = (i: number) => String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26));
    const long = `${Array.from({ length: 640 }, (_, i) => pair(i)).join(' ')} Northwind Trading Company Limited`;
    expect(long.length).toBeLessThanOrEqual(2_000);
    expect(questionPhrases(long)).toContain('Northwind Trading Company Limited');
  });
});
