import { contentTerms, cutUnits, numbersIn, SEGMENTED, splitSentences, supportScore, termSet, withoutLinks } from '@lore/ai';

/**
 * Deep research (docs/agents.md, "Deep research"), the rules with no HTTP and no SQL: the workflow's state document,
 * the research areas a supervisor hands to its researchers, the notes a researcher takes from a fetched page, the
 * brief and the final report written from them without a model, the citation checker every report passes through,
 * and the server-sent frames of the research stream.
 */

export const RESEARCH_KIND = 'deep_research';

/** Waiting for the caller's answer to the clarifying question: not run by any worker, listed as active. */
export const AWAITING_CLARIFICATION = 'awaiting_clarification';

export const RESEARCH_STEPS = ['clarification', 'brief', 'research', 'report', 'completed'] as const;
export type ResearchStep = (typeof RESEARCH_STEPS)[number];

export const DEFAULT_MAX_UNITS = 5;
export const DEFAULT_MAX_ITERATIONS = 3;
/** The most researchers a run may have at once, and the most iterations one may take (bounds on every loop). */
export const MAX_UNITS_LIMIT = 20;
export const MAX_ITERATIONS_LIMIT = 10;
/** Research areas a brief plans at most. */
export const MAX_AREAS = 10;
/** Search results a researcher reads per iteration. */
export const PAGES_PER_ITERATION = 2;
/** Characters of a fetched page kept as the source's text: notes are taken from it, claims are checked against it. */
export const SOURCE_TEXT_CHARS = 8_000;
/** Sources a run keeps at most. */
export const MAX_SOURCES = 60;
/** Notes a researcher takes from one page, and keeps after compression. */
export const NOTES_PER_PAGE = 3;
export const NOTES_PER_AREA = 6;
/** A claim is supported by a source when at least this share of its content terms is in the source's text. */
export const MIN_SUPPORT = 0.6;

export interface ResearchSource {
  /** The number reports cite it by (`[n]`), 1.. in the order pages were read. */
  n: number;
  url: string;
  title: string;
  text: string;
}

export interface ResearchNote {
  text: string;
  /** The source it was read from. */
  n: number;
}

export interface ResearchArea {
  /** The question the researcher answers. */
  question: string;
  /** What it asks the web search. */
  query: string;
}

export interface ResearchUnit {
  iterations: number;
  done: boolean;
  notes: ResearchNote[];
  queries: string[];
  /** The last search results page read, and whether the area's own query ran dry and the question's is read instead. */
  page: number;
  fallback: boolean;
  /** The first page of the query now searched, and how many of its last words were dropped to broaden it. */
  from: number;
  broaden: number;
  /**
   * A result page of the query now searched known to lie past its last result (0: none known); no page from it on is
   * asked again. Absent in states written before it existed.
   */
  end?: number;
  /** Its `researcher_started` event is written (a resumed run does not write it again). Absent in older states. */
  started?: boolean;
}

export const newUnit = (): ResearchUnit => ({ iterations: 0, done: false, notes: [], queries: [], page: 0, fallback: false, from: 1, broaden: 0, end: 0 });

/** The query a researcher searches now: the area's words (or the question's), less the last `broaden` (at least two kept). */
export function unitQuery(unit: ResearchUnit, area: ResearchArea, base: string): string {
  const words = (unit.fallback ? base : area.query).split(' ').filter(Boolean);
  return words.slice(0, Math.max(Math.min(2, words.length), words.length - unit.broaden)).join(' ');
}

/** Search result pages one iteration asks for at most, looking for results no researcher has read yet. */
export const SEARCH_PAGES_PER_ITERATION = 4;

/**
 * One iteration's search: the next result page of the unit's query, and further pages while every result on them was
 * read already (at most SEARCH_PAGES_PER_ITERATION searches). An area whose own words find nothing more goes on with
 * the question's words (`base`) from a result page of its own (`own` + 1, so the units of a run spread over the
 * question's results); when that page lies past the question's last result, the question's results are read from
 * their first page instead (those read already are skipped). Only a query that finds nothing at all — an empty first
 * page — is broadened, by dropping its last word (down to two). Up to PAGES_PER_ITERATION results no researcher has
 * read are returned (`unread` says which; `take` takes them in the same turn, so two researchers never both get one);
 * none means the area has nothing new. The unit's cursor (page, fallback,
 * from, broaden, end) moves with every search, and is the unit's own: a unit's searches never run concurrently.
 */
