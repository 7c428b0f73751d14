import { cutUnits } from '@lore/ai';
import type { Sql } from '@lore/runtime';
import { MAX_TOTAL_TARGET, columnIdOf, readState, rowIdOf, tableColumns, type Cell, type Column, type SearchKind, type WorkflowState } from '../domain/workflow';
import { countListRows, getList, insertListRows, listRowKeysOf, openListRows, updateList, updateListRowCells, type NewListRow } from '../store/lists';
import { claimWorkflow, getWorkflow, updateWorkflow, type WorkflowRow } from '../store/workflows';
import { ClaimedRun, RunEnded, handOverClaim } from './claim-watch';
import type { AgentsDeps } from './context';
import { targetChosen, withAdditionalCriteria } from '../domain/generic-workflow';
import { webQueryOf } from '../domain/criteria';
import { candidateFromKnowledge, candidateFromPage, candidateFromRecord, criterionCells, enrichmentCell, fixedCells, type Candidate, type ListSources, type WebPageRead } from './list-building';
import { publishEvents, recordEvent, type WorkflowEvent } from './progress';
import { readOnceMore, searchWithRetries, webSearchQuery } from './list-sources';
import { MAX_ROWS_SHOWN } from './workflows';
import { isSessionKind } from './sessions/agent';
import { claimSessionRun } from './sessions/run';
import { RESEARCH_KIND } from '../domain/research';
import { researchRun } from './research/runner';
import type { SessionAgents } from './sessions/registry';
import { CREDITS_BUDGET, creditsAtRunStart, meterUsage } from './credits';
import { DEFAULT_CREDIT_PRICES, type CreditPrices } from '../domain/credits';

/**
 * One run of a search workflow by a worker (docs/agents.md, "Workflows"): claim it, then its steps
 * criteria_extraction → data_collection → enrichment → completed, with a checkpoint (one transaction: rows, state,
 * event) after every batch of rows. A heartbeat keeps the claim; a watcher reads the stop flag several times a
 * second and aborts the run, which then marks the workflow stopped. A spent budget ends the run `completed` with a
 * note saying which budget and how far the list got.
 */

export interface RunSettings {
  /** How long a claim lasts without a heartbeat. */
  leaseMs: number;
  heartbeatMs: number;
  /** How often the stop flag is read (stop is honoured within about this plus the step's current fetch). */
  stopPollMs: number;
  /** Rows written per checkpoint. */
  batchRows: number;
  budgets: { fetches: number; wallMs: number; modelTokens: number };
  /** The price of what a workflow consumes (docs/agents.md, "Credits"). */
  prices: CreditPrices;
}

export const DEFAULT_RUN_SETTINGS: RunSettings = {
  leaseMs: 30_000,
  heartbeatMs: 5_000,
  stopPollMs: 250,
  batchRows: 5,
  budgets: { fetches: 200, wallMs: 10 * 60_000, modelTokens: 50_000 },
  prices: DEFAULT_CREDIT_PRICES,
};

export interface RunDeps {
  agents: AgentsDeps;
  sources: ListSources;
  settings: RunSettings;
  /** This worker's name in claimed_by. */
  workerId: string;
  /** Aborted when the worker shuts down: the run ends and leaves its claim to expire. */
  shutdown: AbortSignal;
  /** The agents of deep search, web research and crawler sessions (application/sessions). */
  sessions?: SessionAgents;
}

const KINDS = ['company_search', 'people_search'] as const;
const DIRECTORY_PAGE = 50;
const WEB_PAGES_MAX = 5;
/** Team pages one run follows, and profiles read from one team page. */
const MAX_TEAM_PAGES = 20;
const MAX_PROFILES_PER_TEAM = 50;

/** A site's home page (`<origin>/`), or null for a URL that is not http(s). */
function homeOf(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? `${u.origin}/` : null;
  } catch {
    return null;
  }
}

