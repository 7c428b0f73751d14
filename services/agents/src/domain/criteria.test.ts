import {
  extractCriteriaByRules,
  interpretCriterion,
  parseFoundedValue,
  parseNumber,
  parseSizeValue,
  readPlaces,
  readRoleText,
  snakeCase,
  webQueryOf,
  type Criterion,
  type ExtractedCriteria,
  type SearchKind,
} from './criteria';

const NOW = new Date('2026-11-25T12:00:00Z');

function extract(prompt: string, kind: SearchKind = 'company'): ExtractedCriteria {
  return extractCriteriaByRules(prompt, kind, { now: NOW });
}

/** column_name → value of the criteria, for compact expectations. */
function values(result: ExtractedCriteria): Record<string, string> {
  return Object.fromEntries(result.criteria.map((c) => [c.column_name, c.value]));
}

function byColumn(result: ExtractedCriteria, column: string): Criterion {
  const c = result.criteria.find((x) => x.column_name === column);
  if (!c) throw new Error(`no ${column} criterion in ${JSON.stringify(values(result))}`);
  return c;
}

describe('extractCriteriaByRules: company prompts', () => {
  const cases: Array<[string, Record<string, string>, number | null]> = [
    ['Find 40 fintech companies in Berlin with 50-200 employees', { industry: 'Fintech', location: 'Berlin, Germany', employees: '50-200' }, 40],
    ['SaaS companies based in Germany founded after 2015', { industry: 'SaaS', location: 'Germany', founded: '2016 or later' }, null],
    ['German healthcare companies with more than 500 staff', { industry: 'Healthcare', location: 'Germany', employees: '501+' }, null],
    ['biotech firms in the DACH region founded since 2010', { industry: 'Biotech', location: 'DACH', founded: '2010 or later' }, null],
    ['e-commerce companies in Paris or Lyon', { industry: 'E-commerce', location: 'Paris, France or Lyon, France' }, null],
    ['List 25 logistics companies in the US with at least 1,000 employees', { industry: 'Logistics', location: 'United States', employees: '1000+' }, 25],
    ['top 100 cybersecurity vendors in Israel', { industry: 'Cybersecurity', location: 'Israel' }, 100],
    ['edtech companies in India with fewer than 50 employees', { industry: 'Education technology', location: 'India', employees: '1-49' }, null],
    ['insurtech companies in London with up to 200 employees', { industry: 'Insurtech', location: 'London, United Kingdom', employees: '1-200' }, null],
    ['Give me 15 Dutch proptech companies', { industry: 'Real estate and proptech', location: 'Netherlands' }, 15],
    ['climate tech companies in the Nordics founded between 2012 and 2018', { industry: 'Climate tech', location: 'Nordics', founded: '2012-2018' }, null],
    ['AI companies in San Francisco founded in 2020', { industry: 'Artificial intelligence', location: 'San Francisco, United States', founded: '2020' }, null],
    ['manufacturing companies in Bavaria founded before 2000', { industry: 'Manufacturing', location: 'Bavaria, Germany', founded: '1999 or earlier' }, null],
    ['companies in München with 10k+ employees', { location: 'Munich, Germany', employees: '10000+' }, null],
    ['robotics companies in Zürich founded in the 1990s', { industry: 'Robotics', location: 'Zurich, Switzerland', founded: '1990-1999' }, null],
    ['gaming studios in Stockholm founded in the last 5 years', { industry: 'Gaming', location: 'Stockholm, Sweden', founded: '2021 or later' }, null],
    ['pharma companies with 100 to 500 employees in Switzerland', { industry: 'Pharmaceuticals', location: 'Switzerland', employees: '100-500' }, null],
    ['fintech or insurtech companies in Singapore', { industry: 'Fintech or Insurtech', location: 'Singapore' }, null],
    ['healthtech companies in São Paulo', { industry: 'Healthcare', location: 'São Paulo, Brazil' }, null],
    ['30 companies in Tel Aviv building developer tools', { industry: 'Developer tools', location: 'Tel Aviv, Israel' }, 30],
    ['companies headquartered in Toronto with between 50 and 250 employees', { location: 'Toronto, Canada', employees: '50-250' }, null],
    ['French marketing agencies', { industry: 'Marketing and advertising', location: 'France' }, null],
    ['online retailers in Spain', { industry: 'E-commerce', location: 'Spain' }, null],
    ['Find me B2B SaaS companies in Europe', { industry: 'SaaS', location: 'Europe', keywords: 'b2b' }, null],
    ['Top 50 AI startups in the Bay Area', { industry: 'Artificial intelligence', location: 'California, United States', employees: 'Startup' }, 50],
    ['hospitals in Chicago', { industry: 'Healthcare', location: 'Chicago, United States' }, null],
    ['find 20 healthcare providers in the UK with more than 1000 employees and their phone numbers', { industry: 'Healthcare', location: 'United Kingdom', employees: '1001+', phone: '' }, 20],
    ['fintech companies in Berlin, Munich or Hamburg with 10-50 employees founded between 2015 and 2020', { industry: 'Fintech', location: 'Berlin, Germany or Munich, Germany or Hamburg, Germany', employees: '10-50', founded: '2015-2020' }, null],
  ];
  it.each(cases)('%s', (prompt, expected, count) => {
    const result = extract(prompt);
    expect(values(result)).toEqual(expected);
    expect(result.count).toBe(count);
    expect(result.category).toBe('company_search');
  });

  it('reads vague size words as soft size bands, explicit numbers as hard filters', () => {
    expect(byColumn(extract('fintech startups in Berlin'), 'employees')).toMatchObject({ value: 'Startup', type: 'soft_filter', columnType: 'badge' });
    expect(byColumn(extract('SMBs in France'), 'employees')).toMatchObject({ value: 'SMB', type: 'soft_filter' });
    expect(byColumn(extract('small and medium-sized businesses in Austria'), 'employees')).toMatchObject({ value: 'SMB' });
    expect(byColumn(extract('enterprise companies in Japan'), 'employees')).toMatchObject({ value: 'Enterprise' });
    expect(byColumn(extract('mid-size logistics companies'), 'employees')).toMatchObject({ value: 'Mid-size' });
    expect(byColumn(extract('scale-ups in Amsterdam'), 'employees')).toMatchObject({ value: 'Scale-up' });
    expect(byColumn(extract('fintech companies with 50-200 employees'), 'employees')).toMatchObject({ value: '50-200', type: 'hard_filter', columnType: 'number' });
    // "enterprise software" is a market, not a size.
    const software = extract('enterprise software vendors in London');
    expect(values(software)).toEqual({ industry: 'Software', location: 'London, United Kingdom' });
  });

  it('reads the count only where a number asks for rows', () => {
    expect(extract('find 40 fintech companies').count).toBe(40);
    expect(extract('Build me a list of 60 SaaS companies').count).toBe(60);
    expect(extract('I need 12 biotech companies in Basel').count).toBe(12);
    expect(extract('fintech companies with 50 employees').count).toBeNull();
    expect(extract('companies founded in 2015').count).toBeNull();
    expect(extract('find fintech companies with 50-200 employees').count).toBeNull();
    expect(extract('find 2015 companies').count).toBeNull();
    expect(extract('find 99999 companies').count).toBeNull();
    expect(extract('fintech companies').count).toBeNull();
  });

  it('leaves the words no rule read as soft keywords', () => {
    const result = extract('fintech companies in Berlin building mortgage comparison APIs');
    expect(result.keywords).toEqual(['mortgage', 'comparison', 'apis']);
    expect(byColumn(result, 'keywords')).toMatchObject({ value: 'mortgage, comparison, apis', type: 'soft_filter' });
    const bare = extract('companies doing quantum computing');
    expect(bare.keywords).toEqual(['quantum', 'computing']);
    expect(bare.title).toBe('Companies: quantum, computing');
  });

  it('turns requested columns into enrichment criteria', () => {
    const result = extract('biotech companies in Boston with their websites and CEOs');
    expect(result.criteria.filter((c) => c.type === 'enrichment').map((c) => c.column_name)).toEqual(['website', 'ceo']);
    expect(byColumn(result, 'website')).toMatchObject({ value: '', columnType: 'url' });
    expect(values(result).industry).toBe('Biotech');
  });

  it('gives every criterion spec 3 fields with widths that fit their column type', () => {
    const result = extract('Find 40 fintech companies in Berlin with 50-200 employees founded after 2015, with their emails');
    for (const c of result.criteria) {
      expect(Object.keys(c).sort()).toEqual(['columnType', 'column_name', 'description', 'maxWidth', 'minWidth', 'name', 'type', 'value', 'width']);
      expect(c.column_name).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(['hard_filter', 'soft_filter', 'enrichment']).toContain(c.type);
      expect(c.minWidth).toBeLessThanOrEqual(c.width);
      expect(c.width).toBeLessThanOrEqual(c.maxWidth);
      expect(c.description.length).toBeGreaterThan(0);
    }
    expect(byColumn(result, 'location').description).toContain('(DE)');
    expect(result.title).toBe('Fintech companies in Berlin with 50-200 employees, founded in 2016 or later');
    expect(result.description).toContain('industry: Fintech');
    expect(result.industry).toBe('Fintech');
  });

  it('is deterministic and bounded', () => {
    const prompt = 'fintech companies in Berlin '.repeat(1000);
    expect(extract(prompt)).toEqual(extract(prompt));
    expect(extract('')).toMatchObject({ criteria: [], count: null, keywords: [], title: 'Companies' });
    expect(extract('the of and').criteria).toEqual([]);
  });

  it('reads pathological prompts in bounded time', () => {
    for (const prompt of ['1'.repeat(10_000), '1,000'.repeat(2_000), 'with their emails and '.repeat(500), 'heads of '.repeat(1_000), `${'9'.repeat(3_990)} employees`]) {
      const started = performance.now();
      extract(prompt, 'person');
      extract(prompt, 'company');
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });

  it('does not read the pronoun "us" or "it" as a country', () => {
    expect(values(extract('find us some fintech companies'))).toEqual({ industry: 'Fintech' });
    expect(values(extract('companies in the US'))).toEqual({ location: 'United States' });
  });
});

describe('extractCriteriaByRules: people prompts', () => {
  const cases: Array<[string, Record<string, string>, number | null]> = [
    ['CTOs at fintech startups in London', { title: 'CTO', industry: 'Fintech', location: 'London, United Kingdom', employees: 'Startup' }, null],
    ['heads of marketing at SaaS companies in New York', { title: 'Head of Marketing', industry: 'SaaS', location: 'New York, United States' }, null],
    ['senior engineers in Amsterdam', { title: 'Senior engineer', location: 'Amsterdam, Netherlands' }, null],
    ['find 30 VPs of Sales and sales directors in Spain', { title: 'VP of Sales or Director of Sales', location: 'Spain' }, 30],
    ['founders of AI companies in San Francisco', { title: 'Founder', industry: 'Artificial intelligence', location: 'San Francisco, United States' }, null],
    ['C-level executives at insurance companies with fewer than 50 employees', { seniority: 'C-level', industry: 'Insurtech', employees: '1-49' }, null],
    ['Chief Financial Officers in Germany', { title: 'CFO', location: 'Germany' }, null],
    ['VP Engineering at Series B startups in Berlin', { title: 'VP of Engineering', location: 'Berlin, Germany', employees: 'Startup', keywords: 'series' }, null],
    ['product managers in Dublin', { title: 'Product manager', location: 'Dublin, Ireland' }, null],
    ['junior data scientists in Paris', { title: 'Junior data scientist', location: 'Paris, France' }, null],
    ['marketing managers at e-commerce companies in Madrid', { title: 'Marketing manager', industry: 'E-commerce', location: 'Madrid, Spain' }, null],
    ['50 recruiters in Toronto', { title: 'Recruiter', location: 'Toronto, Canada' }, 50],
    ['CEOs and CTOs of biotech companies in Boston', { title: 'CEO or CTO', industry: 'Biotech', location: 'Boston, United States' }, null],
    ['directors in Munich', { seniority: 'Director', location: 'Munich, Germany' }, null],
    ['people working in marketing at Stripe', { department: 'Marketing', keywords: 'stripe' }, null],
    ['engineering team members in Berlin', { department: 'Engineering', location: 'Berlin, Germany' }, null],
    ['decision makers at insurance companies in Zurich', { seniority: 'C-level or VP or Head or Director', industry: 'Insurtech', location: 'Zurich, Switzerland' }, null],
    ['software engineers who know Rust in Berlin', { title: 'Engineer', location: 'Berlin, Germany', keywords: 'rust' }, null],
    ['Give me a list of 100 leads: sales directors at logistics companies in Texas', { title: 'Director of Sales', industry: 'Logistics', location: 'Texas, United States' }, 100],
  ];
  it.each(cases)('%s', (prompt, expected, count) => {
    const result = extract(prompt, 'person');
    expect(values(result)).toEqual(expected);
    expect(result.count).toBe(count);
    expect(result.category).toBe('people_search');
  });

  it('titles a people list by its roles', () => {
    expect(extract('heads of marketing at SaaS companies in New York', 'person').title).toBe('Heads of Marketing at SaaS companies in New York');
    expect(extract('CTOs at fintech startups in London', 'person').title).toBe('CTOs at Fintech startups in London');
    expect(extract('decision makers at insurance companies in Zurich', 'person').title).toBe('Decision makers at Insurtech companies in Zurich');
    expect(extract('people working in marketing in Paris', 'person').title).toBe('Marketing people in Paris');
  });

  it('asks for emails and profiles as enrichment columns', () => {
    const result = extract('CTOs in Berlin with their emails and LinkedIn profiles', 'person');
    expect(result.criteria.filter((c) => c.type === 'enrichment').map((c) => c.column_name)).toEqual(['email', 'profile_url']);
  });
});

describe('reading values back', () => {
  it('parses numbers with separators and k', () => {
    expect(parseNumber('1,000')).toBe(1000);
    expect(parseNumber('10k')).toBe(10000);
    expect(parseNumber('2.5k')).toBe(2500);
    expect(parseNumber('abc')).toBeNull();
  });

  it('parses size values the extractor writes and people write', () => {
    expect(parseSizeValue('50-200')).toEqual({ min: 50, max: 200 });
    expect(parseSizeValue('501+')).toEqual({ min: 501, max: null });
    expect(parseSizeValue('1-49')).toEqual({ min: 1, max: 49 });
    expect(parseSizeValue('more than 500')).toEqual({ min: 501, max: null });
    expect(parseSizeValue('at least 100 employees')).toEqual({ min: 100, max: null });
    expect(parseSizeValue('Startup')).toEqual({ min: 1, max: 200 });
    expect(parseSizeValue('Enterprise')).toEqual({ min: 1000, max: null });
    expect(parseSizeValue('SMB')).toEqual({ min: 1, max: 249 });
    expect(parseSizeValue('lots')).toBeNull();
  });

  it('parses founding values', () => {
    expect(parseFoundedValue('2016 or later', NOW)).toEqual({ min: 2016, max: null });
    expect(parseFoundedValue('1999 or earlier', NOW)).toEqual({ min: null, max: 1999 });
    expect(parseFoundedValue('2010-2015', NOW)).toEqual({ min: 2010, max: 2015 });
    expect(parseFoundedValue('2018', NOW)).toEqual({ min: 2018, max: 2018 });
    expect(parseFoundedValue('after 2015', NOW)).toEqual({ min: 2016, max: null });
    expect(parseFoundedValue('since 2010', NOW)).toEqual({ min: 2010, max: null });
    expect(parseFoundedValue('in the last 3 years', NOW)).toEqual({ min: 2023, max: null });
    expect(parseFoundedValue('recently', NOW)).toBeNull();
  });

  it('reads places: a city narrows its country, regions list countries', () => {
    expect(readPlaces('Berlin, Germany').map((p) => p.kind)).toEqual(['city']);
    expect(readPlaces('Germany or Austria').map((p) => (p.kind === 'country' ? p.country.id : ''))).toEqual(['DE', 'AT']);
    const dach = readPlaces('DACH')[0]!;
    expect(dach.kind === 'region' ? dach.region.countries : []).toEqual(['DE', 'AT', 'CH']);
    expect(readPlaces('New York State')[0]).toMatchObject({ kind: 'state' });
    expect(readPlaces('nothing here')).toEqual([]);
  });

  it('reads job titles into roles', () => {
    expect(readRoleText('Chief Technology Officer')).toEqual([expect.objectContaining({ chief: 'cto', seniority: 'c_level', department: 'engineering' })]);
    expect(readRoleText('Co-Founder & CEO').map((r) => r.label).sort()).toEqual(['CEO', 'Founder']);
    expect(readRoleText('Senior Software Engineer')).toEqual([expect.objectContaining({ seniority: 'senior', function: 'engineer' })]);
    expect(readRoleText('Staff Engineer')).toEqual([expect.objectContaining({ seniority: 'senior', function: 'engineer' })]);
    expect(readRoleText('Head of Growth')).toEqual([expect.objectContaining({ seniority: 'head', department: 'marketing' })]);
    expect(readRoleText('Vice President, Sales')).toEqual([expect.objectContaining({ seniority: 'vp', department: 'sales' })]);
    expect(readRoleText('Director, Marketing')).toEqual([expect.objectContaining({ seniority: 'director', department: 'marketing' })]);
    expect(readRoleText('Engineering Manager')).toEqual([expect.objectContaining({ seniority: 'manager', department: 'engineering', function: null })]);
  });

  it('interprets criteria by column and name, and keeps unreadable ones as text', () => {
    const c = (column_name: string, value: string, name = column_name, type = 'hard_filter') => ({ column_name, value, name, type });
    expect(interpretCriterion(c('industry', 'Fintech or Insurtech'))).toEqual({ dimension: 'industry', industries: ['fintech', 'insurtech'] });
    expect(interpretCriterion(c('company_size', '50-200', 'Company size'))).toEqual({ dimension: 'employees', range: { min: 50, max: 200 } });
    expect(interpretCriterion(c('hq', 'Berlin'))).toMatchObject({ dimension: 'location', places: [{ kind: 'city' }] });
    expect(interpretCriterion(c('year_founded', 'after 2015'), { now: NOW })).toEqual({ dimension: 'founded', range: { min: 2016, max: null } });
    expect(interpretCriterion(c('title', 'CTO or Head of Marketing'))).toMatchObject({ dimension: 'role', roles: [{ chief: 'cto' }, { seniority: 'head', department: 'marketing' }] });
    expect(interpretCriterion(c('seniority', 'VP'))).toEqual({ dimension: 'seniority', levels: ['vp'] });
    expect(interpretCriterion(c('keywords', 'payments, Open Banking'))).toEqual({ dimension: 'keywords', keywords: ['payments', 'open banking'] });
    expect(interpretCriterion(c('uses_kubernetes', 'runs Kubernetes clusters', 'Uses Kubernetes', 'soft_filter'))).toEqual({ dimension: 'text', terms: ['runs', 'kubernetes', 'clusters'] });
    expect(interpretCriterion(c('industry', 'something odd'))).toEqual({ dimension: 'text', terms: ['something', 'odd'] });
    expect(interpretCriterion(c('email', '', 'Email', 'enrichment'))).toEqual({ dimension: 'enrichment', column: 'email' });
  });

  it('reads every criterion the extractor writes back to the same constraint it stated', () => {
    const result = extract('Find 40 fintech companies in Berlin with 50-200 employees founded after 2015');
    const dims = result.criteria.map((c) => interpretCriterion(c, { now: NOW }).dimension);
    expect(dims).toEqual(['industry', 'location', 'employees', 'founded']);
    const people = extract('heads of marketing at SaaS startups in New York', 'person');
    expect(people.criteria.map((c) => interpretCriterion(c, { now: NOW }).dimension)).toEqual(['role', 'industry', 'location', 'employees']);
  });

  it('makes snake_case column names', () => {
    expect(snakeCase('Company Size')).toBe('company_size');
    expect(snakeCase('numberOfEmployees')).toBe('number_of_employees');
    expect(snakeCase('Gründungsjahr')).toBe('grundungsjahr');
    expect(snakeCase('  ')).toBe('criterion');
    expect(snakeCase('2024 revenue')).toBe('c_2024_revenue');
    expect(snakeCase('x'.repeat(200))).toHaveLength(64);
  });
});

describe('webQueryOf', () => {
  const q = (prompt: string, kind: SearchKind = 'company') => webQueryOf(extract(prompt, kind).criteria, { now: NOW });
  it('searches with the role, industry, place and keywords, not the numbers', () => {
    expect(q('Find 40 fintech companies in Berlin with 50-200 employees founded after 2015')).toBe('Fintech Berlin');
    expect(q('fintech or insurtech companies in Berlin, Munich or Hamburg')).toBe('Fintech Berlin');
    expect(q('CTOs at fintech startups in London', 'person')).toBe('Chief Technology Officer Fintech London');
    expect(q('heads of marketing at SaaS companies in New York', 'person')).toBe('Head of Marketing SaaS New York');
    expect(q('people working in marketing in Paris', 'person')).toBe('Marketing Paris');
    expect(q('biotech companies in the DACH region doing gene therapy research')).toBe('Biotech DACH gene therapy research');
    expect(q('companies with 50-200 employees')).toBe('');
  });
});
