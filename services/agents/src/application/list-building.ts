import { cutUnits } from '@lore/ai';
import type { Directory, DirectoryFilter, DirectoryRecord } from '../sources/directory';
import { columnIdOf, openCell, sourcedCell, type Cell, type Column, type Criterion, type EnrichmentState, type Provenance, type SearchKind, type WorkflowStarter } from '../domain/workflow';
import { extractCompanyFactsFromText, extractPersonFactsFromText } from '../domain/company-page';

/**
 * What list building reads (docs/agents.md, "Company and people search"): criteria from the prompt, candidates from
 * the tenant's directory and the web, and a verdict of each candidate against every criterion. The worker depends
 * on these ports only; agents-worker.ts binds them to the criteria extractor (or the configured model), the
 * scorer, the directory and the web search provider.
 */

/** What the prompt asks for. */
export interface SearchPlan {
  category: string;
  goal: string;
  criteria: Criterion[];
  /** The directory filter the criteria translate to ({} reads every record of the kind). */
  filter: DirectoryFilter;
  /** The web search query. */
  query: string;
  /** The prompt's keywords beside its criteria: the query is made again from them when the criteria change. */
  keywords?: string[];
  /** Model tokens spent making the plan (0 without a model). */
  modelTokens: number;
  /** Rows the prompt asks for ("find 40 ..."), when it names a number: the first run's target. */
  count?: number;
  title?: string;
}

export interface CriteriaPlanner {
  plan(prompt: string, kind: SearchKind, signal: AbortSignal): Promise<SearchPlan>;
}

/** A record found for the list, with its source. */
export interface Candidate {
  entityKey: string;
  /** The entity's fields (companies: name, domain, industry, location...; people: name, title, company...). */
  data: Record<string, unknown>;
  /** The text a verdict may quote (a page's text, or the record's fields as text). */
  text: string;
  provenance: Provenance;
  /** A person's employer as a page states it (web candidates; directory ones are judged with the directory's record). */
  company?: Record<string, unknown>;
}

/** A candidate's verdict on one criterion: met, not met, or unknown (null) with the evidence quoted. */
export interface CriterionVerdict {
  met: boolean | null;
  value: string;
  evidence: string;
}

export interface CandidateScore {
  /** False when a hard criterion is not met. */
  accepted: boolean;
  score: number;
  /** By criterion column id (`columnIdOf(column_name)`). */
  verdicts: Record<string, CriterionVerdict>;
}

export interface CandidateScorer {
  /** Scores candidates of one tenant against the criteria (a person's employer may be read from the directory). */
  score(tenantId: string, kind: SearchKind, candidates: readonly Candidate[], criteria: readonly Criterion[]): Promise<CandidateScore[]>;
}

export interface WebPageRead {
  url: string;
  title: string;
  text: string;
  /** Fields the page states in the directory's shape (a company's name, industry, location, employees...). */
  facts: Record<string, unknown>;
  /** The person a profile page describes (schema.org Person: name, title, company, location), or null. */
  person: Record<string, unknown> | null;
  /** Links on the page to the same site (absolute URLs, with their text), in page order; at most MAX_PAGE_LINKS. */
  links?: Array<{ url: string; text: string }>;
}

/** Most same-site links a page read keeps. */
export const MAX_PAGE_LINKS = 200;

export interface WebResult {
  url: string;
  title: string;
  snippet: string;
}

/** Web search and the guarded fetch of its result pages (every fetch counts against the run's budget). */
export interface WebSource {
  search(query: string, page: number, signal: AbortSignal): Promise<WebResult[]>;
  /** The page's text, title and the facts it states, or null when robots.txt, the guard or the server refused it. */
  fetchPage(url: string, signal: AbortSignal): Promise<WebPageRead | null>;
}

/** A document of the tenant's knowledge as one retrieval found it: its chunks' text joined in order. */
export interface KnowledgeDocument {
  document_id: string;
  title: string;
  /** Where a connector's document lives (its page, its file), or null (an ingested or uploaded document). */
  link: string | null;
  /** The connector kind that wrote it, or null. */
  source_type: string | null;
  text: string;
  /** The best matching chunk's snippet. */
  snippet: string;
}

/**
 * The tenant's knowledge (docs/agents.md, "The tenant's knowledge"): the documents of the starter's memory best
 * matching a query, read as the starter (what their role and groups may see). One call is one retrieval, one fetch
 * of the run's budget.
 */
export interface KnowledgeSource {
  documents(tenantId: string, starter: WorkflowStarter, query: string, signal: AbortSignal): Promise<KnowledgeDocument[]>;
}

