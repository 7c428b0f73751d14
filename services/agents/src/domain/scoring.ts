import { cutUnits } from '@lore/ai';
import {
  interpretCriterion,
  parseNumber,
  placeLabel,
  readPlaces,
  readRoleText,
  type Constraint,
  type Criterion,
  type ExtractOptions,
  type Place,
  type Range,
  type RoleSpec,
  type SearchKind,
  PROMPT_STOPWORDS,
} from './criteria';
import {
  CITY_STATES,
  DEPARTMENTS,
  INDUSTRIES,
  INDUSTRY_BY_ID,
  SENIORITY,
  SENIORITY_ACCEPTS,
  countryCode,
  escapeRegex,
  findTerms,
  industrySatisfies,
  normalizeText,
  termOf,
  termRegexes,
} from './lexicon';

/**
 * Scoring (docs/agents.md, "Criteria and scoring"): a candidate — a company or person document in the directory's
 * field shape, with its employer's document for people and the text of a page read for it when there is one — is
 * held against every criterion. Each criterion is `matched`, `not_matched` or `unknown`, with the evidence that
 * decided it (the field and its value, or a snippet of the page). A hard filter that is not matched excludes the
 * candidate; soft filters, and hard filters that stay unknown, only rank. `keywordBaseline` is the naive ranking
 * the list-quality benchmark compares with.
 */

/**
 * A record's short values (a city, a country, a job title) recur across the candidates of a list and across lists,
 * and reading one runs every pattern of a vocabulary over it. Each reading is kept per value: the newest
 * `READINGS_KEPT` values of each kind, up to `READING_MAX_CHARS` long (longer ones are read every time). A kept
 * reading is shared, so its callers only read it.
 */
const READINGS_KEPT = 2_000;
const READING_MAX_CHARS = 160;

function keptReadings<T>(read: (text: string) => T): (text: string) => T {
  const kept = new Map<string, T>();
  return (text) => {
    if (text.length > READING_MAX_CHARS) return read(text);
    if (kept.has(text)) return kept.get(text)!;
    const value = read(text);
    if (kept.size >= READINGS_KEPT) kept.delete(kept.keys().next().value!);
    kept.set(text, value);
    return value;
  };
}

const placesOf = keptReadings((text): readonly Place[] => readPlaces(text));
const rolesOf = keptReadings((text): readonly RoleSpec[] => readRoleText(text));
const countryOfText = keptReadings(countryCode);
const countryOf = (value: unknown): string | null => (typeof value === 'string' ? countryOfText(value) : null);

export type Outcome = 'matched' | 'not_matched' | 'unknown';

export interface Evidence {
  /** `field`: a value of the record (or its employer's, `company.<field>`); `page`: the page text. */
  source: 'field' | 'page';
  /** The dotted field path, for `field` evidence. */
  field?: string;
  /** The field's value as text (bounded). */
  value?: string;
  /** The words around the deciding match, for `page` evidence (at most ~200 characters). */
  snippet?: string;
  /**
   * What the source says for the criterion, in the lexicon's words (an industry's or a place's label, a number, the
   * keywords found), when the evidence is not the criterion's own field: a page's text, or a description that names
   * the industry. A list's cell shows it rather than the whole text the evidence quotes.
   */
  match?: string;
}

export interface Verdict {
  column_name: string;
  name: string;
  type: string;
  dimension: Constraint['dimension'];
  outcome: Outcome;
  /** How much of a keyword or text criterion was found (0..1); 1 or 0 for the others. */
  strength: number;
  evidence: Evidence | null;
}

export interface Candidate {
  kind: SearchKind;
  /** The record's document (directory field shape: see sources/directory.ts). */
  data: Record<string, unknown>;
  /** For a person: their employer's document, read for industry, size and founding year. */
  company?: Record<string, unknown> | null;
  /** Visible text of a page read for this candidate (its site, its profile), when there is one. */
  pageText?: string | null;
}

export interface CandidateScore {
  verdicts: Verdict[];
  /** A hard filter is not matched: the candidate does not belong in the list. */
  excluded: boolean;
  /** Every hard filter is matched (none unknown, none failed). */
  qualified: boolean;
  /** 0..1: hard filters weigh 2, soft 1; matched counts fully (keywords by the share found), unknown 0.25. */
  score: number;
}