const TEAM_PATH = /(?:^|\/)(?:team|people|staff|leadership|management)(?:[/._-]|$)/i;
const TEAM_TEXT = /\b(?:team|people|staff|leadership|management)\b/i;
const pathOf = (url: string): string => new URL(url).pathname;

/** The page itself when it is a site's team page, else the first link to one (by its path or its text), or null. */
function teamPageOf(page: WebPageRead): string | null {
  if (TEAM_PATH.test(pathOf(page.url)) && !page.person) return page.url;
  return (page.links ?? []).find((l) => TEAM_PATH.test(pathOf(l.url)) || TEAM_TEXT.test(l.text))?.url ?? null;
}

/** A team page's links to its people's pages: under a team path, not the team page itself; at most MAX_PROFILES_PER_TEAM. */
function profileLinksOf(team: WebPageRead | null): string[] {
  if (!team) return [];
  const self = new URL(team.url);
  self.hash = '';
  return (team.links ?? [])
    .filter((l) => l.url !== self.toString() && TEAM_PATH.test(pathOf(l.url)) && pathOf(l.url).split('/').filter(Boolean).length >= 2)
    .map((l) => l.url)
    .slice(0, MAX_PROFILES_PER_TEAM);
}

/** The caller's `serviceId` kept in a workflow's state (the generic workflow API and deep research), or null. */
export const serviceIdOf = (state: unknown): string | null => {
  const id = (state as { service_id?: unknown } | null)?.service_id;
  return typeof id === 'string' && id !== '' ? id : null;
};


/**
 * Claims a workflow for this worker: null when another worker holds it or it is not running. The answer runs it
 * (`run()` resolves with how the run ended: completed, stopped, budget, error, lost, shutdown).
 */
export async function claimRun(deps: RunDeps, tenantId: string, threadId: string): Promise<{ kind: string; run(): Promise<string> } | null> {
  const { agents } = deps;
  const claimed = await agents.db.withTenant(tenantId, (sql) => claimWorkflow(sql, tenantId, threadId, deps.workerId, deps.settings.leaseMs));
  if (!claimed) return null;
  // Deep search, web research and crawler sessions run their kind's agent (application/sessions/run.ts).
  if (isSessionKind(claimed.kind)) return claimSessionRun(deps, tenantId, claimed);
  // Deep research runs its own pipeline (application/research/runner.ts).
  if (claimed.kind === RESEARCH_KIND) return researchRun(deps, tenantId, claimed);
  const kind = claimed.kind as SearchKind;
  return {
    kind,
    run: async () => {
      const run = new Run(deps, tenantId, claimed);
      agents.workflowMetrics?.running(kind, 1);
      try {
        const outcome = await run.execute();
        if (outcome !== 'lost' && outcome !== 'shutdown') agents.workflowMetrics?.ended(kind, outcome);
        if (outcome === 'shutdown') await run.handOver();
        return outcome;
      } finally {
        agents.workflowMetrics?.running(kind, -1);
        run.dispose();
      }
    },
  };
}

/** Claims and runs a workflow to the end of its run; `skipped` when it could not be claimed. */
export async function runWorkflow(deps: RunDeps, tenantId: string, threadId: string): Promise<string> {
  const claimed = await claimRun(deps, tenantId, threadId);
  return claimed ? claimed.run() : 'skipped';
}

class Run extends ClaimedRun {
  private readonly started = Date.now();
  private lastWall = Date.now();
  private readonly kind: SearchKind;
  private fetches = 0;
  private tokens = 0;
  /** Rows the checkpoint being written adds to the list (what it meters besides the fetches and tokens). */
  private rowsAdded = 0;
  /** The tenant's credits are used up, as the gateway last announced: the run ends like a spent budget. */
  private creditsOut = false;
  /** When the gateway last admitted a request for this workflow: older balance announcements are not believed. */
  private admittedAt: Date | null = null;
  /** Employers' facts by home page, read for people found on the web. */
  private readonly employers = new Map<string, Record<string, unknown> | null>();
  /** Sites whose team page this run has followed (people searches). */
  private readonly teamsRead = new Set<string>();
  /** The note the tenant's knowledge leaves for the next checkpoint: a failed read's, null to clear it, undefined: none. */
  private knowledgeNote: string | null | undefined;

