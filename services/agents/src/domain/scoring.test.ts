import { extractCriteriaByRules, type Criterion } from './criteria';
import { MAX_PAGE_CHARS, baselineTerms, compileCriteria, keywordBaseline, keywordBaselineScore, rankCandidates, roleSatisfies, scoreCandidate, snippetAround, type Candidate } from './scoring';
import { readRoleText } from './criteria';

const NOW = new Date('2026-11-25T12:00:00Z');

const criteriaOf = (prompt: string, kind: 'company' | 'person' = 'company'): Criterion[] => extractCriteriaByRules(prompt, kind, { now: NOW }).criteria;

const company = (data: Record<string, unknown>, pageText?: string): Candidate => ({ kind: 'company', data, ...(pageText ? { pageText } : {}) });
const person = (data: Record<string, unknown>, employer?: Record<string, unknown>): Candidate => ({ kind: 'person', data, ...(employer ? { company: employer } : {}) });

const ACME = { name: 'Acme Pay', domain: 'acme.example', industry: 'Fintech', description: 'Acme makes payment software for merchants.', location: { city: 'Berlin', region: 'Berlin', country: 'DE' }, employees: 120, founded: 2017, tags: ['fintech', 'payments'] };

function outcomes(score: ReturnType<typeof scoreCandidate>): Record<string, string> {
  return Object.fromEntries(score.verdicts.map((v) => [v.column_name, v.outcome]));
}