export interface CompiledCriterion {
  criterion: Pick<Criterion, 'name' | 'value' | 'column_name' | 'type'>;
  constraint: Constraint;
}

/** Page text read at most (characters); the rest is not looked at. */
export const MAX_PAGE_CHARS = 200_000;
const MAX_EVIDENCE_VALUE = 200;
const UNKNOWN_CREDIT = 0.25;

/** Reads every criterion once, for scoring many candidates. */
export function compileCriteria(criteria: ReadonlyArray<Pick<Criterion, 'name' | 'value' | 'column_name' | 'type'>>, options: ExtractOptions = {}): CompiledCriterion[] {
  return criteria.map((criterion) => ({ criterion, constraint: interpretCriterion(criterion, options) }));
}

/** Scores one candidate against criteria (compiled or not). */
export function scoreCandidate(candidate: Candidate, criteria: ReadonlyArray<CompiledCriterion | Pick<Criterion, 'name' | 'value' | 'column_name' | 'type'>>, options: ExtractOptions = {}): CandidateScore {
  const compiled = criteria.map((c) => ('constraint' in c ? c : { criterion: c, constraint: interpretCriterion(c, options) }));
  const view = new CandidateView(candidate);
  const verdicts = compiled.map(({ criterion, constraint }) => {
    const { outcome, strength, evidence } = judge(view, constraint);
    return { column_name: criterion.column_name, name: criterion.name, type: criterion.type, dimension: constraint.dimension, outcome, strength, evidence };
  });
  let total = 0;
  let earned = 0;
  let excluded = false;
  let qualified = true;
  for (const v of verdicts) {
    if (v.type === 'enrichment' || v.dimension === 'enrichment') continue;
    const weight = v.type === 'hard_filter' ? 2 : 1;
    total += weight;
    earned += weight * (v.outcome === 'matched' ? v.strength : v.outcome === 'unknown' ? UNKNOWN_CREDIT : 0);
    if (v.type === 'hard_filter') {
      if (v.outcome === 'not_matched') excluded = true;
      if (v.outcome !== 'matched') qualified = false;
    }
  }
  return { verdicts, excluded, qualified: qualified && !excluded, score: total === 0 ? 1 : round(earned / total) };
}

/**
 * Candidates best first: qualified ones, then those not excluded (some hard filter unknown), then excluded ones;
 * within each group by score, ties in the given order.
 */