  constructor(
    private readonly deps: RunDeps,
    tenantId: string,
    private workflow: WorkflowRow,
  ) {
    super(deps, tenantId, workflow.thread_id, 'workflow', KINDS);
    this.kind = workflow.kind as SearchKind;
  }

  /** One checkpoint: re-reads the workflow under lock (still ours?), lets `fn` write, records its events, publishes. */
  private async checkpoint<T>(fn: (sql: Sql, w: WorkflowRow, state: WorkflowState, events: WorkflowEvent[]) => Promise<T>): Promise<T> {
    const events: WorkflowEvent[] = [];
    const out = await this.deps.agents.db.withTenant(this.tenantId, async (sql) => {
      const w = await getWorkflow(sql, this.tenantId, this.threadId, KINDS, true);
      if (!w || w.claimed_by !== this.deps.workerId) throw new RunEnded('lost');
      // A stop asked since the watcher last looked: this batch is not written, the run ends stopped.
      if (w.stop_requested) throw new RunEnded('stop');
      const state = readState(w.state);
      const now = Date.now();
      state.spent.wall_ms += now - this.lastWall;
      this.lastWall = now;
      const usage = { fetches: this.fetches, model_tokens: this.tokens, rows: 0 };
      state.spent.fetches += this.fetches;
      state.spent.model_tokens += this.tokens;
      this.fetches = 0;
      this.tokens = 0;
      this.rowsAdded = 0;
      this.workflow = w;
      const result = await fn(sql, w, state, events);
      // What this checkpoint's work consumed is recorded (and charged) with it, exactly once.
      usage.rows = this.rowsAdded;
      const metered = await meterUsage(sql, this.deps.settings.prices, this.tenantId, w, usage, serviceIdOf(state), this.admittedAt);
      this.creditsOut = metered.exhausted;
      // The claim was checked under the row lock above; `fn` may have released it (a run's end).
      await updateWorkflow(sql, this.tenantId, this.threadId, { state: state as unknown as Record<string, unknown> });
      // `fn` may have moved the step on (this.workflow): keep that, with the state just written.
      this.workflow = { ...this.workflow, state: state as unknown as Record<string, unknown> };
      return result;
    });
    await publishEvents(this.deps.agents.streams, this.deps.agents.logger, events);
    return out;
  }

  /** Which budget is spent, if any. */
  private spentBudget(state: WorkflowState): string | null {
    const b = this.deps.settings.budgets;
    if (this.creditsOut) return CREDITS_BUDGET;
    if (state.spent.fetches >= b.fetches) return `fetches (${state.spent.fetches} of ${b.fetches})`;
    if (state.spent.model_tokens >= b.modelTokens) return `model tokens (${state.spent.model_tokens} of ${b.modelTokens})`;
    if (state.spent.wall_ms >= b.wallMs) return `wall time (${Math.round(state.spent.wall_ms / 1000)} s of ${Math.round(b.wallMs / 1000)} s)`;
    return null;
  }