describe('scoreCandidate: companies', () => {
  const criteria = criteriaOf('fintech companies in Berlin with 50-200 employees founded after 2015');

  it('matches every criterion of a fitting record, with the field as evidence', () => {
    const s = scoreCandidate(company(ACME), criteria, { now: NOW });
    expect(outcomes(s)).toEqual({ industry: 'matched', location: 'matched', employees: 'matched', founded: 'matched' });
    expect(s.qualified).toBe(true);
    expect(s.excluded).toBe(false);
    expect(s.score).toBe(1);
    expect(s.verdicts.find((v) => v.column_name === 'employees')!.evidence).toEqual({ source: 'field', field: 'employees', value: '120' });
    expect(s.verdicts.find((v) => v.column_name === 'location')!.evidence).toMatchObject({ source: 'field', field: 'location', value: 'Berlin, Berlin, DE' });
  });

  it('excludes on a failed hard filter and says which field decided', () => {
    const s = scoreCandidate(company({ ...ACME, employees: 900 }), criteria, { now: NOW });
    expect(outcomes(s).employees).toBe('not_matched');
    expect(s.excluded).toBe(true);
    expect(s.qualified).toBe(false);
    expect(s.score).toBeLessThan(1);
    const wrongCity = scoreCandidate(company({ ...ACME, location: { city: 'Munich', country: 'DE' } }), criteria, { now: NOW });
    expect(outcomes(wrongCity).location).toBe('not_matched');
    const wrongIndustry = scoreCandidate(company({ ...ACME, industry: 'Gaming' }), criteria, { now: NOW });
    expect(outcomes(wrongIndustry).industry).toBe('not_matched');
    const tooOld = scoreCandidate(company({ ...ACME, founded: 2015 }), criteria, { now: NOW });
    expect(outcomes(tooOld).founded).toBe('not_matched');
  });

  it('keeps missing facts unknown: not excluded, not qualified, ranked lower', () => {
    const s = scoreCandidate(company({ name: 'Bare', industry: 'fintech' }), criteria, { now: NOW });
    expect(outcomes(s)).toEqual({ industry: 'matched', location: 'unknown', employees: 'unknown', founded: 'unknown' });
    expect(s.excluded).toBe(false);
    expect(s.qualified).toBe(false);
    // (2 + 3 × 2 × 0.25) / 8, rounded to three places
    expect(s.score).toBe(0.438);
  });

  it('reads the page when the record lacks a fact, with a snippet as evidence', () => {
    const page = 'Welcome to Bare. We are a payments company based in Berlin, Germany, with a team of 85 employees. Founded in 2019 by two engineers.';
    const s = scoreCandidate(company({ name: 'Bare' }, page), criteria, { now: NOW });
    expect(outcomes(s)).toEqual({ industry: 'matched', location: 'matched', employees: 'matched', founded: 'matched' });
    const employees = s.verdicts.find((v) => v.column_name === 'employees')!;
    expect(employees.evidence?.source).toBe('page');
    expect(employees.evidence?.snippet).toContain('85 employees');
    const big = scoreCandidate(company({ name: 'Big' }, 'A fintech firm in Berlin with 5,000 employees, founded in 1990.'), criteria, { now: NOW });
    expect(outcomes(big)).toMatchObject({ employees: 'not_matched', founded: 'not_matched' });
    // A page that does not mention a fact proves nothing.
    expect(outcomes(scoreCandidate(company({ name: 'Quiet' }, 'We like trains.'), criteria, { now: NOW }))).toEqual({ industry: 'unknown', location: 'unknown', employees: 'unknown', founded: 'unknown' });
  });

  it('understands other record shapes: country names, location strings, size bands, founding dates', () => {
    const c = criteriaOf('SaaS companies in Germany with 50-200 employees');
    expect(outcomes(scoreCandidate(company({ industry: 'SaaS', location: { city: 'Hamburg', country: 'Germany' }, employees: '51-200' }), c))).toEqual({ industry: 'matched', location: 'matched', employees: 'matched' });
    expect(outcomes(scoreCandidate(company({ industry: 'Software as a Service', location: 'Munich, Germany', employees: '1-10' }), c))).toEqual({ industry: 'matched', location: 'matched', employees: 'not_matched' });
    expect(outcomes(scoreCandidate(company({ industry: 'SaaS', location: 'Paris, France', employees: '201-500' }), c))).toEqual({ industry: 'matched', location: 'not_matched', employees: 'not_matched' });
    // A band overlapping the wanted range is undecided, with the band as evidence.
    expect(outcomes(scoreCandidate(company({ industry: 'SaaS', location: 'Paris, France', employees: '11-50' }), c)).employees).toBe('unknown');
    expect(outcomes(scoreCandidate(company({ industry: 'SaaS', country: 'DE', employees: '100-300' }), c))).toEqual({ industry: 'matched', location: 'matched', employees: 'unknown' });
    const founded = criteriaOf('companies founded after 2015');
    expect(outcomes(scoreCandidate(company({ foundingDate: '2018-04-01' }), founded, { now: NOW }))).toEqual({ founded: 'matched' });
  });

  it('lets a parent industry accept its children and regions accept their countries', () => {
    const c = criteriaOf('software companies in the DACH region');
    expect(outcomes(scoreCandidate(company({ industry: 'SaaS', location: { city: 'Vienna', country: 'AT' } }), c))).toEqual({ industry: 'matched', location: 'matched' });
    expect(outcomes(scoreCandidate(company({ industry: 'Cybersecurity', location: { country: 'CH' } }), c))).toEqual({ industry: 'matched', location: 'matched' });
    expect(outcomes(scoreCandidate(company({ industry: 'Fintech', location: { country: 'FR' } }), c))).toEqual({ industry: 'not_matched', location: 'not_matched' });
  });

  it('an industry field that names nothing known is not matched unless the record or page names the wanted one', () => {
    const c = criteriaOf('fintech companies');
    expect(outcomes(scoreCandidate(company({ industry: 'Widgets' }), c))).toEqual({ industry: 'not_matched' });
    expect(outcomes(scoreCandidate(company({ industry: 'Widgets', tags: ['neobank'] }), c))).toEqual({ industry: 'matched' });
  });

  it('gives keywords partial credit and soft filters never exclude', () => {
    const c = criteriaOf('fintech companies in Berlin building mortgage comparison tools');
    const kw = c.find((x) => x.column_name === 'keywords')!;
    expect(kw.value).toBe('mortgage, comparison, tools');
    const s = scoreCandidate(company({ ...ACME, description: 'Mortgage software.' }), c);
    const v = s.verdicts.find((x) => x.column_name === 'keywords')!;
    expect(v.outcome).toBe('matched');
    expect(v.strength).toBeCloseTo(1 / 3, 3);
    expect(s.qualified).toBe(true);
    const none = scoreCandidate(company(ACME), c);
    expect(none.verdicts.find((x) => x.column_name === 'keywords')!.outcome).toBe('not_matched');
    expect(none.excluded).toBe(false);
    expect(none.score).toBeLessThan(s.score);
  });

  it('reports enrichment columns as matched when the record holds the value, and never counts them', () => {
    const c = criteriaOf('fintech companies with their websites and revenue');
    const s = scoreCandidate(company({ ...ACME, website: 'https://acme.example/' }), c);
    expect(outcomes(s)).toEqual({ industry: 'matched', website: 'matched', revenue: 'unknown' });
    expect(s.score).toBe(1);
  });

  it('scores user-edited criteria and criteria of its own columns', () => {
    const edited: Criterion[] = [
      { name: 'HQ', value: 'Berlin', column_name: 'hq', columnType: 'text', description: '', type: 'hard_filter', width: 200, minWidth: 120, maxWidth: 400 },
      { name: 'Uses Kubernetes', value: 'kubernetes', column_name: 'uses_kubernetes', columnType: 'text', description: '', type: 'soft_filter', width: 200, minWidth: 120, maxWidth: 400 },
    ];
    const s = scoreCandidate(company(ACME, 'Our platform runs on Kubernetes.'), compileCriteria(edited));
    expect(outcomes(s)).toEqual({ hq: 'matched', uses_kubernetes: 'matched' });
    expect(s.verdicts[1]!.evidence).toEqual({ source: 'page', snippet: 'Our platform runs on Kubernetes.', match: 'kubernetes' });
  });
});

