import { cutUnits } from '@lore/ai';
import { setMaxListeners } from 'node:events';
import type { ChatCompletion, ChatMessage, ChatRequest, LanguageModel } from '@lore/ai';
import type { Sql } from '@lore/runtime';
import {
  AWAITING_CLARIFICATION,
  BRIEF_SECTIONS,
  MAX_AREAS,
  MAX_SOURCES,
  MAX_UNITS_LIMIT,
  PAGES_PER_ITERATION,
  REPORT_SECTIONS,
  RESEARCH_KIND,
  SOURCE_TEXT_CHARS,
  checkReport,
  compressNotes,
  hasSections,
  modelReport,
  newUnit,
  ownReportLines,
  partialReasonOf,
  planAreas,
  readResearchState,
  researchQuestion,
  searchRound,
  searchTermsOf,
  takeNotes,
  writeBrief,
  writeReport,
  type ResearchArea,
  type ResearchSource,
  type ResearchState,
  type ResearchUnit,
} from '../../domain/research';
import { getWorkflow, updateWorkflow, type WorkflowRow } from '../../store/workflows';
import { ClaimedRun, RunEnded, handOverClaim } from '../claim-watch';
import type { WebPageRead, WebResult } from '../list-building';
import { PageReadError } from '../../sources/web-pages';
import { readOnceMore } from '../list-sources';
import { publishEvents, recordEvent, type WorkflowEvent } from '../progress';
import { serviceIdOf, type RunDeps } from '../runner';
import { CREDITS_BUDGET, creditsAtRunStart, meterUsage } from '../credits';

/**
 * One run of a deep research workflow by agents-worker (docs/agents.md, "Deep research"): clarification (when
 * allowed: the question goes out and the run ends waiting for the answer) → brief → research (a supervisor runs at
 * most max_concurrent_research_units researchers at once, each at most max_researcher_iterations search/fetch/think
 * iterations) → report (compressed notes, the report, the citation checker) → completed. The claim, heartbeat, stop
 * watcher, checkpoints, budgets and hand-over are the search runner's (runner.ts), applied to this kind: every
 * iteration of every researcher is a checkpoint (its notes and sources, its event), so a resumed run goes on from
 * the last iteration written.
 */

const KINDS = [RESEARCH_KIND] as const;
/** Completion tokens a model call may spend; each call is charged this plus its prompt's length / 4. */
const CLARIFY_TOKENS = 300;
const BRIEF_TOKENS = 1_500;
const REPORT_TOKENS = 3_000;

/** A researcher's position in its searches (ResearchUnit's fields that `searchRound` moves). */
type SearchCursor = Pick<ResearchUnit, 'page' | 'fallback' | 'from' | 'broaden' | 'end'>;

/** One iteration's search: the query last asked, the results to read (taken for the researcher), the cursor after it. */
interface Round {
  query: string;
  fresh: WebResult[];
  cursor: SearchCursor;
}

/** Ends the research step early: a budget is spent (the report is written from what was read, marked partial). */
class BudgetSpent extends Error {}

const wallText = (spentMs: number, budgetMs: number): string => `wall time (${Math.round(spentMs / 1000)} s of ${Math.round(budgetMs / 1000)} s)`;

/** The run of a claimed `deep_research` workflow (runner.ts `claimRun` dispatches here by kind). */
export function researchRun(deps: RunDeps, tenantId: string, claimed: WorkflowRow): { kind: string; run(): Promise<string> } {
  return {
    kind: RESEARCH_KIND,
    run: async () => {
      const run = new ResearchRun(deps, tenantId, claimed);
      deps.agents.workflowMetrics?.running(RESEARCH_KIND, 1);
      try {
        const outcome = await run.execute();
        if (outcome !== 'lost' && outcome !== 'shutdown') deps.agents.workflowMetrics?.ended(RESEARCH_KIND, outcome);
        if (outcome === 'shutdown') await run.handOver();
        return outcome;
      } finally {
        deps.agents.workflowMetrics?.running(RESEARCH_KIND, -1);
        run.dispose();
      }
    },
  };
}

/** A configured model: the extractive stand-in of embedded mode writes nothing of its own, so the rules do. */
const modelOf = (deps: RunDeps): LanguageModel | null => (deps.agents.languageModel?.kind === 'openai' ? deps.agents.languageModel : null);

