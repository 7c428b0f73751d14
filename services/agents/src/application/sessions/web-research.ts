import { cutUnits } from '@lore/ai';
import type { LanguageModel } from '@lore/ai';
import { detectKind, extractDocument, extractionFailureReason } from '@lore/extract';
import { CLARIFYING_QUESTION, bestSentence, containsTerms, holdsRole, isTooVague, meetsCriteria, planResearch, referenceUrls, stem, type ResearchPlan, type ResearchTarget } from '../../domain/web-research';
import type { WebPageRead } from '../list-building';
import type { SessionAgent, SessionContext, SessionRow } from './agent';

/**
 * The web research and deep search agents (docs/agents.md, "Web research and deep search agents"). Both plan from
 * the prompt (the configured model's queries when one is configured, the rules' otherwise; a prompt too vague to
 * plan gets a clarifying question), search through the configured web search, read pages through the session's
 * guarded fetcher (through the session's egress proxy when it asked for one), and write the companies, people or
 * pages that answer the prompt into the session's list, each row with the page it was read from. Deep search reads
 * more (two result pages a query, links one hop from an answering page) and also the reference files uploaded for
 * its thread. Bounded by the session's budgets (fetches, wall time, model tokens) and by their own page limits.
 */

export interface ResearchLimits {
  /** Pages read at most (searches not counted; the session's fetch budget counts both). */
  maxPages: number;
  /** Result pages read per query. */
  searchPages: number;
  /** Follow same-site links of an answering page (deep search). */
  followLinks: number;
  /** Profiles read per company for people. */
  profilesPerCompany: number;
  /** Clarifying questions asked at most before giving up on a vague prompt. */
  questions: number;
}

export const WEB_RESEARCH_LIMITS: ResearchLimits = { maxPages: 60, searchPages: 1, followLinks: 0, profilesPerCompany: 6, questions: 2 };
export const DEEP_SEARCH_LIMITS: ResearchLimits = { maxPages: 120, searchPages: 2, followLinks: 5, profilesPerCompany: 8, questions: 2 };

/** Completion tokens a planning call may spend; it is charged this plus the prompt's length / 4. */
const PLAN_MAX_TOKENS = 600;
/** Reference text read per uploaded file (the rest is not looked at). */
const REFERENCE_CHARS = 1024 * 1024;
/** How reference files are read: text layers only (no OCR), a bounded PDF. */
const REFERENCE_EXTRACT = { ocr: null, pdfTimeoutMs: 20_000, maxPdfPages: 100, ocrBelowChars: 0, maxOcrImages: 0 } as const;

const PLAN_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['target', 'queries', 'clarification'],
  properties: {
    target: { type: 'string', enum: ['company', 'person', 'page'] },
    queries: { type: 'array', items: { type: 'string' }, maxItems: 3 },
    clarification: { type: ['string', 'null'] },
  },
};

const PLAN_SYSTEM =
  'You plan web research. From the request, say what the answers are (company, person or page), up to three short web search queries ' +
  '(keywords only, no operators), and a clarifying question only if the request names nothing to look for; otherwise clarification is null.';

interface ModelPlan {
  target: ResearchTarget;
  queries: string[];
  clarification: string | null;
}

/** The model's plan, or null (no usable model, or an answer out of shape). Charges its tokens first. */
async function modelPlan(ctx: SessionContext, model: LanguageModel | undefined, prompt: string): Promise<ModelPlan | null> {
  if (!model || model.kind === 'extractive') return null;
  ctx.spendTokens(PLAN_MAX_TOKENS + Math.ceil(prompt.length / 4));
  try {
    const completion = await model.chat({
      messages: [
        { role: 'system', content: PLAN_SYSTEM },
        { role: 'user', content: cutUnits(prompt, 4_000) },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'web_research_plan', schema: PLAN_SCHEMA, strict: true } },
      maxTokens: PLAN_MAX_TOKENS,
      signal: ctx.signal,
      ...(ctx.options.model ? { overrides: { model: ctx.options.model } } : {}),
    });
    const p = completion.parsed as { target?: unknown; queries?: unknown; clarification?: unknown } | undefined;
    if (!p || !['company', 'person', 'page'].includes(p.target as string) || !Array.isArray(p.queries)) return null;
    const queries = p.queries
      .filter((q): q is string => typeof q === 'string')
      .map((q) => cutUnits(q.replace(/\s+/g, ' ').trim(), 200))
      .filter((q) => q !== '')
      .slice(0, 3);
    const clarification = typeof p.clarification === 'string' && p.clarification.trim() !== '' ? cutUnits(p.clarification.trim(), 500) : null;
    return { target: p.target as ResearchTarget, queries, clarification };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.logger.warn({ err }, 'the model did not plan the research usably; the rules plan it');
    return null;
  }
}