export function rankCandidates<T extends { score: CandidateScore }>(items: readonly T[]): T[] {
  const group = (s: CandidateScore) => (s.qualified ? 0 : s.excluded ? 2 : 1);
  return items
    .map((item, i) => ({ item, i }))
    .sort((a, b) => group(a.item.score) - group(b.item.score) || b.item.score.score - a.item.score.score || a.i - b.i)
    .map(({ item }) => item);
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

// ---------------------------------------------------------------------------------------------------------------
// The candidate as the judges read it

class CandidateView {
  readonly page: string;
  private pageLower: string | null = null;
  private textCache: string | null = null;

  constructor(readonly candidate: Candidate) {
    this.page = cutUnits(normalizeText(candidate.pageText ?? ''), MAX_PAGE_CHARS);
  }

  get kind(): SearchKind {
    return this.candidate.kind;
  }

  /** The first present field among `paths` on the record, then (with `company`) on the employer's document. */
  field(paths: string[], options: { company?: boolean } = {}): { path: string; value: unknown } | null {
    for (const path of paths) {
      const value = pathValue(this.candidate.data, path);
      if (present(value)) return { path, value };
    }
    if (options.company && this.candidate.company) {
      for (const path of paths) {
        const value = pathValue(this.candidate.company, path);
        if (present(value)) return { path: `company.${path}`, value };
      }
    }
    return null;
  }

  /** All text of the record (and employer), values only, bounded: what keyword criteria search besides the page. */
  text(): string {
    if (this.textCache === null) {
      const parts: string[] = [];
      flatten(this.candidate.data, parts, 0);
      if (this.candidate.company) flatten(this.candidate.company, parts, 0);
      this.textCache = cutUnits(normalizeText(parts.join(' \n ')), MAX_PAGE_CHARS);
    }
    return this.textCache;
  }

  lowerPage(): string {
    this.pageLower ??= this.page.toLowerCase();
    return this.pageLower;
  }
}

function pathValue(doc: Record<string, unknown>, path: string): unknown {
  let cur: unknown = doc;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function present(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (typeof value === 'string') return value.trim() !== '';
  if (Array.isArray(value)) return value.some(present);
  if (typeof value === 'object') return Object.values(value as Record<string, unknown>).some(present);
  return true;
}

function flatten(value: unknown, out: string[], depth: number): void {
  if (depth > 6 || out.length > 2_000) return;
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number' || typeof value === 'boolean') out.push(String(value));
  else if (Array.isArray(value)) for (const v of value) flatten(v, out, depth + 1);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) flatten(v, out, depth + 1);
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const parts: string[] = [];
  flatten(value, parts, 0);
  return parts.join(', ');
}

function fieldEvidence(path: string, value: unknown): Evidence {
  return { source: 'field', field: path, value: cutUnits(asText(value), MAX_EVIDENCE_VALUE) };
}

/** About 200 characters of `text` around [start, end), cut at word boundaries. */
export function snippetAround(text: string, start: number, end: number): string {
  const from = Math.max(0, start - 90);
  const to = Math.min(text.length, end + 90);
  let s = text.slice(from, to);
  if (from > 0) s = s.replace(/^\S*\s+/, '');
  if (to < text.length) s = s.replace(/\s+\S*$/, '');
  return s.replace(/\s+/g, ' ').trim();
}

function pageEvidence(view: CandidateView, start: number, end: number): Evidence {
  return { source: 'page', snippet: snippetAround(view.page, start, end) };
}

interface Judgement {
  outcome: Outcome;
  strength: number;
  evidence: Evidence | null;
}

const MATCHED = (evidence: Evidence | null): Judgement => ({ outcome: 'matched', strength: 1, evidence });
const NOT_MATCHED = (evidence: Evidence | null): Judgement => ({ outcome: 'not_matched', strength: 0, evidence });
const UNKNOWN: Judgement = { outcome: 'unknown', strength: 0, evidence: null };

// ---------------------------------------------------------------------------------------------------------------
// Judges, one per dimension

const FIELDS = {
  industry: ['industry', 'industries', 'sector', 'category'],
  companyIndustry: ['company_industry', 'industry'],
  location: ['location', 'headquarters', 'hq', 'address'],
  employees: ['employees', 'employee_count', 'headcount', 'number_of_employees', 'company_size', 'size'],
  companyEmployees: ['company_employees', 'company_size'],
  founded: ['founded', 'founded_year', 'year_founded', 'founding_year', 'foundingDate'],
  companyFounded: ['company_founded'],
  title: ['title', 'job_title', 'position', 'role', 'headline'],
};

function judge(view: CandidateView, c: Constraint): Judgement {
  switch (c.dimension) {
    case 'industry':
      return judgeIndustry(view, c.industries);
    case 'location':
      return judgeLocation(view, c.places);
    case 'employees':
      return judgeRange(view, c.range, 'employees');
    case 'founded':
      return judgeRange(view, c.range, 'founded');
    case 'role':
      return judgeRole(view, c.roles);
    case 'seniority':
      return judgeSeniority(view, c.levels);
    case 'department':
      return judgeDepartment(view, c.departments);
    case 'keywords':
      return judgeWords(view, c.keywords);
    case 'text':
      return judgeWords(view, c.terms);
    case 'enrichment': {
      const f = view.field([c.column]);
      return f ? MATCHED(fieldEvidence(f.path, f.value)) : UNKNOWN;
    }
  }
}

function judgeIndustry(view: CandidateView, wanted: string[]): Judgement {
  const satisfies = (ids: string[]) => ids.some((id) => wanted.some((w) => industrySatisfies(w, id)));
  // A person's industry is their employer's; a company's its own.
  const f = view.kind === 'person' ? (view.field(['company_industry']) ?? companyField(view, FIELDS.industry) ?? view.field(['industry'])) : view.field(FIELDS.industry);
  if (f) {
    const ids = findTerms(normalizeText(asText(f.value)), INDUSTRIES).map((h) => h.term.id);
    if (ids.length > 0) return satisfies(ids) ? MATCHED(fieldEvidence(f.path, f.value)) : NOT_MATCHED(fieldEvidence(f.path, f.value));
  }
  // No readable industry field: the tags and the description, then the page, may name it.
  const more = view.kind === 'company' ? [view.field(['tags']), view.field(['description'])] : [companyField(view, ['tags']), companyField(view, ['description'])];
  for (const t of more) {
    if (!t) continue;
    const ids = findTerms(normalizeText(asText(t.value)), INDUSTRIES).map((h) => h.term.id);
    const found = ids.find((id) => wanted.some((w) => industrySatisfies(w, id)));
    if (found) return MATCHED({ ...fieldEvidence(t.path, t.value), match: INDUSTRY_BY_ID.get(found)?.label ?? found });
  }
  const hit = findPageTerm(view, wanted.map((id) => INDUSTRY_BY_ID.get(id)).filter((x) => x !== undefined).flatMap((i) => [i, ...INDUSTRIES.filter((c) => industrySatisfies(i.id, c.id))]));
  if (hit) return MATCHED(hit);
  // An industry field we cannot place and nothing else naming the wanted one.
  return f ? NOT_MATCHED(fieldEvidence(f.path, f.value)) : UNKNOWN;
}

function companyField(view: CandidateView, paths: string[]): { path: string; value: unknown } | null {
  const doc = view.candidate.company;
  if (!doc) return null;
  for (const path of paths) {
    const value = pathValue(doc, path);
    if (present(value)) return { path: `company.${path}`, value };
  }
  return null;
}

/** The first of `terms` the page names, quoted, its `match` the term's label (or `label` when given). */
function findPageTerm(view: CandidateView, terms: Parameters<typeof termRegexes>[0][], label?: string): Evidence | null {
  if (view.page === '') return null;
  for (const term of terms) {
    for (const re of termRegexes(term)) {
      re.lastIndex = 0;
      const m = re.exec(view.page);
      re.lastIndex = 0;
      if (m) return { ...pageEvidence(view, m.index, m.index + m[0].length), match: label ?? term.label };
    }
  }
  return null;
}

interface RecordPlace {
  city: string | null;
  region: string | null;
  country: string | null;
}

/** A record's location from `{city, region, country}` (country a code or a name) or a string ("Berlin, Germany"). */
function recordPlace(value: unknown): RecordPlace {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Record<string, unknown>;
    const city = typeof v.city === 'string' && v.city.trim() !== '' ? v.city.trim() : null;
    const region = typeof v.region === 'string' && v.region.trim() !== '' ? v.region.trim() : typeof v.state === 'string' && v.state.trim() !== '' ? v.state.trim() : null;
    let country = countryOf(v.country) ?? countryOf(v.country_code) ?? countryOf(v.countryCode);
    if (!country && city) country = cityCountry(city);
    return { city, region, country };
  }
  const text = asText(value);
  const places = placesOf(text);
  const city = places.find((p) => p.kind === 'city');
  const state = places.find((p) => p.kind === 'state');
  const country = places.find((p) => p.kind === 'country');
  return {
    city: city?.kind === 'city' ? city.city.label : null,
    region: state?.kind === 'state' ? state.state.label : null,
    country: country?.kind === 'country' ? country.country.id : city?.kind === 'city' ? city.city.country : state?.kind === 'state' ? state.state.country : countryOf(text),
  };
}

