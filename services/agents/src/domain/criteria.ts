import { cutUnits } from '@lore/ai';
import {
  CHIEF_TITLES,
  CITIES,
  CITY_STATES,
  COUNTRIES,
  COUNTRY_BY_CODE,
  DEPARTMENTS,
  FUNCTIONS,
  INDUSTRIES,
  REGIONS,
  SENIORITY,
  STATES,
  findTerms,
  normalizeText,
  type ChiefTitle,
  type City,
  type Country,
  type Industry,
  type Region,
  type State,
  type Term,
  type TermHit,
} from './lexicon';

/**
 * Criteria: what a list-building prompt asks for, as spec 3's criterion objects (docs/agents.md, "Criteria and
 * scoring"). `extractCriteriaByRules` is the embedded default — deterministic, no model — reading industry,
 * location, company size, founding year, role, seniority, requested enrichment columns, the requested row count
 * and the words left over. `interpretCriterion` reads a criterion back (ours, a model's, or one a user edited) into
 * a typed constraint for scoring.
 */

export type SearchKind = 'company' | 'person';
export type CriterionType = 'hard_filter' | 'soft_filter' | 'enrichment';
export const CRITERION_TYPES: readonly CriterionType[] = ['hard_filter', 'soft_filter', 'enrichment'];
export const COLUMN_TYPES = ['text', 'badge', 'number', 'url', 'email', 'date'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

/** Spec 3's criterion: name, value, column_name (snake_case), columnType, description, type; widths in pixels. */
export interface Criterion {
  name: string;
  value: string;
  column_name: string;
  columnType: string;
  description: string;
  type: string;
  width: number;
  maxWidth: number;
  minWidth: number;
}

export interface ExtractedCriteria {
  kind: SearchKind;
  /** `company_search` or `people_search` (the snapshot's `category`, the restored list's `listType`). */
  category: 'company_search' | 'people_search';
  /** The first industry asked for, as a label ("Fintech"), or null. */
  industry: string | null;
  /** A short title for the list. */
  title: string;
  /** One sentence: what the list holds. */
  description: string;
  /** Rows asked for ("find 40 ..."), or null when the prompt names no number. */
  count: number | null;
  criteria: Criterion[];
  /** Words of the prompt no rule read (also the value of the `keywords` criterion when there is one). */
  keywords: string[];
}

export interface ExtractOptions {
  /** The clock for relative years ("founded in the last 5 years"). */
  now?: Date;
}

/** The largest row count read from a prompt; a larger number is not taken as a count. */
export const MAX_PROMPT_COUNT = 10_000;
/** Prompts are read up to this many characters. */
export const MAX_PROMPT_CHARS = 4_000;
const MAX_KEYWORDS = 8;

// ---------------------------------------------------------------------------------------------------------------
// Column names the rules write (records use the same names for the fields they are scored on)

export const COLUMNS = {
  industry: 'industry',
  location: 'location',
  employees: 'employees',
  founded: 'founded',
  role: 'title',
  seniority: 'seniority',
  department: 'department',
  keywords: 'keywords',
} as const;

const WIDTHS: Record<string, { width: number; minWidth: number; maxWidth: number }> = {
  text: { width: 200, minWidth: 120, maxWidth: 400 },
  badge: { width: 150, minWidth: 100, maxWidth: 250 },
  number: { width: 120, minWidth: 80, maxWidth: 200 },
  url: { width: 220, minWidth: 140, maxWidth: 400 },
  email: { width: 220, minWidth: 140, maxWidth: 360 },
  date: { width: 140, minWidth: 100, maxWidth: 200 },
};

/** Widths in pixels for a column type (unknown types get text's). */
export function columnWidths(columnType: string): { width: number; minWidth: number; maxWidth: number } {
  return WIDTHS[columnType] ?? WIDTHS.text!;
}

/** A column name in snake_case: ASCII letters, digits and underscores, at most 64 characters, never empty. */
export function snakeCase(text: string): string {
  const s = normalizeText(text)
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64)
    .replace(/_+$/, '');
  return s === '' ? 'criterion' : /^[0-9]/.test(s) ? `c_${s}`.slice(0, 64) : s;
}

function criterion(name: string, value: string, column_name: string, columnType: ColumnType, type: CriterionType, description: string): Criterion {
  return { name, value, column_name, columnType, description, type, ...columnWidths(columnType) };
}

// ---------------------------------------------------------------------------------------------------------------
// The reading of a prompt: every rule marks the characters it consumed

class Reading {
  readonly text: string;
  readonly lower: string;
  readonly taken: boolean[];

  constructor(prompt: string) {
    this.text = cutUnits(normalizeText(prompt), MAX_PROMPT_CHARS);
    this.lower = this.text.toLowerCase();
    this.taken = new Array<boolean>(this.text.length).fill(false);
  }

  /** Matches of `re` (global) over the free text, in order; each accepted match is consumed. */
  take(re: RegExp, accept: (m: RegExpMatchArray) => boolean = () => true): RegExpMatchArray[] {
    const out: RegExpMatchArray[] = [];
    for (const m of this.text.matchAll(re)) {
      const start = m.index ?? 0;
      const end = start + m[0].length;
      if (this.isTaken(start, end)) continue;
      if (!accept(m)) continue;
      this.consume(start, end);
      out.push(m);
    }
    return out;
  }

  terms<T extends Term>(terms: readonly T[]): TermHit<T>[] {
    return findTerms(this.text, terms, this.taken);
  }

  isTaken(start: number, end: number): boolean {
    for (let i = start; i < end; i++) if (this.taken[i]) return true;
    return false;
  }

  consume(start: number, end: number): void {
    for (let i = start; i < end; i++) this.taken[i] = true;
  }

