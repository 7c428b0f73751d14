import { cutUnits } from '@lore/ai';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LanguageModel } from '@lore/ai';
import { closingTag, htmlPlainText, htmlTitle, startTags } from '@lore/ai/html-text';
import { CredentialKindSchema } from '@lore/contracts';
import type { IdentitySigner, KnowledgeSearch, RetrievedChunk } from '@lore/runtime';
import { extractCompanyFacts, jsonLdNodes } from '../domain/company-page';
import { compileCriteria, scoreCandidate, type CandidateScore as Scored, type Candidate as ScoringCandidate } from '../domain/scoring';
import { columnIdOf, type Criterion, type SearchKind } from '../domain/workflow';
import type { Directory } from '../sources/directory';
import { PageReadError } from '../sources/web-pages';
import { isRetryableSearchError, type WebSearch } from '../sources/web-search';
import type { AgentsDeps } from './context';
import { extractCriteria } from './criteria';
import { PostgresDirectory } from './directory';
import { MAX_PAGE_LINKS, type CandidateScore, type CandidateScorer, type CriteriaPlanner, type CriterionVerdict, type KnowledgeDocument, type KnowledgeSource, type ListSources, type WebPageRead, type WebSource } from './list-building';

/**
 * List building's sources bound to Lore's modules: criteria from the extractor (the configured model through
 * structured output, else the deterministic rules), verdicts from the scorer, candidates from the tenant's
 * directory, from the tenant's knowledge (the memory API, when the graph service is configured) and, when a web
 * search provider is configured, from its results' pages read through the guarded, robots-honouring page reader.
 */

/** Completion tokens a criteria extraction may spend; a model's run is charged this plus the prompt's length / 4. */
const CRITERIA_MAX_TOKENS = 1_500;

const scoringKind = (kind: SearchKind): 'company' | 'person' => (kind === 'company_search' ? 'company' : 'person');

/**
 * The web search query of a list: its hard industry and place criteria's values and the prompt's keywords, else the
 * prompt. Industry and place words find a company's pages and its people's profiles; a role's words ("CEO") are
 * often not on the page (it says "Chief Executive Officer"), so the scorer judges the role instead. Made again
 * whenever the criteria change (the generic workflow API's `additional_criteria` and `current_criteria`).
 */
export function webSearchQuery(criteria: readonly Criterion[], keywords: readonly string[], prompt: string): string {
  const hard = criteria.filter((c) => c.type === 'hard_filter' && (c.column_name === 'industry' || c.column_name === 'location'));
  return [...hard.map((c) => c.value.split(',')[0]!.trim()), ...keywords].filter(Boolean).join(' ') || prompt;
}

export function criteriaPlanner(model: LanguageModel | null): CriteriaPlanner {
  return {
    async plan(prompt, kind, signal) {
      const r = await extractCriteria(model, prompt, scoringKind(kind), { signal, maxTokens: CRITERIA_MAX_TOKENS });
      return {
        category: r.category,
        goal: r.description,
        criteria: r.criteria,
        filter: {},
        query: webSearchQuery(r.criteria, r.keywords, prompt),
        keywords: r.keywords,
        modelTokens: r.source === 'model' ? CRITERIA_MAX_TOKENS + Math.ceil(prompt.length / 4) : 0,
        ...(r.count !== null ? { count: r.count } : {}),
        title: r.title,
      };
    },
  };
}

const outcome = (o: string): boolean | null => (o === 'matched' ? true : o === 'not_matched' ? false : null);

/**
 * The scorer's verdicts by column id; accepted when every hard filter is matched (or, without hard filters, any is).
 * A verdict's value is what its source says for the criterion: the field's value when the criterion's own field
 * decided, else what the text names (`Evidence.match`: "Fintech" from a description, "Berlin, Germany" from a page),
 * never the whole text; the quote stays the evidence.
 */