describe('scoreCandidate: people', () => {
  const employer = { name: 'Acme Pay', industry: 'Fintech', employees: 120, founded: 2017, location: { city: 'London', country: 'GB' } };

  it('matches role, location and the employer facts', () => {
    const c = criteriaOf('CTOs at fintech startups in London', 'person');
    const s = scoreCandidate(person({ name: 'Ada Brook', title: 'Chief Technology Officer', seniority: 'c_level', location: { city: 'London', country: 'GB' } }, employer), c);
    expect(outcomes(s)).toEqual({ title: 'matched', industry: 'matched', location: 'matched', employees: 'matched' });
    expect(s.verdicts.find((v) => v.column_name === 'industry')!.evidence).toMatchObject({ field: 'company.industry' });
    const vp = scoreCandidate(person({ title: 'VP of Engineering', location: { city: 'London', country: 'GB' } }, employer), c);
    expect(outcomes(vp).title).toBe('not_matched');
    expect(vp.excluded).toBe(true);
    // Without the employer's document, its facts stay unknown.
    const alone = scoreCandidate(person({ title: 'CTO & Co-Founder', location: 'London, UK' }), c);
    expect(outcomes(alone)).toEqual({ title: 'matched', industry: 'unknown', location: 'matched', employees: 'unknown' });
  });

  it('matches roles by level, department and function', () => {
    const heads = criteriaOf('heads of marketing in Berlin', 'person');
    expect(outcomes(scoreCandidate(person({ title: 'Head of Growth', location: { city: 'Berlin', country: 'DE' } }), heads)).title).toBe('matched');
    expect(outcomes(scoreCandidate(person({ title: 'Marketing Associate', location: { city: 'Berlin', country: 'DE' } }), heads)).title).toBe('not_matched');
    const seniors = criteriaOf('senior engineers', 'person');
    expect(outcomes(scoreCandidate(person({ title: 'Senior Software Engineer' }), seniors)).title).toBe('matched');
    expect(outcomes(scoreCandidate(person({ title: 'Software Engineer' }), seniors)).title).toBe('not_matched');
    expect(outcomes(scoreCandidate(person({ title: 'Engineering Manager' }), seniors)).title).toBe('not_matched');
    // No title: the seniority and department fields decide.
    const vps = criteriaOf('VPs of Sales', 'person');
    expect(outcomes(scoreCandidate(person({ seniority: 'vp', department: 'Sales' }), vps)).title).toBe('matched');
    expect(outcomes(scoreCandidate(person({ seniority: 'manager', department: 'Sales' }), vps)).title).toBe('not_matched');
    expect(outcomes(scoreCandidate(person({ name: 'Someone' }), vps)).title).toBe('unknown');
  });

  it('matches seniority from the field or the title', () => {
    const c = criteriaOf('C-level executives in Paris', 'person');
    expect(outcomes(scoreCandidate(person({ seniority: 'c_level', location: { city: 'Paris', country: 'FR' } }), c))).toEqual({ seniority: 'matched', location: 'matched' });
    expect(outcomes(scoreCandidate(person({ seniority: 'entry', location: { city: 'Paris', country: 'FR' } }), c))).toEqual({ seniority: 'not_matched', location: 'matched' });
    expect(outcomes(scoreCandidate(person({ title: 'Chief Financial Officer' }), c)).seniority).toBe('matched');
  });

  it('matches departments and decision makers', () => {
    const marketing = criteriaOf('people working in marketing', 'person');
    expect(outcomes(scoreCandidate(person({ department: 'Marketing' }), marketing))).toEqual({ department: 'matched' });
    expect(outcomes(scoreCandidate(person({ department: 'Sales' }), marketing))).toEqual({ department: 'not_matched' });
    expect(outcomes(scoreCandidate(person({ title: 'Head of Growth' }), marketing))).toEqual({ department: 'matched' });
    expect(outcomes(scoreCandidate(person({ name: 'X' }), marketing))).toEqual({ department: 'unknown' });
    const deciders = criteriaOf('decision makers', 'person');
    expect(outcomes(scoreCandidate(person({ seniority: 'director' }), deciders))).toEqual({ seniority: 'matched' });
    expect(outcomes(scoreCandidate(person({ seniority: 'manager' }), deciders))).toEqual({ seniority: 'not_matched' });
    expect(outcomes(scoreCandidate(person({ title: 'VP of Engineering' }), deciders))).toEqual({ seniority: 'matched' });
  });

  it('roleSatisfies compares chief titles exactly and accepts a lead for senior', () => {
    const [cto] = readRoleText('CTO');
    const [lead] = readRoleText('Lead Engineer');
    const [senior] = readRoleText('Senior Engineer');
    expect(roleSatisfies(cto!, readRoleText('Chief Technical Officer')[0]!)).toBe(true);
    expect(roleSatisfies(cto!, readRoleText('CEO')[0]!)).toBe(false);
    expect(roleSatisfies(senior!, lead!)).toBe(true);
    expect(roleSatisfies(lead!, senior!)).toBe(false);
  });
});