function cityCountry(city: string): string | null {
  const hit = placesOf(city).find((p) => p.kind === 'city');
  return hit?.kind === 'city' ? hit.city.country : null;
}

function sameCity(recordCity: string, wanted: Extract<Place, { kind: 'city' }>): boolean {
  const known = placesOf(recordCity).find((p) => p.kind === 'city');
  if (known?.kind === 'city') return known.city.id === wanted.city.id;
  return recordCity.trim().toLowerCase() === wanted.city.label.toLowerCase();
}

/** Whether a record's place lies in a wanted place: true, false, or null when the record does not say enough. */
function placeIn(rec: RecordPlace, wanted: Place): boolean | null {
  switch (wanted.kind) {
    case 'city': {
      if (CITY_STATES.has(wanted.city.country) && rec.country === wanted.city.country) return true;
      if (rec.city) return sameCity(rec.city, wanted);
      if (rec.country && rec.country !== wanted.city.country) return false;
      return null;
    }
    case 'state': {
      if (rec.country && rec.country !== wanted.state.country) return false;
      if (rec.region) return findTerms(normalizeText(rec.region), [wanted.state]).length > 0 || rec.region.toLowerCase() === wanted.state.label.toLowerCase();
      return null;
    }
    case 'country':
      return rec.country ? rec.country === wanted.country.id : null;
    case 'region':
      return rec.country ? wanted.region.countries.includes(rec.country) : null;
  }
}

