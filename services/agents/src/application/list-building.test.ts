import { extractCriteriaByRules } from '../domain/criteria';
import type { Criterion } from '../domain/workflow';
import { candidateFromPage, candidateFromRecord, criterionCells, enrichmentCell, entityKeyOf, fixedCells, hostOf, openRecord } from './list-building';
import { directoryScorer, pageFacts, personFacts, toCandidateScore } from './list-sources';

const NOW = '2026-11-25T10:00:00.000Z';
const record = {
  id: 'company:abc',
  kind: 'company' as const,
  source: 'http://acme.localhost/',
  updatedAt: NOW,
  data: { name: 'Acme Pay', domain: 'acme.localhost', industry: 'Fintech', location: { city: 'Berlin', country: 'DE' }, employees: 120, founded: 2015 },
};
const crit = (column_name: string, type = 'hard_filter'): Criterion => ({ name: column_name, value: 'x', column_name, columnType: 'text', description: '', type, width: 100, maxWidth: 200, minWidth: 50 });

describe('list building', () => {
  it('keys entities: a company by its domain, a person by name at their company, else the fallback', () => {
    expect(entityKeyOf('company_search', { domain: 'WWW.Acme.com' }, 'f')).toBe('acme.com');
    expect(entityKeyOf('company_search', { website: 'https://www.acme.com/about' }, 'f')).toBe('acme.com');
    expect(entityKeyOf('company_search', {}, 'directory:1')).toBe('directory:1');
    expect(entityKeyOf('people_search', { name: ' Ada Brook ', company_domain: 'Acme.com' }, 'f')).toBe('ada brook@acme.com');
    expect(entityKeyOf('people_search', { name: 'Ada', profile_url: 'https://acme.com/team/ada' }, 'f')).toBe('https://acme.com/team/ada');
    expect(hostOf('not a url')).toBe('');
  });

  it('makes a directory candidate whose provenance is the record, and fixed cells from its fields', () => {
    const c = candidateFromRecord('company_search', record, NOW);
    expect(c.entityKey).toBe('acme.localhost');
    expect(c.provenance).toMatchObject({ source: 'directory', source_url: 'http://acme.localhost/', fetched_at: NOW });
    expect(c.text).toContain('industry: Fintech');
    expect(c.text).toContain('location: Berlin, DE');
    const cells = fixedCells('company_search', 'r1', c);
    expect(cells.name).toMatchObject({ value: 'Acme Pay', status: 'completed', metadata: { source_url: 'http://acme.localhost/' } });
    expect(cells.location).toMatchObject({ value: 'Berlin, DE', status: 'completed' });
    const bare = fixedCells('company_search', 'r2', candidateFromRecord('company_search', { ...record, source: 'csv:1', data: { name: 'Bare', domain: 'bare.io' } }, NOW));
    expect(bare.industry).toMatchObject({ status: 'error', value: '', metadata: { reason: 'the source does not give it' } });
    expect(bare.name!.metadata.source_url).toBe('directory:company:abc');
  });

  it('makes a web candidate keyed by host with the facts its page states', () => {
    const c = candidateFromPage('company_search', { url: 'http://acme.localhost:4000/', title: 'Acme Pay | Payments', text: 'We build payments.', facts: { industry: 'Fintech' }, person: null }, { url: 'http://acme.localhost:4000/', title: 'Acme', snippet: 'payments' }, NOW)!;
    expect(c.entityKey).toBe('acme.localhost');
    expect(c.data).toMatchObject({ name: 'Acme Pay', industry: 'Fintech', domain: 'acme.localhost' });
    expect(c.provenance).toEqual({ source: 'web', source_url: 'http://acme.localhost:4000/', snippet: 'payments', fetched_at: NOW });
  });

  it('makes a person from a profile page only, keyed like the directory keys people', () => {
    const html = `<html><head><title>Ada Brook, Chief Executive Officer at Acme</title><script type="application/ld+json">${JSON.stringify({
      '@context': 'https://schema.org',
      '@type': 'Person',
      name: 'Ada Brook',
      jobTitle: 'Chief Executive Officer',
      worksFor: { '@type': 'Organization', name: 'Acme' },
      address: { '@type': 'PostalAddress', addressLocality: 'Berlin', addressCountry: 'DE' },
    })}</script></head><body></body></html>`;
    const person = personFacts(html);
    expect(person).toEqual({ name: 'Ada Brook', title: 'Chief Executive Officer', company: 'Acme', location: { city: 'Berlin', country: 'DE' } });
    const url = 'http://acme.localhost:4000/team/ada-brook.html';
    const c = candidateFromPage('people_search', { url, title: '', text: '', facts: {}, person }, { url, title: '', snippet: '' }, NOW)!;
    expect(c.entityKey).toBe('ada brook@acme.localhost');
    expect(c.data).toMatchObject({ title: 'Chief Executive Officer', company_domain: 'acme.localhost', profile_url: url });
    expect(personFacts('<html><title>Team</title></html>')).toBeNull();
    expect(candidateFromPage('people_search', { url, title: 'Team', text: '', facts: {}, person: null }, { url, title: '', snippet: '' }, NOW)).toBeNull();
  });

  it('turns verdicts into cells: completed with the quoted evidence, an error without one', () => {
    const score = toCandidateScore({
      verdicts: [
        { column_name: 'employees', name: 'Size', type: 'hard_filter', dimension: 'employees', outcome: 'matched', strength: 1, evidence: { source: 'field', field: 'employees', value: '120' } },
        { column_name: 'founded', name: 'Founded', type: 'soft_filter', dimension: 'founded', outcome: 'unknown', strength: 0, evidence: null },
      ],
      excluded: false,
      qualified: true,
      score: 0.9,
    } as never);
    expect(score.accepted).toBe(true);
    const p = { source: 'directory' as const, source_url: 'directory:1', snippet: '', fetched_at: NOW };
    const cells = criterionCells('r1', [crit('employees'), crit('founded', 'soft_filter')], score, p);
    expect(cells.employees).toMatchObject({ value: '120', status: 'completed', metadata: { snippet: 'employees: 120', met: true, source_url: 'directory:1' } });
    expect(cells.founded).toMatchObject({ status: 'error', metadata: { reason: 'no source states it' } });
  });

  it('fills the criterion cells of a plain web page with what it names, not "yes" or its whole description', async () => {
    const url = 'http://acme.localhost:4000/';
    const text = 'Acme is a fintech company in Berlin, Germany, with 50 employees founded in 2015. It is one of the fintech companies in Berlin.';
    const html = `<html><head><title>Fintech Berlin /</title></head><body><p>${text}</p></body></html>`;
    const c = candidateFromPage('company_search', { url, title: 'Fintech Berlin /', text, facts: pageFacts(html, url), person: null }, { url, title: '', snippet: '' }, NOW)!;
    const criteria = extractCriteriaByRules('Find fintech companies in Berlin with more than 20 employees', 'company').criteria;
    const [score] = await directoryScorer(undefined).score('t', 'company_search', [c], criteria);
    expect(score!.accepted).toBe(true);
    const cells = criterionCells('r1', criteria, score!, c.provenance);
    expect(cells.industry).toMatchObject({ value: 'Fintech', status: 'completed', metadata: { met: true, snippet: expect.stringMatching(/fintech/i) } });
    expect(cells.location).toMatchObject({ value: 'Berlin, Germany', status: 'completed', metadata: { met: true, snippet: expect.stringMatching(/Berlin/) } });
    expect(cells.employees).toMatchObject({ value: '50', status: 'completed', metadata: { met: true } });
  });

  it('accepts a candidate only when every hard filter is matched', () => {
    const base = { excluded: false, score: 0.5, verdicts: [{ column_name: 'industry', name: 'I', type: 'hard_filter', dimension: 'industry', outcome: 'unknown', strength: 0, evidence: null }] };
    expect(toCandidateScore({ ...base, qualified: false } as never).accepted).toBe(false);
    expect(toCandidateScore({ ...base, verdicts: [], qualified: true, score: 0 } as never).accepted).toBe(false);
  });

  it('fills a custom enrichment from a field named in the instruction, else the best sentence, else says none', async () => {
    const e = { column_id: 'enrich_founded', column_name: 'Founded', instruction: 'When was it founded?', enrichment_type: 'custom', data_type: 'company', status: 'processing' as const, done: 0 };
    const p = { source: 'web' as const, source_url: 'http://acme.localhost/', snippet: '', fetched_at: NOW };
    const byField = await enrichmentCell('company_search', 't', 'r1', e, { data: { founded: 2015 }, text: '', provenance: p }, undefined, NOW);
    expect(byField).toMatchObject({ value: '2015', status: 'completed', metadata: { snippet: 'founded: 2015' } });
    const byText = await enrichmentCell('company_search', 't', 'r1', { ...e, instruction: 'their headquarters city' }, { data: {}, text: 'We ship. Our headquarters are in Berlin since 2015.', provenance: p }, undefined, NOW);
    expect(byText).toMatchObject({ value: 'Our headquarters are in Berlin since 2015.', status: 'completed' });
    const none = await enrichmentCell('company_search', 't', 'r1', { ...e, instruction: 'quarterly revenue' }, { data: {}, text: 'Nothing here.', provenance: p }, undefined, NOW);
    expect(none).toMatchObject({ status: 'error', metadata: { reason: 'no source answers the instruction' } });
    const contacts = await enrichmentCell('company_search', 't', 'r1', { ...e, enrichment_type: 'contacts' }, { data: { domain: 'acme.localhost' }, text: '', provenance: p }, {
      search: async (_t, kind, filter) => (kind === 'person' && filter.company_domain === 'acme.localhost' ? [{ id: 'person:1', kind: 'person', data: { name: 'Ada', title: 'CEO' }, source: 'x', updatedAt: NOW }] : []),
    }, NOW);
    expect(contacts).toMatchObject({ value: 'Ada — CEO', status: 'completed', metadata: { source: 'directory', source_url: 'directory:person:1' } });
  });

  it('shows a row as an open object of its column values', () => {
    const cells = { name: { row_id: 'r', column_id: 'name', value: 'Acme', status: 'completed', metadata: {}, expandable: false } };
    expect(openRecord('acme.com', cells, [{ id: 'name' }, { id: 'industry' }] as never)).toEqual({ entity_key: 'acme.com', name: 'Acme', industry: '' });
  });
});