describe('bounds', () => {
  it('scores a page of pathological text in bounded time, reading at most MAX_PAGE_CHARS', () => {
    const criteria = compileCriteria(criteriaOf('fintech companies in Berlin with 50-200 employees founded after 2015 building payments'));
    for (const page of ['1'.repeat(300_000), '1,000'.repeat(60_000), 'founded '.repeat(40_000)]) {
      const started = performance.now();
      scoreCandidate(company({ name: 'x' }, page), criteria);
      expect(performance.now() - started).toBeLessThan(2_000);
    }
    // A fact past the limit is not read.
    const late = scoreCandidate(company({ name: 'x' }, `${'x '.repeat(MAX_PAGE_CHARS / 2)} based in Berlin`), criteria);
    expect(outcomes(late).location).toBe('unknown');
  });
});

describe('rankCandidates', () => {
  it('puts qualified first, then undecided, then excluded, by score within each', () => {
    const criteria = compileCriteria(criteriaOf('fintech companies in Berlin with 50-200 employees'));
    const items = [
      { id: 'excluded', score: scoreCandidate(company({ ...ACME, employees: 5000 }), criteria) },
      { id: 'unknown-size', score: scoreCandidate(company({ ...ACME, employees: undefined }), criteria) },
      { id: 'fits', score: scoreCandidate(company(ACME), criteria) },
      { id: 'only-industry', score: scoreCandidate(company({ industry: 'Fintech' }), criteria) },
    ];
    expect(rankCandidates(items).map((i) => i.id)).toEqual(['fits', 'unknown-size', 'only-industry', 'excluded']);
  });
});

describe('keyword baseline', () => {
  it('takes the prompt content words without numbers or stop words', () => {
    expect(baselineTerms('Find 40 fintech companies in Berlin with 50-200 employees')).toEqual(['fintech', 'berlin']);
  });

  it('scores the share of words found anywhere in the record or page, with no structure', () => {
    expect(keywordBaselineScore('fintech companies in Berlin', company(ACME))).toBe(1);
    // The baseline cannot read numbers: a 5,000-employee company scores the same.
    expect(keywordBaselineScore('fintech companies in Berlin with 50-200 employees', company({ ...ACME, employees: 5000 }))).toBe(1);
    expect(keywordBaselineScore('fintech companies in Munich', company(ACME))).toBe(0.5);
    expect(keywordBaselineScore('fintech companies', company({ name: 'X' }, 'A fintech.'))).toBe(1);
    expect(keywordBaselineScore('', company(ACME))).toBe(0);
  });

  it('lists candidates with any word found, best first, at most the limit', () => {
    const cands = [company({ name: 'A', industry: 'Gaming' }), company({ ...ACME, name: 'B' }), company({ name: 'C', industry: 'Fintech' }), company({ name: 'D', location: 'Berlin' })];
    const list = keywordBaseline('fintech companies in Berlin', cands, 2);
    expect(list.map((x) => x.candidate.data.name)).toEqual(['B', 'C']);
    expect(keywordBaseline('fintech companies in Berlin', cands, 10).map((x) => x.candidate.data.name)).toEqual(['B', 'C', 'D']);
  });
});

describe('snippetAround', () => {
  it('cuts at word boundaries around the match', () => {
    const text = `${'lorem ipsum '.repeat(20)}based in Berlin today ${'dolor sit '.repeat(20)}`;
    const i = text.indexOf('Berlin');
    const s = snippetAround(text, i, i + 6);
    expect(s).toContain('based in Berlin today');
    expect(s.length).toBeLessThanOrEqual(190);
    expect(s.startsWith('lorem') || s.startsWith('ipsum')).toBe(true);
  });
});