export interface ListSources {
  planner: CriteriaPlanner;
  scorer: CandidateScorer;
  directory?: Directory;
  web?: WebSource;
  knowledge?: KnowledgeSource;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const cap = (s: string, n: number): string => (s.length <= n ? s : cutUnits(s, n));

export const hostOf = (url: string): string => {
  try {
    return new URL(url).hostname.toLowerCase().replace(/^www\./, '');
  } catch {
    return '';
  }
};

const locationText = (loc: unknown): string => {
  if (!loc || typeof loc !== 'object') return str(loc);
  const l = loc as Record<string, unknown>;
  return [str(l.city), str(l.region), str(l.country)].filter(Boolean).join(', ');
};

/** The text of a record for verdicts: its fields, one `key: value` a line. */
const recordText = (data: Record<string, unknown>): string =>
  Object.entries(data)
    .map(([k, v]) => `${k}: ${k === 'location' ? locationText(v) : Array.isArray(v) ? v.map(str).join(', ') : typeof v === 'object' ? JSON.stringify(v) : str(v)}`)
    .join('\n');

/** An entity's key: a company's domain, a person's name at their company's domain (or their profile URL). */
export function entityKeyOf(kind: SearchKind, data: Record<string, unknown>, fallback: string): string {
  if (kind === 'company_search') {
    const domain = str(data.domain).toLowerCase().replace(/^www\./, '') || hostOf(str(data.website));
    return domain || fallback;
  }
  const name = str(data.name).trim().toLowerCase();
  const domain = str(data.company_domain).toLowerCase();
  if (name && domain) return `${name}@${domain}`;
  return str(data.profile_url) || fallback;
}

export function candidateFromRecord(kind: SearchKind, record: DirectoryRecord, now: string): Candidate {
  const data = record.data;
  return {
    entityKey: entityKeyOf(kind, data, `directory:${record.id}`),
    data,
    text: recordText(data),
    provenance: { source: 'directory', source_url: /^https?:\/\//.test(record.source) ? record.source : `directory:${record.id}`, snippet: cap(recordText(data), 300), fetched_at: now },
  };
}

/** A candidate from a result's page; for people only a page describing a person (a profile) is one. */
export function candidateFromPage(kind: SearchKind, page: WebPageRead, result: WebResult, now: string): Candidate | null {
  const host = hostOf(page.url);
  if (kind === 'people_search' && !page.person?.name) return null;
  const name = (page.title || result.title).split(/\s[|–—-]\s/)[0]!.trim() || host;
  const data: Record<string, unknown> =
    kind === 'company_search' ? { name, ...page.facts, domain: host, website: page.url } : { ...page.person, profile_url: page.url, company_domain: host };
  return {
    entityKey: entityKeyOf(kind, data, page.url),
    data,
    text: cap(`${page.title}\n${page.text}`, 20_000),
    provenance: { source: 'web', source_url: page.url, snippet: cap(result.snippet || page.text, 300), fetched_at: now },
  };
}

/**
 * A candidate from a document of the tenant's knowledge: a company a document describes (its name and at least one
 * fact: website, industry, location, size or founding year), or a person (a name and a title). Its provenance is
 * the document: its id, its link (`knowledge:<document id>` without one), the supporting snippet, when it was read.
 */
export function candidateFromKnowledge(kind: SearchKind, doc: KnowledgeDocument, now: string): Candidate | null {
  const provenance: Provenance = {
    source: 'knowledge',
    source_url: doc.link ?? `knowledge:${doc.document_id}`,
    snippet: cap(doc.snippet || doc.text, 300),
    fetched_at: now,
    document_id: doc.document_id,
  };
  const text = cap(`${doc.title}\n${doc.text}`, 20_000);
  if (kind === 'company_search') {
    const f = extractCompanyFactsFromText(doc.text, doc.title || null);
    const founded = f.founded && /^\d{4}$/.test(f.founded) ? Number(f.founded) : null;
    if (!f.name || !(f.website || f.industry || f.headquarters || f.employees !== null || founded !== null)) return null;
    const data: Record<string, unknown> = { name: f.name };
    if (f.website) {
      data.website = f.website;
      data.domain = hostOf(f.website);
    }
    if (f.industry) data.industry = f.industry;
    if (f.headquarters) data.location = f.headquarters;
    if (f.employees !== null) data.employees = f.employees;
    if (founded !== null) data.founded = founded;
    if (f.description) data.description = f.description;
    return { entityKey: entityKeyOf(kind, data, `knowledge:${doc.document_id}`), data, text, provenance };
  }
  const p = extractPersonFactsFromText(doc.text, doc.title || null);
  if (!p) return null;
  const data: Record<string, unknown> = { ...p };
  return { entityKey: entityKeyOf(kind, data, `knowledge:${doc.document_id}`), data, text, provenance };
}

/** The fixed cells of a row, each from the candidate's source; a field the source does not give is an error cell. */
export function fixedCells(kind: SearchKind, rowId: string, c: Candidate): Record<string, Cell> {
  const d = c.data;
  const values: Record<string, string> =
    kind === 'company_search'
      ? { name: str(d.name), domain: str(d.domain) || hostOf(str(d.website)), industry: str(d.industry), location: locationText(d.location) }
      : { name: str(d.name), title: str(d.title), company: str(d.company), profile_url: str(d.profile_url), location: locationText(d.location) };
  const cells: Record<string, Cell> = {};
  for (const [id, value] of Object.entries(values)) cells[id] = value ? sourcedCell(rowId, id, value, c.provenance) : openCell(rowId, id, 'error', 'the source does not give it');
  return cells;
}

/** Criterion cells from a candidate's verdicts: completed when the verdict quotes its source, an error otherwise. */
export function criterionCells(rowId: string, criteria: readonly Criterion[], score: CandidateScore, provenance: Provenance): Record<string, Cell> {
  const cells: Record<string, Cell> = {};
  for (const c of criteria) {
    const id = columnIdOf(c.column_name || c.name);
    const v = score.verdicts[id];
    if (v && v.met !== null && v.evidence.trim() !== '') {
      cells[id] = sourcedCell(rowId, id, v.value || (v.met ? 'yes' : 'no'), { ...provenance, snippet: cap(v.evidence, 300) }, { met: v.met });
    } else {
      cells[id] = openCell(rowId, id, 'error', 'no source states it');
    }
  }
  return cells;
}

const words = (s: string): string[] => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/**
 * One enrichment cell of a row. `contacts`: the people the directory holds at the row's company (a person's own
 * e-mail for people lists). `custom`: the candidate field whose name shares a word with the instruction, or the
 * source text's sentence sharing the most words with it. Nothing found: an error cell saying so.
 */
export async function enrichmentCell(
  kind: SearchKind,
  tenantId: string,
  rowId: string,
  e: EnrichmentState,
  candidate: { data: Record<string, unknown>; text: string; provenance: Provenance },
  directory: Directory | undefined,
  now: string,
): Promise<Cell> {
  if (e.enrichment_type === 'contacts') {
    if (kind === 'people_search') {
      const email = str(candidate.data.email);
      return email ? sourcedCell(rowId, e.column_id, email, candidate.provenance) : openCell(rowId, e.column_id, 'error', 'no e-mail address in the source');
    }
    const domain = str(candidate.data.domain);
    if (!directory || !domain) return openCell(rowId, e.column_id, 'error', 'no directory of people to look in');
    const people = await directory.search(tenantId, 'person', { company_domain: domain }, { limit: 5 });
    if (people.length === 0) return openCell(rowId, e.column_id, 'error', 'the directory holds nobody at this company');
    const value = people.map((p) => [str(p.data.name), str(p.data.title)].filter(Boolean).join(' — ')).join('; ');
    return sourcedCell(rowId, e.column_id, value, { source: 'directory', source_url: `directory:${people[0]!.id}`, snippet: cap(value, 300), fetched_at: now }, { contacts: people.map((p) => ({ id: p.id, ...p.data })).slice(0, 5) });
  }
  const asked = new Set(words(e.instruction).filter((w) => w.length > 2));
  for (const [key, value] of Object.entries(candidate.data)) {
    if (!words(key).some((w) => asked.has(w))) continue;
    const text = key === 'location' ? locationText(value) : Array.isArray(value) ? value.map(str).join(', ') : str(value);
    if (text) return sourcedCell(rowId, e.column_id, text, { ...candidate.provenance, snippet: cap(`${key}: ${text}`, 300) });
  }
  let best = '';
  let bestHits = 0;
  for (const sentence of candidate.text.split(/(?<=[.!?])\s+|\n+/)) {
    const hits = words(sentence).filter((w) => asked.has(w)).length;
    if (hits > bestHits) {
      best = sentence.trim();
      bestHits = hits;
    }
  }
  return bestHits > 0 ? sourcedCell(rowId, e.column_id, cap(best, 500), { ...candidate.provenance, snippet: cap(best, 300) }) : openCell(rowId, e.column_id, 'error', 'no source answers the instruction');
}

/** The row's open object in all_companies: its entity key and each column's value. */
export function openRecord(entityKey: string, cells: Record<string, Cell>, columns: readonly Column[]): Record<string, unknown> {
  const out: Record<string, unknown> = { entity_key: entityKey };
  for (const c of columns) out[c.id] = cells[c.id]?.value ?? '';
  return out;
}