export async function searchRound<R extends { url: string }>(
  unit: ResearchUnit,
  area: ResearchArea,
  base: string,
  how: {
    /** The unit's index: its own result page of the question's words is `own` + 1. */
    own: number;
    search: (query: string, page: number) => Promise<R[]>;
    unread: (url: string) => boolean;
    /**
     * Results returned at most (default PAGES_PER_ITERATION); a function is asked each time results are chosen, so a
     * limit shared by several units holds when they search at once. At 0 the round ends with nothing.
     */
    max?: number | (() => number);
    /** Called with the results returned as soon as they are chosen, before anything else runs (to take them). */
    take?: (fresh: R[]) => void;
  },
): Promise<{ query: string; fresh: R[]; searches: number }> {
  const { own, search, unread } = how;
  let query = unitQuery(unit, area, base);
  let searches = 0;
  while (searches < SEARCH_PAGES_PER_ITERATION) {
    query = unitQuery(unit, area, base);
    // A page known to lie past the query's last result is not asked for.
    if ((unit.end ?? 0) > 0 && unit.page + 1 >= unit.end!) break;
    unit.page++;
    searches++;
    const results = await search(query, unit.page);
    if (results.length === 0) {
      if (!unit.fallback && area.query !== base) {
        unit.fallback = true;
        unit.broaden = 0;
        unit.page = own;
        unit.from = own + 1;
        unit.end = 0;
        continue;
      }
      if (unit.page === unit.from && unit.from > 1) {
        // The query's results end before this unit's own page: read them from their first page.
        unit.end = unit.page;
        unit.from = 1;
        unit.page = 0;
        continue;
      }
      if (unit.page === unit.from && query.split(' ').length > 2) {
        unit.broaden++;
        unit.from = unit.fallback ? own + 1 : 1;
        unit.page = unit.from - 1;
        unit.end = 0;
        continue;
      }
      break;
    }
    const limit = Math.max(0, typeof how.max === 'function' ? how.max() : (how.max ?? PAGES_PER_ITERATION));
    if (limit === 0) break;
    const fresh = results.filter((r) => unread(r.url)).slice(0, limit);
    if (fresh.length > 0) {
      how.take?.(fresh);
      return { query, fresh, searches };
    }
  }
  return { query, fresh: [], searches };
}

export interface ResearchState {
  query: string;
  allow_clarification: boolean;
  max_concurrent_research_units: number;
  max_researcher_iterations: number;
  service_id: string;
  clarification: { question: string; answer: string | null } | null;
  research_brief: string;
  areas: ResearchArea[];
  units: Record<string, ResearchUnit>;
  sources: ResearchSource[];
  final_report: string;
  partial: boolean;
  message: string;
  /** Sentences the citation checker removed from the final report. */
  removed_claims: number;
  /** Every web search the research asked failed and no page was read (the report and the message say so). */
  search_failed: boolean;
  spent: { fetches: number; model_tokens: number; wall_ms: number };
}

export function newResearchState(input: { query: string; allow_clarification: boolean; max_concurrent_research_units: number; max_researcher_iterations: number; service_id: string }): ResearchState {
  return {
    ...input,
    clarification: null,
    research_brief: '',
    areas: [],
    units: {},
    sources: [],
    final_report: '',
    partial: false,
    message: '',
    removed_claims: 0,
    search_failed: false,
    spent: { fetches: 0, model_tokens: 0, wall_ms: 0 },
  };
}

const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The state document as stored (missing keys filled, so an older or hand-edited row still reads). */
export function readResearchState(raw: Record<string, unknown> | null | undefined): ResearchState {
  const r = raw ?? {};
  const spent = (r.spent ?? {}) as Record<string, unknown>;
  const clar = r.clarification as { question?: unknown; answer?: unknown } | null | undefined;
  return {
    query: str(r.query),
    allow_clarification: r.allow_clarification === true,
    max_concurrent_research_units: num(r.max_concurrent_research_units, DEFAULT_MAX_UNITS),
    max_researcher_iterations: num(r.max_researcher_iterations, DEFAULT_MAX_ITERATIONS),
    service_id: str(r.service_id),
    clarification: clar ? { question: str(clar.question), answer: typeof clar.answer === 'string' ? clar.answer : null } : null,
    research_brief: str(r.research_brief),
    areas: Array.isArray(r.areas) ? (r.areas as ResearchArea[]) : [],
    units: (r.units ?? {}) as Record<string, ResearchUnit>,
    sources: Array.isArray(r.sources) ? (r.sources as ResearchSource[]) : [],
    final_report: str(r.final_report),
    partial: r.partial === true,
    message: str(r.message),
    removed_claims: num(r.removed_claims, 0),
    search_failed: r.search_failed === true,
    spent: { fetches: num(spent.fetches, 0), model_tokens: num(spent.model_tokens, 0), wall_ms: num(spent.wall_ms, 0) },
  };
}

/** The question with its clarification, as the research reads it. */
export const researchQuestion = (s: Pick<ResearchState, 'query' | 'clarification'>): string => (s.clarification?.answer ? `${s.query} (${s.clarification.answer})` : s.query);

/** The words a search engine needs from a question: its content words in order, each once (at most 8). */
export function searchTermsOf(text: string): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const m of text.matchAll(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu)) {
    const w = m[0];
    const key = w.toLowerCase();
    if (seen.has(key) || contentTerms(w).length === 0) continue;
    seen.add(key);
    out.push(w);
    if (out.length >= 8) break;
  }
  return out.join(' ');
}