class ResearchRun extends ClaimedRun {
  private lastWall = Date.now();
  private state: ResearchState;
  private step: string;
  /** Spent since the last checkpoint. */
  private fetches = 0;
  private tokens = 0;
  /** Page reads under way: counted against the fetch budget, charged once the page was asked for (`settleRead`). */
  private readsUnderWay = 0;
  /** Results taken for reading and not yet kept or set aside: counted against MAX_SOURCES with the sources kept. */
  private pagesTaken = 0;
  /** Searches this run asked the engine, by how they ended (a run whose every search failed says so). */
  private searchesAnswered = 0;
  private searchesFailed = 0;
  /** A budget a model call found spent, or would have overshot (tokens, credits, wall time): it counts as spent. */
  private outOf: string | null = null;
  /** The search engine's answers this run has had (or is waiting for), by result page and query. */
  private readonly answers = new Map<string, Promise<WebResult[]>>();
  /** Search rounds researchers are waiting for now, and the searches asked ahead waiting for none to be. */
  private waitedFor = 0;
  private readonly whenNoneWaitedFor: Array<() => void> = [];
  /** URLs read (or being read) by any researcher of this run. */
  private readonly seen = new Set<string>();
  /** Researchers running now, and the budget that ended the research step, if one did. */
  private active = 0;
  private budget: string | null = null;
  /** The tenant's credits are used up, as the gateway last announced: the research ends like a spent budget. */
  private creditsOut = false;
  /** When the gateway last admitted a request for this research: older balance announcements are not believed. */
  private admittedAt: Date | null = null;
  private readonly model: LanguageModel | null;

  constructor(
    private readonly deps: RunDeps,
    tenantId: string,
    workflow: WorkflowRow,
  ) {
    super(deps, tenantId, workflow.thread_id, 'research', KINDS);
    this.state = readResearchState(workflow.state);
    this.step = workflow.current_step;
    this.model = modelOf(deps);
    // Every fetch in flight listens to the run's signal: at most one search and PAGES_PER_ITERATION page reads per
    // researcher at once (the search asked ahead runs beside the reads), and a few of the run's own.
    setMaxListeners(MAX_UNITS_LIMIT * (PAGES_PER_ITERATION + 1) + 4, this.signal);
    for (const s of this.state.sources) this.seen.add(s.url);
    if (workflow.stop_requested || workflow.status === 'stopping') this.end('stop');
  }

  /** Which budget is spent, counting what this run spent since its last checkpoint; null while none is. */
  private spentBudget(): string | null {
    const b = this.deps.settings.budgets;
    const s = this.state.spent;
    if (this.creditsOut) return CREDITS_BUDGET;
    if (this.outOf) return this.outOf;
    const fetches = s.fetches + this.fetches + this.readsUnderWay;
    const tokens = s.model_tokens + this.tokens;
    const wall = s.wall_ms + (Date.now() - this.lastWall);
    if (fetches >= b.fetches) return `fetches (${fetches} of ${b.fetches})`;
    if (tokens >= b.modelTokens) return `model tokens (${tokens} of ${b.modelTokens})`;
    if (wall >= b.wallMs) return wallText(wall, b.wallMs);
    return null;
  }

  /** Wall time this run has spent, counting what it spent since its last checkpoint. */
  private wallSpent(): number {
    return this.state.spent.wall_ms + (Date.now() - this.lastWall);
  }

  /**
   * Why a model call charged `cost` tokens may not be made now, or null: the tenant's credits are used up, a model
   * call found a budget spent before, the call's charge does not fit in the tokens left, or the wall time is spent.
   * The fetch budget is not one of them: a run that read all it may still gets the model's report.
   */
  private modelBudget(cost: number): string | null {
    if (this.creditsOut) return CREDITS_BUDGET;
    if (this.outOf) return this.outOf;
    const b = this.deps.settings.budgets;
    const tokens = this.state.spent.model_tokens + this.tokens;
    if (tokens + cost > b.modelTokens) return `model tokens (${tokens} of ${b.modelTokens}; the next call needs ${cost})`;
    const wall = this.wallSpent();
    if (wall >= b.wallMs) return wallText(wall, b.wallMs);
    return null;
  }

  /** Throws BudgetSpent when a budget is spent (the research step ends; the report is written partial). */
  private spend(): void {
    this.check();
    const spent = this.spentBudget();
    if (spent) {
      this.budget ??= spent;
      throw new BudgetSpent(spent);
    }
  }

