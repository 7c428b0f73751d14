import { compileCriteria, extractCriteriaByRules, keywordBaseline, rankCandidates, scoreCandidate, type ScoringCandidate } from '@lore/agents';
import { companyKey, generateAgentsWorld, listQuality, matching, personKey, worldDirectoryRecords, type WorldCriteria } from '../support/agents-world';

/**
 * The extractor and the scorer (services/agents/src/domain/criteria.ts, scoring.ts) on the agents test world's
 * records: for ten prompts, the 25 best qualified records are held against the world's ground truth, next to the
 * keyword-match baseline computed in the same run (docs/agents.md, "Criteria and scoring"). This is the domain
 * layer alone — no workflow, no web — so a drop here is the rules' and not the engine's.
 */

const world = generateAgentsWorld(1);
const records = worldDirectoryRecords(world);
const employers = new Map(records.filter((r) => r.kind === 'company').map((r) => [r.data.domain as string, r.data]));
const candidates = (kind: 'company' | 'person'): ScoringCandidate[] =>
  records.filter((r) => r.kind === kind).map((r) => ({ kind, data: r.data, company: kind === 'person' ? (employers.get(r.data.company_domain as string) ?? null) : null }));
const keyOf = (c: ScoringCandidate) => (c.kind === 'company' ? companyKey({ domain: c.data.domain as string }) : personKey({ name: c.data.name as string, companyDomain: c.data.company_domain as string }));
const truthKey = (x: object) => ('companyDomain' in x ? personKey(x as { name: string; companyDomain: string }) : companyKey(x as { domain: string }));

const PROMPTS: Array<[string, WorldCriteria]> = [
  ['fintech companies in Berlin', { kind: 'company', industry: 'Fintech', city: 'Berlin' }],
  ['SaaS companies in France', { kind: 'company', industry: 'SaaS', country: 'FR' }],
  ['cybersecurity companies in London with 50-200 employees', { kind: 'company', industry: 'Cybersecurity', city: 'London', employeesMin: 50, employeesMax: 200 }],
  ['healthcare companies in New York founded after 2010', { kind: 'company', industry: 'Healthcare', city: 'New York', foundedFrom: 2011 }],
  ['robotics companies in Germany', { kind: 'company', industry: 'Robotics', country: 'DE' }],
  ['companies in the United States with more than 1,000 employees', { kind: 'company', country: 'US', employeesMin: 1001 }],
  ['CTOs of fintech companies', { kind: 'person', title: 'Chief Technology Officer', company: { industry: 'Fintech' } }],
  ['heads of marketing in Germany', { kind: 'person', title: 'Head of Marketing', country: 'DE' }],
  ['VPs of Sales at SaaS companies', { kind: 'person', title: 'VP of Sales', company: { industry: 'SaaS' } }],
  ['senior software engineers in London', { kind: 'person', title: 'Senior Software Engineer', city: 'London' }],
];

describe('criteria and scoring on the agents test world', () => {
  const rows: Array<{ prompt: string; truth: number; precision: number; recall: number; f1: number; baseline: { precision: number; recall: number; f1: number; size: number } }> = [];

  it.each(PROMPTS)('%s: the 25 best qualified records are the ground truth', (prompt, truthCriteria) => {
    const kind = truthCriteria.kind;
    const extracted = extractCriteriaByRules(prompt, kind);
    const compiled = compileCriteria(extracted.criteria);
    const pool = candidates(kind);
    const ranked = rankCandidates(pool.map((candidate) => ({ candidate, score: scoreCandidate(candidate, compiled) })));
    const list = ranked.filter((r) => r.score.qualified).slice(0, 25);
    const truth = matching(world, truthCriteria).map(truthKey);
    expect(truth.length).toBeGreaterThan(0);
    const q = listQuality(list.map((r) => keyOf(r.candidate)), truth);
    const baseList = keywordBaseline(prompt, pool, 25);
    const base = listQuality(baseList.map((b) => keyOf(b.candidate)), truth);
    rows.push({ prompt, truth: truth.length, precision: q.precision, recall: q.recall, f1: q.f1, baseline: { precision: base.precision, recall: base.recall, f1: base.f1, size: baseList.length } });
    expect(q.precision).toBeGreaterThanOrEqual(0.9);
    expect(q.recall).toBeGreaterThanOrEqual(Math.min(1, 25 / truth.length) * 0.9);
    // Every record in the list carries evidence for each hard filter.
    for (const r of list) {
      for (const v of r.score.verdicts.filter((x) => x.type === 'hard_filter')) expect(v.evidence).not.toBeNull();
    }
  });

  it('beats the keyword-match baseline computed in the same run', () => {
    expect(rows).toHaveLength(PROMPTS.length);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(rows.map((r) => r.precision))).toBeGreaterThanOrEqual(0.9);
    // An empty baseline list has precision 1 by definition, so the lists are compared by F1.
    expect(mean(rows.map((r) => r.baseline.f1))).toBeLessThan(mean(rows.map((r) => r.f1)));
  });
});