export function toCandidateScore(s: Scored): CandidateScore {
  const verdicts: Record<string, CriterionVerdict> = {};
  for (const v of s.verdicts) {
    const e = v.evidence;
    const evidence = e ? (e.source === 'page' ? (e.snippet ?? '') : `${e.field ?? ''}: ${e.value ?? ''}`) : '';
    const value = e?.match ?? (e?.source === 'field' ? e.value : undefined);
    verdicts[columnIdOf(v.column_name || v.name)] = { met: outcome(v.outcome), value: value ?? (v.outcome === 'matched' ? 'yes' : v.outcome === 'not_matched' ? 'no' : ''), evidence };
  }
  const hasHard = s.verdicts.some((v) => v.type === 'hard_filter');
  return { accepted: hasHard ? s.qualified : !s.excluded && s.score > 0, score: s.score, verdicts };
}

const EMPLOYERS_CACHED = 1_000;

/** Scores with domain/scoring.ts; a person's employer is read from the directory (cached per tenant and domain). */
export function directoryScorer(directory: Directory | undefined): CandidateScorer {
  const employers = new Map<string, Record<string, unknown> | null>();
  const employer = async (tenantId: string, domain: string): Promise<Record<string, unknown> | null> => {
    if (!directory || !domain) return null;
    const key = `${tenantId}\u0000${domain}`;
    if (employers.has(key)) return employers.get(key)!;
    const found = (await directory.search(tenantId, 'company', { domain }, { limit: 1 }))[0]?.data ?? null;
    if (employers.size >= EMPLOYERS_CACHED) employers.delete(employers.keys().next().value!);
    employers.set(key, found);
    return found;
  };
  return {
    async score(tenantId, kind, candidates, criteria: readonly Criterion[]) {
      const out: CandidateScore[] = [];
      // Each criterion is read once for the whole batch, not once per candidate.
      const compiled = compileCriteria(criteria);
      for (const c of candidates) {
        const candidate: ScoringCandidate = {
          kind: scoringKind(kind),
          data: c.data,
          company: kind === 'people_search' ? (c.company ?? (await employer(tenantId, String(c.data.company_domain ?? '')))) : null,
          // A page's or a knowledge document's text: a criterion the fields do not answer may be read there.
          pageText: c.provenance.source === 'web' || c.provenance.source === 'knowledge' ? c.text : null,
        };
        out.push(toCandidateScore(scoreCandidate(candidate, compiled)));
      }
      return out;
    },
  };
}

// Both linear (@lore/ai's scanners): a lazy `<script[\s\S]*?</script>` or `<title…</title>` regex read to the page's
// end from every unclosed opener, quadratic in their number.
const visibleText = htmlPlainText;
const titleOf = (html: string): string => htmlTitle(html) ?? '';

/** What a company page states, in the directory's field shape. */
export function pageFacts(html: string, url: string): Record<string, unknown> {
  const f = extractCompanyFacts(html, url);
  const out: Record<string, unknown> = {};
  if (f.name) out.name = f.name;
  if (f.industry) out.industry = f.industry;
  if (f.description) out.description = f.description;
  if (f.headquarters) out.location = f.headquarters;
  if (f.employees !== null) out.employees = f.employees;
  if (f.founded && /^\d{4}$/.test(f.founded)) out.founded = Number(f.founded);
  return out;
}

/** Result pages read per search page (each a fetch against the run's budget). */
const RESULTS_PER_PAGE = 10;

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

