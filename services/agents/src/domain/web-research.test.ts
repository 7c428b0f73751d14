import { bestSentence, containsTerms, holdsRole, isTooVague, planResearch, referenceUrls, stem } from './web-research';

describe('planResearch', () => {
  it('reads companies, their terms and queries', () => {
    expect(planResearch('Find fintech companies in Berlin')).toEqual({ target: 'company', terms: ['fintech', 'berlin'], roles: [], queries: ['fintech berlin'], urls: [] });
    expect(planResearch('who builds payment software in Berlin?')).toMatchObject({ target: 'company', terms: ['payment', 'software', 'berlin'], queries: ['payment software berlin', 'payment software'] });
  });

  it('reads people by role or by people words, the roles kept apart from the terms', () => {
    const p = planResearch('CTOs of SaaS companies in Paris');
    expect(p).toMatchObject({ target: 'person', terms: ['saas', 'paris'], roles: [['chief technology officer', 'cto']] });
    expect(planResearch('people at fintech startups in Berlin')).toMatchObject({ target: 'person', terms: ['fintech', 'berlin'], roles: [] });
  });

  it('reads anything else as pages, and keeps the URLs a prompt names', () => {
    expect(planResearch('quarterly report 2025 https://alpha.example/docs/ please')).toMatchObject({ target: 'page', terms: ['quarterly', 'report', '2025'], urls: ['https://alpha.example/docs/'] });
  });
});

describe('isTooVague', () => {
  it.each(['Find me some companies please', 'research stuff', 'people', 'Can you look for information?', ''])('%j names nothing to look for', (prompt) => {
    expect(isTooVague(planResearch(prompt))).toBe(true);
  });

  it.each(['fintech', 'CEOs', 'https://beta.example/', 'companies in Lyon'])('%j is enough to plan', (prompt) => {
    expect(isTooVague(planResearch(prompt))).toBe(false);
  });
});

describe('judging a page', () => {
  it('wants every term as the start of a word', () => {
    expect(containsTerms('Acme is a fintech company in Berlin, Germany.', ['fintech', 'berlin'])).toBe(true);
    expect(containsTerms('Acme is a fintech company in Munich.', ['fintech', 'berlin'])).toBe(false);
    expect(containsTerms('afintech in Berlin', ['fintech', 'berlin'])).toBe(false);
  });

  it('matches a title against any spelling of a role, and any title without roles', () => {
    const ceo = planResearch('CEOs').roles;
    expect(holdsRole('Chief Executive Officer', ceo)).toBe(true);
    expect(holdsRole('Account Executive', ceo)).toBe(false);
    expect(holdsRole('Anything', [])).toBe(true);
  });

  it('quotes the sentence holding the most terms', () => {
    expect(bestSentence('Welcome. Acme is a fintech company in Berlin. We hire.', ['fintech', 'berlin'])).toBe('Acme is a fintech company in Berlin.');
  });

  it('singularises', () => {
    expect(['companies', 'ctos', 'engineers', 'business', 'status'].map(stem)).toEqual(['company', 'cto', 'engineer', 'business', 'status']);
  });

  it('finds the URLs of a reference file, each once', () => {
    expect(referenceUrls('name,site\nAcme,https://acme.example/\nBeta,http://beta.example/about.\nAcme again,https://acme.example/\n')).toEqual(['https://acme.example/', 'http://beta.example/about']);
  });
});