function judgeLocation(view: CandidateView, wanted: Place[]): Judgement {
  const f = view.field(FIELDS.location) ?? view.field(['city', 'country']);
  if (f) {
    const rec = f.path === 'city' || f.path === 'country' ? recordPlace({ city: view.field(['city'])?.value, region: view.field(['region', 'state'])?.value, country: view.field(['country'])?.value }) : recordPlace(f.value);
    const answers = wanted.map((w) => placeIn(rec, w));
    if (answers.some((a) => a === true)) return MATCHED(fieldEvidence(f.path, f.value));
    if (answers.every((a) => a === false)) return NOT_MATCHED(fieldEvidence(f.path, f.value));
  }
  // The page may name the place ("based in Berlin"): a mention is evidence for, its absence proves nothing.
  if (view.page !== '') {
    for (const w of wanted) {
      const term = w.kind === 'city' ? w.city : w.kind === 'state' ? w.state : w.kind === 'country' ? w.country : w.region;
      const hit = findPageTerm(view, [term], placeLabel(w));
      if (hit) return MATCHED(hit);
    }
  }
  return UNKNOWN;
}

function rangeOf(value: unknown): Range | null {
  if (typeof value === 'number' && Number.isFinite(value)) return { min: value, max: value };
  if (typeof value === 'string') {
    const t = value.trim();
    const date = /^(\d{4})-\d{2}(?:-\d{2})?/.exec(t);
    if (date) return { min: Number(date[1]), max: Number(date[1]) };
    const range = /^(\d[\d,.]*k?)\s*(?:-|–|to)\s*(\d[\d,.]*k?)/i.exec(t);
    if (range) {
      const a = parseNumber(range[1]!);
      const b = parseNumber(range[2]!);
      if (a !== null && b !== null) return { min: Math.min(a, b), max: Math.max(a, b) };
    }
    const plus = /^(\d[\d,.]*k?)\s*\+/i.exec(t);
    if (plus) {
      const a = parseNumber(plus[1]!);
      if (a !== null) return { min: a, max: null };
    }
    const n = /^(\d[\d,.]*k?)$/i.exec(t);
    if (n) {
      const a = parseNumber(n[1]!);
      if (a !== null) return { min: a, max: a };
    }
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Record<string, unknown>;
    // schema.org QuantitativeValue: {value} or {minValue, maxValue}
    if ('value' in v) return rangeOf(v.value);
    const min = typeof v.minValue === 'number' ? v.minValue : typeof v.min === 'number' ? v.min : null;
    const max = typeof v.maxValue === 'number' ? v.maxValue : typeof v.max === 'number' ? v.max : null;
    if (min !== null || max !== null) return { min, max };
  }
  return null;
}

/** Whether `actual` lies in `wanted`: true when wholly inside, false when wholly outside, null when they overlap. */
function rangeIn(actual: Range, wanted: Range): boolean | null {
  const lo = wanted.min ?? -Infinity;
  const hi = wanted.max ?? Infinity;
  const aLo = actual.min ?? -Infinity;
  const aHi = actual.max ?? Infinity;
  if (aLo >= lo && aHi <= hi) return true;
  if (aHi < lo || aLo > hi) return false;
  return null;
}

const PAGE_EMPLOYEES = /(?<![\p{L}\p{N}])(?:team\s+of\s+|staff\s+of\s+)?(\d{1,3}(?:[,.]\d{3})+|\d+(?:\.\d+)?\s?k|\d+)\s*\+?\s*(?:full[\s-]?time\s+)?(?:employees|staff|people|team\s+members|colleagues)(?![\p{L}\p{N}])/giu;
const PAGE_FOUNDED = /(?<![\p{L}\p{N}])(?:founded|established|incorporated|started|since)\s+(?:in\s+)?(?:[\p{L}]+\s+)?(1[89]\d\d|20\d\d)(?![\p{L}\p{N}])/giu;