/** Plans the session, asking when the prompt is too vague; null when it stays too vague after the questions. */
async function planSession(ctx: SessionContext, limits: ResearchLimits): Promise<{ plan: ResearchPlan; by: 'model' | 'rules' } | null> {
  let prompt = ctx.prompt;
  let asked = 0;
  for (;;) {
    const rules = planResearch(prompt);
    if (isTooVague(rules)) {
      if (asked >= limits.questions) return null;
      asked++;
      prompt = `${prompt} ${await ctx.ask(CLARIFYING_QUESTION)}`;
      continue;
    }
    const m = await modelPlan(ctx, ctx.languageModel, prompt);
    if (m?.clarification && asked < limits.questions) {
      asked++;
      prompt = `${prompt} ${await ctx.ask(m.clarification)}`;
      continue;
    }
    if (!m) return { plan: rules, by: 'rules' };
    // The model's queries first; the rules' terms still judge every page, so a model cannot widen what counts.
    const queries = [...new Set([...m.queries, ...rules.queries])].slice(0, 4);
    return { plan: { ...rules, target: m.target, queries }, by: 'model' };
  }
}

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const locationText = (loc: unknown): string => {
  if (!loc || typeof loc !== 'object') return str(loc);
  const l = loc as Record<string, unknown>;
  return [str(l.city), str(l.region), str(l.country)].filter(Boolean).join(', ');
};
const pageText = (p: WebPageRead): string => `${p.title}\n${p.text}\n${Object.values(p.facts).map((v) => (typeof v === 'object' ? locationText(v) : str(v))).join(' ')}`;
const originOf = (url: string): string | null => {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? `${u.origin}/` : null;
  } catch {
    return null;
  }
};
const normal = (url: string): string | null => {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    u.hash = '';
    return u.href;
  } catch {
    return null;
  }
};

class Research {
  /** Pages asked for: what the page limit bounds, read or not. */
  private tried = 0;
  /** Pages actually read (`data.pages`, the summary's "pages read"): until 2026-11-30 every page asked for counted. */
  private pages = 0;
  private rows = 0;
  private readonly read = new Map<string, WebPageRead | null>();

  constructor(
    private readonly ctx: SessionContext,
    private readonly plan: ResearchPlan,
    private readonly limits: ResearchLimits,
  ) {}

  private full(): boolean {
    return this.tried >= this.limits.maxPages || this.ctx.signal.aborted;
  }

  /** A page through the session's fetcher, once per URL; every read is reported (the live page lists them). */
  private async page(url: string): Promise<WebPageRead | null> {
    if (this.read.has(url)) return this.read.get(url)!;
    if (this.full()) return null;
    this.tried++;
    const { page, reason } = await this.ctx.fetcher.fetchPage(url);
    this.read.set(url, page);
    if (page) {
      this.pages++;
      this.read.set(page.url, page);
    }
    await this.ctx.emit(
      page
        ? { stage: 'visited', message: `read ${page.url}`, data: { url: page.url, title: page.title, read: true, pages: this.pages, rows: this.rows } }
        : { stage: 'visited', message: `could not read ${url}: ${reason}`, data: { url, title: '', read: false, reason, pages: this.pages, rows: this.rows } },
    );
    return page;
  }

  private async write(row: SessionRow): Promise<void> {
    this.rows += await this.ctx.writeRows([row]);
  }

  private provenance(page: WebPageRead, terms: readonly string[]) {
    return { source_url: page.url, fetched_at: new Date().toISOString(), snippet: bestSentence(page.text, terms) || cutUnits(page.text, 500) };
  }