/**
 * Research angles of the deterministic planner: each adds a word that pages about organisations, products and
 * people commonly carry, so its search finds another side of the topic (the first area is the question itself).
 */
const ANGLES: ReadonlyArray<{ label: string; word: string }> = [
  { label: 'history and founding', word: 'founded' },
  { label: 'products and services', word: 'products' },
  { label: 'people and leadership', word: 'team' },
  { label: 'size and scale', word: 'employees' },
];

/**
 * The research areas of a question without a model: the question itself, then one area per angle — five, as many as
 * the default max_concurrent_research_units, so a default run researches every area at once.
 */
export function planAreas(question: string, maxAreas = ANGLES.length + 1): ResearchArea[] {
  const base = searchTermsOf(question) || cutUnits(question, 200);
  const areas: ResearchArea[] = [{ question: question.trim(), query: base }];
  for (const a of ANGLES) areas.push({ question: `${question.trim()}: ${a.label}`, query: `${base} ${a.word}` });
  return areas.slice(0, Math.max(1, Math.min(maxAreas, MAX_AREAS)));
}

/** The brief's five sections, in order (spec 3, "Research result"). */
export const BRIEF_SECTIONS = ['Research question', 'Objectives', 'Research areas', 'Methodology', 'Expected deliverables'] as const;
/** The final report's five sections, in order. */
export const REPORT_SECTIONS = ['Executive summary', 'Key findings', 'Detailed analysis', 'Conclusions', 'Sources'] as const;