  /** The words no rule consumed. */
  leftovers(): string[] {
    const words: string[] = [];
    for (const m of this.text.matchAll(/[\p{L}\p{N}][\p{L}\p{N}'&.+#-]*[\p{L}\p{N}+#]|[\p{L}\p{N}]/gu)) {
      const start = m.index ?? 0;
      if (this.isTaken(start, start + m[0].length)) continue;
      words.push(m[0]);
    }
    return words;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Numbers

/** A number as prompts write it; never starting inside another number (which also keeps long digit runs linear). */
const NUM = String.raw`(?<![\d,.'])(?:\d{1,3}(?:[,.']\d{3})+|\d+(?:\.\d+)?\s?[kK]|\d+)`;

/** "1,000" → 1000, "10k" → 10000, "2.5k" → 2500; null when not a finite non-negative number. */
export function parseNumber(text: string): number | null {
  const t = text.trim().toLowerCase().replace(/\s/g, '');
  let n: number;
  if (t.endsWith('k')) n = Number(t.slice(0, -1)) * 1000;
  else if (/^\d{1,3}(?:[,.']\d{3})+$/.test(t)) n = Number(t.replace(/[,.']/g, ''));
  else n = Number(t);
  return Number.isFinite(n) && n >= 0 ? Math.round(n) : null;
}

// ---------------------------------------------------------------------------------------------------------------
// Company size

export interface Range {
  min: number | null;
  max: number | null;
}

const STAFF = String.raw`(?:full[\s-]?time\s+)?(?:employees?|staff|people|persons|workers|ftes?|team\s+members|headcount|employee\s+count)`;
/** Without "people": "find 40 people" is a count, not a size. */
const STAFF_STRICT = String.raw`(?:full[\s-]?time\s+)?(?:employees?|staff|workers|ftes?|employee\s+count)`;

/** Vague size words and the bands they stand for (documented in docs/agents.md). */
export const SIZE_BANDS: ReadonlyArray<{ id: string; label: string; pattern: string; range: Range }> = [
  { id: 'startup', label: 'Startup', pattern: String.raw`start[\s-]?ups?|early[\s-]stage(?:\s+(?:companies|startups))?`, range: { min: 1, max: 200 } },
  { id: 'scaleup', label: 'Scale-up', pattern: String.raw`scale[\s-]?ups?`, range: { min: 50, max: 1000 } },
  { id: 'small', label: 'Small business', pattern: String.raw`small\s+(?:businesses|business|companies|company|firms|teams)|micro[\s-]?(?:businesses|enterprises)`, range: { min: 1, max: 50 } },
  { id: 'smb', label: 'SMB', pattern: String.raw`smbs?|smes?|small\s+(?:and|&)\s+medium(?:[\s-]sized)?(?:\s+(?:businesses|enterprises|companies))?|small\s+to\s+mid[\s-]?sized?(?:\s+(?:businesses|companies))?`, range: { min: 1, max: 249 } },
  { id: 'midsize', label: 'Mid-size', pattern: String.raw`mid[\s-]?sized?|mid[\s-]?market|medium[\s-]sized?|medium\s+(?:businesses|companies)`, range: { min: 50, max: 999 } },
  { id: 'large', label: 'Enterprise', pattern: String.raw`large\s+(?:companies|company|corporations|enterprises|firms|organi[sz]ations)|big\s+(?:companies|corporations|firms)|corporates|corporations|enterprises?|enterprise[\s-](?:companies|clients|organi[sz]ations)|fortune\s+500`, range: { min: 1000, max: null } },
];

/** "50-200", "501+", "1-49", "about 100" as the value of a size criterion. */
export function formatRange(range: Range): string {
  if (range.min !== null && range.max !== null) return range.min === range.max ? String(range.min) : `${range.min}-${range.max}`;
  if (range.min !== null) return `${range.min}+`;
  if (range.max !== null) return `1-${range.max}`;
  return 'any';
}

/** Reads an employee range from text: explicit numbers first, then the vague bands. */
function readSize(r: Reading): { range: Range; label: string; explicit: boolean } | null {
  const between = new RegExp(String.raw`(?:between\s+|from\s+)?(${NUM})\s*(?:-|to|and|–)\s*(${NUM})\s*${STAFF}`, 'giu');
  for (const m of r.take(between)) {
    const a = parseNumber(m[1]!);
    const b = parseNumber(m[2]!);
    if (a !== null && b !== null) return { range: { min: Math.min(a, b), max: Math.max(a, b) }, label: '', explicit: true };
  }
  const above = new RegExp(String.raw`(?:more\s+than|over|above|greater\s+than|at\s+least|min(?:imum)?(?:\s+of)?|>=?|no\s+fewer\s+than)\s*(${NUM})\s*${STAFF}|(${NUM})\s*(?:\+|or\s+more)\s*${STAFF}`, 'giu');
  for (const m of r.take(above)) {
    const raw = m[1] ?? m[2]!;
    const n = parseNumber(raw);
    if (n === null) continue;
    const strict = /more|over|above|greater|>(?!=)/i.test(m[0]) && !/at\s+least|>=|or\s+more|\+/i.test(m[0]);
    return { range: { min: strict ? n + 1 : n, max: null }, label: '', explicit: true };
  }
  const below = new RegExp(String.raw`(?:fewer\s+than|less\s+than|under|below|at\s+most|up\s+to|max(?:imum)?(?:\s+of)?|no\s+more\s+than|<=?)\s*(${NUM})\s*${STAFF}`, 'giu');
  for (const m of r.take(below)) {
    const n = parseNumber(m[1]!);
    if (n === null) continue;
    const strict = /fewer|less|under|below|<(?!=)/i.test(m[0]) && !/at\s+most|<=|up\s+to|no\s+more/i.test(m[0]);
    return { range: { min: 1, max: strict ? Math.max(1, n - 1) : n }, label: '', explicit: true };
  }
  const about = new RegExp(String.raw`(?:about|around|roughly|approximately|~)?\s*(?<![\d,.])(${NUM})\s*${STAFF_STRICT}`, 'giu');
  for (const m of r.take(about)) {
    const n = parseNumber(m[1]!);
    if (n === null || n === 0) continue;
    return { range: { min: Math.max(1, Math.floor(n * 0.8)), max: Math.ceil(n * 1.2) }, label: '', explicit: true };
  }
  const headcount = new RegExp(String.raw`(?:headcount|team\s+size|company\s+size|size)\s*(?:of|:)?\s*(${NUM})\s*(?:-|to|–)\s*(${NUM})`, 'giu');
  for (const m of r.take(headcount)) {
    const a = parseNumber(m[1]!);
    const b = parseNumber(m[2]!);
    if (a !== null && b !== null) return { range: { min: Math.min(a, b), max: Math.max(a, b) }, label: '', explicit: true };
  }
  for (const band of SIZE_BANDS) {
    // "enterprise software" names a market, not a size.
    const re = new RegExp(String.raw`(?<![\p{L}\p{N}])(?:${band.pattern})(?![\p{L}\p{N}])(?!\s+(?:software|saas|sales|customers|clients|market|segment))`, 'giu');
    const found = r.take(re);
    if (found.length > 0) return { range: band.range, label: band.label, explicit: false };
  }
  return null;
}

/** Reads an employee range out of a size criterion's value ("50-200", "501+", "1-49", "more than 500", "SMB"). */
export function parseSizeValue(value: string): Range | null {
  const t = normalizeText(value).trim();
  let m = new RegExp(String.raw`^(${NUM})\s*(?:-|to|–)\s*(${NUM})(?:\s*${STAFF})?$`, 'iu').exec(t);
  if (m) {
    const a = parseNumber(m[1]!);
    const b = parseNumber(m[2]!);
    if (a !== null && b !== null) return { min: Math.min(a, b), max: Math.max(a, b) };
  }
  m = new RegExp(String.raw`^(${NUM})\s*\+(?:\s*${STAFF})?$`, 'iu').exec(t);
  if (m) {
    const a = parseNumber(m[1]!);
    if (a !== null) return { min: a, max: null };
  }
  m = new RegExp(String.raw`^(${NUM})(?:\s*${STAFF})?$`, 'iu').exec(t);
  if (m) {
    const a = parseNumber(m[1]!);
    if (a !== null) return { min: a, max: a };
  }
  const r = new Reading(/\d/.test(t) && !new RegExp(STAFF, 'iu').test(t) ? `${t} employees` : t);
  return readSize(r)?.range ?? null;
}

// ---------------------------------------------------------------------------------------------------------------
// Founding year

const FOUNDED = String.raw`(?:founded|established|incorporated|started|launched|created|set\s+up|formed)`;

function year(text: string, now: Date): number | null {
  const n = Number(text);
  return Number.isInteger(n) && n >= 1800 && n <= now.getUTCFullYear() + 1 ? n : null;
}

function formatYears(range: Range): string {
  if (range.min !== null && range.max !== null) return range.min === range.max ? String(range.min) : `${range.min}-${range.max}`;
  if (range.min !== null) return `${range.min} or later`;
  if (range.max !== null) return `${range.max} or earlier`;
  return 'any';
}

function readFounded(r: Reading, now: Date): Range | null {
  const current = now.getUTCFullYear();
  const Y = String.raw`(1[89]\d\d|20\d\d)`;
  const rules: Array<[RegExp, (m: RegExpMatchArray) => Range | null]> = [
    [new RegExp(String.raw`${FOUNDED}\s+(?:between\s+|from\s+)?(?:in\s+)?${Y}\s*(?:-|–|to|and)\s*${Y}`, 'giu'), (m) => {
      const a = year(m[1]!, now);
      const b = year(m[2]!, now);
      return a !== null && b !== null ? { min: Math.min(a, b), max: Math.max(a, b) } : null;
    }],
    [new RegExp(String.raw`(?:${FOUNDED}\s+)?(?:after|post[\s-]?|later\s+than)\s*${Y}`, 'giu'), (m) => ({ min: year(m[1]!, now) === null ? null : Number(m[1]) + 1, max: null })],
    [new RegExp(String.raw`(?:${FOUNDED}\s+)?(?:in\s+or\s+after|since|from|no\s+earlier\s+than)\s+${Y}|${FOUNDED}\s+(?:in\s+)?${Y}\s+or\s+(?:later|after)|${FOUNDED}\s+(?:in\s+)?${Y}\s*\+`, 'giu'), (m) => {
      const y = year(m[1] ?? m[2] ?? m[3]!, now);
      return y === null ? null : { min: y, max: null };
    }],
    [new RegExp(String.raw`(?:${FOUNDED}\s+)?(?:before|pre[\s-]?|earlier\s+than|prior\s+to)\s*${Y}`, 'giu'), (m) => ({ min: null, max: year(m[1]!, now) === null ? null : Number(m[1]) - 1 })],
    [new RegExp(String.raw`${FOUNDED}\s+(?:in\s+)?${Y}\s+or\s+(?:earlier|before)|${FOUNDED}\s+(?:no\s+later\s+than|by|until|up\s+to)\s+${Y}`, 'giu'), (m) => {
      const y = year(m[1] ?? m[2]!, now);
      return y === null ? null : { min: null, max: y };
    }],
    [new RegExp(String.raw`${FOUNDED}\s+in\s+the\s+(?:(19|20)(\d)0s|'?(\d)0s)`, 'giu'), (m) => {
      const decade = m[1] ? Number(`${m[1]}${m[2]}0`) : Number(m[3]) >= 3 ? 1900 + Number(m[3]) * 10 : 2000 + Number(m[3]) * 10;
      return { min: decade, max: decade + 9 };
    }],
    [new RegExp(String.raw`${FOUNDED}\s+(?:with)?in\s+the\s+(?:last|past)\s+(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s+years?`, 'giu'), (m) => ({ min: current - wordNumber(m[1]!), max: null })],
    [new RegExp(String.raw`(?:less\s+than|under|younger\s+than|at\s+most)\s+(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s+years?\s+old`, 'giu'), (m) => ({ min: current - wordNumber(m[1]!), max: null })],
    [new RegExp(String.raw`(?:more\s+than|over|older\s+than|at\s+least)\s+(\d{1,3}|two|three|four|five|six|seven|eight|nine|ten)\s+years?\s+old`, 'giu'), (m) => ({ min: null, max: current - wordNumber(m[1]!) })],
    [new RegExp(String.raw`${FOUNDED}\s+(?:in\s+)?${Y}`, 'giu'), (m) => {
      const y = year(m[1]!, now);
      return y === null ? null : { min: y, max: y };
    }],
  ];
  for (const [re, read] of rules) {
    const box: { found: Range | null } = { found: null };
    r.take(re, (m) => {
      if (box.found) return false;
      const range = read(m);
      if (!range || (range.min === null && range.max === null)) return false;
      box.found = range;
      return true;
    });
    if (box.found) return box.found;
  }
  return null;
}

const WORD_NUMBERS: Record<string, number> = { two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10 };
function wordNumber(text: string): number {
  return WORD_NUMBERS[text.toLowerCase()] ?? Number(text);
}

/** Reads a year range out of a founding criterion's value ("2016 or later", "2010-2015", "2018", "after 2015"). */
export function parseFoundedValue(value: string, now: Date = new Date()): Range | null {
  const t = normalizeText(value).trim();
  let m = /^(\d{4})\s*(?:-|–|to)\s*(\d{4})$/.exec(t);
  if (m) return { min: Math.min(Number(m[1]), Number(m[2])), max: Math.max(Number(m[1]), Number(m[2])) };
  m = /^(\d{4})\s*(?:\+|or\s+later|or\s+after|and\s+later|onwards?)$/i.exec(t);
  if (m) return { min: Number(m[1]), max: null };
  m = /^(\d{4})\s*(?:or\s+earlier|or\s+before|and\s+earlier)$/i.exec(t);
  if (m) return { min: null, max: Number(m[1]) };
  m = /^(?:>=?)\s*(\d{4})$/.exec(t);
  if (m) return { min: Number(m[1]) + (t.startsWith('>=') ? 0 : 1), max: null };
  m = /^(?:<=?)\s*(\d{4})$/.exec(t);
  if (m) return { min: null, max: Number(m[1]) - (t.startsWith('<=') ? 0 : 1) };
  m = /^(\d{4})$/.exec(t);
  if (m) return { min: Number(m[1]), max: Number(m[1]) };
  return readFounded(new Reading(/^(?:founded|established)/i.test(t) || /^since/i.test(t) ? t : `founded ${t}`), now);
}

// ---------------------------------------------------------------------------------------------------------------
// Places

export type Place =
  | { kind: 'city'; city: City }
  | { kind: 'state'; state: State }
  | { kind: 'country'; country: Country }
  | { kind: 'region'; region: Region };

export function placeLabel(p: Place): string {
  switch (p.kind) {
    case 'city':
      return CITY_STATES.has(p.city.country) ? p.city.label : `${p.city.label}, ${COUNTRY_BY_CODE.get(p.city.country)?.label ?? p.city.country}`;
    case 'state':
      return `${p.state.label}, ${COUNTRY_BY_CODE.get(p.state.country)?.label ?? p.state.country}`;
    case 'country':
      return p.country.label;
    case 'region':
      return p.region.label;
  }
}

/** The places a text names: cities, states, countries and regions; a country is dropped when a city or state in it is also named. */
export function readPlaces(text: string, taken?: boolean[]): Place[] {
  const t = normalizeText(text);
  const used = taken ?? new Array<boolean>(t.length).fill(false);
  type Hit = TermHit<City> | TermHit<State> | TermHit<Country> | TermHit<Region>;
  // One pass over all place kinds so the longest name wins ("New York State" over "New York", "Hong Kong" city over nothing).
  const all: Hit[] = [
    ...findTerms<City>(t, CITIES, [...used]),
    ...findTerms<State>(t, STATES, [...used]),
    ...findTerms<Country>(t, COUNTRIES, [...used]),
    ...findTerms<Region>(t, REGIONS, [...used]),
  ].sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start);
  const places: Array<{ at: number; place: Place }> = [];
  for (const hit of all) {
    let free = true;
    for (let i = hit.start; i < hit.end; i++) if (used[i]) free = false;
    if (!free) continue;
    for (let i = hit.start; i < hit.end; i++) used[i] = true;
    const term = hit.term as Term;
    let place: Place;
    if (CITIES.includes(term as City)) place = { kind: 'city', city: term as City };
    else if (STATES.includes(term as State)) place = { kind: 'state', state: term as State };
    else if (COUNTRIES.includes(term as Country)) place = { kind: 'country', country: term as Country };
    else place = { kind: 'region', region: term as Region };
    places.push({ at: hit.start, place });
  }
  places.sort((a, b) => a.at - b.at);
  const narrowed = new Set<string>();
  for (const { place } of places) {
    if (place.kind === 'city') narrowed.add(place.city.country);
    if (place.kind === 'state') narrowed.add(place.state.country);
  }
  const out: Place[] = [];
  const seen = new Set<string>();
  for (const { place } of places) {
    if (place.kind === 'country' && narrowed.has(place.country.id)) continue;
    const key = place.kind === 'city' ? place.city.id : place.kind === 'state' ? place.state.id : place.kind === 'country' ? place.country.id : place.region.id;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(place);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// People: roles

/** One role a prompt asks for, or one a person's title holds. */
export interface RoleSpec {
  label: string;
  /** C-level title id (`cto`), when the role is one. */
  chief: string | null;
  seniority: string | null;
  department: string | null;
  function: string | null;
}

const DEPT_PATTERN = DEPARTMENTS.map((d) => d.patterns.join('|')).join('|');

function departmentOf(text: string): Term | null {
  for (const d of DEPARTMENTS) {
    if (new RegExp(`^(?:${d.patterns.join('|')})$`, 'iu').test(text.trim())) return d;
  }
  return null;
}

/** Level words that stand before a job function ("senior engineer", "staff engineer", "lead designer"). */
const LEVEL_WORDS: Record<string, string> = {
  senior: String.raw`senior|sr\.?|staff|principal`,
  lead: 'lead',
  mid: String.raw`mid[\s-]?level|intermediate`,
  junior: String.raw`junior|jr\.?|entry[\s-]level|graduate|associate`,
  intern: String.raw`intern|trainee|working\s+student`,
};

function levelWordOf(text: string): string | null {
  for (const [id, pattern] of Object.entries(LEVEL_WORDS)) {
    if (new RegExp(`^(?:${pattern})$`, 'iu').test(text.trim())) return id;
  }
  return null;
}

function roleLabel(spec: Omit<RoleSpec, 'label'>): string {
  const chief = spec.chief ? CHIEF_TITLES.find((c) => c.id === spec.chief) : undefined;
  if (chief) return chief.label;
  const dept = DEPARTMENTS.find((d) => d.id === spec.department)?.label;
  const fn = FUNCTIONS.find((f) => f.id === spec.function);
  const level = SENIORITY.find((s) => s.id === spec.seniority)?.label;
  if (fn) return level ? `${level} ${fn.label.toLowerCase()}` : fn.label;
  if (spec.seniority === 'founder') return 'Founder';
  if (level && dept) {
    if (spec.seniority === 'head') return `Head of ${dept}`;
    if (spec.seniority === 'vp') return `VP of ${dept}`;
    if (spec.seniority === 'director') return `Director of ${dept}`;
    return `${dept} ${level.toLowerCase()}`;
  }
  if (level) return level;
  return dept ?? 'Any role';
}

function spec(parts: Omit<RoleSpec, 'label'>): RoleSpec {
  return { ...parts, label: roleLabel(parts) };
}

/** Roles a prompt names: C-level titles, founders, "head(s) of X", "VP(s) of X", "X director(s)", "senior engineers"... */
function readRoles(r: Reading): { roles: RoleSpec[]; seniority: Term[] } {
  const roles: Array<{ at: number; role: RoleSpec }> = [];
  const B = String.raw`(?<![\p{L}\p{N}])`;
  const A = String.raw`(?![\p{L}\p{N}])`;
  for (const hit of r.terms<ChiefTitle>(CHIEF_TITLES)) {
    roles.push({ at: hit.start, role: spec({ chief: hit.term.id, seniority: 'c_level', department: hit.term.department, function: null }) });
  }
  const levelRules: Array<[string, string]> = [
    ['head', String.raw`${B}heads?\s+of\s+(${DEPT_PATTERN})${A}|${B}(${DEPT_PATTERN})\s+heads?${A}`],
    ['vp', String.raw`${B}(?:s?vps?|evps?|vice[\s-]presidents?)\s*(?:of\s+|for\s+|,\s*)?(${DEPT_PATTERN})${A}`],
    ['director', String.raw`${B}directors?\s+of\s+(${DEPT_PATTERN})${A}|${B}(${DEPT_PATTERN})\s+directors?${A}`],
    ['lead', String.raw`${B}(${DEPT_PATTERN})\s+leads?${A}`],
  ];
  for (const [level, source] of levelRules) {
    for (const m of r.take(new RegExp(source, 'giu'))) {
      const dept = departmentOf(m[1] ?? m[2] ?? '');
      roles.push({ at: m.index ?? 0, role: spec({ chief: null, seniority: level, department: dept?.id ?? null, function: null }) });
    }
  }
  // Functions, with an optional seniority word before them ("senior engineers", "junior designers").
  const levelWords = Object.values(LEVEL_WORDS).join('|');
  for (const fn of FUNCTIONS) {
    const re = new RegExp(String.raw`${B}(?:(${levelWords})\s+)?(?:${fn.patterns.join('|')})${A}`, 'giu');
    for (const m of r.take(re)) {
      const level = m[1] ? levelWordOf(m[1]) : null;
      roles.push({ at: m.index ?? 0, role: spec({ chief: null, seniority: level, department: fn.department, function: fn.id }) });
    }
  }
  // "marketing managers", "managers of sales"
  for (const m of r.take(new RegExp(String.raw`${B}(${DEPT_PATTERN})\s+managers?${A}|${B}managers?\s+of\s+(${DEPT_PATTERN})${A}`, 'giu'))) {
    const dept = departmentOf(m[1] ?? m[2] ?? '');
    roles.push({ at: m.index ?? 0, role: spec({ chief: null, seniority: 'manager', department: dept?.id ?? null, function: null }) });
  }
  // What remains of seniority words names a level without a role ("founders", "VPs", "C-level executives");
  // "decision makers" and "leadership" name the top four levels.
  const seniority: Term[] = [];
  if (r.take(new RegExp(String.raw`${B}(?:(?:senior\s+)?decision[\s-]makers?|(?:senior\s+)?leadership(?:\s+teams?)?|(?:senior\s+)?leaders)${A}`, 'giu')).length > 0) {
    for (const id of DECISION_LEVELS) seniority.push(SENIORITY.find((s) => s.id === id)!);
  }
  for (const hit of r.terms(SENIORITY)) {
    if (hit.term.id === 'founder') roles.push({ at: hit.start, role: spec({ chief: null, seniority: 'founder', department: null, function: null }) });
    else if (!seniority.includes(hit.term)) seniority.push(hit.term);
  }
  roles.sort((a, b) => a.at - b.at);
  const unique: RoleSpec[] = [];
  for (const { role } of roles) if (!unique.some((u) => u.label === role.label)) unique.push(role);
  return { roles: unique, seniority };
}

/** The levels "decision makers" and "leadership" stand for. */
export const DECISION_LEVELS = ['c_level', 'vp', 'head', 'director'] as const;

/** Departments a people prompt names without a role: "working in marketing", "the sales team", "engineering people". */
function readDepartments(r: Reading): Term[] {
  const B = String.raw`(?<![\p{L}\p{N}])`;
  const A = String.raw`(?![\p{L}\p{N}])`;
  const re = new RegExp(
    String.raw`${B}(?:(?:working|work|works|employed)\s+in\s+(?:the\s+)?(${DEPT_PATTERN})(?:\s+(?:teams?|departments?|functions?))?|(?:in\s+|on\s+)?(?:the\s+)?(${DEPT_PATTERN})\s+(?:teams?|departments?|functions?)(?:\s+members?)?|(${DEPT_PATTERN})\s+(?:professionals|people|staff|employees|folks|specialists))${A}`,
    'giu',
  );
  const out: Term[] = [];
  for (const m of r.take(re)) {
    const d = departmentOf(m[1] ?? m[2] ?? m[3] ?? '');
    if (d && !out.includes(d)) out.push(d);
  }
  return out;
}

/** The roles a text names (a person's title, or a role criterion's value), read like a prompt's. */
export function readRoleText(text: string): RoleSpec[] {
  const r = new Reading(text);
  const { roles, seniority } = readRoles(r);
  if (roles.length > 0) return roles;
  // A bare level with a department somewhere ("Marketing, Director"), or a level alone.
  const dept = findTerms(r.text, DEPARTMENTS, r.taken)[0]?.term ?? null;
  return seniority.map((s) => spec({ chief: null, seniority: s.id, department: dept?.id ?? null, function: null }));
}

// ---------------------------------------------------------------------------------------------------------------
// Enrichment columns a prompt asks for ("with their emails", "include LinkedIn profiles")

interface EnrichmentColumn {
  column: string;
  name: string;
  columnType: ColumnType;
  pattern: string;
  kinds: SearchKind[];
}

const ENRICHMENTS: readonly EnrichmentColumn[] = [
  { column: 'email', name: 'Email', columnType: 'email', pattern: String.raw`(?:work\s+|business\s+)?e-?mails?(?:\s+address(?:es)?)?`, kinds: ['person', 'company'] },
  { column: 'phone', name: 'Phone', columnType: 'text', pattern: String.raw`phone(?:\s+numbers?)?|telephone(?:\s+numbers?)?`, kinds: ['person', 'company'] },
  { column: 'profile_url', name: 'LinkedIn profile', columnType: 'url', pattern: String.raw`linkedin(?:\s+(?:profiles?|urls?|pages?))?|profile\s+(?:urls?|links?)`, kinds: ['person', 'company'] },
  { column: 'website', name: 'Website', columnType: 'url', pattern: String.raw`websites?|homepages?|domains?|urls?`, kinds: ['company'] },
  { column: 'revenue', name: 'Revenue', columnType: 'text', pattern: String.raw`revenues?|annual\s+revenue|turnover|arr`, kinds: ['company'] },
  { column: 'funding', name: 'Funding', columnType: 'text', pattern: String.raw`funding(?:\s+(?:rounds?|stages?|amounts?))?|total\s+raised|investors?`, kinds: ['company'] },
  { column: 'ceo', name: 'CEO', columnType: 'text', pattern: String.raw`ceos?|chief\s+executives?`, kinds: ['company'] },
  { column: 'founders', name: 'Founders', columnType: 'text', pattern: String.raw`founders?|co-?founders?`, kinds: ['company'] },
  { column: 'contacts', name: 'Contacts', columnType: 'text', pattern: String.raw`contacts?|contact\s+(?:details|info(?:rmation)?|persons?|people)|decision[\s-]makers?`, kinds: ['company'] },
  { column: 'tech_stack', name: 'Tech stack', columnType: 'text', pattern: String.raw`tech(?:nology)?\s+stacks?|technologies\s+used`, kinds: ['company'] },
];

function readEnrichments(r: Reading, kind: SearchKind): EnrichmentColumn[] {
  const wanted = ENRICHMENTS.filter((e) => e.kinds.includes(kind));
  const alternatives = wanted.map((e) => e.pattern).join('|');
  // "with (their|its) X(, Y and Z)", "include/including/plus/and their X", "add a column for X"
  const list = String.raw`(?:${alternatives})(?:\s*(?:,|and|&|\+|as\s+well\s+as)\s*(?:(?:their|its|the)\s+)?(?:${alternatives}))*`;
  const re = new RegExp(String.raw`(?<![\p{L}\p{N}])(?:with\s+(?:their|its|the|(?=(?:${alternatives})(?![\p{L}\p{N}])))|and\s+(?:their|its)|includ(?:e|ing)\s+(?:their|its|the)?|plus\s+(?:their|its)?|add(?:ing)?\s+(?:a\s+column\s+(?:for|with)\s+)?(?:their|its|the)?|enrich(?:ed)?\s+with\s+(?:their|its|the)?)\s*(${list})(?![\p{L}\p{N}])`, 'giu');
  const out: EnrichmentColumn[] = [];
  for (const m of r.take(re)) {
    for (const e of wanted) {
      if (new RegExp(String.raw`(?<![\p{L}\p{N}])(?:${e.pattern})(?![\p{L}\p{N}])`, 'iu').test(m[1]!) && !out.includes(e)) out.push(e);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The requested count

const ENTITY_NOUNS = String.raw`companies|company|firms|businesses|startups|start-ups|scale-?ups|organi[sz]ations|vendors|suppliers|providers|agencies|brands|manufacturers|retailers|banks|leads|prospects|accounts|contacts|people|persons|profiles|candidates|executives|employees|founders|ctos|ceos|cfos|cmos|coos|vps|directors|heads|managers|engineers|developers|designers|recruiters|results|rows|records|entries|examples|names|options`;

function readCount(r: Reading): number | null {
  const verbs = String.raw`find|list|get|give(?:\s+me)?|show(?:\s+me)?|search(?:\s+for)?|build(?:\s+me)?|identify|collect|compile|generate|return|fetch|source|discover|need|want|looking\s+for|gather|pull|prepare|create|make|top|first|up\s+to|at\s+least`;
  const count = (m: RegExpMatchArray): number | null => {
    const n = parseNumber(m[1]!);
    return n !== null && n >= 1 && n <= MAX_PROMPT_COUNT ? n : null;
  };
  const rules = [
    new RegExp(String.raw`(?<![\p{L}\p{N}])(?:${verbs})\s+(?:me\s+|us\s+)?(?:a\s+list\s+of\s+|the\s+(?:top\s+)?|a\s+total\s+of\s+)?(\d{1,3}(?:,\d{3})*|\d+)(?![\p{L}\p{N}]|\s*(?:-|–|to)\s*\d|\s*\+?\s*(?:employees|staff|people\s+(?:working|employed))|\s*years)`, 'giu'),
    new RegExp(String.raw`(?<![\p{L}\p{N}])(?:list|total|set|batch)\s+of\s+(\d{1,3}(?:,\d{3})*|\d+)(?![\p{L}\p{N}])(?!\s*(?:employees|staff|years))`, 'giu'),
    new RegExp(String.raw`(?<![\p{L}\p{N}.,-])(\d{1,3}(?:,\d{3})*|\d+)\s+(?:[\p{L}-]+\s+){0,3}?(?:${ENTITY_NOUNS})(?![\p{L}\p{N}])`, 'giu'),
  ];
  for (const re of rules) {
    for (const m of r.text.matchAll(re)) {
      // Only the number is consumed; the words around it are read by the other rules.
      const start = (m.index ?? 0) + m[0].indexOf(m[1]!);
      const end = start + m[1]!.length;
      if (r.isTaken(start, end)) continue;
      const n = count(m);
      if (n === null || /^(1[89]\d\d|20\d\d)$/.test(m[1]!)) continue;
      r.consume(start, end);
      return n;
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// Leftover words

/** Words a prompt uses that say nothing about what is wanted (also the keyword baseline's stop words). */
export const PROMPT_STOPWORDS: ReadonlySet<string> = new Set(
  `a an the and or of in on at to for from by with within without into onto over under about around near across than then that which who whom whose
  what where when why how is are was were be been being am do does did has have having had can could should would may might will shall must
  i me my we us our you your they them their it its this these those there here some any all each every many much more most few less least
  please find list get give show search build identify collect compile generate return fetch source discover need want looking look gather pull
  prepare create make top best leading biggest largest largest major notable known well-known good great interesting relevant potential
  companies company firms firm businesses business organizations organisations organization organisation vendors providers players
  studios studio agencies agency labs makers brands startups know knows knowing raised raise raising
  people persons person contacts leads prospects profiles candidates individuals folks employees employee staff team teams members
  based located headquartered operating operate operates active working work works focused focusing focus specializing specialising
  specialized specialised offering offer offers providing provide provides selling sell sells building builds doing using use uses also
  like such as e.g eg etc including include includes industry industries sector sectors space market markets vertical verticals area areas
  region regions country countries city cities world worldwide global globally international internationally local
  founded established since after before year years old new young recent recently currently current
  size sized number numbers count total list lists set results result names name examples example rows records
  just only other others another either both whether not no yes very really quite`.split(/\s+/),
);

function keywordsOf(words: string[]): string[] {
  const out: string[] = [];
  for (const w of words) {
    const k = w.toLowerCase().replace(/^[-.']+|[-.']+$/g, '');
    if (k.length < 2 || /^\d+$/.test(k) || PROMPT_STOPWORDS.has(k)) continue;
    if (!out.includes(k)) out.push(k);
    if (out.length >= MAX_KEYWORDS) break;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The extractor

/**
 * Reads a list-building prompt into criteria, deterministically (the same prompt and clock give the same answer).
 * Company prompts: industry, location, size, founding year, requested enrichment columns, keywords. People prompts:
 * role, seniority, location, the industry and size of their companies, enrichment columns, keywords.
 */
export function extractCriteriaByRules(prompt: string, kind: SearchKind, options: ExtractOptions = {}): ExtractedCriteria {
  const now = options.now ?? new Date();
  const r = new Reading(prompt);
  const criteria: Criterion[] = [];
  const enrichments = readEnrichments(r, kind);
  const size = readSize(r);
  const founded = readFounded(r, now);
  const people = kind === 'person' ? readRoles(r) : { roles: [], seniority: [] };
  const departments = kind === 'person' ? readDepartments(r) : [];
  const places = readPlaces(r.text, r.taken);
  const industries = unique(r.terms(INDUSTRIES).map((h) => h.term));
  const count = readCount(r);
  const keywords = keywordsOf(r.leftovers());

  const whose = kind === 'person' ? "the person's company" : 'the company';
  if (people.roles.length > 0) {
    const labels = people.roles.map((x) => x.label);
    criteria.push(criterion('Role', labels.join(' or '), COLUMNS.role, 'text', 'hard_filter', `The person's job title is ${labels.join(' or ')}.`));
  }
  if (people.seniority.length > 0) {
    const labels = people.seniority.map((s) => s.label);
    criteria.push(criterion('Seniority', labels.join(' or '), COLUMNS.seniority, 'badge', 'hard_filter', `The person's seniority is ${labels.join(' or ')}.`));
  }
  if (departments.length > 0) {
    const labels = departments.map((d) => d.label);
    criteria.push(criterion('Department', labels.join(' or '), COLUMNS.department, 'badge', 'hard_filter', `The person works in ${labels.join(' or ')}.`));
  }
  if (industries.length > 0) {
    const labels = industries.map((i) => i.label);
    criteria.push(
      criterion('Industry', labels.join(' or '), COLUMNS.industry, 'badge', 'hard_filter', `${capital(whose)} works in ${labels.join(' or ')}${industrySynonymsNote(industries)}.`),
    );
  }
  if (places.length > 0) {
    const labels = places.map(placeLabel);
    const subject = kind === 'person' ? 'The person is' : 'The company is';
    criteria.push(criterion('Location', labels.join(' or '), COLUMNS.location, 'text', 'hard_filter', `${subject} based in ${labels.join(' or ')}${isoNote(places)}.`));
  }
  if (size) {
    const value = size.explicit ? formatRange(size.range) : size.label;
    const band = size.explicit ? '' : ` (${formatRange(size.range)} employees)`;
    criteria.push(
      criterion('Company size', value, COLUMNS.employees, size.explicit ? 'number' : 'badge', size.explicit ? 'hard_filter' : 'soft_filter', `${capital(whose)} has ${size.explicit ? `${formatRange(size.range)} employees` : `the size of a ${size.label.toLowerCase()}${band}`}.`),
    );
  }
  if (founded) {
    criteria.push(criterion('Founded', formatYears(founded), COLUMNS.founded, 'number', 'hard_filter', `${capital(whose)} was founded ${describeYears(founded)}.`));
  }
  if (keywords.length > 0) {
    criteria.push(criterion('Keywords', keywords.join(', '), COLUMNS.keywords, 'text', 'soft_filter', `Mentions ${keywords.join(', ')} (ranks higher when found).`));
  }
  for (const e of enrichments) {
    criteria.push(criterion(e.name, '', e.column, e.columnType, 'enrichment', `${e.name} of each ${kind === 'person' ? 'person' : 'company'}, collected for the list.`));
  }

  const industry = industries[0]?.label ?? null;
  return {
    kind,
    category: kind === 'person' ? 'people_search' : 'company_search',
    industry,
    title: titleOf(kind, people.roles, people.seniority, departments, industries, places, size, founded, keywords),
    description: descriptionOf(kind, criteria),
    count,
    criteria,
    keywords,
  };
}

/**
 * The size and founding-year qualifiers of a prompt ("more than 50 employees", "founded after 2015") as hard criteria,
 * and the prompt with their words blanked out (the same length, so a position in one is a position in the other).
 * For web research, which judges pages by their words and must not ask a page to contain "than" or "50" (docs/agents.md,
 * "Web research and deep search agents"). Vague size words ("startups", "SMB") are no qualifiers here: they stay words.
 */
export function readQualifiers(prompt: string, kind: SearchKind, options: ExtractOptions = {}): { criteria: Criterion[]; rest: string } {
  const now = options.now ?? new Date();
  let r = new Reading(prompt);
  const size = readSize(r);
  if (size && !size.explicit) r = new Reading(prompt);
  const founded = readFounded(r, now);
  const whose = capital(kind === 'person' ? "the person's company" : 'the company');
  const criteria: Criterion[] = [];
  if (size?.explicit) criteria.push(criterion('Company size', formatRange(size.range), COLUMNS.employees, 'number', 'hard_filter', `${whose} has ${formatRange(size.range)} employees.`));
  if (founded) criteria.push(criterion('Founded', formatYears(founded), COLUMNS.founded, 'number', 'hard_filter', `${whose} was founded ${describeYears(founded)}.`));
  return { criteria, rest: r.text.replace(/[\s\S]/g, (ch: string, i: number) => (r.taken[i] ? ' ' : ch)) };
}

function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function industrySynonymsNote(industries: Industry[]): string {
  const children = INDUSTRIES.filter((i) => i.parent !== undefined && industries.some((w) => w.id === i.parent)).map((i) => i.label);
  return children.length > 0 ? ` (including ${children.join(', ')})` : '';
}

function isoNote(places: Place[]): string {
  const codes = unique(
    places.flatMap((p) => (p.kind === 'city' ? [p.city.country] : p.kind === 'state' ? [p.state.country] : p.kind === 'country' ? [p.country.id] : p.region.countries)),
  );
  return codes.length > 0 && codes.length <= 12 ? ` (${codes.join(', ')})` : '';
}

function describeYears(range: Range): string {
  if (range.min !== null && range.max !== null) return range.min === range.max ? `in ${range.min}` : `between ${range.min} and ${range.max}`;
  if (range.min !== null) return `in ${range.min} or later`;
  return `in ${range.max} or earlier`;
}

function titleOf(
  kind: SearchKind,
  roles: RoleSpec[],
  seniority: Term[],
  departments: Term[],
  industries: Industry[],
  places: Place[],
  size: { range: Range; label: string; explicit: boolean } | null,
  founded: Range | null,
  keywords: string[],
): string {
  const industry = industries.map((i) => i.label).join('/');
  const where = places.length > 0 ? ` in ${places.map((p) => (p.kind === 'city' ? p.city.label : placeLabel(p))).join(' or ')}` : '';
  const sized = size ? (size.explicit ? ` with ${formatRange(size.range)} employees` : '') : '';
  const bandNoun = size && !size.explicit ? (BAND_NOUNS[size.label] ?? 'companies') : 'companies';
  const since = founded ? `, founded ${describeYears(founded)}` : '';
  let title: string;
  if (kind === 'company') {
    const subject = industry ? `${industry} ${bandNoun}` : capital(bandNoun);
    title = `${subject}${where}${sized}${since}`;
    if (!industry && !where && !sized && !since && keywords.length > 0) title = `Companies: ${keywords.slice(0, 4).join(', ')}`;
  } else {
    const dept = departments.length > 0 ? `${departments.map((d) => d.label).join('/')} ` : '';
    const decisionMakers = seniority.length === DECISION_LEVELS.length && DECISION_LEVELS.every((id) => seniority.some((s) => s.id === id));
    const who = roles.length > 0 ? roles.map((x) => plural(x.label)).join(' and ') : decisionMakers ? `${dept}decision makers`.replace(/^./, (c) => c.toUpperCase()) : seniority.length > 0 ? `${seniority.map((s) => s.label).join('/')} ${dept ? dept.toLowerCase() : ''}people` : dept ? `${dept}people` : 'People';
    const at = industry || size ? ` at ${industry ? `${industry} ` : ''}${bandNoun}` : '';
    title = `${who}${at}${where}${sized}${since}`;
    if (roles.length === 0 && seniority.length === 0 && departments.length === 0 && !at && !where && keywords.length > 0) title = `People: ${keywords.slice(0, 4).join(', ')}`;
  }
  return title.length > 120 ? `${cutUnits(title, 117).replace(/\s+\S*$/, '')}...` : title;
}

const BAND_NOUNS: Record<string, string> = {
  Startup: 'startups',
  'Scale-up': 'scale-ups',
  'Small business': 'small businesses',
  SMB: 'SMBs',
  'Mid-size': 'mid-size companies',
  Enterprise: 'enterprises',
};

function plural(label: string): string {
  if (/^(?:C[A-Z]{1,3}O|CHRO|CISO)$/.test(label)) return `${label}s`;
  const m = /^(Head|VP|Director)( of .*)$/.exec(label);
  if (m) return `${m[1] === 'Head' ? 'Heads' : m[1] === 'VP' ? 'VPs' : 'Directors'}${m[2]}`;
  return /s$/.test(label) ? label : `${label}s`;
}

function descriptionOf(kind: SearchKind, criteria: Criterion[]): string {
  const filters = criteria.filter((c) => c.type !== 'enrichment');
  const noun = kind === 'person' ? 'People' : 'Companies';
  if (filters.length === 0) return `${noun} matching the prompt.`;
  const parts = filters.map((c) => `${c.name.toLowerCase()}: ${c.value}${c.type === 'soft_filter' ? ' (preferred)' : ''}`);
  const extra = criteria.filter((c) => c.type === 'enrichment').map((c) => c.name.toLowerCase());
  return `${noun} matching ${parts.join('; ')}${extra.length > 0 ? `; with ${extra.join(', ')}` : ''}.`;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading a criterion back: what it asks of a record

export type Constraint =
  | { dimension: 'industry'; industries: string[] }
  | { dimension: 'location'; places: Place[] }
  | { dimension: 'employees'; range: Range }
  | { dimension: 'founded'; range: Range }
  | { dimension: 'role'; roles: RoleSpec[] }
  | { dimension: 'seniority'; levels: string[] }
  | { dimension: 'department'; departments: string[] }
  | { dimension: 'keywords'; keywords: string[] }
  /** A criterion no rule reads (a user's own column): its words are looked for in the record and the page. */
  | { dimension: 'text'; terms: string[] }
  /** Enrichment criteria ask for a value, not a match. */
  | { dimension: 'enrichment'; column: string };

/** Which dimension a criterion is about, from its column name and name ("Company size", "employee_count", "HQ"). */
function dimensionOf(c: Pick<Criterion, 'name' | 'column_name'>): Constraint['dimension'] | null {
  const key = `${snakeCase(c.column_name || '')} ${snakeCase(c.name || '')}`;
  const has = (re: RegExp) => re.test(key);
  if (has(/(?:^|_|\s)(?:industry|industries|sector|vertical|category)(?:$|_|\s)/)) return 'industry';
  if (has(/(?:^|_|\s)(?:location|country|city|region|hq|headquarters|place|geography|geo)(?:$|_|\s)/)) return 'location';
  if (has(/(?:^|_|\s)(?:employees?|employee_count|headcount|company_size|size|staff)(?:$|_|\s)/)) return 'employees';
  if (has(/(?:^|_|\s)(?:founded|founding_year|year_founded|established|founded_year)(?:$|_|\s)/)) return 'founded';
  if (has(/(?:^|_|\s)(?:title|role|job_title|position)(?:$|_|\s)/)) return 'role';
  if (has(/(?:^|_|\s)(?:seniority|level)(?:$|_|\s)/)) return 'seniority';
  if (has(/(?:^|_|\s)(?:department|function|team)(?:$|_|\s)/)) return 'department';
  if (has(/(?:^|_|\s)(?:keywords?|tags?|topics?)(?:$|_|\s)/)) return 'keywords';
  return null;
}

/**
 * What a criterion asks of a record: ours read back exactly, a model's or a user's by the same rules (its value read
 * as a place, a size, a year range, roles...). A criterion whose value cannot be read for its dimension becomes a
 * `text` constraint on its words, so no criterion is silently dropped.
 */
export function interpretCriterion(c: Pick<Criterion, 'name' | 'value' | 'column_name' | 'type'>, options: ExtractOptions = {}): Constraint {
  if (c.type === 'enrichment') return { dimension: 'enrichment', column: snakeCase(c.column_name || c.name) };
  const value = String(c.value ?? '');
  const fallback = (): Constraint => ({ dimension: 'text', terms: keywordsOf(new Reading(value || c.name).leftovers()) });
  switch (dimensionOf(c)) {
    case 'industry': {
      const ids = unique(findTerms(normalizeText(value), INDUSTRIES).map((h) => h.term.id));
      return ids.length > 0 ? { dimension: 'industry', industries: ids } : fallback();
    }
    case 'location': {
      const places = readPlaces(value);
      return places.length > 0 ? { dimension: 'location', places } : fallback();
    }
    case 'employees': {
      const range = parseSizeValue(value);
      return range ? { dimension: 'employees', range } : fallback();
    }
    case 'founded': {
      const range = parseFoundedValue(value, options.now);
      return range ? { dimension: 'founded', range } : fallback();
    }
    case 'role': {
      const roles = value.split(/\s+or\s+|\s*[;|/]\s*/i).flatMap((part) => readRoleText(part));
      return roles.length > 0 ? { dimension: 'role', roles } : fallback();
    }
    case 'seniority': {
      const levels = unique(findTerms(normalizeText(value), SENIORITY).map((h) => h.term.id));
      return levels.length > 0 ? { dimension: 'seniority', levels } : fallback();
    }
    case 'department': {
      const departments = unique(findTerms(normalizeText(value), DEPARTMENTS).map((h) => h.term.id));
      return departments.length > 0 ? { dimension: 'department', departments } : fallback();
    }
    case 'keywords': {
      const keywords = unique(value.split(/\s*,\s*/).map((k) => k.trim().toLowerCase()).filter((k) => k.length > 0));
      return keywords.length > 0 ? { dimension: 'keywords', keywords } : fallback();
    }
    default:
      return fallback();
  }
}

/** Most characters of a web query built from criteria. */
export const MAX_WEB_QUERY_CHARS = 200;

/**
 * Words to search the web with for a list: the first role (a C-level title written out, as pages write it), else the
 * department or seniority, then the first industry, the first place and up to three keywords. Sizes and years are
 * left to scoring: search engines do not compare numbers. Empty when the criteria name none of these.
 */
export function webQueryOf(criteria: ReadonlyArray<Pick<Criterion, 'name' | 'value' | 'column_name' | 'type'>>, options: ExtractOptions = {}): string {
  const found: Partial<Record<Constraint['dimension'], string>> = {};
  for (const c of criteria) {
    if (c.type === 'enrichment') continue;
    const k = interpretCriterion(c, options);
    if (found[k.dimension] !== undefined) continue;
    switch (k.dimension) {
      case 'role': {
        const role = k.roles[0]!;
        found.role = role.chief ? (CHIEF_TITLES.find((t) => t.id === role.chief)?.title ?? role.label) : role.label;
        break;
      }
      case 'department':
        found.department = DEPARTMENTS.find((d) => d.id === k.departments[0])?.label ?? '';
        break;
      case 'seniority':
        found.seniority = k.levels.length === 1 ? (SENIORITY.find((s) => s.id === k.levels[0])?.label ?? '') : '';
        break;
      case 'industry':
        found.industry = INDUSTRIES.find((i) => i.id === k.industries[0])?.label ?? '';
        break;
      case 'location': {
        const p = k.places[0]!;
        found.location = p.kind === 'city' ? p.city.label : p.kind === 'state' ? p.state.label : p.kind === 'country' ? p.country.label : p.region.label;
        break;
      }
      case 'keywords':
        found.keywords = k.keywords.slice(0, 3).join(' ');
        break;
      default:
        break;
    }
  }
  const who = found.role ?? found.department ?? found.seniority;
  const words = [who, found.industry, found.location, found.keywords].filter((w): w is string => typeof w === 'string' && w !== '');
  return cutUnits(words.join(' '), MAX_WEB_QUERY_CHARS).trim();
}