  /** Candidate URLs: the prompt's and the references' first, then each query's results, in order, each once. */
  async candidates(extra: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    const add = (u: string) => {
      const n = normal(u);
      if (n && !out.includes(n)) out.push(n);
    };
    for (const u of [...this.plan.urls, ...extra]) add(u);
    for (const query of this.plan.queries) {
      for (let p = 1; p <= this.limits.searchPages; p++) {
        if (this.ctx.signal.aborted) return out;
        const results = await this.ctx.fetcher.search(query, p);
        await this.ctx.emit({ stage: 'searching', message: `searched "${query}"${p > 1 ? ` (page ${p})` : ''}: ${results.length} results`, data: { query, page: p, results: results.length } });
        for (const r of results) add(r.url);
        if (results.length === 0) break;
      }
    }
    return out;
  }

  async companies(urls: readonly string[], people: boolean): Promise<void> {
    const homes: string[] = [];
    for (const u of urls) {
      const o = originOf(u);
      if (o && !homes.includes(o)) homes.push(o);
    }
    for (const home of homes) {
      if (this.full()) return;
      const page = await this.page(home);
      // The prompt's words on the page, its sizes and founding years in the company's facts (or its text).
      if (!page || !str(page.facts.name) || !containsTerms(pageText(page), this.plan.required) || !meetsCriteria(page.facts, page.text, this.plan.criteria)) continue;
      if (!people) {
        const f = page.facts;
        const fields: Record<string, unknown> = { name: str(f.name), industry: str(f.industry), location: locationText(f.location), description: cutUnits(str(f.description), 500), url: home };
        if (typeof f.employees === 'number') fields.employees = f.employees;
        if (typeof f.founded === 'number') fields.founded = f.founded;
        await this.write({ entity_key: `company:${new URL(home).host.toLowerCase()}`, entity_type: 'company', fields, provenance: this.provenance(page, this.plan.terms) });
        continue;
      }
      await this.peopleAt(page, str(page.facts.name));
    }
  }