function judgeRange(view: CandidateView, wanted: Range, dimension: 'employees' | 'founded'): Judgement {
  const own = dimension === 'employees' ? FIELDS.employees : FIELDS.founded;
  const viaCompany = dimension === 'employees' ? FIELDS.companyEmployees : FIELDS.companyFounded;
  const f = view.kind === 'person' ? (view.field(viaCompany) ?? companyField(view, own)) : view.field(own);
  if (f) {
    const actual = rangeOf(f.value);
    if (actual) {
      const inside = rangeIn(actual, wanted);
      if (inside === true) return MATCHED(fieldEvidence(f.path, f.value));
      if (inside === false) return NOT_MATCHED(fieldEvidence(f.path, f.value));
      return { outcome: 'unknown', strength: 0, evidence: fieldEvidence(f.path, f.value) };
    }
  }
  if (view.page !== '') {
    const re = dimension === 'employees' ? PAGE_EMPLOYEES : PAGE_FOUNDED;
    re.lastIndex = 0;
    for (const m of view.page.matchAll(re)) {
      const n = parseNumber(m[1]!);
      if (n === null) continue;
      const start = m.index ?? 0;
      const inside = rangeIn({ min: n, max: n }, wanted);
      const evidence = { ...pageEvidence(view, start, start + m[0].length), match: String(n) };
      return inside ? MATCHED(evidence) : NOT_MATCHED(evidence);
    }
  }
  return UNKNOWN;
}

/** Whether a title's role satisfies a wanted role. */
export function roleSatisfies(wanted: RoleSpec, held: RoleSpec): boolean {
  if (wanted.chief) return held.chief === wanted.chief;
  if (wanted.seniority && !(held.seniority && (SENIORITY_ACCEPTS[wanted.seniority] ?? [wanted.seniority]).includes(held.seniority))) return false;
  if (wanted.department && held.department !== wanted.department) return false;
  if (wanted.function && held.function !== wanted.function) return false;
  // A wanted level alone ("founders", "directors") or with a department is satisfied by any title holding it.
  return wanted.seniority !== null || wanted.department !== null || wanted.function !== null;
}

function judgeRole(view: CandidateView, wanted: RoleSpec[]): Judgement {
  if (view.kind !== 'person') return UNKNOWN;
  const f = view.field(FIELDS.title);
  if (f) {
    const held = rolesOf(asText(f.value));
    if (held.length > 0) {
      return wanted.some((w) => held.some((h) => roleSatisfies(w, h))) ? MATCHED(fieldEvidence(f.path, f.value)) : NOT_MATCHED(fieldEvidence(f.path, f.value));
    }
  }
  // No readable title: the seniority and department fields, when both say enough.
  const level = view.field(['seniority']);
  const dept = view.field(['department']);
  if (level || dept) {
    const held = {
      label: '',
      chief: null,
      seniority: level ? (termOf(asText(level.value), SENIORITY)?.id ?? null) : null,
      department: dept ? (termOf(asText(dept.value), DEPARTMENTS)?.id ?? null) : null,
      function: null,
    };
    const decidable = wanted.filter((w) => !w.chief && !w.function && (!w.seniority || held.seniority) && (!w.department || held.department));
    if (decidable.length > 0 && decidable.length === wanted.length) {
      const ok = wanted.some((w) => roleSatisfies(w, held));
      const ev = fieldEvidence(level ? level.path : dept!.path, level ? level.value : dept!.value);
      return ok ? MATCHED(ev) : NOT_MATCHED(ev);
    }
  }
  return f ? NOT_MATCHED(fieldEvidence(f.path, f.value)) : UNKNOWN;
}

function judgeSeniority(view: CandidateView, wanted: string[]): Judgement {
  if (view.kind !== 'person') return UNKNOWN;
  const accepts = new Set(wanted.flatMap((w) => SENIORITY_ACCEPTS[w] ?? [w]));
  const f = view.field(['seniority']);
  if (f) {
    const level = seniorityOfField(asText(f.value));
    if (level) return accepts.has(level) ? MATCHED(fieldEvidence(f.path, f.value)) : NOT_MATCHED(fieldEvidence(f.path, f.value));
  }
  const t = view.field(FIELDS.title);
  if (t) {
    const levels = rolesOf(asText(t.value)).map((r) => r.seniority).filter((s): s is string => s !== null);
    if (levels.some((l) => accepts.has(l))) return MATCHED(fieldEvidence(t.path, t.value));
    if (levels.length > 0) return NOT_MATCHED(fieldEvidence(t.path, t.value));
  }
  return UNKNOWN;
}

