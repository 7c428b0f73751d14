import { cutUnits } from '@lore/ai';

import { MAX_PROMPT_CHARS, readPlaces, readQualifiers, type Criterion, type ExtractOptions } from './criteria';
import { INDUSTRIES, findTerms, normalizeText } from './lexicon';
import { scoreCandidate } from './scoring';

/**
 * Planning and judging for the web research and deep search agents (docs/agents.md, "Web research and deep search
 * agents"). Pure: what a prompt asks for (companies, people or pages), the words a page must contain to answer it,
 * the sizes and founding years a company must have, the search queries, whether the prompt is too vague to plan, and
 * whether a read page answers it.
 */

export type ResearchTarget = 'company' | 'person' | 'page';

export interface ResearchPlan {
  target: ResearchTarget;
  /** The prompt's content words (lower case, singular), for queries and snippets. */
  terms: string[];
  /** What every answering page contains: one word of each group ("Berlin or Munich" is one group of two). */
  required: string[][];
  /**
   * Sizes and founding years asked for ("more than 50 employees", "founded after 2015"), list building's hard criteria:
   * judged on an answering company's facts, never as page words. Companies and people only.
   */
  criteria: Criterion[];
  /** The roles a person must hold (each a list of spellings, any of which counts), for `person`. */
  roles: string[][];
  /** Web search queries, most specific first. */
  queries: string[];
  /** URLs the prompt names (read first). */
  urls: string[];
}

/** Words that say nothing about what to look for: grammar, requests, vague nouns, generic verbs. */
const STOP = new Set(
  (
    'a an and or the of in on at to for from with by into onto about over under near around as is are was were be been being ' +
    'i me my we us our you your it its this that these those there here who whom whose what which where when why how ' +
    'do does did can could would should will shall may might must please kindly ' +
    'find finding list listing show give get getting search searching look looking research researching tell want need like ' +
    'some any all every each more most best top good great interesting new other many few several various ' +
    'information info details data stuff things thing something anything everything someone anyone ' +
    'build builds building make makes making sell sells selling offer offers provide provides work works working ' +
    'based located headquartered operating active web internet online site sites website websites page pages ' +
    'company companies startup startups firm firms business businesses organisation organisations organization organizations ' +
    'vendor vendors provider providers maker makers brand brands ' +
    'people person persons employee employees staff team teams member members ' +
    // Comparisons and rankings: they qualify what is asked for, no page has to say them.
    'than after before since between less fewer least larger smaller bigger biggest largest smallest leading major ' +
    'have has having had with without employ employs employing size sized headcount'
  ).split(' '),
);

const COMPANY_WORDS = new Set('company companies startup startups firm firms business businesses organisation organisations organization organizations vendor vendors provider providers maker makers brand brands who'.split(' '));
const PEOPLE_WORDS = new Set('people person persons employee employees staff team teams member members'.split(' '));
/** Words that make a following people word a company's size: "with 50 employees", "having a large team". */
const SIZE_LEAD = new Set('with having has have employing'.split(' '));

/** Role words → the spellings a title may use. */
const ROLES: Record<string, string[]> = {
  ceo: ['chief executive officer', 'ceo'],
  cto: ['chief technology officer', 'cto'],
  cfo: ['chief financial officer', 'cfo'],
  coo: ['chief operating officer', 'coo'],
  cmo: ['chief marketing officer', 'cmo'],
  cio: ['chief information officer', 'cio'],
  cpo: ['chief product officer', 'cpo'],
  vp: ['vp', 'vice president'],
  founder: ['founder'],
  cofounder: ['co-founder', 'cofounder'],
  director: ['director'],
  head: ['head of'],
  executive: ['chief', 'executive', 'vp', 'vice president'],
  engineer: ['engineer', 'engineering'],
  manager: ['manager'],
  president: ['president'],
};

/**
 * An http(s) URL in a prompt's text: up to white space, a quote, `<`, `>`, or a `)` or `]` closing around it (Markdown
 * links, parentheses). A bracketed IPv6 host (`http://[2001:db8::1]/team`) is read whole: until 2026-11-30 it was cut
 * at its `]` and dropped as no URL. What is fetched is still the SSRF guard's to decide.
 */
