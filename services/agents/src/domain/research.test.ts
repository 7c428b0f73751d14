import {
  BRIEF_SECTIONS,
  REPORT_SECTIONS,
  checkReport,
  compressNotes,
  endsStream,
  hasSections,
  newResearchState,
  planAreas,
  readResearchState,
  reportClaims,
  researchFrame,
  researchSse,
  searchTermsOf,
  isProse,
  newUnit,
  ownReportLines,
  modelReport,
  partialRemark,
  plainNote,
  unitQuery,
  SEARCH_PAGES_PER_ITERATION,
  searchRound,
  supports,
  takeNotes,
  writeBrief,
  writeReport,
  type ResearchSource,
} from './research';

const quillfin: ResearchSource = {
  n: 1,
  url: 'http://quillfin.localhost/',
  title: 'Quillfin | Fintech company in Berlin',
  text: 'Home About us Our team. Quillfin builds payment APIs for small shops. Quillfin is a fintech company in Berlin, Germany, with 99 employees, founded in 2016. Its products are Quillpay and Quillbooks.',
};
const ledgerly: ResearchSource = {
  n: 2,
  url: 'http://ledgerly.localhost/',
  title: 'Ledgerly | Fintech company in Berlin',
  text: 'Ledgerly is a fintech company in Berlin, Germany, with 40 employees, founded in 2019. Ledgerly sells bookkeeping software to freelancers across Germany.',
};
const state = () => newResearchState({ query: 'fintech companies in Berlin', allow_clarification: false, max_concurrent_research_units: 5, max_researcher_iterations: 3, service_id: 'svc-1' });