/** A seniority field's value as a level id: the vocabulary's words, or its ids (`c_level`, `vp`), `entry` as junior. */
function seniorityOfField(value: string): string | null {
  const v = value.trim().toLowerCase().replace(/[\s-]+/g, '_');
  if (SENIORITY.some((s) => s.id === v)) return v;
  if (v === 'entry' || v === 'entry_level') return 'junior';
  return termOf(value, SENIORITY)?.id ?? null;
}

function judgeDepartment(view: CandidateView, wanted: string[]): Judgement {
  if (view.kind !== 'person') return UNKNOWN;
  const f = view.field(['department', 'function', 'team']);
  if (f) {
    const d = termOf(asText(f.value), DEPARTMENTS);
    if (d) return wanted.includes(d.id) ? MATCHED(fieldEvidence(f.path, f.value)) : NOT_MATCHED(fieldEvidence(f.path, f.value));
  }
  const t = view.field(FIELDS.title);
  if (t) {
    const depts = rolesOf(asText(t.value)).map((r) => r.department).filter((d): d is string => d !== null);
    if (depts.some((d) => wanted.includes(d))) return MATCHED(fieldEvidence(t.path, t.value));
  }
  return UNKNOWN;
}

/** Keywords and free text: the share of words found in the record's values or the page. */
function judgeWords(view: CandidateView, words: string[]): Judgement {
  if (words.length === 0) return UNKNOWN;
  const record = view.text();
  let found = 0;
  let first: Evidence | null = null;
  const named: string[] = [];
  for (const word of words) {
    const re = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegex(word)}(?![\\p{L}\\p{N}])`, 'iu');
    const inRecord = re.exec(record);
    if (inRecord) {
      found += 1;
      named.push(word);
      first ??= { source: 'field', value: cutUnits(snippetAround(record, inRecord.index, inRecord.index + inRecord[0].length), MAX_EVIDENCE_VALUE) };
      continue;
    }
    const inPage = view.page === '' ? null : re.exec(view.page);
    if (inPage) {
      found += 1;
      named.push(word);
      first ??= pageEvidence(view, inPage.index, inPage.index + inPage[0].length);
    }
  }
  if (found === 0) return record.trim() === '' && view.page === '' ? UNKNOWN : { outcome: 'not_matched', strength: 0, evidence: null };
  return { outcome: 'matched', strength: round(found / words.length), evidence: first ? { ...first, match: named.join(', ') } : null };
}

// ---------------------------------------------------------------------------------------------------------------
// The keyword-match baseline

/** The prompt's content words, as the baseline reads them: lower case, no stop words, no numbers. */
export function baselineTerms(prompt: string): string[] {
  const words = normalizeText(prompt).toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words.filter((w) => w.length > 1 && !/^\d+$/.test(w) && !PROMPT_STOPWORDS.has(w)))];
}

/**
 * The naive score the list-quality benchmark compares with: the share of the prompt's content words that appear
 * anywhere in the record's values or its page text. No vocabulary, no numbers, no structure.
 */
export function keywordBaselineScore(prompt: string | string[], candidate: Candidate): number {
  const terms = Array.isArray(prompt) ? prompt : baselineTerms(prompt);
  if (terms.length === 0) return 0;
  const view = new CandidateView(candidate);
  const haystack = new Set(`${view.text()} ${view.page}`.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  return round(terms.filter((t) => haystack.has(t)).length / terms.length);
}

/** The baseline's list: candidates with at least one word found, best first (ties in the given order), at most `limit`. */
export function keywordBaseline<T extends Candidate>(prompt: string, candidates: readonly T[], limit: number): Array<{ candidate: T; score: number }> {
  const terms = baselineTerms(prompt);
  return candidates
    .map((candidate, i) => ({ candidate, score: keywordBaselineScore(terms, candidate), i }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, Math.max(0, limit))
    .map(({ candidate, score }) => ({ candidate, score }));
}