/** Whether a markdown document has every one of these `## ` sections, in this order. */
export function hasSections(markdown: string, sections: readonly string[]): boolean {
  const found = [...markdown.matchAll(/^##\s+(.+?)\s*$/gm)].map((m) => m[1]!.toLowerCase());
  let at = -1;
  for (const s of sections) {
    const i = found.indexOf(s.toLowerCase());
    if (i <= at) return false;
    at = i;
  }
  return true;
}

/** The brief without a model: the question, the objectives, the areas, how they are researched, what comes out. */
export function writeBrief(state: ResearchState, areas: readonly ResearchArea[]): string {
  const q = researchQuestion(state);
  return [
    '# Research brief',
    '',
    '## Research question',
    '',
    q,
    '',
    '## Objectives',
    '',
    `- Find what public web sources state about: ${q}`,
    `- Cover ${areas.length} research areas, each by one researcher in at most ${state.max_researcher_iterations} search, fetch and think iterations.`,
    '- Cite every finding to a page that was actually read.',
    '',
    '## Research areas',
    '',
    ...areas.map((a, i) => `${i + 1}. ${a.question}`),
    '',
    '## Methodology',
    '',
    `A supervisor runs at most ${state.max_concurrent_research_units} researchers at once. Each searches the web, reads the best results through Lore's guarded fetcher (robots.txt, size and time limits, SSRF guard), and keeps the sentences that answer its area as notes, each tied to the page it came from. The notes are compressed per area and the report is written from them; a checker removes any sentence whose cited page does not support it.`,
    '',
    '## Expected deliverables',
    '',
    '- A final report with an executive summary, key findings, a detailed analysis, conclusions and the sources read.',
    '',
  ].join('\n');
}

/**
 * Whether a "sentence" of a page's visible text reads as prose: not a title or a navigation bar run into the text (a
 * `|`, `·` or `•` in it), not a flattened list of labels and values (more than 40% of its words capitalised).
 */
export function isProse(text: string): boolean {
  if (/[|·•]/.test(text)) return false;
  const words = text.split(/\s+/).filter((w) => /\p{L}/u.test(w));
  const capitalised = words.filter((w) => /^[("'“]?\p{Lu}/u.test(w)).length;
  return words.length > 0 && capitalised / words.length <= 0.4;
}

/**
 * A page's sentence as a note: one line, without the markdown block markers (`>`, `#`) it may start with, so a note
 * that begins a report line never turns that line into a quote or a heading (until 2026-11-30 it did, and the checker
 * then left the whole line unchecked).
 */
export const plainNote = (text: string): string => text.replace(/\s+/g, ' ').trim().replace(/^(?:[>#]+\s*)+/, '');

/**
 * Sentences of a page's text worth keeping for a question: those sharing its words, best first (at most `max`). Read as
 * the checker reads them (`SEGMENTED`), so a note from a page in Chinese, Japanese or Thai is one sentence, the unit
 * its marker vouches for.
 */
export function takeNotes(question: string, source: ResearchSource, max = NOTES_PER_PAGE): ResearchNote[] {
  const terms = termSet(question, SEGMENTED);
  const scored: Array<{ text: string; score: number; i: number }> = [];
  splitSentences(source.text, 400, SEGMENTED).forEach((sentence, i) => {
    const text = plainNote(sentence);
    if (text.length < 30 || text.length > 500 || contentTerms(text, undefined, SEGMENTED).length < 4 || !isProse(text)) return;
    let score = 0;
    for (const t of new Set(contentTerms(text, undefined, SEGMENTED))) if (terms.has(t)) score++;
    if (score > 0) scored.push({ text, score, i });
  });
  scored.sort((a, b) => b.score - a.score || a.i - b.i);
  return scored.slice(0, max).map((s) => ({ text: s.text, n: source.n }));
}

/** An area's notes compressed: each sentence once (the same words from two pages count once), best first. */
export function compressNotes(question: string, notes: readonly ResearchNote[], max = NOTES_PER_AREA): ResearchNote[] {
  const terms = termSet(question, SEGMENTED);
  const seen = new Set<string>();
  const out: Array<ResearchNote & { score: number; i: number }> = [];
  notes.forEach((note, i) => {
    const key = contentTerms(note.text, undefined, SEGMENTED).join(' ');
    if (seen.has(key)) return;
    seen.add(key);
    let score = 0;
    for (const t of new Set(contentTerms(note.text, undefined, SEGMENTED))) if (terms.has(t)) score++;
    out.push({ ...note, score, i });
  });
  out.sort((a, b) => b.score - a.score || a.i - b.i);
  return out.slice(0, max).map(({ text, n }) => ({ text, n }));
}

const cite = (note: ResearchNote): string => {
  const text = plainNote(note.text.replace(/\s*\[\d+\]/g, ''));
  const end = /[.!?。｡！？]$/.exec(text);
  return end ? `${text.slice(0, -1)} [${note.n}]${end[0]}` : `${text} [${note.n}].`;
};

/** The marker of a partial report: a quoted remark at the top, one of the report's own lines (`ownReportLines`). */
export const partialRemark = (reason: string): string => `> **Partial report**: ${reason}. The research stopped early; what follows is built from the sources read until then.`;

/** Why a report is partial, as its marker says it (null: it is not). */
export const partialReasonOf = (s: Pick<ResearchState, 'partial' | 'message'>): string | null =>
  s.partial ? `budget spent: ${s.message.replace(/^partial report: budget spent: /, '')}` : null;

/**
 * Lore's own italic remarks in a report, standing where a section has nothing to say. The checker leaves exactly
 * these alone; any other italic line is checked like prose.
 */
export const REPORT_PLACEHOLDERS = {
  noAnswer: '_No page that was read answered the question._',
  searchFailed: '_Every web search failed (the search engine did not answer), so no page was read._',
  inSummary: '_The summary holds every finding._',
  none: '_None._',
  noArea: '_No page that was read spoke to this area._',
  noMore: '_The findings above are all the sources read support._',
} as const;
const PLACEHOLDERS: ReadonlySet<string> = new Set(Object.values(REPORT_PLACEHOLDERS));

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();
/** The report's title: the question it answers. */
export const reportTitle = (s: Pick<ResearchState, 'query' | 'clarification'>): string => `# Research report: ${oneLine(researchQuestion(s))}`;
/** An area's heading in the detailed analysis. */
export const areaHeading = (area: Pick<ResearchArea, 'question'>): string => `### ${oneLine(area.question)}`;

/**
 * The model's report as the run stores it (before the check): Lore's title (the model's own first-level title, if it
 * wrote one first, set aside) and the partial marker when the run is partial, then the model's text.
 */
export function modelReport(s: Pick<ResearchState, 'query' | 'clarification' | 'partial' | 'message'>, text: string): string {
  const body = text.replace(/\r\n?/g, '\n').replace(/^\s*#(?!#)[^\n]*(?:\n|$)/, '').trim();
  const reason = partialReasonOf(s);
  return [reportTitle(s), '', ...(reason ? [partialRemark(reason), ''] : []), body, ''].join('\n');
}

/**
 * The lines of a run's report that are Lore's own, not claims: the title, the partial marker when the run is partial,
 * and each research area's heading. The checker (`checkReport`) and the claim count (`reportClaims`) leave exactly
 * these lines, the five section headings and the placeholders alone, and check every other line.
 */
export function ownReportLines(s: Pick<ResearchState, 'query' | 'clarification' | 'partial' | 'message'> & { areas: ReadonlyArray<Pick<ResearchArea, 'question'>> }): string[] {
  const reason = partialReasonOf(s);
  return [reportTitle(s), ...(reason ? [partialRemark(reason)] : []), ...s.areas.map(areaHeading)];
}

/**
 * The final report without a model, extractive: every sentence is a note, cited to the page it was read from.
 * Summary: the three notes sharing the most words with the question (from different pages where it can); findings:
 * each area's best note not in the summary; analysis: each area's notes; conclusions: the best notes not shown in the
 * summary or findings. A note appears at most once outside the analysis.
 */
export function writeReport(state: ResearchState, compressed: ReadonlyArray<{ area: ResearchArea; notes: ResearchNote[] }>, partialReason: string | null, searchesFailed = false): string {
  const terms = termSet(researchQuestion(state), SEGMENTED);
  const relevance = (n: ResearchNote): number => new Set(contentTerms(n.text, undefined, SEGMENTED).filter((t) => terms.has(t))).size;
  const all = compressed.flatMap((c) => c.notes);
  const ranked = all.map((n, i) => ({ n, i, r: relevance(n) })).sort((a, b) => b.r - a.r || a.i - b.i).map((x) => x.n);
  const used = new Set<string>();
  const summary: ResearchNote[] = [];
  for (const pass of [true, false]) {
    for (const n of ranked) {
      if (summary.length >= 3) break;
      if (used.has(n.text) || (pass && summary.some((x) => x.n === n.n))) continue;
      summary.push(n);
      used.add(n.text);
    }
  }
  const findings: ResearchNote[] = [];
  for (const c of compressed) {
    const n = c.notes.find((x) => !used.has(x.text));
    if (!n) continue;
    findings.push(n);
    used.add(n.text);
  }
  const conclusions = ranked.filter((n) => !used.has(n.text)).slice(0, 2);
  const lines = [reportTitle(state), ''];
  if (partialReason) lines.push(partialRemark(partialReason), '');
  lines.push('## Executive summary', '');
  lines.push(summary.length > 0 ? summary.map(cite).join(' ') : searchesFailed ? REPORT_PLACEHOLDERS.searchFailed : REPORT_PLACEHOLDERS.noAnswer, '');
  lines.push('## Key findings', '');
  if (findings.length === 0) lines.push(summary.length > 0 ? REPORT_PLACEHOLDERS.inSummary : REPORT_PLACEHOLDERS.none);
  for (const n of findings) lines.push(`- ${cite(n)}`);
  lines.push('', '## Detailed analysis', '');
  for (const c of compressed) {
    lines.push(areaHeading(c.area), '');
    lines.push(c.notes.length > 0 ? c.notes.map(cite).join(' ') : REPORT_PLACEHOLDERS.noArea, '');
  }
  lines.push('## Conclusions', '');
  lines.push(conclusions.length > 0 ? conclusions.map(cite).join(' ') : REPORT_PLACEHOLDERS.noMore, '');
  lines.push('## Sources', '');
  return lines.join('\n');
}

export interface CheckedReport {
  report: string;
  /** The sentences removed, and why. */
  removed: Array<{ sentence: string; reason: 'uncited' | 'unsupported' }>;
  /** The sources the checked report cites. */
  cited: number[];
}

const MARKER = /\s*\[(\d+)\]/g;
/** A line's markdown block markers (heading, quote, list item, any nesting of them): stripped, the rest is checked. */
const LEAD = /^\s*(?:(?:#{1,6}|>)\s*|(?:[-*+•]|\d+[.)])\s+)*/;
const SECTION_HEADINGS: ReadonlySet<string> = new Set(REPORT_SECTIONS.map((x) => `## ${x.toLowerCase()}`));
/** A table's delimiter row (`|---|:--:|`): it holds a pipe, dashes, colons and spaces only. */
const TABLE_DELIMITER = /^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$/;
/** A cell separator: a pipe not escaped by a backslash. */
const PIPE = /(?<!\\)\|/;
/**
 * A table cell's sentence of more content words than this is a claim of its own; a shorter one is a label (a column's
 * name, a company's, a year, a count): in the header never a claim, in a body row one of the row's facts.
 */
const CELL_LABEL_TERMS = 3;

/**
 * Whether a report line is one of Lore's own, never a claim: blank, one of `own` (`ownReportLines`: the title, the
 * partial marker, the areas' headings), a `## ` heading of the five sections, or a placeholder. Exact lines only: a
 * heading, quote or italic line anyone else wrote is checked like prose (until 2026-11-30 every `#`, `>`, `_…_` and
 * `---` line was passed unchecked, so a model, or a page's injected instruction, could put any claim in a report).
 */
function isOwnLine(line: string, own: ReadonlySet<string>): boolean {
  const t = line.trim();
  return t === '' || own.has(t) || PLACEHOLDERS.has(t) || SECTION_HEADINGS.has(t.replace(/\s+/g, ' ').toLowerCase());
}

const isDelimiterRow = (text: string): boolean => text.includes('|') && TABLE_DELIMITER.test(text.trim());

/** A report line read for the checker: Lore's own, prose, or a row of a markdown table (its header, delimiter or a body row). */
interface ReportLine {
  line: string;
  own: boolean;
  lead: string;
  text: string;
  table?: 'header' | 'delimiter' | 'row';
}

/**
 * The lines of a report outside the Sources section: Lore's own (`own`), or lines read as claims, each with its
 * markdown block markers (`lead`) and its text. A table (a line with a pipe followed by a delimiter row, then the lines
 * with a pipe after it) is read row by row, and so is any other line that starts with a pipe. `sources`: called for
 * the `## Sources` heading that starts that section (nothing after it is a claim).
 */
function* claimLines(markdown: string, own: ReadonlySet<string>, sources?: (line: string) => void): Generator<ReportLine> {
  let inSources = false;
  let inTable = false;
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  const split = (line: string): { lead: string; text: string } => {
    const lead = LEAD.exec(line)?.[0] ?? '';
    return { lead, text: line.slice(lead.length) };
  };
  for (const [i, line] of lines.entries()) {
    const heading = /^##\s+(.+?)\s*$/.exec(line);
    if (heading) inSources = heading[1]!.toLowerCase() === 'sources';
    if (inSources) {
      if (heading) sources?.(line);
      continue;
    }
    if (isOwnLine(line, own)) {
      inTable = false;
      yield { line, own: true, lead: '', text: '' };
      continue;
    }
    const { lead, text } = split(line);
    let table: ReportLine['table'];
    if (inTable && isDelimiterRow(text)) table = 'delimiter';
    else if (PIPE.test(text) && !isDelimiterRow(text) && lines[i + 1] !== undefined && isDelimiterRow(split(lines[i + 1]!).text)) table = 'header';
    else if ((inTable && PIPE.test(text)) || text.trimStart().startsWith('|')) table = 'row';
    inTable = table !== undefined;
    yield { line, own: false, lead, text, table };
  }
}

/** How the checker runs: the report's own lines, and the share of a claim's terms a source must hold. */
export interface CheckOptions {
  /** Lines that are Lore's own (`ownReportLines`), left alone. */
  own?: readonly string[];
  minSupport?: number;
}

/** A sentence of a line or a table cell: its text without markers, and the sources it cites. */
interface Sentence {
  text: string;
  markers: number[];
}

/** The sentences of a line or cell, read with scripts written without spaces segmented (`SEGMENTED`). */
function sentencesOf(text: string): Sentence[] {
  return splitSentences(text, 500, SEGMENTED).map((s) => ({ text: s.replace(MARKER, '').trim(), markers: [...new Set([...s.matchAll(MARKER)].map((m) => Number(m[1])))] }));
}

/** A text makes a claim when it has `min` content words or more (link addresses' words counted: an uncited link goes). */
const makesClaim = (text: string, min = 2): boolean => contentTerms(text, undefined, SEGMENTED).length >= min;

/** What a claim, or a page, says for the support check: its prose, without link addresses, in compatibility form (full-width digits are digits). */
const proseOf = (text: string): string => withoutLinks(text).normalize('NFKC');

/** A sentence with its markers, before its final stop if it has one. */
function marked(text: string, markers: readonly number[]): string {
  const marks = markers.map((n) => `[${n}]`).join('');
  if (marks === '') return text;
  if (text === '') return marks;
  const end = /[.!?。｡！？။។៕]+["')」』”’）》]*$/u.exec(text);
  return end ? `${text.slice(0, end.index).trimEnd()} ${marks}${end[0]}` : `${text} ${marks}`;
}

/** Sentences joined again: with a space, but none after the stop of a script written without spaces (`。`, `！`, `？`). */
function joined(parts: readonly string[]): string {
  return parts.reduce((all, p) => (all === '' ? p : /[。｡！？]["')」』”’）》]*$/u.test(all) ? `${all}${p}` : `${all} ${p}`), '');
}

/** A table row's cells (its outer pipes set aside; an escaped pipe `\|` stays in its cell). */
function cellsOf(text: string): string[] {
  let t = text.trim();
  if (t.startsWith('|')) t = t.slice(1);
  if (t.endsWith('|') && !t.endsWith('\\|')) t = t.slice(0, -1);
  return t.split(PIPE).map((c) => c.trim());
}

/** One claim a table row makes, with the sentences it stands for (`at`: cell and sentence). */
interface RowClaim {
  claim: string;
  markers: number[];
  at: Array<[number, number]>;
  /** The row's claim, cited by no marker of its own: read with the markers of this cell (the row's last cited claim). */
  via?: [number, number];
}

const at = ([c, i]: readonly [number, number]): string => `${c}:${i}`;

/**
 * The claims of a table row. A cell's sentence of more than CELL_LABEL_TERMS content words with markers of its own is a
 * claim of its own, like a sentence of prose. The rest of a body row (its short cells: a name, a year, "99 employees";
 * and any longer sentence without a marker) is one claim, the row's, when it holds two content words or more:
 * "Quillfin | 2016 | 99" states something only as a row. It is cited by the markers written in that rest (a sources
 * column, a marker beside a name), or, when there are none, by those of the row's last claim of its own (a marker at
 * the end of the row). In the header a longer sentence is a claim cited by its own markers, a shorter one a column
 * label, never a claim.
 */
function rowClaims(cells: readonly Sentence[][], header: boolean): RowClaim[] {
  const out: RowClaim[] = [];
  const rest: Array<[number, number]> = [];
  let last: [number, number] | undefined;
  for (const [c, cell] of cells.entries()) {
    for (const [i, s] of cell.entries()) {
      if (makesClaim(s.text, CELL_LABEL_TERMS + 1) && (header || s.markers.length > 0)) {
        out.push({ claim: s.text, markers: s.markers, at: [[c, i]] });
        last = [c, i];
      } else if (!header) rest.push([c, i]);
    }
  }
  const sentence = (p: [number, number]): Sentence => cells[p[0]]![p[1]]!;
  const text = rest.map((p) => sentence(p).text).filter((t) => t !== '').join(' | ');
  if (header || !makesClaim(text)) return out;
  const own = [...new Set(rest.flatMap((p) => sentence(p).markers))];
  out.push(own.length > 0 || last === undefined ? { claim: text, markers: own, at: rest } : { claim: text, markers: sentence(last).markers, at: rest, via: last });
  return out;
}

/**
 * Checks one table row (`judge`: the markers of a claim that support it), as prose is checked: a claim keeps the
 * markers that support it and is removed (its cells emptied) when none does. The row's claim read with another cell's
 * markers (`via`) is kept only when every marker that cell keeps supports it too. A body row all of whose claims are
 * removed is removed (null); the header row, and a row that makes no claim, keep every cell, so the table keeps its
 * columns. Markers beside no claim (a column label's, a lone name's) are dropped, as in prose.
 */
function checkRow(text: string, header: boolean, judge: (claim: string, markers: readonly number[]) => number[]): { row: string | null; removed: CheckedReport['removed']; cited: number[] } {
  const original = cellsOf(text);
  const cells = original.map(sentencesOf);
  const claims = rowClaims(cells, header);
  const removed: CheckedReport['removed'] = [];
  const dropped = new Set<string>();
  const good = new Map<string, number[]>();
  let kept = 0;
  for (const c of claims) {
    let supporting = judge(c.claim, c.markers);
    if (c.via) {
      const theirs = good.get(at(c.via)) ?? [];
      supporting = theirs.length > 0 && theirs.every((n) => supporting.includes(n)) ? theirs : [];
    }
    if (supporting.length === 0) {
      removed.push({ sentence: c.claim, reason: c.markers.length === 0 ? 'uncited' : 'unsupported' });
      for (const p of c.at) dropped.add(at(p));
      continue;
    }
    kept += 1;
    if (!c.via) for (const p of c.at) good.set(at(p), supporting);
  }
  const cited = new Set<number>();
  const rendered = cells.map((cell, c) =>
    joined(
      cell.flatMap((s, i) => {
        if (dropped.has(at([c, i]))) return [];
        const markers = s.markers.filter((n) => good.get(at([c, i]))?.includes(n));
        for (const n of markers) cited.add(n);
        const out = marked(s.text, markers);
        return out === '' ? [] : [out];
      }),
    ),
  );
  if (!header && claims.length > 0 && kept === 0) return { row: null, removed, cited: [] };
  // A row the check leaves as it was keeps its own layout (padding, outer pipes or none).
  const same = rendered.every((c, x) => c === original[x]);
  return { row: same ? text : `| ${rendered.join(' | ')} |`, removed, cited: [...cited] };
}

/**
 * The citation checker. Every line of the report but Lore's own (`isOwnLine`) and the Sources section is read as
 * prose, its markdown block markers (heading, quote, list) set aside: each sentence that makes a claim (two content
 * words or more) must cite a fetched source that supports it: at least MIN_SUPPORT of the claim's content terms
 * (stemmed, stop words left out) occur in that source's kept text, and every number the claim states occurs there
 * too. Text in scripts written without spaces (Chinese, Japanese, Thai...) is read word by word (`SEGMENTED`), and
 * support is judged on prose only: link addresses, in the claim or in the page, are no part of it (`withoutLinks`).
 * Markers of sources that do not support their sentence are dropped; a sentence left with no marker — it cited
 * nothing, a source never fetched, or only unsupportive ones — is removed, and a line left with no sentence goes
 * (a heading or quote of invented claims as much as prose). A markdown table is checked cell by cell (`checkRow`). The
 * Sources section is then written again listing exactly the sources still cited.
 */
export function checkReport(markdown: string, sources: readonly ResearchSource[], options: CheckOptions = {}): CheckedReport {
  const minSupport = options.minSupport ?? MIN_SUPPORT;
  const own = new Set((options.own ?? []).map((l) => l.trim()));
  const bySource = new Map(
    sources.map((s) => {
      const text = proseOf(`${s.title} ${s.text}`);
      return [s.n, { source: s, terms: termSet(text, SEGMENTED), numbers: new Set(numbersIn(text)) }];
    }),
  );
  const judge = (claim: string, markers: readonly number[]): number[] => {
    const prose = proseOf(claim);
    return markers.filter((n) => {
      const s = bySource.get(n);
      return s !== undefined && supportScore(prose, s.terms, s.numbers, SEGMENTED) >= minSupport;
    });
  };
  const removed: CheckedReport['removed'] = [];
  const cited = new Set<number>();
  const out: string[] = [];
  for (const { line, own: isOwn, lead, text, table } of claimLines(markdown, own, (heading) => out.push(heading))) {
    if (isOwn || table === 'delimiter') {
      out.push(line);
      continue;
    }
    if (table) {
      const checked = checkRow(text, table === 'header', judge);
      removed.push(...checked.removed);
      for (const n of checked.cited) cited.add(n);
      if (checked.row !== null) out.push(lead + checked.row);
      continue;
    }
    const kept: string[] = [];
    for (const { text: claim, markers } of sentencesOf(text)) {
      if (!makesClaim(claim)) {
        if (claim !== '') kept.push(claim);
        continue;
      }
      if (markers.length === 0) {
        removed.push({ sentence: claim, reason: 'uncited' });
        continue;
      }
      const good = judge(claim, markers);
      if (good.length === 0) {
        removed.push({ sentence: claim, reason: 'unsupported' });
        continue;
      }
      for (const n of good) cited.add(n);
      kept.push(marked(claim, good));
    }
    if (kept.length > 0) out.push(lead + joined(kept));
  }
  if (!/^##\s+sources\s*$/im.test(markdown)) out.push('', '## Sources');
  const list = [...cited].sort((a, b) => a - b).map((n) => {
    const s = bySource.get(n)!.source;
    return `${n}. [${s.title.replace(/[[\]]/g, '') || s.url}](${s.url})`;
  });
  const report = `${out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n\n${list.length > 0 ? list.join('\n') : '_No source is cited._'}\n`;
  return { report, removed, cited: [...cited].sort((a, b) => a - b) };
}

/**
 * The sentences of a report that make claims, with their markers: the unit the benchmark's support share counts. The
 * same lines the checker checks (`own`: the run's `ownReportLines`), so a line the checker reads as a claim is counted;
 * a table row's claims as the checker reads them (`rowClaims`).
 */
export function reportClaims(report: string, own: readonly string[] = []): Array<{ claim: string; markers: number[] }> {
  const out: Array<{ claim: string; markers: number[] }> = [];
  for (const { text, table } of claimLines(report, new Set(own.map((l) => l.trim())))) {
    if (table === 'delimiter') continue;
    if (table) {
      for (const c of rowClaims(cellsOf(text).map(sentencesOf), table === 'header')) out.push({ claim: c.claim, markers: c.markers });
      continue;
    }
    for (const { text: claim, markers } of sentencesOf(text)) if (makesClaim(claim)) out.push({ claim, markers });
  }
  return out;
}

/** Whether `source` supports `claim` as the checker judges it. */
export function supports(claim: string, source: ResearchSource, minSupport = MIN_SUPPORT): boolean {
  const text = proseOf(`${source.title} ${source.text}`);
  return supportScore(proseOf(claim), termSet(text, SEGMENTED), new Set(numbersIn(text)), SEGMENTED) >= minSupport;
}

// ---- the stream ----

/** The `event` of a stream frame: spec 3's clarification, progress and complete, and Lore's error and stopped. */
export type ResearchFrameEvent = 'clarification' | 'progress' | 'complete' | 'error' | 'stopped';

export interface ResearchFrame {
  event: ResearchFrameEvent;
  thread_id: string;
  seq: number;
  /** The log event it was made from (started, brief, researcher_started, ...). */
  type: string;
  status: string;
  step: string;
  message: string;
  at: string;
  data: Record<string, unknown>;
  question?: string;
  research_brief?: string;
  final_report?: string;
  partial?: boolean;
}

const STEP_OF: Record<string, string> = {
  started: 'clarification',
  clarification: 'clarification',
  clarification_answered: 'brief',
  brief: 'research',
  researcher_started: 'research',
  researcher_progress: 'research',
  researcher_finished: 'research',
  notes_compressed: 'report',
  budget_spent: 'report',
  search_failed: 'report',
  completed: 'completed',
};

/** The frame of one logged event: what a client reads after `data: `. */
export function researchFrame(threadId: string, e: { seq: number; type: string; data: Record<string, unknown>; at: string }): ResearchFrame {
  const base = { thread_id: threadId, seq: e.seq, type: e.type, at: e.at, data: e.data, step: STEP_OF[e.type] ?? '', message: str(e.data.message) };
  switch (e.type) {
    case 'clarification':
      return { ...base, event: 'clarification', status: AWAITING_CLARIFICATION, question: str(e.data.question), message: str(e.data.question) };
    case 'completed':
      return { ...base, event: 'complete', status: 'completed', step: 'completed', research_brief: str(e.data.research_brief), final_report: str(e.data.final_report), partial: e.data.partial === true };
    case 'error':
      return { ...base, event: 'error', status: 'error' };
    // The step a stop came in: its event names it (a `stop_requested` written before 2026-11-30 does not, and has '').
    case 'stopped':
      return { ...base, event: 'stopped', status: 'stopped', step: str(e.data.step), message: base.message || 'the research was stopped' };
    case 'stop_requested':
      return { ...base, event: 'progress', status: 'stopping', step: str(e.data.step) };
    default:
      return { ...base, event: 'progress', status: 'processing' };
  }
}

/** The frame ends the stream: the research has ended. */
export const endsStream = (f: ResearchFrame): boolean => f.event === 'complete' || f.event === 'error' || f.event === 'stopped';

/** One server-sent event: `id: <seq>` and one `data:` line. */
export const researchSse = (f: ResearchFrame): string => `id: ${f.seq}\ndata: ${JSON.stringify(f)}\n\n`;