describe('deep research rules', () => {
  it('plans the question itself first, then one area per angle, each searchable', () => {
    const areas = planAreas('What fintech companies are there in Berlin?');
    expect(areas).toHaveLength(5);
    expect(areas[0]).toEqual({ question: 'What fintech companies are there in Berlin?', query: 'fintech companies Berlin' });
    expect(areas.slice(1).map((a) => a.query.split(' ').pop())).toEqual(['founded', 'products', 'team', 'employees']);
    expect(planAreas('x y z', 2)).toHaveLength(2);
    expect(searchTermsOf('the history of the Berlin fintech scene, Berlin banks')).toBe('history Berlin fintech scene banks');
  });

  it("searches an area's words, then the question's, each broadened by its last words down to two", () => {
    const area = { question: 'q', query: 'fintech companies Berlin founded' };
    const unit = newUnit();
    expect(unitQuery(unit, area, 'fintech companies Berlin')).toBe('fintech companies Berlin founded');
    unit.broaden = 1;
    expect(unitQuery(unit, area, 'fintech companies Berlin')).toBe('fintech companies Berlin');
    unit.broaden = 5;
    expect(unitQuery(unit, area, 'fintech companies Berlin')).toBe('fintech companies');
    unit.fallback = true;
    unit.broaden = 0;
    expect(unitQuery(unit, area, 'fintech companies Berlin')).toBe('fintech companies Berlin');
    expect(unitQuery({ ...unit, broaden: 3 }, { question: 'q', query: 'x' }, 'fintech')).toBe('fintech');
  });

  describe('one iteration\'s search (searchRound)', () => {
    /** A search engine holding `lists[query]` (10 results a page), recording every (query, page) asked. */
    const engine = (lists: Record<string, string[]>) => {
      const asked: string[] = [];
      const search = async (query: string, page: number) => {
        asked.push(`${query} p${page}`);
        return (lists[query] ?? []).slice((page - 1) * 10, page * 10).map((url) => ({ url }));
      };
      return { asked, search };
    };
    const base = 'fintech companies Berlin';
    const berlin = Array.from({ length: 8 }, (_, k) => `http://berlin-${k}.localhost/`);
    const everywhere = Array.from({ length: 19 }, (_, k) => `http://fintech-${k}.localhost/`);
    const lists = { [base]: berlin, [`${base} founded`]: berlin, 'fintech companies': everywhere };
    const area = { question: 'q: history and founding', query: `${base} founded` };

    it('returns the first results nobody has read, at most two, from the next page of the area\'s words', async () => {
      const e = engine(lists);
      const unit = newUnit();
      const read = new Set(berlin.slice(0, 3));
      const round = await searchRound(unit, area, base, { own: 1, unread: (url) => !read.has(url), search: e.search });
      expect(round).toEqual({ query: `${base} founded`, fresh: [{ url: berlin[3] }, { url: berlin[4] }], searches: 1 });
      expect(e.asked).toEqual([`${base} founded p1`]);
      expect(unit.page).toBe(1);
      // `take` takes them before another round can see them; `max` bounds them (no room left: none).
      const second = await searchRound(newUnit(), area, base, { own: 2, unread: (url) => !read.has(url), take: (fresh) => fresh.forEach((r) => read.add(r.url)), search: e.search });
      const third = await searchRound(newUnit(), area, base, { own: 3, unread: (url) => !read.has(url), max: 1, search: e.search });
      expect([second.fresh, third.fresh]).toEqual([[{ url: berlin[3] }, { url: berlin[4] }], [{ url: berlin[5] }]]);
      expect((await searchRound(newUnit(), area, base, { own: 4, unread: () => true, max: 0, search: e.search })).fresh).toEqual([]);
    });

    it("reads the question's results from their first page when the unit's own page lies past them, and does not broaden a question that finds something", async () => {
      const e = engine(lists);
      const unit = { ...newUnit(), page: 1 };
      const read = new Set(berlin.slice(0, 6));
      const round = await searchRound(unit, area, base, { own: 3, unread: (url) => !read.has(url), search: e.search });
      // The area's page 2 is empty; the question's own page (4) lies past its 8 results; its page 1 has two unread.
      expect(e.asked).toEqual([`${base} founded p2`, `${base} p4`, `${base} p1`]);
      expect(round.query).toBe(base);
      expect(round.fresh).toEqual([{ url: berlin[6] }, { url: berlin[7] }]);
      expect(unit).toMatchObject({ fallback: true, broaden: 0, from: 1, page: 1, end: 4 });
    });

    it('ends dry when every result is read, within SEARCH_PAGES_PER_ITERATION searches, and never asks a page known to be past the end', async () => {
      const e = engine(lists);
      const unit = { ...newUnit(), page: 1 };
      const all = () => false;
      const round = await searchRound(unit, area, base, { own: 1, unread: all, search: e.search });
      expect(round.fresh).toEqual([]);
      // Page 2 of the question is the unit's own, found empty: after its page 1, nothing is left to ask.
      expect(e.asked).toEqual([`${base} founded p2`, `${base} p2`, `${base} p1`]);
      expect(round.searches).toBeLessThanOrEqual(SEARCH_PAGES_PER_ITERATION);
      const again = await searchRound(unit, area, base, { own: 1, unread: all, search: e.search });
      expect(again).toMatchObject({ fresh: [], searches: 0 });

      const far = engine(lists);
      const dry = await searchRound({ ...newUnit(), page: 1 }, area, base, { own: 4, unread: all, search: far.search });
      expect(dry.fresh).toEqual([]);
      expect(far.asked).toHaveLength(SEARCH_PAGES_PER_ITERATION);
    });

    it('broadens a query only when it finds nothing at all, dropping its last word', async () => {
      const e = engine(lists);
      const question = 'fintech companies Berlin payments';
      const unit = newUnit();
      const round = await searchRound(unit, { question: 'q', query: question }, question, { own: 0, unread: () => true, search: e.search });
      expect(e.asked).toEqual([`${question} p1`, `${base} p1`]);
      expect(round).toMatchObject({ query: base, fresh: [{ url: berlin[0] }, { url: berlin[1] }] });
      expect(unit.broaden).toBe(1);
    });

    it('asks a limit given as a function when it chooses results, and at 0 ends the round without searching on', async () => {
      const e = engine(lists);
      let left = 1;
      const round = await searchRound(newUnit(), { question: 'q', query: base }, base, { own: 0, unread: () => true, search: e.search, max: () => left });
      expect(round.fresh).toHaveLength(1);
      left = 0;
      const none = await searchRound(newUnit(), { question: 'q', query: base }, base, { own: 0, unread: () => true, search: e.search, max: () => left });
      expect(none.fresh).toEqual([]);
      expect(none.searches).toBe(1);
    });
  });

  it('writes a brief with the five sections in order, naming every area', () => {
    const s = state();
    const areas = planAreas(s.query);
    const brief = writeBrief(s, areas);
    expect(hasSections(brief, BRIEF_SECTIONS)).toBe(true);
    for (const a of areas) expect(brief).toContain(a.question);
    expect(hasSections('## Objectives\n## Research question\n## Research areas\n## Methodology\n## Expected deliverables', BRIEF_SECTIONS)).toBe(false);
  });

  it('takes as notes the sentences that answer the question, each tied to its source', () => {
    const notes = takeNotes('fintech companies in Berlin founded', quillfin);
    expect(notes[0]).toEqual({ text: 'Quillfin is a fintech company in Berlin, Germany, with 99 employees, founded in 2016.', n: 1 });
    expect(notes.every((n) => n.n === 1)).toBe(true);
    const page = { ...quillfin, text: 'Quillfin | Fintech company in Berlin Home · About us · Our team Quillfin builds fintech software in Berlin. Company facts Industry Fintech Headquarters Berlin, Germany Employees 99 Founded 2016 Products Quillpay. Quillfin was founded in 2016 in Berlin by two bankers.' };
    expect(takeNotes('fintech Berlin founded', page).map((n) => n.text)).toEqual(['Quillfin was founded in 2016 in Berlin by two bankers.']);
    expect(isProse('Quillfin is a fintech company in Berlin, Germany, with 99 employees.')).toBe(true);
    expect(isProse('Company facts Industry Fintech Headquarters Berlin, Germany Employees 99')).toBe(false);
    const twice = compressNotes('fintech Berlin', [...notes, ...notes]);
    expect(twice).toHaveLength(new Set(notes.map((n) => n.text)).size);
  });

  it('keeps supported claims, removes invented, uncited and unfetched ones, and lists only the sources still cited', () => {
    const report = [
      '# Report',
      '',
      partialRemark('budget spent: fetches (4 of 4)'),
      '',
      '## Executive summary',
      '',
      'Quillfin is a fintech company in Berlin with 99 employees [1]. Quillfin was acquired by Globex Holdings for 900 million dollars in 2021 [1].',
      '',
      '## Key findings',
      '',
      '- Ledgerly sells bookkeeping software to freelancers [2][1].',
      '- Ledgerly was founded in 2019 in Berlin [7].',
      '- Berlin has the largest fintech scene of Europe.',
      '',
      '## Detailed analysis',
      '',
      '### Companies',
      '',
      'Quillfin builds payment APIs for small shops [1].',
      '',
      '## Conclusions',
      '',
      'Quillfin was founded in 2016 [1].',
      '',
      '## Sources',
      '',
      '1. anything',
      '9. [A page never read](http://nowhere.localhost/)',
    ].join('\n');
    const checked = checkReport(report, [quillfin, ledgerly], { own: [partialRemark('budget spent: fetches (4 of 4)')] });
    expect(checked.removed).toEqual([
      { sentence: 'Quillfin was acquired by Globex Holdings for 900 million dollars in 2021.', reason: 'unsupported' },
      { sentence: 'Ledgerly was founded in 2019 in Berlin.', reason: 'unsupported' },
      { sentence: 'Berlin has the largest fintech scene of Europe.', reason: 'uncited' },
    ]);
    expect(checked.report).toContain('Quillfin is a fintech company in Berlin with 99 employees [1].');
    expect(checked.report).toContain('- Ledgerly sells bookkeeping software to freelancers [2].');
    expect(checked.report).toContain(partialRemark('budget spent: fetches (4 of 4)'));
    expect(checked.report).not.toMatch(/Globex|largest|nowhere|\[7\]/);
    expect(checked.cited).toEqual([1, 2]);
    expect(checked.report.split('## Sources')[1]!.trim()).toBe('1. [Quillfin | Fintech company in Berlin](http://quillfin.localhost/)\n2. [Ledgerly | Fintech company in Berlin](http://ledgerly.localhost/)');
    for (const c of reportClaims(checked.report, [partialRemark('budget spent: fetches (4 of 4)')])) {
      expect(c.markers.length).toBeGreaterThan(0);
      expect(c.markers.every((n) => supports(c.claim, n === 1 ? quillfin : ledgerly))).toBe(true);
    }
  });

  it("checks every line but Lore's own: a model's heading, quote, italic or rule line of an invented claim is removed like prose", () => {
    const s = { ...state(), partial: true, message: 'partial report: budget spent: fetches (4 of 4)', areas: planAreas('fintech companies in Berlin').slice(0, 2) };
    const own = ownReportLines(s);
    const invented = [
      '> Quillfin and Ledgerly were all founded in 1850 and employ 90000 people each.',
      '_Quillfin and Ledgerly are run by convicted fraudsters according to regulators._',
      '### Quillfin and Ledgerly all went bankrupt in 2023',
      '--- Quillfin and Ledgerly all went bankrupt in 2023 and owe 5 billion euros.',
      '## Quillfin secretly owns every bank in Berlin',
      '> **Partial report**: Quillfin was bought by Globex Holdings for 900 million dollars.',
      '# Research report: Quillfin was bought by Globex Holdings',
    ];
    const report = [
      own[0],
      '',
      own[1],
      '',
      '## Executive summary',
      '',
      ...invented,
      '> Quillfin builds payment APIs for small shops [1].',
      '### Ledgerly sells bookkeeping software to freelancers [2]',
      '',
      '## Key findings',
      '',
      '_The summary holds every finding._',
      '',
      '## Detailed analysis',
      '',
      own[2],
      '',
      '_No page that was read spoke to this area._',
      '',
      own[3],
      '',
      '### Funding',
      '',
      '## Conclusions',
      '',
      '_The findings above are all the sources read support._',
      '',
      '## Sources',
    ].join('\n');
    // Counted as claims before the check, each without a marker: the benchmark sees what the checker sees.
    const before = reportClaims(report, own);
    expect(before.filter((c) => c.markers.length === 0)).toHaveLength(invented.length);
    const checked = checkReport(report, [quillfin, ledgerly], { own });
    expect(checked.removed.map((r) => r.reason)).toEqual(invented.map(() => 'uncited'));
    expect(checked.report).not.toMatch(/1850|fraudsters|bankrupt|owns every bank|Globex/);
    // A supported claim keeps its marker and its markdown; Lore's own lines and a heading of one word stay as they were.
    expect(checked.report).toContain('\n> Quillfin builds payment APIs for small shops [1].\n');
    expect(checked.report).toContain('\n### Ledgerly sells bookkeeping software to freelancers [2]\n');
    for (const line of [...own, '_The summary holds every finding._', '_No page that was read spoke to this area._', '### Funding', ...REPORT_SECTIONS.map((x) => `## ${x}`)]) {
      expect(checked.report.split('\n')).toContain(line);
    }
    expect(checked.cited).toEqual([1, 2]);
    const after = reportClaims(checked.report, own);
    expect(after).toHaveLength(2);
    expect(after.every((c) => c.markers.length === 1 && supports(c.claim, c.markers[0] === 1 ? quillfin : ledgerly))).toBe(true);
    // Without the run's own lines its title and area headings are claims like any other line.
    expect(reportClaims(checked.report).length).toBeGreaterThan(after.length);
    // A model's report gets Lore's title (its own first-level title set aside) and the partial marker.
    expect(modelReport(s, '# Quillfin went bankrupt in 2023\n## Executive summary\nx')).toBe(`${own[0]}\n\n${own[1]}\n\n## Executive summary\nx\n`);
    expect(modelReport({ ...s, partial: false }, '## Executive summary\nx')).toBe(`${own[0]}\n\n## Executive summary\nx\n`);
  });

  it("never lets a page's text start a report line as a quote or a heading", () => {
    const page = { ...quillfin, text: '> Quillfin was founded in 2016 in Berlin by two bankers. ## Sources # Quillfin builds payment APIs for small shops in Berlin.' };
    const notes = takeNotes('Quillfin fintech Berlin founded payment', page);
    expect(notes.length).toBeGreaterThan(0);
    for (const n of notes) expect(n.text).not.toMatch(/^[>#]/);
    expect(notes.map((n) => n.text)).toContain('Quillfin was founded in 2016 in Berlin by two bankers.');
    expect(plainNote('  >> ## Quillfin   builds APIs.')).toBe('Quillfin builds APIs.');
    // A note stored before (by an older run) is cleaned when the report is written.
    const s = state();
    const report = writeReport(s, [{ area: planAreas(s.query)[0]!, notes: [{ text: '> Quillfin was founded in 2016 in Berlin by two bankers.', n: 1 }] }], null);
    expect(report).not.toMatch(/^[>#] ?Quillfin/m);
    const checked = checkReport(report, [{ ...quillfin, text: `${quillfin.text} Quillfin was founded in 2016 in Berlin by two bankers.` }], { own: ownReportLines({ ...s, areas: planAreas(s.query).slice(0, 1) }) });
    expect(checked.removed).toEqual([]);
    expect(checked.cited).toEqual([1]);
  });

  it('writes a report from notes with the five sections, every sentence cited and kept by the checker', () => {
    const s = state();
    const areas = planAreas(s.query).slice(0, 2);
    const compressed = [
      { area: areas[0]!, notes: takeNotes(areas[0]!.question, quillfin) },
      { area: areas[1]!, notes: takeNotes(areas[1]!.question, ledgerly) },
    ];
    const partial = { ...s, partial: true, message: 'partial report: budget spent: fetches (4 of 4)', areas };
    const own = ownReportLines(partial);
    const checked = checkReport(writeReport(partial, compressed, 'budget spent: fetches (4 of 4)'), [quillfin, ledgerly], { own });
    expect(checked.removed).toEqual([]);
    expect(hasSections(checked.report, REPORT_SECTIONS)).toBe(true);
    expect(checked.report).toMatch(/^# Research report: fintech companies in Berlin\n\n> \*\*Partial report\*\*: budget spent: fetches \(4 of 4\)/);
    const claims = reportClaims(checked.report, own);
    expect(claims.length).toBeGreaterThan(2);
    expect(claims.every((c) => c.markers.length > 0)).toBe(true);
    // Outside the detailed analysis, a note appears once.
    const [head, rest] = checked.report.split('## Detailed analysis');
    const outside = reportClaims(`${head}\n## Conclusions${rest!.split('## Conclusions')[1]}`, own).map((c) => c.claim);
    expect(new Set(outside).size).toBe(outside.length);
    // A report with nothing read keeps its sections and placeholders, and makes no claim.
    const empty = checkReport(writeReport(s, [], null), [], { own: ownReportLines({ ...s, areas: [] }) });
    expect(hasSections(empty.report, REPORT_SECTIONS)).toBe(true);
    expect(empty.removed).toEqual([]);
    expect(empty.report).toContain('_No page that was read answered the question._');
    expect(empty.cited).toEqual([]);
  });

  it('frames events as the spec names them, and ends the stream on complete, error and stopped', () => {
    const at = '2026-11-25T10:00:00.000Z';
    const c = researchFrame('t', { seq: 2, type: 'clarification', data: { question: 'Which region?' }, at });
    expect(c).toMatchObject({ event: 'clarification', question: 'Which region?', status: 'awaiting_clarification', seq: 2 });
    const done = researchFrame('t', { seq: 9, type: 'completed', data: { final_report: '# R', research_brief: '# B', partial: true }, at });
    expect(done).toMatchObject({ event: 'complete', final_report: '# R', research_brief: '# B', partial: true, status: 'completed' });
    expect(researchFrame('t', { seq: 3, type: 'researcher_started', data: { unit: 0 }, at }).event).toBe('progress');
    expect([done, researchFrame('t', { seq: 4, type: 'error', data: {}, at }), researchFrame('t', { seq: 4, type: 'stopped', data: {}, at })].every(endsStream)).toBe(true);
    expect(endsStream(c)).toBe(false);
    // A stop's frames name the step it came in.
    expect(researchFrame('t', { seq: 5, type: 'stop_requested', data: { step: 'research', message: 'stop requested' }, at })).toMatchObject({ event: 'progress', status: 'stopping', step: 'research' });
    expect(researchFrame('t', { seq: 6, type: 'stopped', data: { step: 'research' }, at })).toMatchObject({ event: 'stopped', step: 'research' });
    expect(researchFrame('t', { seq: 6, type: 'search_failed', data: { searches: 3 }, at })).toMatchObject({ event: 'progress', step: 'report' });
    expect(researchSse(done)).toMatch(/^id: 9\ndata: \{"[^\n]*\}\n\n$/);
  });

  it('reads a stored state with missing keys filled', () => {
    expect(readResearchState({ query: 'q' })).toMatchObject({ query: 'q', max_concurrent_research_units: 5, max_researcher_iterations: 3, sources: [], spent: { fetches: 0 } });
  });
});