  /** The people of an answering company's site: its team page's profiles whose title holds a role asked for. */
  private async peopleAt(home: WebPageRead, company: string): Promise<void> {
    const links = home.links ?? [];
    const team = links.find((l) => /team|people|leadership/i.test(`${l.url} ${l.text}`)) ?? links.find((l) => /about/i.test(`${l.url} ${l.text}`));
    if (!team) return;
    const teamPage = await this.page(team.url);
    if (!teamPage) return;
    const teamPath = new URL(teamPage.url).pathname.replace(/\.html?$/, '').replace(/\/$/, '');
    const profiles = (teamPage.links ?? []).filter((l) => {
      const path = new URL(l.url).pathname;
      return path !== new URL(teamPage.url).pathname && (path.startsWith(`${teamPath}/`) || /\/(team|people)\//.test(path));
    });
    const roleWords = this.plan.roles.flat();
    for (const link of profiles.slice(0, this.limits.profilesPerCompany)) {
      if (this.full()) return;
      const profile = await this.page(link.url);
      const person = profile?.person;
      if (!profile || !person || !str(person.name) || !holdsRole(str(person.title), this.plan.roles)) continue;
      const fields = { name: str(person.name), title: str(person.title), company: str(person.company) || company, location: locationText(person.location), url: profile.url };
      await this.write({ entity_key: `person:${profile.url}`, entity_type: 'person', fields, provenance: this.provenance(profile, [...roleWords, stem(str(person.name))]) });
    }
  }

  async pagesAnswering(urls: readonly string[]): Promise<void> {
    const queue = urls.map((url) => ({ url, depth: 0 }));
    const queued = new Set(urls);
    while (queue.length > 0 && !this.full()) {
      const { url, depth } = queue.shift()!;
      const page = await this.page(url);
      if (!page || !containsTerms(pageText(page), this.plan.required)) continue;
      await this.write({ entity_key: `page:${page.url}`, entity_type: 'page', fields: { name: page.title || page.url, url: page.url, summary: bestSentence(page.text, this.plan.terms, 300) }, provenance: this.provenance(page, this.plan.terms) });
      if (depth > 0 || this.limits.followLinks === 0) continue;
      for (const link of (page.links ?? []).slice(0, this.limits.followLinks)) {
        const n = normal(link.url);
        if (n && !queued.has(n)) {
          queued.add(n);
          queue.push({ url: n, depth: depth + 1 });
        }
      }
    }
  }

  /**
   * The session's rows (an earlier run's included, when this one resumed it), the pages this run read, and how many it
   * could not read (refused by the SSRF guard or robots.txt, failed, not answering): a run that read nothing says so.
   */
  async summary(): Promise<string> {
    const what = this.plan.target === 'person' ? 'people' : this.plan.target === 'company' ? 'companies' : 'pages';
    const unread = this.tried - this.pages;
    return `${await this.ctx.rowsInList()} ${what} found on ${this.pages} pages read${unread > 0 ? ` (${unread} could not be read)` : ''}`;
  }
}

/**
 * The URLs named by the reference files uploaded for a deep search: text, CSV, JSON, HTML, Markdown, PDF and DOCX
 * through the shared extractors (@lore/extract, text layers only); images and unknown files are noted, not read.
 */
async function references(ctx: SessionContext): Promise<string[]> {
  const urls: string[] = [];
  for (const path of ctx.options.uploads) {
    const file = ctx.readUpload ? await ctx.readUpload(path) : null;
    const name = path.split('/').pop() ?? path;
    if (!file) {
      await ctx.emit({ stage: 'reference', message: `the reference file ${name} could not be read`, data: { file: name, read: false } });
      continue;
    }
    const kind = detectKind(name, 'application/octet-stream', file);
    if (!kind || kind === 'image') {
      await ctx.emit({ stage: 'reference', message: `the reference file ${name} is not a document Lore reads (text, CSV, JSON, HTML, PDF, DOCX): it was not read`, data: { file: name, read: false } });
      continue;
    }
    let text: string;
    try {
      text = cutUnits((await extractDocument(kind, file, REFERENCE_EXTRACT)).text, REFERENCE_CHARS);
    } catch (err) {
      ctx.logger.warn({ err, file: name }, 'a reference file could not be read');
      await ctx.emit({ stage: 'reference', message: `the reference file ${name} could not be read: ${extractionFailureReason(kind, err)}`, data: { file: name, read: false } });
      continue;
    }
    const found = referenceUrls(text);
    for (const u of found) if (!urls.includes(u)) urls.push(u);
    await ctx.emit({ stage: 'reference', message: `the reference file ${name} names ${found.length} sites`, data: { file: name, read: true, urls: found.length } });
  }
  return urls;
}

function researchAgent(kind: 'web_research' | 'deep_search', limits: ResearchLimits): SessionAgent {
  return {
    kind,
    async run(ctx) {
      const planned = await planSession(ctx, limits);
      if (!planned) {
        await ctx.emit({ stage: 'planning', message: 'the prompt and its answers name nothing to look for: nothing was searched' });
        return { summary: 'nothing to look for: 0 rows' };
      }
      const { plan, by } = planned;
      const criteria = plan.criteria.map((c) => `${c.name}: ${c.value}`);
      await ctx.emit({
        stage: 'planning',
        message: `looking for ${plan.target === 'person' ? 'people' : plan.target === 'company' ? 'companies' : 'pages'} with: ${plan.required.map((g) => g.join(' or ')).join(', ') || '(the named sites)'}${plan.roles.length > 0 ? `; roles: ${plan.roles.map((r) => r[0]).join(', ')}` : ''}${criteria.length > 0 ? `; ${criteria.join('; ')}` : ''}`,
        data: { target: plan.target, terms: plan.terms, criteria, queries: plan.queries, planned_by: by, proxy_country_code: ctx.options.proxy_country_code },
      });
      const research = new Research(ctx, plan, limits);
      const extra = kind === 'deep_search' ? await references(ctx) : [];
      const urls = await research.candidates(extra);
      if (plan.target === 'page') await research.pagesAnswering(urls);
      else await research.companies(urls, plan.target === 'person');
      return { summary: await research.summary() };
    },
  };
}

export const webResearchAgent: SessionAgent = researchAgent('web_research', WEB_RESEARCH_LIMITS);
export const deepSearchAgent: SessionAgent = researchAgent('deep_search', DEEP_SEARCH_LIMITS);
