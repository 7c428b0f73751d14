/**
 * Planning and judging for the web research and deep search agents (docs/agents.md, "Web research and deep search
 * agents"). Pure: what a prompt asks for (companies, people or pages), the words a page must contain to answer it,
 * the search queries, whether the prompt is too vague to plan, and whether a read page answers it.
 */

export type ResearchTarget = 'company' | 'person' | 'page';

export interface ResearchPlan {
  target: ResearchTarget;
  /** Words every answering page contains (lower case, singular): the prompt's content words. */
  terms: string[];
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
    'people person persons employee employees staff team teams member members'
  ).split(' '),
);

const COMPANY_WORDS = new Set('company companies startup startups firm firms business businesses organisation organisations organization organizations vendor vendors provider providers maker makers brand brands who'.split(' '));
const PEOPLE_WORDS = new Set('people person persons employee employees staff team teams member members'.split(' '));

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

const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'`)\]]+/gi;

/** A word's singular-ish form: `companies` → `company`, `ctos` → `cto`, `engineers` → `engineer`. */
export function stem(word: string): string {
  const w = word.toLowerCase();
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us')) return w.slice(0, -1);
  return w;
}

/** The prompt's words as written (URLs left out). */
const wordsOf = (text: string): string[] => text.replace(URL_IN_TEXT, ' ').match(/[\p{L}\p{N}][\p{L}\p{N}+&-]*/gu) ?? [];

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
 * The plan of a prompt by rules. `person` when the prompt names roles or people, `company` when it names companies
 * (or asks "who"), else `page`. Terms: the content words left after grammar, requests, vague nouns and role words.
 */
export function planResearch(prompt: string): ResearchPlan {
  const words = wordsOf(prompt);
  const roles: string[][] = [];
  const terms: string[] = [];
  let people = false;
  let companies = false;
  for (const written of words) {
    const raw = written.toLowerCase();
    const w = stem(raw);
    if (ROLES[w]) {
      if (!roles.some((r) => r === ROLES[w])) roles.push(ROLES[w]!);
      continue;
    }
    if (PEOPLE_WORDS.has(raw) || PEOPLE_WORDS.has(w)) people = true;
    if (COMPANY_WORDS.has(raw) || COMPANY_WORDS.has(w)) companies = true;
    if (STOP.has(raw) || STOP.has(w) || w.length < 2) continue;
    // A word written with a capital is a name (Paris, SaaS): kept as written, never singularised.
    const term = /\p{Lu}/u.test(written) ? raw : w;
    if (!terms.includes(term)) terms.push(term);
  }
  const target: ResearchTarget = roles.length > 0 || people ? 'person' : companies ? 'company' : 'page';
  const kept = terms.slice(0, 8);
  const queries = kept.length === 0 ? [] : [kept.join(' '), ...(kept.length > 2 ? [kept.slice(0, 2).join(' ')] : [])];
  return { target, terms: kept, roles, queries, urls: urlsOf(prompt) };
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

/** Whether a text contains every term (as a word start: `fintech` matches `fintechs`, not `afintech`). */
export function containsTerms(text: string, terms: readonly string[]): boolean {
  const t = ` ${norm(text).replace(/[^\p{L}\p{N}+&-]+/gu, ' ')} `;
  return terms.every((term) => t.includes(` ${term}`));
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