  async execute(): Promise<string> {
    try {
      if (this.workflow.stop_requested || this.workflow.status === 'stopping') return await this.finishStopped();
      const credits = await creditsAtRunStart(this.deps.agents.db, this.tenantId, this.threadId);
      this.admittedAt = credits.admittedAt;
      this.creditsOut = credits.exhausted;
      for (let guard = 0; guard < 10_000; guard++) {
        // PGlite (embedded mode) answers in microtasks: without a turn of the event loop a run of directory batches
        // would hold the whole process (its API, the heartbeat and the stop watch) until it ends.
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.check();
        const state = readState(this.workflow.state);
        const budget = this.spentBudget(state);
        if (budget) return await this.finishBudget(budget);
        const step = this.workflow.current_step;
        const t0 = performance.now();
        if (step === 'criteria_extraction') await this.extractCriteria();
        else if (step === 'data_collection') await this.collectBatch();
        else if (step === 'enrichment') await this.enrichBatch();
        else {
          const done = await this.finishCompleted();
          if (done) return 'completed';
          continue;
        }
        this.deps.agents.workflowMetrics?.step(this.kind, step, (performance.now() - t0) / 1000);
      }
      throw new Error('the run took more than 10,000 batches');
    } catch (err) {
      return this.ended(err);
    }
  }