/** The person a page describes with schema.org JSON-LD, in the directory's field shape; null without one. */
export function personFacts(html: string): Record<string, unknown> | null {
  const node = jsonLdNodes(html).find((n) => [n['@type']].flat().some((t) => typeof t === 'string' && /(^|[/#:])person$/i.test(t)));
  const name = str(node?.name);
  if (!node || !name) return null;
  const out: Record<string, unknown> = { name };
  const title = str(node.jobTitle);
  if (title) out.title = title;
  const works = node.worksFor as Record<string, unknown> | undefined;
  const company = str(works?.name) ?? str(works);
  if (company) out.company = company;
  const address = node.address as Record<string, unknown> | undefined;
  const city = str(address?.addressLocality);
  const country = str(address?.addressCountry);
  if (city || country) out.location = { ...(city ? { city } : {}), ...(country ? { country } : {}) };
  return out;
}

const QUOTED_HREF = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)')/i;

/** The page's links to its own site (http(s), same host), absolute and without fragments, each once, in page order. */
export function siteLinks(html: string, pageUrl: string): Array<{ url: string; text: string }> {
  const base = new URL(pageUrl);
  const out: Array<{ url: string; text: string }> = [];
  const seen = new Set<string>();
  let after = 0;
  for (const tag of startTags(html, 'a')) {
    if (out.length >= MAX_PAGE_LINKS) break;
    if (tag.start < after) continue;
    const h = QUOTED_HREF.exec(tag.attrs);
    if (!h) continue;
    const close = closingTag(html, 'a', tag.end);
    // No `</a>` after this link: none after a later one either.
    if (!close) break;
    after = close.end;
    let url: URL;
    try {
      url = new URL((h[1] ?? h[2] ?? '').trim(), base);
    } catch {
      continue;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.host !== base.host) continue;
    url.hash = '';
    const href = url.toString();
    if (seen.has(href)) continue;
    seen.add(href);
    out.push({ url: href, text: cutUnits(visibleText(html.slice(tag.end, close.start)), 200) });
  }
  return out;
}

/** The pause before a page whose read failed in a way that may pass is tried again (docs/agents.md). */
const PAGE_RETRY_PAUSE_MS = 1_000;

/**
 * A page read, tried once more when it failed in a way that may pass (`PageReadError.transient`: no connection, a
 * broken one, no answer in time, a 5xx or 429), after a pause. `spend` is asked before each try (the caller's fetch
 * budget; it may throw to end the run): a first try it refuses throws, a second one it refuses leaves the first
 * failure. Any other failure, a second one, or a read cut short by `signal` is thrown as it came.
 */
export async function readOnceMore<T>(read: () => Promise<T>, signal: AbortSignal, spend: () => boolean | Promise<boolean>): Promise<T> {
  if (!(await spend())) throw new Error('the fetch budget is spent');
  try {
    return await read();
  } catch (err) {
    if (!(err instanceof PageReadError) || !err.transient || signal.aborted) throw err;
    await sleep(PAGE_RETRY_PAUSE_MS, undefined, { signal }).catch(() => undefined);
    if (signal.aborted || !(await spend())) throw err;
    return read();
  }
}

/** Attempts a web search makes in all when the provider answers a retryable failure (429, 5xx, a timeout). */
export const SEARCH_ATTEMPTS = 3;
/** The longest pause before another attempt, whatever the provider's Retry-After says (a run has a wall budget). */
export const SEARCH_RETRY_MAX_WAIT_MS = 30_000;

/**
 * A web search tried again when the provider answers a retryable failure (`WebSearchError.retryable`: rate limited,
 * unavailable, timed out): after its `Retry-After` when it sent one, else 1 s then 2 s, at most
 * `SEARCH_RETRY_MAX_WAIT_MS`, `SEARCH_ATTEMPTS` attempts in all, each spending a fetch of the budget (`spend` false:
 * the budget is spent, and the failure is thrown). Any other failure, the last one, or a wait cut short by `signal`
 * is thrown as it came.
 */
export async function searchWithRetries<T>(search: () => Promise<T>, signal: AbortSignal, spend: () => boolean): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await search();
    } catch (err) {
      if (!isRetryableSearchError(err) || attempt >= SEARCH_ATTEMPTS || signal.aborted) throw err;
      const wait = Math.min(err.retryAfterMs ?? 1_000 * 2 ** (attempt - 1), SEARCH_RETRY_MAX_WAIT_MS);
      await sleep(wait, undefined, { signal }).catch(() => undefined);
      if (signal.aborted || !spend()) throw err;
    }
  }
}