export const URL_IN_TEXT = /\bhttps?:\/\/(?:\[[0-9a-f:.]+\][^\s<>"'`)\]]*|[^\s<>"'`)\]]+)/gi;

/** A word's singular-ish form: `companies` → `company`, `ctos` → `cto`, `engineers` → `engineer`. */
export function stem(word: string): string {
  const w = word.toLowerCase();
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us')) return w.slice(0, -1);
  return w;
}

/** The prompt's words as written, each with its position (URLs left out). */
const wordsAt = (text: string): Array<{ word: string; at: number }> => [...text.matchAll(/[\p{L}\p{N}][\p{L}\p{N}+&-]*/gu)].map((m) => ({ word: m[0], at: m.index ?? 0 }));

export function urlsOf(prompt: string): string[] {
  const out: string[] = [];
  for (const m of prompt.match(URL_IN_TEXT) ?? []) {
    try {
      const u = new URL(m.replace(/[.,;:!?]+$/, ''));
      u.hash = '';
      if (!out.includes(u.href)) out.push(u.href);
    } catch {
      // Not a URL after all.
    }
  }
  return out.slice(0, 10);
}

/**
 * Whether a people word says how big a company is rather than asking for people: inside a size qualifier the
 * criteria read ("more than 50 employees"), with a number just before it ("50 staff", "20-person team") or "of" and a
 * number after it ("a team of 20"), or led by "with", "having" ... ("with a large team").
 */
function isSizeWord(words: ReadonlyArray<{ word: string; at: number }>, k: number, qualified: boolean): boolean {
  if (qualified) return true;
  const lower = (j: number) => words[j]?.word.toLowerCase() ?? '';
  const before = [lower(k - 1), lower(k - 2), lower(k - 3)];
  if (before.slice(0, 2).some((w) => /^\d/.test(w) || /^\d[\d,.]*k?-(?:person|people|strong)$/.test(w))) return true;
  if (lower(k + 1) === 'of' && /^\d/.test(lower(k + 2))) return true;
  return before.some((w) => SIZE_LEAD.has(w));
}

/** Whether the text between two terms only joins them as alternatives ("Berlin or Munich", "A, B or C"). */
const joinsAlternatives = (gap: string): 'or' | 'comma' | null => {
  const words = gap.toLowerCase().match(/[\p{L}\p{N}/]+/gu) ?? [];
  if (words.length === 0) return /,/.test(gap) ? 'comma' : null;
  if (!words.every((w) => w === 'or' || w === 'and/or' || STOP.has(w))) return null;
  return words.some((w) => w === 'or' || w === 'and/or') ? 'or' : null;
};

/** A place, an industry, or another word: a comma lists alternatives only between two of one kind ("Berlin, Munich or Paris"). */
const kindOfTerm = (term: string): string => (readPlaces(term).length > 0 ? 'place' : findTerms(term, INDUSTRIES).length > 0 ? 'industry' : 'word');

/**
 * Each term its group, except runs joined by "or" (and by commas between terms of one kind, "Berlin, Munich or
 * Hamburg"): those are one group of alternatives.
 */
function groupAlternatives(found: ReadonlyArray<{ term: string; join: 'or' | 'comma' | null }>): string[][] {
  const runs: Array<{ terms: string[]; or: boolean }> = [];
  for (const f of found) {
    const last = runs[runs.length - 1];
    const comma = f.join === 'comma' && last !== undefined && kindOfTerm(f.term) !== 'word' && kindOfTerm(f.term) === kindOfTerm(last.terms[last.terms.length - 1]!);
    if (last && (f.join === 'or' || comma)) {
      last.terms.push(f.term);
      last.or ||= f.join === 'or';
    } else runs.push({ terms: [f.term], or: false });
  }
  return runs.flatMap((r) => (r.or ? [r.terms] : r.terms.map((t) => [t])));
}

/** Search queries: one a combination of the groups' alternatives (at most four), then the first two groups alone. */
function queriesOf(groups: readonly string[][]): string[] {
  if (groups.length === 0) return [];
  let combos: string[][] = [[]];
  for (const g of groups) combos = combos.flatMap((c) => g.map((w) => [...c, w])).slice(0, 4);
  const out = combos.map((c) => c.join(' '));
  if (groups.length > 2) out.push(groups.slice(0, 2).map((g) => g[0]).join(' '));
  return [...new Set(out)];
}

/**
 * The plan of a prompt by rules. `person` when the prompt names roles or asks for people ("people at ...",
 * "employees of ..."; a people word that gives a company's size, "with 50 employees" or "a team of 20", does not),
 * `company` when it names companies (or asks "who"), else `page`. Terms: the content words left after grammar,
 * requests, vague nouns, comparisons and role words. For companies and people, sizes and founding years are read
 * as criteria and their words (and any other bare number: "40 companies" is a count) are not terms; terms joined
 * by "or" are alternatives.
 */
export function planResearch(prompt: string, options: ExtractOptions = {}): ResearchPlan {
  // The criteria's reading of the prompt, URLs blanked to keep positions: a blank in `rest` is a qualifier's word.
  const text = cutUnits(normalizeText(prompt), MAX_PROMPT_CHARS).replace(URL_IN_TEXT, (m) => ' '.repeat(m.length));
  const { criteria, rest } = readQualifiers(text, 'company', options);
  const words = wordsAt(text);
  const qualified = (at: number): boolean => rest[at] === ' ';
  const roles: string[][] = [];
  let people = false;
  let companies = false;
  for (const [k, { word, at }] of words.entries()) {
    const raw = word.toLowerCase();
    const w = stem(raw);
    if (ROLES[w]) {
      if (!roles.some((r) => r === ROLES[w])) roles.push(ROLES[w]!);
      continue;
    }
    if ((PEOPLE_WORDS.has(raw) || PEOPLE_WORDS.has(w)) && !isSizeWord(words, k, qualified(at))) people = true;
    if (COMPANY_WORDS.has(raw) || COMPANY_WORDS.has(w)) companies = true;
  }
  const target: ResearchTarget = roles.length > 0 || people ? 'person' : companies ? 'company' : 'page';
  const entities = target !== 'page';
  const found: Array<{ term: string; join: 'or' | 'comma' | null }> = [];
  let lastEnd = -1;
  for (const { word, at } of words) {
    const raw = word.toLowerCase();
    const w = stem(raw);
    if (ROLES[w] || STOP.has(raw) || STOP.has(w) || w.length < 2) continue;
    // A company's size, founding year or a count is no word a page must hold.
    if (entities && (qualified(at) || /^[\d,.]+(?:k|\+)?(?:-(?:person|people|strong|employees?))?$/.test(w))) continue;
    // A word written with a capital is a name (Paris, SaaS): kept as written, never singularised.
    const term = /\p{Lu}/u.test(word) ? raw : w;
    const join = lastEnd < 0 ? null : joinsAlternatives((entities ? rest : text).slice(lastEnd, at));
    lastEnd = at + word.length;
    if (!found.some((f) => f.term === term)) found.push({ term, join });
  }
  const required = groupAlternatives(found).slice(0, 8);
  return { target, terms: required.flat(), required, criteria: entities ? criteria : [], roles, queries: queriesOf(required), urls: urlsOf(prompt) };
}

/**
 * Too vague to plan: the prompt names nothing to look for — no content word, no role and no URL once grammar,
 * requests ("find", "research"), vague nouns ("information", "things") and bare entity words ("companies",
 * "people") are set aside. "Find me some companies" is too vague; "fintech" is not.
 */
export function isTooVague(plan: ResearchPlan): boolean {
  return plan.terms.length === 0 && plan.roles.length === 0 && plan.urls.length === 0;
}

/** The question a too-vague prompt gets. */
export const CLARIFYING_QUESTION =
  'What should the research look for? Name the subject, e.g. an industry, a product or a place (like "fintech companies in Berlin"), a role (like "CTOs of SaaS companies"), or a site to start from.';

const norm = (s: string): string => s.toLowerCase().replace(/\s+/g, ' ');

/**
 * Whether a text contains every term, or one of each group of alternatives, as a word start (`fintech` matches
 * `fintechs`, not `afintech`); a number as a whole number (`50` does not match `500`).
 */
export function containsTerms(text: string, terms: ReadonlyArray<string | readonly string[]>): boolean {
  const t = ` ${norm(text).replace(/[^\p{L}\p{N}+&-]+/gu, ' ')} `;
  const has = (term: string) => (/^\d+$/.test(term) ? new RegExp(` ${term}(?!\\d)`).test(t) : t.includes(` ${term}`));
  return terms.every((group) => (typeof group === 'string' ? has(group) : group.some(has)));
}

/**
 * Whether a company's facts (its page's) meet the sizes and founding years asked for: list building's scorer judges
 * each on the facts, then on the page's text; only a company shown outside a range is refused, one whose page states
 * none of them is not (the criteria are applied where the page allows, never as words).
 */
export function meetsCriteria(facts: Record<string, unknown>, text: string, criteria: readonly Criterion[]): boolean {
  if (criteria.length === 0) return true;
  return scoreCandidate({ kind: 'company', data: facts, pageText: text }, criteria).verdicts.every((v) => v.outcome !== 'not_matched');
}

/** Whether a title holds one of the roles (any spelling of each; no roles: any title). */
export function holdsRole(title: string, roles: readonly string[][]): boolean {
  if (roles.length === 0) return true;
  const t = norm(title);
  return roles.some((spellings) => spellings.some((s) => new RegExp(`(^|[^a-z])${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`).test(t)));
}

/** The sentence of a text that holds the most terms (the row's snippet), at most `max` characters. */
export function bestSentence(text: string, terms: readonly string[], max = 500): string {
  let best = '';
  let hits = -1;
  for (const sentence of text.split(/(?<=[.!?])\s+|\n+/)) {
    const s = sentence.trim();
    if (s === '') continue;
    const lower = s.toLowerCase();
    const n = terms.filter((t) => lower.includes(t)).length;
    if (n > hits) {
      best = s;
      hits = n;
    }
  }
  return best.slice(0, max);
}

/** The http(s) URLs a reference text (an uploaded file) names, in order, each once, at most `max`. */
export function referenceUrls(text: string, max = 20): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/).slice(0, 5_000)) {
    for (const u of urlsOf(line)) if (out.length < max && !out.includes(u)) out.push(u);
  }
  return out;
}