  private async extractCriteria(): Promise<void> {
    const plan = await this.deps.sources.planner.plan(this.workflow.prompt, this.kind, this.signal);
    this.tokens += plan.modelTokens;
    this.check();
    await this.checkpoint(async (sql, w, state, events) => {
      state.category = plan.category;
      state.goal = plan.goal;
      // Criteria a caller added (the generic workflow API) join the extracted ones.
      state.criteria = withAdditionalCriteria(plan.criteria, state);
      // An unnamed list takes the criteria's title ("Fintech companies in Berlin with 51+ employees").
      const retitle = !state.named && plan.title ? cutUnits(plan.title, 200) : null;
      if (retitle) state.title = retitle;
      // Criteria a caller added change the web search as they change the list.
      const query = plan.keywords !== undefined ? webSearchQuery(state.criteria, plan.keywords, this.workflow.prompt) : plan.query;
      (state as WorkflowState & { plan?: unknown }).plan = { filter: plan.filter, query, ...(plan.keywords !== undefined ? { keywords: plan.keywords } : {}) };
      const knowledge = this.deps.sources.knowledge && state.starter?.memory_id ? 'knowledge' : null;
      state.sources = [this.deps.sources.directory ? 'directory' : null, knowledge, this.deps.sources.web ? 'web' : null].filter((s): s is string => s !== null);
      if (!this.deps.sources.web) {
        const from = knowledge ? "the directory and the tenant's knowledge" : 'the directory only';
        state.notes = [...state.notes.filter((n) => !n.startsWith('no web search')), `no web search provider is configured: candidates come from ${from}`];
      }
      if (w.list_id) {
        const list = await getList(sql, this.tenantId, w.list_id);
        const extra = ((list?.columns ?? []) as Column[]).filter((c) => c.type === 'enrichment');
        await updateList(sql, this.tenantId, w.list_id, { columns: tableColumns(this.kind, state.criteria, extra), ...(retitle ? { name: retitle } : {}) });
      }
      // A prompt that names a row count sets the first run's target (a continue sets its own).
      const target = plan.count !== undefined && w.status === 'processing' && !targetChosen(state) ? Math.max(1, Math.min(MAX_TOTAL_TARGET, plan.count)) : w.total_target;
      await updateWorkflow(sql, this.tenantId, this.threadId, { current_step: 'data_collection', total_target: target }, this.deps.workerId);
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'criteria_extracted', { category: plan.category, criteria: state.criteria, sources: state.sources, total_target: target }));
      this.workflow = { ...w, current_step: 'data_collection', total_target: target };
    });
  }

  /** Candidates for the next batch: the directory's next page, then the tenant's knowledge, then the web's next result page. */
  private async nextCandidates(state: WorkflowState): Promise<{ candidates: Candidate[]; exhausted: boolean }> {
    const plan = (state as WorkflowState & { plan?: { filter: Record<string, unknown>; query: string } }).plan ?? { filter: {}, query: this.workflow.prompt };
    const now = new Date().toISOString();
    const directory = this.deps.sources.directory;
    if (directory && state.cursor.directory_offset >= 0) {
      const kind = this.kind === 'company_search' ? 'company' : 'person';
      const records = await directory.search(this.tenantId, kind, plan.filter, { limit: DIRECTORY_PAGE, offset: state.cursor.directory_offset });
      if (records.length > 0) {
        state.cursor.directory_offset += records.length;
        return { candidates: records.map((r) => candidateFromRecord(this.kind, r, now)), exhausted: false };
      }
      state.cursor.directory_offset = -1;
    }
    // The tenant's knowledge: one retrieval a run (a fetch of its budget), as the workflow's starter.
    const knowledge = this.deps.sources.knowledge;
    const starter = state.starter;
    if (knowledge && starter?.memory_id && !state.cursor.knowledge_read) {
      state.cursor.knowledge_read = true;
      this.fetches++;
      const query = webQueryOf(state.criteria) || plan.query;
      try {
        const docs = await knowledge.documents(this.tenantId, starter, query, this.signal);
        const read = new Date().toISOString();
        this.knowledgeNote = null;
        return { candidates: docs.map((d) => candidateFromKnowledge(this.kind, d, read)).filter((c): c is Candidate => c !== null), exhausted: false };
      } catch (err) {
        this.check();
        // The memory unreachable: the list goes on from its other sources, and the snapshot says so.
        this.deps.agents.logger.warn({ err, thread_id: this.threadId }, "the tenant's knowledge could not be read");
        this.knowledgeNote = `the tenant's knowledge could not be read: ${err instanceof Error ? cutUnits(err.message, 200) : 'unknown error'}`;
      }
    }
    const web = this.deps.sources.web;
    if (web && state.cursor.web_pages < WEB_PAGES_MAX) {
      state.cursor.web_pages++;
      this.fetches++;
      // People: the role as pages write it ("Head of Marketing Germany"), so the searches find profiles and team pages;
      // when that finds nothing at all, the plan's words (industry, place) from their first page on, team pages leading on.
      const cursor = state.cursor as typeof state.cursor & { web_plan_query?: boolean };
      const roleQuery = this.kind === 'people_search' && !cursor.web_plan_query ? webQueryOf(state.criteria) : '';
      const canFetch = () => this.fetches + state.spent.fetches < this.deps.settings.budgets.fetches;
      const spend = () => {
        if (!canFetch()) return false;
        this.fetches++;
        return true;
      };
      // A provider that is rate limited, overloaded or slow is tried again within the fetch budget (docs/agents.md, "Web search").
      const results = await searchWithRetries(() => web.search(roleQuery || plan.query, state.cursor.web_pages, this.signal), this.signal, spend);
      if (roleQuery && roleQuery !== plan.query && results.length === 0 && state.cursor.web_pages === 1) {
        cursor.web_plan_query = true;
        state.cursor.web_pages = 0;
        return { candidates: [], exhausted: false };
      }
      const out: Candidate[] = [];
      const seen = new Set<string>();
      const read = (url: string): Promise<WebPageRead | null> => readOnceMore(() => web.fetchPage(url, this.signal), this.signal, spend).catch(() => null);
      for (const r of results) {
        this.check();
        if (!canFetch()) break;
        if (this.kind === 'company_search') {
          // A company is judged from its own site's home page, never from the page the search found (a profile of
          // one of its people says where that person lives, not where the company is).
          const home = homeOf(r.url);
          if (!home || seen.has(home)) continue;
          seen.add(home);
          const page = await read(home);
          const candidate = page ? candidateFromPage(this.kind, page, { url: home, title: '', snippet: '' }, new Date().toISOString()) : null;
          if (candidate) out.push(candidate);
          continue;
        }
        if (seen.has(r.url)) continue;
        seen.add(r.url);
        const page = await read(r.url);
        if (!page) continue;
        const person = candidateFromPage(this.kind, page, r, new Date().toISOString());
        if (person) {
          out.push(await this.withEmployer(person, canFetch, read));
          continue;
        }
        // Not a profile: a company site's team page leads to its people's profiles (one team page a site a run).
        const team = teamPageOf(page);
        const host = homeOf(page.url);
        if (!team || !host || this.teamsRead.has(host) || this.teamsRead.size >= MAX_TEAM_PAGES || !canFetch()) continue;
        this.teamsRead.add(host);
        const teamPage = team === page.url ? page : await read(team);
        for (const link of profileLinksOf(teamPage)) {
          this.check();
          if (!canFetch()) break;
          if (seen.has(link)) continue;
          seen.add(link);
          const profile = await read(link);
          const c = profile ? candidateFromPage(this.kind, profile, { url: link, title: '', snippet: '' }, new Date().toISOString()) : null;
          if (c) out.push(await this.withEmployer(c, canFetch, read));
        }
      }
      return { candidates: out, exhausted: results.length === 0 };
    }
    return { candidates: [], exhausted: true };
  }

  /** A person is judged with their employer too: the site's home page, read once a run. */
  private async withEmployer(candidate: Candidate, canFetch: () => boolean, read: (url: string) => Promise<WebPageRead | null>): Promise<Candidate> {
    const home = homeOf(candidate.provenance.source_url);
    if (!home) return candidate;
    if (!this.employers.has(home) && canFetch()) this.employers.set(home, (await read(home))?.facts ?? null);
    const employer = this.employers.get(home);
    if (employer) {
      candidate.company = employer;
      if (!candidate.data.company && typeof employer.name === 'string') candidate.data.company = employer.name;
    }
    return candidate;
  }

  private async collectBatch(): Promise<void> {
    const state = readState(this.workflow.state);
    const list = this.workflow.list_id;
    if (!list) throw new Error('the workflow has no list');
    const { candidates, exhausted } = await this.nextCandidates(state);
    this.check();
    const scores = await this.deps.sources.scorer.score(this.tenantId, this.kind, candidates, state.criteria);
    const scored = candidates.map((c, i) => ({ c, s: scores[i]! })).filter((x) => x.s.accepted);
    await this.checkpoint(async (sql, w, fresh, events) => {
      // A continue came in while this batch was read (a new target, perhaps new criteria): it started the sources
      // over. The batch belongs to the pass before (read at its place, judged by its criteria) and is dropped; the
      // next batch reads the new pass from the start.
      if ((fresh.cursor.pass ?? 0) !== (state.cursor.pass ?? 0)) return;
      fresh.cursor = state.cursor;
      if (this.knowledgeNote !== undefined) {
        const note = this.knowledgeNote;
        fresh.notes = [...fresh.notes.filter((n) => !n.startsWith("the tenant's knowledge could not be read")), ...(note ? [note] : [])];
        this.knowledgeNote = undefined;
      }
      // Only the keys: a row's metadata holds its candidate's text, and this runs once a batch.
      const existing = await listRowKeysOf(sql, this.tenantId, list, MAX_ROWS_SHOWN);
      const need = Math.max(0, w.total_target - existing.length);
      const known = new Set(existing);
      const rows: NewListRow[] = [];
      for (const { c, s } of scored) {
        if (rows.length >= need) break;
        if (known.has(c.entityKey)) continue;
        known.add(c.entityKey);
        const rowId = rowIdOf(c.entityKey);
        const cells: Record<string, Cell> = { ...fixedCells(this.kind, rowId, c) };
        for (const crit of fresh.criteria) {
          const id = columnIdOf(crit.column_name || crit.name);
          const fixed = cells[id];
          // A criterion on one of the entity's own fields (industry, location, a person's title) shows the field
          // from its source, with the verdict beside it; the others are filled by the enrichment step.
          if (fixed?.status === 'completed') fixed.metadata = { ...fixed.metadata, met: s.verdicts[id]?.met ?? null };
          else cells[id] = { row_id: rowId, column_id: id, value: '', status: 'pending', metadata: {}, expandable: false };
        }
        for (const e of Object.values(fresh.enrichments)) if (e.status === 'processing') cells[e.column_id] = { row_id: rowId, column_id: e.column_id, value: '', status: 'pending', metadata: {}, expandable: false };
        rows.push({
          row_id: rowId,
          entity_key: c.entityKey,
          position: existing.length + rows.length + 1,
          cells,
          step_source: 'data_collection',
          metadata: { candidate: { data: c.data, text: cutUnits(c.text, 4000) }, source: c.provenance, score: s.score, verdicts: s.verdicts },
        });
      }
      const added = await insertListRows(sql, this.tenantId, list, rows);
      this.rowsAdded += added.length;
      const total = existing.length + added.length;
      const full = total >= w.total_target;
      const dry = exhausted && candidates.length === 0;
      if (dry && !full) fresh.notes = [...fresh.notes.filter((n) => !n.startsWith('sources exhausted')), `sources exhausted: ${total} of ${w.total_target} rows found`];
      fresh.cursor.exhausted = dry;
      if (added.length > 0 || full || dry) events.push(await recordEvent(sql, this.tenantId, this.threadId, 'rows_added', { added: added.length, total, total_target: w.total_target }));
      if (full || dry) {
        await updateWorkflow(sql, this.tenantId, this.threadId, { current_step: 'enrichment' }, this.deps.workerId);
        this.workflow = { ...w, current_step: 'enrichment' };
      }
    });
  }

  private async enrichBatch(): Promise<void> {
    const list = this.workflow.list_id;
    if (!list) throw new Error('the workflow has no list');
    const state = readState(this.workflow.state);
    // The open rows are found in the database: only the batch's rows (their metadata holds each candidate's text)
    // and the count of the others are read.
    const enriching = Object.entries(state.enrichments).filter(([, e]) => e.status === 'processing').map(([id]) => id);
    const { rows: batch, open } = await this.deps.agents.db.withTenant(this.tenantId, (sql) => openListRows(sql, this.tenantId, list, enriching, this.deps.settings.batchRows, MAX_ROWS_SHOWN));
    const now = new Date().toISOString();
    const updates: Array<{ row_id: string; cells: Record<string, Cell> }> = [];
    for (const r of batch) {
      this.check();
      const meta = r.metadata as { candidate?: { data: Record<string, unknown>; text: string }; source?: Candidate['provenance']; verdicts?: Record<string, unknown>; score?: number };
      const provenance = meta.source ?? { source: 'directory' as const, source_url: '', snippet: '', fetched_at: now };
      const candidate = { data: meta.candidate?.data ?? {}, text: meta.candidate?.text ?? '', provenance };
      const cells: Record<string, Cell> = {};
      const pending = (id: string) => (r.cells as Record<string, Cell>)[id]?.status === 'pending';
      const critCells = criterionCells(r.row_id, state.criteria, { accepted: true, score: meta.score ?? 0, verdicts: (meta.verdicts ?? {}) as never }, provenance);
      for (const [id, cell] of Object.entries(critCells)) if (pending(id)) cells[id] = provenance.source_url ? cell : { ...cell, status: 'error', metadata: { reason: 'no source' } };
      for (const e of Object.values(state.enrichments)) {
        if (e.status !== 'processing' || !pending(e.column_id)) continue;
        cells[e.column_id] = await enrichmentCell(this.kind, this.tenantId, r.row_id, e, candidate, this.deps.sources.directory, now);
      }
      updates.push({ row_id: r.row_id, cells });
    }
    await this.checkpoint(async (sql, w, fresh, events) => {
      await updateListRowCells(sql, this.tenantId, list, updates);
      // Only the columns this batch worked on: a column asked for since (in `fresh`, not in `enriching`) has not been
      // filled in any row yet, and stays `processing`, which sends the run back to this step before it completes.
      const worked = Object.entries(fresh.enrichments).filter(([id, e]) => e.status === 'processing' && enriching.includes(id)).map(([, e]) => e);
      for (const e of worked) e.done += updates.filter((u) => u.cells[e.column_id]).length;
      const left = open - batch.length;
      if (updates.length > 0) events.push(await recordEvent(sql, this.tenantId, this.threadId, 'rows_enriched', { rows: updates.length, left }));
      if (left <= 0) {
        for (const e of worked) e.status = 'completed';
        await updateWorkflow(sql, this.tenantId, this.threadId, { current_step: 'completed' }, this.deps.workerId);
        this.workflow = { ...w, current_step: 'completed' };
      }
    });
  }

  /**
   * Ends the run `completed` unless the target was raised meanwhile (continue while running): then it collects
   * again. Answers whether it ended.
   */
  private async finishCompleted(): Promise<boolean> {
    return this.checkpoint(async (sql, w, state, events) => {
      const list = w.list_id;
      const found = list ? Math.min(await countListRows(sql, this.tenantId, list), MAX_ROWS_SHOWN) : 0;
      if (found < w.total_target && !state.cursor.exhausted) {
        await updateWorkflow(sql, this.tenantId, this.threadId, { current_step: 'data_collection' }, this.deps.workerId);
        this.workflow = { ...w, current_step: 'data_collection' };
        return false;
      }
      // An enrichment column asked for while this run was past its enrichment step: enrich again.
      if (Object.values(state.enrichments).some((e) => e.status === 'processing')) {
        await updateWorkflow(sql, this.tenantId, this.threadId, { current_step: 'enrichment' }, this.deps.workerId);
        this.workflow = { ...w, current_step: 'enrichment' };
        return false;
      }
      await updateWorkflow(sql, this.tenantId, this.threadId, { status: 'completed', current_step: 'completed', claimed_by: null, claimed_until_ms: null }, this.deps.workerId);
      if (list) await updateList(sql, this.tenantId, list, { status: 'completed' });
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'completed', { rows: found, total_target: w.total_target, elapsed_ms: Date.now() - this.started }));
      return true;
    });
  }

  private async finishBudget(budget: string): Promise<string> {
    await this.checkpoint(async (sql, w, state, events) => {
      const found = w.list_id ? Math.min(await countListRows(sql, this.tenantId, w.list_id), MAX_ROWS_SHOWN) : 0;
      const note = `budget spent: ${budget}; the list has ${found} of ${w.total_target} rows`;
      state.notes = [...state.notes.filter((n) => !n.startsWith('budget')), note];
      await updateWorkflow(sql, this.tenantId, this.threadId, { status: 'completed', current_step: 'completed', claimed_by: null, claimed_until_ms: null }, this.deps.workerId);
      if (w.list_id) await updateList(sql, this.tenantId, w.list_id, { status: 'completed' });
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'budget_spent', { message: note }));
    });
    return 'budget';
  }

  /** A worker shutting down gives its claim back and sends the workflow to the workers again (one transaction). */
  async handOver(): Promise<void> {
    await handOverClaim(this.deps, this.tenantId, this.threadId);
  }

  protected async finishError(err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    this.deps.agents.logger.error({ err, thread_id: this.threadId }, 'workflow run failed');
    const events: WorkflowEvent[] = [];
    await this.deps.agents.db.withTenant(this.tenantId, async (sql) => {
      const w = await getWorkflow(sql, this.tenantId, this.threadId, KINDS, true);
      if (!w || w.claimed_by !== this.deps.workerId) return;
      await updateWorkflow(sql, this.tenantId, this.threadId, { status: 'error', error_message: cutUnits(message, 1000), claimed_by: null, claimed_until_ms: null }, this.deps.workerId);
      if (w.list_id) await updateList(sql, this.tenantId, w.list_id, { status: 'error' });
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'error', { message: cutUnits(message, 1000) }));
    });
    await publishEvents(this.deps.agents.streams, this.deps.agents.logger, events);
  }
}