/** One page read through the agents' guarded page reader, with its text, facts, person and same-site links. */
export async function readWebPage(pages: AgentsDeps['pages'], url: string, signal: AbortSignal): Promise<WebPageRead> {
  const page = await pages.read(url, signal);
  return { url: page.url, title: titleOf(page.html), text: cutUnits(visibleText(page.html), 200_000), facts: pageFacts(page.html, page.url), person: personFacts(page.html), links: siteLinks(page.html, page.url) };
}

/** A web source from the web search port and the agents' page reader. */
export function webSource(search: WebSearch, pages: AgentsDeps['pages']): WebSource {
  return {
    search: async (query, page, signal) => (await search.search(query, { page, limit: RESULTS_PER_PAGE, signal })).results,
    fetchPage: (url, signal) => readWebPage(pages, url, signal),
  };
}

/** Chunks one retrieval asks for (the memory API's most). */
const KNOWLEDGE_CHUNKS = 20;
/** Most text kept of one knowledge document (its retrieved chunks joined). */
const KNOWLEDGE_DOCUMENT_CHARS = 50_000;

/**
 * The tenant's knowledge from the memory API (`POST /api/v1/memory/retrieve` on the graph service): one retrieval as
 * the workflow's starter, with an identity this process signs for them (their tenant, workspace, memory, role and
 * groups), so a list sees exactly the documents its starter may see. The chunks are grouped by document, in order.
 */
export function knowledgeSource(search: KnowledgeSearch, signer: IdentitySigner): KnowledgeSource {
  return {
    async documents(tenantId, starter, query, signal) {
      const credential = CredentialKindSchema.safeParse(starter.credential);
      const token = await signer.sign({
        tenant_id: tenantId,
        workspace_id: starter.workspace_id,
        memory_id: starter.memory_id,
        credential: credential.success ? credential.data : 'session',
        subject: starter.subject,
        role: starter.role,
        scopes: { access: 'read' },
        ...(starter.groups ? { groups: starter.groups } : {}),
      });
      const chunks = await search.retrieve(token, query, KNOWLEDGE_CHUNKS, signal);
      const byDoc = new Map<string, { first: RetrievedChunk; parts: RetrievedChunk[] }>();
      for (const c of chunks) {
        const d = byDoc.get(c.document_id);
        if (d) d.parts.push(c);
        else byDoc.set(c.document_id, { first: c, parts: [c] });
      }
      return [...byDoc.values()].map(({ first, parts }): KnowledgeDocument => ({
        document_id: first.document_id,
        title: first.title,
        link: first.link,
        source_type: first.source_type,
        text: cutUnits(parts.sort((a, b) => a.chunk_ind - b.chunk_ind).map((p) => p.content).join('\n'), KNOWLEDGE_DOCUMENT_CHARS),
        snippet: first.snippet,
      }));
    },
  };
}

export interface ListSourceSettings {
  /** The web search; without one, lists come from the directory (and the snapshot says so). */
  web?: WebSource;
  /** The tenant's knowledge (the memory API); without it no list reads it. */
  knowledge?: KnowledgeSource;
  model?: LanguageModel | null;
  directory?: Directory;
}

export function listSources(agents: AgentsDeps, settings: ListSourceSettings = {}): ListSources {
  const directory = settings.directory ?? new PostgresDirectory(agents.db);
  return {
    planner: criteriaPlanner(settings.model ?? agents.languageModel ?? null),
    scorer: directoryScorer(directory),
    directory,
    ...(settings.web ? { web: settings.web } : {}),
    ...(settings.knowledge ? { knowledge: settings.knowledge } : {}),
  };
}
