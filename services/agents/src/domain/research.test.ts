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

describe('the citation checker on scripts written without spaces, links and tables', () => {
  const zh: ResearchSource = { n: 1, url: 'http://zh.localhost/', title: '蚂蚁科技 | 北京金融科技公司', text: '蚂蚁科技是一家位于北京的金融科技公司，成立于2016年，有99名员工。它为小商店提供支付服务。' };
  const ja: ResearchSource = { n: 2, url: 'http://ja.localhost/', title: 'クイルフィン', text: 'クイルフィンはベルリンのフィンテック企業で、2016年に設立されました。従業員は99人です。小さな店舗向けに決済APIを提供しています。' };
  const th: ResearchSource = { n: 3, url: 'http://th.localhost/', title: 'ควอลฟิน บริษัทฟินเทคในเบอร์ลิน', text: 'ควอลฟินเป็นบริษัทฟินเทคในเบอร์ลิน ประเทศเยอรมนี มีพนักงาน 99 คน ก่อตั้งในปี 2016 ควอลฟินพัฒนาระบบชำระเงินสำหรับร้านค้าขนาดเล็ก' };
  const ko: ResearchSource = { n: 4, url: 'http://ko.localhost/', title: '퀼핀', text: '퀼핀은 베를린의 핀테크 회사이며 2016년에 설립되었습니다. 직원은 99명입니다.' };
  const report = (...lines: string[]) => ['## Executive summary', '', ...lines, '', '## Sources', ''].join('\n');

  it('removes a Chinese claim that cites nothing, keeps one its Chinese page supports and removes one it does not', () => {
    // Until 2026-12-01 a Chinese sentence was one "word", no claim, and kept unchecked.
    const uncited = checkReport(report('蚂蚁科技在2021年被环球控股以九亿美元收购。'), [zh]);
    expect(uncited.removed).toEqual([{ sentence: '蚂蚁科技在2021年被环球控股以九亿美元收购。', reason: 'uncited' }]);
    expect(uncited.report).not.toContain('环球');
    expect(reportClaims(report('蚂蚁科技在2021年被环球控股以九亿美元收购。'))).toEqual([{ claim: '蚂蚁科技在2021年被环球控股以九亿美元收购。', markers: [] }]);
    // Sentences end at 。 with no space after it, each checked against what it cites.
    const cited = checkReport(report('蚂蚁科技是一家位于北京的金融科技公司，成立于2016年 [1]。蚂蚁科技为小商店提供支付服务 [1]。蚂蚁科技被环球控股以九亿美元收购 [1]。'), [zh]);
    expect(cited.removed).toEqual([{ sentence: '蚂蚁科技被环球控股以九亿美元收购。', reason: 'unsupported' }]);
    expect(cited.report).toContain('\n蚂蚁科技是一家位于北京的金融科技公司，成立于2016年 [1]。蚂蚁科技为小商店提供支付服务 [1]。\n');
    expect(cited.cited).toEqual([1]);
    expect(supports('蚂蚁科技为小商店提供支付服务', zh)).toBe(true);
    // A number the page does not state is no more supported in full-width digits than in ASCII ones.
    expect(checkReport(report('蚂蚁科技成立于２０１９年，位于北京 [1]。'), [zh]).removed).toHaveLength(1);
    expect(checkReport(report('蚂蚁科技成立于２０１６年，位于北京 [1]。'), [zh]).removed).toEqual([]);
  });

  it('writes an extractive report from a Chinese page, a note a sentence, that the checker keeps whole', () => {
    const page: ResearchSource = { n: 1, url: 'http://zh.localhost/', title: '蚂蚁科技', text: '蚂蚁科技是一家位于北京的金融科技公司，成立于2016年，目前有99名员工。蚂蚁科技为北京、上海和广州的小商店提供移动支付服务和在线记账软件。' };
    const s = newResearchState({ query: '北京的金融科技公司', allow_clarification: false, max_concurrent_research_units: 5, max_researcher_iterations: 3, service_id: 'svc-1' });
    const areas = planAreas(s.query).slice(0, 1);
    const notes = takeNotes(areas[0]!.question, page);
    expect(notes.map((n) => n.text)).toEqual(['蚂蚁科技是一家位于北京的金融科技公司，成立于2016年，目前有99名员工。', '蚂蚁科技为北京、上海和广州的小商店提供移动支付服务和在线记账软件。']);
    const checked = checkReport(writeReport(s, [{ area: areas[0]!, notes }], null), [page], { own: ownReportLines({ ...s, areas }) });
    expect(checked.removed).toEqual([]);
    expect(checked.report).toContain('蚂蚁科技是一家位于北京的金融科技公司，成立于2016年，目前有99名员工 [1]。');
    expect(checked.cited).toEqual([1]);
  });

  it('checks Japanese and Thai claims word by word, and Korean as before', () => {
    const ja1 = checkReport(report('クイルフィンはベルリンのフィンテック企業です [2]。クイルフィンは2021年にグローベックスに買収されました [2]。クイルフィンはベルリンの銀行をすべて所有しています。'), [zh, ja]);
    expect(ja1.removed.map((r) => r.reason)).toEqual(['unsupported', 'uncited']);
    expect(ja1.report).toContain('\nクイルフィンはベルリンのフィンテック企業です [2]。\n');
    // Thai marks a sentence with a space: a cited one ends at the space after its marker.
    const thai = checkReport(report('ควอลฟินพัฒนาระบบชำระเงินสำหรับร้านค้าขนาดเล็ก [3] ควอลฟินถูกซื้อกิจการโดยบริษัทโกลเบ็กซ์ด้วยเงินเก้าร้อยล้านดอลลาร์ [3] ควอลฟินล้มละลายในปี 2023'), [th]);
    expect(thai.removed).toEqual([
      { sentence: 'ควอลฟินถูกซื้อกิจการโดยบริษัทโกลเบ็กซ์ด้วยเงินเก้าร้อยล้านดอลลาร์', reason: 'unsupported' },
      { sentence: 'ควอลฟินล้มละลายในปี 2023', reason: 'uncited' },
    ]);
    expect(thai.report).toContain('\nควอลฟินพัฒนาระบบชำระเงินสำหรับร้านค้าขนาดเล็ก [3]\n');
    const korean = checkReport(report('퀼핀은 베를린의 핀테크 회사이며 2016년에 설립되었습니다 [4]. 퀼핀은 글로벡스에 인수되었습니다 [4]. 퀼핀은 모든 은행을 소유합니다.'), [ko]);
    expect(korean.removed.map((r) => r.reason)).toEqual(['unsupported', 'uncited']);
    expect(korean.report).toContain('\n퀼핀은 베를린의 핀테크 회사이며 2016년에 설립되었습니다 [4].\n');
  });

  it("judges support on prose: a link's address is no part of a claim, nor of a page", () => {
    // The page's addresses hold "globex acquired quillfin 2021"; its prose does not.
    const page: ResearchSource = { ...quillfin, text: `${quillfin.text} Read more at https://news.example/globex-acquired-quillfin-2021-for-900-million or on [the press page](https://press.example/globex/acquired/quillfin/2021).` };
    expect(supports('Globex acquired Quillfin in 2021.', page)).toBe(false);
    expect(checkReport(report('Globex acquired Quillfin in 2021 [1].'), [page]).removed).toEqual([{ sentence: 'Globex acquired Quillfin in 2021.', reason: 'unsupported' }]);
    // A claim with a link is supported on its words, not its address's (numbers included); the link stays.
    const linked = [
      'Quillfin builds payment APIs for small shops, as [its site](https://quillfin.example/archive-2099/launch-news) says [1].',
      'Quillfin is a fintech company in Berlin (https://registry.example/companies/hrb-778899) [1].',
    ];
    const kept = checkReport(report(...linked), [quillfin]);
    expect(kept.removed).toEqual([]);
    for (const l of linked) expect(kept.report).toContain(`\n${l}\n`);
    // A sentence that is a link, and little more, is still a claim to cite, and only its prose can be supported.
    const bare = checkReport(report('Read https://evil.example/free-money-offer now.', 'See https://evil.example/quillfin-payment-apis-small-shops [1].'), [quillfin]);
    expect(bare.removed.map((r) => r.reason)).toEqual(['uncited', 'unsupported']);
    expect(bare.report).not.toContain('evil.example');
  });

  it('checks a table row by row, as sentences: header and delimiter rows stay, every row keeps its columns, a claim no source supports leaves its cell', () => {
    const table = [
      '| Company | Founded | Employees | Notes |',
      '|---|:---:|---:|---|',
      '| Quillfin | 2016 | 99 | Builds payment APIs for small shops [1] |',
      '| Ledgerly | 2019 | 40 | [2] |',
      '|  Ledgerly [2]  | Germany | 40 | Sells bookkeeping software to freelancers |',
      '| Quillfin [1] | 2016 | 99 | Was bought by Globex Holdings for 900 million dollars [1] |',
      '| Quillfin | 2016 | 99 | Was bought by Globex Holdings for 900 million dollars [1] |',
      '| Globex Holdings | 1850 | 90000 | [1] |',
      '| Ledgerly | Berlin | 40 | Sells bookkeeping software to freelancers |',
      '| Ledgerly [1][2] | Berlin | 40 |  |',
    ];
    const injected = ['| Company | Quillfin secretly owns every bank in Berlin and Germany |', '|---|---|', '| Quillfin | Builds payment APIs for small shops [1] |'];
    const bare = ['Company | Founded', '--- | ---', 'Quillfin [1] | 2016', 'Globex | 1850 [1]'];
    const sources = [quillfin, ledgerly];
    const checked = checkReport(report(...table, '', ...injected, '', ...bare), sources);
    expect(checked.removed).toEqual([
      { sentence: 'Was bought by Globex Holdings for 900 million dollars', reason: 'unsupported' },
      // The row's facts, cited only by the marker of the claim removed beside them, go with it.
      { sentence: 'Was bought by Globex Holdings for 900 million dollars', reason: 'unsupported' },
      { sentence: 'Quillfin | 2016 | 99', reason: 'unsupported' },
      { sentence: 'Globex Holdings | 1850 | 90000', reason: 'unsupported' },
      { sentence: 'Ledgerly | Berlin | 40 | Sells bookkeeping software to freelancers', reason: 'uncited' },
      { sentence: 'Quillfin secretly owns every bank in Berlin and Germany', reason: 'uncited' },
      { sentence: 'Globex | 1850', reason: 'unsupported' },
    ]);
    const body = checked.report.split('## Sources')[0]!.split('## Executive summary')[1]!.trim();
    expect(body).toBe(
      [
        // Rows the check leaves as they were keep their layout; a row the check changed is written again.
        ...table.slice(0, 5),
        '| Quillfin [1] | 2016 | 99 |  |',
        '| Ledgerly [2] | Berlin | 40 |  |',
        '',
        '| Company |  |',
        ...injected.slice(1),
        '',
        ...bare.slice(0, 3),
      ].join('\n'),
    );
    expect(checked.cited).toEqual([1, 2]);
    // Every claim left cites only sources that support it (as the benchmark counts), and a second check changes nothing.
    const claims = reportClaims(checked.report);
    expect(claims).toHaveLength(8);
    for (const c of claims) {
      expect(c.markers.length).toBeGreaterThan(0);
      for (const n of c.markers) expect(supports(c.claim, sources[n - 1]!)).toBe(true);
    }
    const again = checkReport(checked.report, sources);
    expect(again.removed).toEqual([]);
    expect(again.report).toBe(checked.report);
  });
});
