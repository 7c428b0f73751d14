import { bestSentence, containsTerms, holdsRole, isTooVague, meetsCriteria, planResearch, referenceUrls, stem } from './web-research';

const NOW = { now: new Date('2026-11-30T00:00:00Z') };

describe('planResearch', () => {
  it('reads companies, their terms and queries', () => {
    expect(planResearch('Find fintech companies in Berlin')).toEqual({ target: 'company', terms: ['fintech', 'berlin'], required: [['fintech'], ['berlin']], criteria: [], roles: [], queries: ['fintech berlin'], urls: [] });
    expect(planResearch('who builds payment software in Berlin?')).toMatchObject({ target: 'company', terms: ['payment', 'software', 'berlin'], queries: ['payment software berlin', 'payment software'] });
  });

  it('takes the prompt\'s URLs, a bracketed IPv6 host whole', () => {
    expect(planResearch('fintech companies at http://[2001:db8::1]/about and https://a.example/x.').urls).toEqual(['http://[2001:db8::1]/about', 'https://a.example/x']);
  });

  it('reads people by role or by people words, the roles kept apart from the terms', () => {
    const p = planResearch('CTOs of SaaS companies in Paris');
    expect(p).toMatchObject({ target: 'person', terms: ['saas', 'paris'], roles: [['chief technology officer', 'cto']] });
    expect(planResearch('people at fintech startups in Berlin')).toMatchObject({ target: 'person', terms: ['fintech', 'berlin'], roles: [] });
  });

  it('reads a people word that gives a company size as a qualifier of companies, not as a people search', () => {
    for (const prompt of ['Find cybersecurity companies in London with more than 50 employees', 'Find SaaS startups in Paris with a team of 20', 'robotics firms in Munich having a large team', 'companies in Lyon with 20-person teams', 'fintech firms with 200 staff']) {
      expect({ prompt, target: planResearch(prompt, NOW).target }).toEqual({ prompt, target: 'company' });
    }
    for (const prompt of ['employees of fintech companies in Berlin', 'staff at SaaS startups in Paris', 'team members of robotics firms']) {
      expect({ prompt, target: planResearch(prompt, NOW).target }).toEqual({ prompt, target: 'person' });
    }
  });

  it('keeps comparisons, counts, sizes and founding years out of the terms, reading sizes and years as criteria', () => {
    const size = planResearch('Find cybersecurity companies in London with more than 50 employees', NOW);
    expect(size).toMatchObject({ terms: ['cybersecurity', 'london'], queries: ['cybersecurity london'], criteria: [{ column_name: 'employees', value: '51+', type: 'hard_filter' }] });
    const founded = planResearch('Find the biggest fintech companies in Berlin founded after 2015', NOW);
    expect(founded).toMatchObject({ terms: ['fintech', 'berlin'], criteria: [{ column_name: 'founded', value: '2016 or later', type: 'hard_filter' }] });
    expect(planResearch('Find 40 companies in Germany', NOW)).toMatchObject({ target: 'company', terms: ['germany'], criteria: [] });
    // People too: the size is their employer's.
    expect(planResearch('CEOs of fintech companies in Berlin with at least 100 employees', NOW)).toMatchObject({ target: 'person', terms: ['fintech', 'berlin'], criteria: [{ value: '100+' }] });
    // A page search keeps its numbers: "2025" is what the page is about.
    expect(planResearch('quarterly report 2025', NOW)).toMatchObject({ target: 'page', terms: ['quarterly', 'report', '2025'], criteria: [] });
  });

  it('reads words joined by "or" (and a list of places or industries ending in "or") as alternatives, one query each', () => {
    expect(planResearch('Find fintech companies in Berlin or Munich', NOW)).toMatchObject({ required: [['fintech'], ['berlin', 'munich']], queries: ['fintech berlin', 'fintech munich'] });
    expect(planResearch('fintech or insurtech companies in Berlin, Munich or Hamburg', NOW)).toMatchObject({
      required: [['fintech', 'insurtech'], ['berlin', 'munich', 'hamburg']],
      queries: ['fintech berlin', 'fintech munich', 'fintech hamburg', 'insurtech berlin'],
    });
    // A comma between different kinds of words lists what is required, not alternatives.
    expect(planResearch('fintech, Berlin or Munich', NOW)).toMatchObject({ required: [['fintech'], ['berlin', 'munich']] });
    expect(planResearch('payment software and lending in Berlin', NOW).required).toEqual([['payment'], ['software'], ['lending'], ['berlin']]);
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

  it('wants one word of each group of alternatives, and a number as a whole number', () => {
    expect(containsTerms('Acme is a fintech company in Munich.', [['fintech'], ['berlin', 'munich']])).toBe(true);
    expect(containsTerms('Acme is a fintech company in Hamburg.', [['fintech'], ['berlin', 'munich']])).toBe(false);
    expect(containsTerms('the 2025 report', ['2025'])).toBe(true);
    expect(containsTerms('500 employees', ['50'])).toBe(false);
  });

  it('judges sizes and founding years on the facts, then the text; a page that states neither is not refused', () => {
    const { criteria } = planResearch('fintech companies in Berlin with more than 50 employees founded after 2015', NOW);
    expect(criteria).toHaveLength(2);
    expect(meetsCriteria({ employees: 99, founded: 2018 }, '', criteria)).toBe(true);
    expect(meetsCriteria({ employees: 20, founded: 2018 }, '', criteria)).toBe(false);
    expect(meetsCriteria({ employees: 99, founded: 2010 }, '', criteria)).toBe(false);
    expect(meetsCriteria({}, 'A fintech company with 12 employees, founded in 2019.', criteria)).toBe(false);
    expect(meetsCriteria({}, 'A fintech company with 120 employees, founded in 2019.', criteria)).toBe(true);
    expect(meetsCriteria({}, 'A fintech company in Berlin.', criteria)).toBe(true);
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