  /**
   * One checkpoint: the workflow locked (still ours? a stop asked?), the time and budget spent added, `fn`'s writes and
   * events, the state written, then the events published. Checkpoints asked for while one is being written (several
   * researchers ending an iteration at once) are written together in the next transaction, in the order asked, so
   * they do not queue one by one on the workflow's lock and the state is written once for them all; each caller gets
   * its own `fn`'s result, and all of them the error when that transaction fails.
   */
  private checkpoint<T>(fn: (sql: Sql, w: WorkflowRow, events: WorkflowEvent[]) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, resolve: (v) => resolve(v as T), reject });
      if (!this.writing) void this.writeCheckpoints();
    });
  }

  private readonly pending: Array<{ fn: (sql: Sql, w: WorkflowRow, events: WorkflowEvent[]) => Promise<unknown>; resolve: (v: unknown) => void; reject: (err: unknown) => void }> = [];
  private writing = false;

  private async writeCheckpoints(): Promise<void> {
    this.writing = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0);
        try {
          const results = await this.commit(batch.map((b) => b.fn));
          batch.forEach((b, k) => b.resolve(results[k]));
        } catch (err) {
          for (const b of batch) b.reject(err);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  private async commit(fns: ReadonlyArray<(sql: Sql, w: WorkflowRow, events: WorkflowEvent[]) => Promise<unknown>>): Promise<unknown[]> {
    const events: WorkflowEvent[] = [];
    const out = await this.deps.agents.db.withTenant(this.tenantId, async (sql) => {
      const w = await getWorkflow(sql, this.tenantId, this.threadId, KINDS, true);
      if (!w || w.claimed_by !== this.deps.workerId) throw new RunEnded('lost');
      if (w.stop_requested) throw new RunEnded('stop');
      const now = Date.now();
      this.state.spent.wall_ms += now - this.lastWall;
      this.lastWall = now;
      const usage = { fetches: this.fetches, model_tokens: this.tokens, rows: 0 };
      this.state.spent.fetches += this.fetches;
      this.state.spent.model_tokens += this.tokens;
      this.fetches = 0;
      this.tokens = 0;
      const results: unknown[] = [];
      for (const fn of fns) results.push(await fn(sql, w, events));
      // What the research consumed since its last checkpoint is recorded (and charged) with it, exactly once.
      const metered = await meterUsage(sql, this.deps.settings.prices, this.tenantId, w, usage, serviceIdOf(this.state), this.admittedAt);
      this.creditsOut = metered.exhausted;
      await updateWorkflow(sql, this.tenantId, this.threadId, { state: this.state as unknown as Record<string, unknown> });
      return results;
    });
    await publishEvents(this.deps.agents.streams, this.deps.agents.logger, events);
    return out;
  }

  private async moveTo(sql: Sql, step: string): Promise<void> {
    await updateWorkflow(sql, this.tenantId, this.threadId, { current_step: step }, this.deps.workerId);
    this.step = step;
  }

  async execute(): Promise<string> {
    try {
      this.check();
      const credits = await creditsAtRunStart(this.deps.agents.db, this.tenantId, this.threadId);
      this.admittedAt = credits.admittedAt;
      this.creditsOut = credits.exhausted;
      for (let guard = 0; guard < 100; guard++) {
        const t0 = performance.now();
        const step = this.step;
        if (step === 'clarification') {
          if (await this.clarify()) return 'waiting';
        } else if (step === 'brief') await this.brief();
        else if (step === 'research') await this.research();
        else if (step === 'report') {
          await this.report();
          return this.state.partial ? 'budget' : 'completed';
        } else throw new Error(`a research workflow at an unknown step: ${step}`);
        this.deps.agents.workflowMetrics?.step(RESEARCH_KIND, step, (performance.now() - t0) / 1000);
      }
      throw new Error('the research took more than 100 steps');
    } catch (err) {
      return this.ended(err);
    }
  }

  /**
   * One model call within the run's budgets. Every request it sends (an HTTP retry, the second answer asked for after
   * a refused one) is charged its completion limit plus its prompt's length / 4 (the port reports no usage) before it
   * goes out, and is not sent when that charge does not fit in the tokens left (`modelBudget`). The call has the wall
   * time left as its deadline: a model that hangs is cut off when the wall budget is spent, not after its own timeouts
   * and retries. A call not made, or cut off, for a budget sets `outOf`: that budget counts as spent from then on (the
   * research stops, the report is partial). Null when there is no model, a budget stopped the call, or the model did
   * not answer (the rules decide then).
   */
  private async chat(name: string, request: Pick<ChatRequest, 'messages' | 'response_format'>, maxTokens: number): Promise<ChatCompletion | null> {
    if (!this.model) return null;
    const cost = (messages: readonly ChatMessage[]) => maxTokens + Math.ceil(messages.reduce((n, m) => n + (m.content?.length ?? 0), 0) / 4);
    const before = this.modelBudget(cost(request.messages));
    if (before) {
      this.outOf ??= before;
      return null;
    }
    const deadline = AbortSignal.timeout(Math.max(1, this.deps.settings.budgets.wallMs - this.wallSpent()));
    try {
      return await this.model.chat({
        ...request,
        maxTokens,
        signal: AbortSignal.any([this.signal, deadline]),
        onAttempt: (messages) => {
          const charge = cost(messages);
          const over = this.modelBudget(charge);
          if (over) throw new BudgetSpent(over);
          this.tokens += charge;
        },
      });
    } catch (err) {
      this.check();
      if (err instanceof BudgetSpent || deadline.aborted) {
        this.outOf ??= err instanceof BudgetSpent ? err.message : wallText(this.wallSpent(), this.deps.settings.budgets.wallMs);
        this.deps.agents.logger.info({ thread_id: this.threadId, call: name, budget: this.outOf }, 'a model call met a spent budget; the rules decide');
        return null;
      }
      this.deps.agents.logger.warn({ err, thread_id: this.threadId, call: name }, 'the model did not answer usably; the rules decide');
      return null;
    }
  }

  /** Asks the model for structured output; null when there is none, a budget stopped it, or the answer is unusable. */
  private async ask<T>(name: string, schema: Record<string, unknown>, system: string, user: string, maxTokens: number): Promise<T | null> {
    const c = await this.chat(
      name,
      {
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
        response_format: { type: 'json_schema', json_schema: { name, schema, strict: true } },
      },
      maxTokens,
    );
    return (c?.parsed ?? null) as T | null;
  }

  /** Asks the clarifying question (the model's, when it wants one; else Lore's own): true when the run now waits. */
  private async clarify(): Promise<boolean> {
    if (this.state.clarification?.answer) {
      await this.checkpoint((sql) => this.moveTo(sql, 'brief'));
      return false;
    }
    let question = `Before the research starts: what should it focus on for "${cutUnits(this.state.query, 300)}" — which aspects, region or time frame matter most, and what is out of scope?`;
    const asked = await this.ask<{ need_clarification: boolean; question: string }>(
      'clarification',
      { type: 'object', properties: { need_clarification: { type: 'boolean' }, question: { type: 'string' } }, required: ['need_clarification', 'question'], additionalProperties: false },
      'You prepare a web research task. Decide whether the request needs one clarifying question before research starts; if it does, write that one question.',
      `Research request: ${this.state.query}`,
      CLARIFY_TOKENS,
    );
    this.check();
    if (asked && !asked.need_clarification) {
      await this.checkpoint(async (sql, _w, events) => {
        await this.moveTo(sql, 'brief');
        events.push(await recordEvent(sql, this.tenantId, this.threadId, 'clarification_skipped', { message: 'the request is clear; no question asked' }));
      });
      return false;
    }
    if (asked?.question.trim()) question = cutUnits(asked.question.trim(), 1000);
    await this.checkpoint(async (sql, _w, events) => {
      this.state.clarification = { question, answer: null };
      // Waiting is not running: the claim goes, and the sweep leaves the workflow alone until the answer comes. In the
      // question's own transaction, so an answer sent as soon as the question is read finds the run waiting.
      await updateWorkflow(sql, this.tenantId, this.threadId, { status: AWAITING_CLARIFICATION, claimed_by: null, claimed_until_ms: null }, this.deps.workerId);
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'clarification', { question, message: question }));
    });
    return true;
  }

  /** The research brief (the model's when it has the five sections, else Lore's own) and the research areas. */
  private async brief(): Promise<void> {
    const question = researchQuestion(this.state);
    let areas: ResearchArea[] = planAreas(question);
    let brief = writeBrief(this.state, areas);
    const drafted = await this.ask<{ research_brief: string; areas: ResearchArea[] }>(
      'research_brief',
      {
        type: 'object',
        properties: {
          research_brief: { type: 'string' },
          areas: { type: 'array', items: { type: 'object', properties: { question: { type: 'string' }, query: { type: 'string' } }, required: ['question', 'query'], additionalProperties: false } },
        },
        required: ['research_brief', 'areas'],
        additionalProperties: false,
      },
      `You plan web research. Write a markdown research brief with exactly these "## " sections in this order: ${BRIEF_SECTIONS.join(', ')}. Then list 1 to ${MAX_AREAS} research areas, each a question and a short web search query.`,
      `Research question: ${question}\nResearchers: at most ${this.state.max_concurrent_research_units} at once, ${this.state.max_researcher_iterations} iterations each.`,
      BRIEF_TOKENS,
    );
    this.check();
    const modelAreas = (drafted?.areas ?? []).filter((a) => a.question.trim() !== '' && searchTermsOf(a.query) !== '').slice(0, MAX_AREAS);
    if (drafted && hasSections(drafted.research_brief, BRIEF_SECTIONS) && modelAreas.length > 0) {
      areas = modelAreas.map((a) => ({ question: cutUnits(a.question.trim(), 500), query: searchTermsOf(a.query) }));
      brief = cutUnits(drafted.research_brief.trim(), 20_000);
    }
    await this.checkpoint(async (sql, _w, events) => {
      this.state.research_brief = brief;
      this.state.areas = areas;
      await this.moveTo(sql, 'research');
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'brief', { research_brief: brief, areas: areas.map((a) => a.question), message: `research brief written: ${areas.length} research areas` }));
    });
  }

  /**
   * The supervisor: the areas not done yet, at most max_concurrent_research_units researchers at once (a pool of that
   * many loops taking the next area). A spent budget ends the step early; the report says it is partial.
   */
  private async research(): Promise<void> {
    const areas = this.state.areas;
    const todo = areas.map((_, i) => i).filter((i) => !this.state.units[String(i)]?.done);
    const width = Math.max(1, Math.min(this.state.max_concurrent_research_units, MAX_UNITS_LIMIT, todo.length));
    let next = 0;
    const failures: unknown[] = [];
    await Promise.all(
      Array.from({ length: width }, async () => {
        while (next < todo.length && !this.budget && !this.endedBy && failures.length === 0) {
          const i = todo[next++]!;
          await this.researcher(i).catch((err: unknown) => failures.push(err));
        }
      }),
    );
    if (failures.length > 0) throw failures[0];
    this.check();
    const spent = this.budget ?? this.outOf;
    await this.checkpoint(async (sql, _w, events) => {
      if (this.searchesFailed > 0 && this.searchesAnswered === 0 && this.state.sources.length === 0) {
        // The engine failed every search: not "the web has nothing". Said by an event, the message and the report.
        this.state.search_failed = true;
        events.push(await recordEvent(sql, this.tenantId, this.threadId, 'search_failed', { searches: this.searchesFailed, message: `every web search failed (${this.searchesFailed}): the search engine did not answer, so no page was read` }));
      }
      if (spent) {
        this.state.partial = true;
        this.state.message = `partial report: budget spent: ${spent}`;
        events.push(await recordEvent(sql, this.tenantId, this.threadId, 'budget_spent', { message: this.state.message }));
      }
      await this.moveTo(sql, 'report');
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'notes_compressed', { areas: areas.length, sources: this.state.sources.length, message: `notes compressed from ${this.state.sources.length} sources` }));
    });
  }

  /**
   * A result page of a query. The run asks the search engine for each (query, page) once: researchers often ask the
   * same one (every area that falls back to the question's words reads the question's first page), and the answer
   * the run already has — or is waiting for — is given again without a request or a fetch of the budget. A search that
   * failed is not remembered, so it is asked again.
   */
  private search(query: string, page: number): Promise<WebResult[]> {
    const web = this.deps.sources.web;
    if (!web) return Promise.resolve([]);
    const key = `${page} ${query}`;
    const known = this.answers.get(key);
    if (known) {
      this.check();
      return known;
    }
    this.spend();
    this.fetches++;
    const asked = web.search(query, page, this.signal).then(
      (results) => {
        this.searchesAnswered++;
        return results;
      },
      (err: unknown) => {
        this.answers.delete(key);
        this.check();
        this.searchesFailed++;
        this.deps.agents.logger.warn({ err, thread_id: this.threadId }, 'research search failed; the researcher goes on');
        return [] as WebResult[];
      },
    );
    this.answers.set(key, asked);
    return asked;
  }

  /**
   * One page through the guarded reader (read once more after a transient failure). Each attempt is counted against
   * the fetch budget while it runs and charged once it ends, unless the guard refused the address before any request
   * went out (a private or forbidden address, a name that resolves to one): no page was asked for, so nothing is charged.
   */
  private async read(url: string): Promise<WebPageRead | null> {
    const web = this.deps.sources.web;
    if (!web) return null;
    const fetchable = () => {
      this.spend();
      this.readsUnderWay++;
      return true;
    };
    const attempt = async (): Promise<WebPageRead | null> => {
      try {
        const page = await web.fetchPage(url, this.signal);
        this.settleRead(true);
        return page;
      } catch (err) {
        this.settleRead(!(err instanceof PageReadError && err.unsent));
        throw err;
      }
    };
    return readOnceMore(attempt, this.signal, fetchable).catch((err: unknown) => {
      if (err instanceof BudgetSpent) throw err;
      this.check();
      return null;
    });
  }

  /** A page read attempt has ended: off the reads under way, and charged as a fetch when a request went out. */
  private settleRead(charged: boolean): void {
    this.readsUnderWay--;
    if (charged) this.fetches++;
  }

  /** Sources the run may still take: MAX_SOURCES less those kept and those taken for reading. */
  private sourcesLeft(): number {
    return MAX_SOURCES - this.state.sources.length - this.pagesTaken;
  }

  /**
   * One researcher: at most max_researcher_iterations iterations of search (`searchRound`: results no researcher has
   * read yet, up to a few result pages), fetch (at most PAGES_PER_ITERATION pages through the guarded reader, read at
   * once) and think (the sentences that answer the area become notes; an iteration whose search brings nothing new
   * ends the area: what it asks is exhausted). Each iteration is a checkpoint with its `researcher_progress` event;
   * the last one also compresses the notes and records `researcher_finished`.
   */
  private async researcher(i: number): Promise<void> {
    const area = this.state.areas[i]!;
    const key = String(i);
    const unit = (this.state.units[key] ??= newUnit());
    const base = searchTermsOf(researchQuestion(this.state)) || area.query;
    const max = this.state.max_researcher_iterations;
    this.active++;
    const activeNow = this.active;
    let counted = true;
    // The start is written while the first search runs: nothing the researcher does needs it written first, and
    // checkpoints are written in the order asked, so its event still comes before the researcher's progress. Once per
    // researcher: a resumed run's researcher that started before (its unit says so) does not start again.
    const started = this.checkpoint(async (sql, _w, events) => {
      if (unit.started || unit.iterations > 0) return;
      unit.started = true;
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'researcher_started', { unit: i, question: area.question, active: activeNow, message: `researcher ${i + 1} started: ${area.question}` }));
    });
    started.catch(() => undefined); // awaited before the researcher's next checkpoint, which reports its failure
    const finish = async (sql: Sql, events: WorkflowEvent[]): Promise<void> => {
      unit.notes = compressNotes(area.question, unit.notes);
      unit.done = !this.budget;
      this.active--;
      counted = false;
      events.push(
        await recordEvent(sql, this.tenantId, this.threadId, 'researcher_finished', {
          unit: i,
          iterations: unit.iterations,
          notes: unit.notes.length,
          active: this.active,
          message: `researcher ${i + 1} finished: ${unit.notes.length} note(s) in ${unit.iterations} iteration(s)`,
        }),
      );
    };
    try {
      let finished = false;
      try {
        // Once the run holds MAX_SOURCES (kept, or taken for reading), nothing more is searched or read: it could not be kept.
        while (unit.iterations < max && !finished && this.sourcesLeft() > 0) {
          this.spend();
          const round = await this.nextRound(unit, area, base, i, true);
          try {
            // The iteration's pages are read at once (each through the guarded reader, each a fetch of the budget), then
            // kept in result order. While they are read, the next iteration's search is asked ahead (what it asks does
            // not depend on what these pages say): its answers wait in the run's answers for that iteration, and when it
            // finds nothing new the researcher knows it is done as soon as the pages are read. Its results are not taken
            // ahead: until that iteration runs, any idle researcher may read them.
            // The state (shared: any researcher's checkpoint writes all of it) changes only inside this iteration's own
            // checkpoint, with its event: until then the cursor, the pages and the notes are the researcher's alone.
            const ahead = round.fresh.length > 0 && unit.iterations + 1 < max && this.sourcesLeft() > 0 ? this.nextRound({ ...unit, ...round.cursor }, area, base, i, false) : null;
            ahead?.catch(() => undefined); // awaited below
            const pages = await Promise.all(round.fresh.map((r) => this.read(r.url)));
            for (const page of pages) if (page) this.seen.add(page.url);
            const iteration = unit.iterations + 1;
            // Nothing new, or the last iteration allowed: the researcher ends with this checkpoint. So it does when the
            // next iteration's search found nothing new (that dry iteration is written with this one: nothing read later
            // makes a result unread again), or a budget was spent during it.
            let last = round.fresh.length === 0 || iteration >= max;
            let dry: Round | null = null;
            if (ahead) {
              try {
                const next = await ahead;
                if (next.fresh.length === 0) dry = next;
              } catch (err) {
                if (!(err instanceof BudgetSpent)) throw err;
              }
              if (dry || this.budget) last = true;
            }
            await started;
            await this.checkpoint(async (sql, _w, events) => {
              const progress = async (n: number, query: string, urls: string[]) =>
                events.push(
                  await recordEvent(sql, this.tenantId, this.threadId, 'researcher_progress', {
                    unit: i,
                    iteration: n,
                    query,
                    read: urls,
                    notes: unit.notes.length,
                    message: `researcher ${i + 1}, iteration ${n}: searched "${query}", read ${urls.length} page(s)`,
                  }),
                );
              Object.assign(unit, round.cursor);
              unit.iterations = iteration;
              unit.queries.push(round.query);
              await progress(iteration, round.query, this.keep(unit, area.question, round.fresh, pages));
              if (dry) {
                Object.assign(unit, dry.cursor);
                unit.iterations++;
                unit.queries.push(dry.query);
                await progress(unit.iterations, dry.query, []);
              }
              if (last) await finish(sql, events);
            });
            finished = last;
          } finally {
            this.pagesTaken -= round.fresh.length;
          }
        }
      } catch (err) {
        if (!(err instanceof BudgetSpent)) throw err;
      }
      if (!finished) {
        await started;
        await this.checkpoint((sql, _w, events) => finish(sql, events));
      }
    } finally {
      if (counted) this.active--;
    }
  }

  /**
   * Keeps an iteration's pages as sources (numbered in the order kept, at most MAX_SOURCES) and their notes in its unit;
   * answers the URLs kept. Called inside the iteration's checkpoint only, so the state never holds an iteration whose
   * `researcher_progress` event is not written with it.
   */
  private keep(unit: ResearchUnit, question: string, results: readonly WebResult[], pages: ReadonlyArray<WebPageRead | null>): string[] {
    const read: string[] = [];
    for (const [k, r] of results.entries()) {
      const page = pages[k];
      // A page read under another address (a redirect) that some researcher has read already counts once.
      if (!page || page.text.trim() === '' || this.state.sources.length >= MAX_SOURCES || this.state.sources.some((x) => x.url === page.url)) continue;
      const source: ResearchSource = { n: this.state.sources.length + 1, url: page.url, title: cutUnits(page.title || r.title, 300), text: cutUnits(page.text, SOURCE_TEXT_CHARS) };
      this.state.sources.push(source);
      read.push(page.url);
      unit.notes.push(...takeNotes(question, source));
    }
    return read;
  }

  /**
   * One iteration's search (`searchRound`) on a copy of the unit's search cursor, which the iteration takes over when
   * it runs (so a search asked ahead moves nothing a checkpoint writes before its iteration). With `take` (a round a
   * researcher waits for), the results it returns are taken for this researcher at once, so no other researcher reads
   * them too; without (a round asked ahead), each of its searches waits until no researcher is waiting for one of its
   * own, so searches asked ahead never hold up a researcher's start.
   */
  private async nextRound(unit: ResearchUnit, area: ResearchArea, base: string, i: number, take: boolean): Promise<Round> {
    const copy: ResearchUnit = { ...unit, end: unit.end ?? 0 };
    if (take) this.waitedFor++;
    try {
      const { query, fresh } = await searchRound(copy, area, base, {
        own: i,
        search: async (q, page) => {
          if (!take) await this.noneWaitedFor();
          return this.search(q, page);
        },
        unread: (url) => !this.seen.has(url),
        // No more than the run may still keep as sources.
        max: () => Math.min(PAGES_PER_ITERATION, this.sourcesLeft()),
        ...(take
          ? {
              take: (results: WebResult[]) => {
                results.forEach((r) => this.seen.add(r.url));
                this.pagesTaken += results.length;
              },
            }
          : {}),
      });
      return { query, fresh, cursor: { page: copy.page, fallback: copy.fallback, from: copy.from, broaden: copy.broaden, end: copy.end ?? 0 } };
    } finally {
      if (take && --this.waitedFor === 0) for (const wake of this.whenNoneWaitedFor.splice(0)) wake();
    }
  }

  /** Resolves once no researcher waits for a search round of its own. */
  private async noneWaitedFor(): Promise<void> {
    while (this.waitedFor > 0) await new Promise<void>((r) => this.whenNoneWaitedFor.push(r));
  }

  /**
   * The final report (the model's when it keeps the sections after the citation check, else Lore's own), checked with
   * the run's own lines (`ownReportLines`) as the only lines it leaves alone. The model writes the body; the title and
   * the partial marker are Lore's. A budget the report's model call found spent, or would have overshot, makes the
   * report partial like one spent during research (`budget_spent` before `completed`); a spent fetch budget alone does
   * not keep the model from writing it.
   */
  private async report(): Promise<void> {
    const compressed = this.state.areas.map((area, i) => ({ area, notes: this.state.units[String(i)]?.notes ?? [] }));
    let text = '';
    if (this.model && compressed.some((c) => c.notes.length > 0)) {
      const notes = compressed.map((c) => `Area: ${c.area.question}\n${c.notes.map((n) => `[${n.n}] ${n.text}`).join('\n')}`).join('\n\n');
      const system = `You write a research report in markdown from numbered notes. Use exactly these "## " sections in this order: ${REPORT_SECTIONS.join(', ')}. Every sentence of a claim ends with the [n] marker of the note it comes from; state nothing the notes do not say.`;
      const user = `Question: ${researchQuestion(this.state)}\n\nNotes:\n${notes}`;
      const c = await this.chat('report', { messages: [{ role: 'system', content: system }, { role: 'user', content: user }] }, REPORT_TOKENS);
      this.check();
      text = c?.message.content ?? '';
    }
    const spentNow = !this.state.partial ? this.outOf : null;
    const outcome = spentNow ? { ...this.state, partial: true, message: `partial report: budget spent: ${spentNow}` } : this.state;
    const own = ownReportLines(outcome);
    let checked = checkReport(writeReport(this.state, compressed, partialReasonOf(outcome), this.state.search_failed), this.state.sources, { own });
    if (text.trim() !== '') {
      const fromModel = checkReport(modelReport(outcome, text), this.state.sources, { own });
      if (hasSections(fromModel.report, REPORT_SECTIONS) && fromModel.cited.length > 0) checked = fromModel;
    }
    const cited = checked.cited.length;
    await this.checkpoint(async (sql, _w, events) => {
      if (spentNow) {
        this.state.partial = true;
        this.state.message = outcome.message;
        events.push(await recordEvent(sql, this.tenantId, this.threadId, 'budget_spent', { message: this.state.message }));
      }
      this.state.final_report = checked.report;
      this.state.removed_claims = checked.removed.length;
      if (!this.state.partial) {
        this.state.message = !this.deps.sources.web
          ? 'research completed without sources: no web search provider is configured (LORE_AGENTS_SEARXNG_URL)'
          : this.state.search_failed
            ? 'research completed without sources: every web search failed (the search engine did not answer)'
            : `research completed: ${this.state.sources.length} pages read, ${cited} cited`;
      }
      await updateWorkflow(sql, this.tenantId, this.threadId, { status: 'completed', current_step: 'completed', claimed_by: null, claimed_until_ms: null }, this.deps.workerId);
      this.step = 'completed';
      events.push(
        await recordEvent(sql, this.tenantId, this.threadId, 'completed', {
          research_brief: this.state.research_brief,
          final_report: checked.report,
          partial: this.state.partial,
          sources: cited,
          removed_claims: checked.removed.length,
          message: this.state.message,
        }),
      );
    });
  }

  protected override stoppedData(w: WorkflowRow): Record<string, unknown> {
    return { step: w.current_step, message: 'the research was stopped' };
  }

  /** A worker shutting down gives its claim back and sends the workflow to the workers again (one transaction). */
  async handOver(): Promise<void> {
    await handOverClaim(this.deps, this.tenantId, this.threadId, 'research');
  }

  protected async finishError(err: unknown): Promise<void> {
    const message = cutUnits(err instanceof Error ? err.message : String(err), 1000);
    this.deps.agents.logger.error({ err, thread_id: this.threadId }, 'research run failed');
    const events: WorkflowEvent[] = [];
    await this.deps.agents.db.withTenant(this.tenantId, async (sql) => {
      const w = await getWorkflow(sql, this.tenantId, this.threadId, KINDS, true);
      if (!w || w.claimed_by !== this.deps.workerId) return;
      await updateWorkflow(sql, this.tenantId, this.threadId, { status: 'error', error_message: message, claimed_by: null, claimed_until_ms: null }, this.deps.workerId);
      events.push(await recordEvent(sql, this.tenantId, this.threadId, 'error', { message }));
    });
    await publishEvents(this.deps.agents.streams, this.deps.agents.logger, events);
  }
}
