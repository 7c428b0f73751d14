import { cutUnits } from '@lore/ai';
import { createHash } from 'node:crypto';
import type { Sql } from '@lore/runtime';
import { countListRows, insertClaimedListRows, updateList } from '../../store/lists';
import { getWorkflow, updateWorkflow, type WorkflowRow } from '../../store/workflows';
import { handOverClaim, watchClaim } from '../claim-watch';
import type { RunDeps } from '../runner';
import { readOnceMore, readWebPage } from '../list-sources';
import { PageReadError } from '../../sources/web-pages';
import { publishEvents, recordClaimedEvents, recordEvent, type WorkflowEvent } from '../progress';
import { SESSION_KINDS, type SessionContext, type SessionFetcher, type SessionKind, type SessionOptions, type SessionProgress, type SessionRow } from './agent';
import { readSessionState, type SessionState } from './service';

/**
 * One run of a session by a worker (docs/agents.md, "Sessions over websockets"): the claimed session's agent runs
 * with a SessionContext; a heartbeat keeps the claim, a watcher reads the stop flag several times a second. The run
 * ends `completed` (event `done`), `stopped` (event `done`, stopped), on a spent budget (event `done` with the note)
 * or `error` (event `error`). A worker that shuts down hands the session back; one that dies leaves it to the sweep,
 * and the next run starts the agent again (rows are idempotent by entity key, answers are kept).
 */

class SessionEnded extends Error {
  constructor(readonly why: 'stop' | 'lost' | 'shutdown' | 'budget') {
    super(`session ended: ${why}`);
  }
}

/** How often a waiting `ask` looks for the answer. */
const ANSWER_POLL_MS = 200;
/** The least time between two fetches of one host within a session (politeness on top of robots.txt). */
export const HOST_INTERVAL_MS = 250;
const SNIPPET_CHARS = 500;

/**
 * A stopped session's `done`: the rows its list holds (an earlier run's included) and a summary that counts them, as
 * every `done` has. Until 2026-11-30 a stop's summary was empty, and a stop before the run began said `rows: 0`.
 */
const stoppedDone = (rows: number): Record<string, unknown> => ({ outcome: 'stopped', summary: `stopped: ${rows} rows written`, rows });

const rowIdOf = (entityKey: string): string => `row_${createHash('sha256').update(entityKey).digest('hex').slice(0, 16)}`;
const hostOf = (url: string): string => {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return '';
  }
};

export async function claimSessionRun(deps: RunDeps, tenantId: string, claimed: WorkflowRow): Promise<{ kind: SessionKind; run(): Promise<string> }> {
  const kind = claimed.kind as SessionKind;
  return {
    kind,
    run: async () => {
      const run = new SessionRun(deps, tenantId, claimed);
      deps.agents.workflowMetrics?.running(kind, 1);
      try {
        const outcome = await run.execute();
        if (outcome !== 'lost' && outcome !== 'shutdown') deps.agents.workflowMetrics?.ended(kind, outcome);
        if (outcome === 'shutdown') await run.handOver();
        return outcome;
      } finally {
        deps.agents.workflowMetrics?.running(kind, -1);
        run.dispose();
      }
    },
  };
}

class SessionRun {
  private readonly abort = new AbortController();
  private endedBy: SessionEnded['why'] | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly unwatch: () => void;
  private readonly started = Date.now();
  private readonly kind: SessionKind;
  private readonly threadId: string;
  private readonly listId: string;
  private fetches = 0;
  private tokens = 0;
  private budgetNote = '';
  private readonly lastFetch = new Map<string, number>();

  constructor(
    private readonly deps: RunDeps,
    private readonly tenantId: string,
    private readonly workflow: WorkflowRow,
  ) {
    this.kind = workflow.kind as SessionKind;
    this.threadId = workflow.thread_id;
    this.listId = workflow.list_id ?? '';
    const { settings } = deps;
    this.unwatch = watchClaim(deps, tenantId, this.threadId, (why) => this.end(why), 'session');
    // The wall-time budget counts from the run's start (a resumed run starts its own count).
    const wall = setTimeout(() => {
      this.budgetNote = `wall time (${Math.round(settings.budgets.wallMs / 1000)} s)`;
      this.end('budget');
    }, settings.budgets.wallMs);
    this.timers.push(wall);
    for (const t of this.timers) t.unref();
  }

  private end(why: SessionEnded['why']): void {
    if (this.endedBy) return;
    this.endedBy = why;
    this.abort.abort(new SessionEnded(why));
  }

  dispose(): void {
    this.unwatch();
    for (const t of this.timers) clearTimeout(t);
  }

  private check(): void {
    if (this.endedBy) throw new SessionEnded(this.endedBy);
  }

  /** One transaction on the session row, still held by this worker; its events are published after the commit. */
  private async write<T>(fn: (sql: Sql, w: WorkflowRow, state: SessionState, events: WorkflowEvent[]) => Promise<T>): Promise<T> {
    const events: WorkflowEvent[] = [];
    const out = await this.deps.agents.db.withTenant(this.tenantId, async (sql) => {
      const w = await getWorkflow(sql, this.tenantId, this.threadId, SESSION_KINDS, true);
      if (!w || w.claimed_by !== this.deps.workerId) throw new SessionEnded('lost');
      return fn(sql, w, readSessionState(w.state), events);
    });
    await publishEvents(this.deps.agents.streams, this.deps.agents.logger, events);
    return out;
  }

  private fetcher(options: SessionOptions): SessionFetcher {
    const web = this.deps.sources.web;
    // A session that asked for an egress proxy reads every page through its country's proxy, never around it
    // (docs/agents.md, "Egress proxies"); start refuses a country with no proxy, so a worker without one fails it.
    const country = options.proxy ? options.proxy_country_code : null;
    const egress = country ? this.deps.agents.egress : undefined;
    if (country && !egress?.has(country)) throw new Error(`no egress proxy is configured for "${country}" on this worker`);
    const budget = this.deps.settings.budgets.fetches;
    const polite = async (url: string) => {
      const host = hostOf(url);
      const wait = (this.lastFetch.get(host) ?? 0) + HOST_INTERVAL_MS - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      this.lastFetch.set(host, Date.now());
    };
    const spend = (): boolean => {
      if (this.fetches >= budget) {
        this.budgetNote = `fetches (${this.fetches} of ${budget})`;
        this.end('budget');
        return false;
      }
      this.fetches++;
      return true;
    };
    const signal = this.abort.signal;
    // Without a web search provider pages are still read, through the same guarded reader.
    const read = (url: string) => (country && egress ? readWebPage(egress.reader(country), url, signal) : web ? web.fetchPage(url, signal) : readWebPage(this.deps.agents.pages, url, signal));
    return {
      fetchPage: async (url) => {
        // Each try is a fetch: it spends the budget and waits its turn at the host.
        const fetchable = async () => {
          this.check();
          if (!spend()) throw new SessionEnded('budget');
          await polite(url);
          return true;
        };
        try {
          const page = await readOnceMore(() => read(url), signal, fetchable);
          return page ? { page } : { page: null, reason: 'the page could not be read' };
        } catch (err) {
          // A read cut short by the session's own end (a spent budget included) is not the page's failure: the run
          // ends instead.
          this.check();
          return { page: null, reason: err instanceof PageReadError ? err.message : 'the page could not be read' };
        }
      },
      search: async (query, page = 1) => {
        this.check();
        if (!web) return [];
        if (!spend()) throw new SessionEnded('budget');
        return web.search(query, page, signal).catch(() => {
          this.check();
          return [];
        });
      },
    };
  }

  private context(state: SessionState): SessionContext {
    const agents = this.deps.agents;
    let agentState = state.agent;
    let asked = 0;
    return {
      kind: this.kind,
      tenantId: this.tenantId,
      threadId: this.threadId,
      listId: this.listId,
      prompt: this.workflow.prompt,
      options: state.options,
      signal: this.abort.signal,
      budgets: this.deps.settings.budgets,
      logger: agents.logger.child({ thread_id: this.threadId, session: this.kind }),
      ...(agents.languageModel ? { languageModel: agents.languageModel } : {}),
      fetcher: this.fetcher(state.options),
      // Deep search's reference files: only the paths uploaded for this thread (the session's own workspace).
      readUpload: async (path: string) => (state.options.uploads.includes(path) ? ((await agents.blobs.get(this.tenantId, path))?.data ?? null) : null),
      emit: async (progress: SessionProgress) => {
        this.check();
        // A progress message is one statement (the claim's check and the event), the session's most frequent write.
        const data = { stage: progress.stage, message: cutUnits(progress.message, 2000), ...(progress.data ? { data: progress.data } : {}) };
        const events = await recordClaimedEvents(agents.db, { tenantId: this.tenantId, threadId: this.threadId, kinds: SESSION_KINDS, workerId: this.deps.workerId }, [{ type: 'progress', data }]);
        if (!events) throw new SessionEnded('lost');
        await publishEvents(agents.streams, agents.logger, events);
      },
      ask: async (question: string) => {
        const index = asked++;
        const known = await this.write(async (sql, _w, s, events) => {
          if (s.answers[index] !== undefined) return s.answers[index]!;
          if (s.questions.length <= index) {
            s.questions = [...s.questions, cutUnits(question, 2000)];
            await updateWorkflow(sql, this.tenantId, this.threadId, { state: s as unknown as Record<string, unknown> }, this.deps.workerId);
            events.push(await recordEvent(sql, this.tenantId, this.threadId, 'clarification', { index, question: cutUnits(question, 2000) }));
          }
          return null;
        });
        if (known !== null) return known;
        for (;;) {
          this.check();
          await new Promise((r) => setTimeout(r, ANSWER_POLL_MS));
          const w = await agents.db.withTenant(this.tenantId, (sql) => getWorkflow(sql, this.tenantId, this.threadId, SESSION_KINDS));
          const answer = w ? readSessionState(w.state).answers[index] : undefined;
          if (answer !== undefined) return answer;
        }
      },
      writeRows: async (rows: readonly SessionRow[]) => {
        this.check();
        if (rows.length === 0) return 0;
        const fresh = rows.map((r) => {
          const rowId = rowIdOf(r.entity_key);
          const provenance = { source_url: r.provenance.source_url, fetched_at: r.provenance.fetched_at, snippet: cutUnits(r.provenance.snippet, SNIPPET_CHARS) };
          const shown: Record<string, unknown> = { name: r.fields.name ?? '', entity_type: r.entity_type, url: r.fields.url ?? r.provenance.source_url, description: r.fields.description ?? '', ...r.fields };
          const cells = Object.fromEntries(
            Object.entries(shown).map(([id, v]) => [id, { row_id: rowId, column_id: id, value: typeof v === 'string' ? v : JSON.stringify(v), status: 'completed', metadata: provenance, expandable: false }]),
          );
          return {
            row_id: rowId,
            entity_key: r.entity_key,
            position: 0,
            cells,
            step_source: this.kind,
            metadata: { entity_type: r.entity_type, fields: r.fields, source: provenance },
            event: { row_id: rowId, entity_key: r.entity_key, entity_type: r.entity_type, fields: r.fields, provenance },
          };
        });
        // The claim's check, the rows and their events: one statement (insertClaimedListRows).
        const written = await insertClaimedListRows(agents.db, { tenantId: this.tenantId, threadId: this.threadId, kinds: SESSION_KINDS, workerId: this.deps.workerId }, this.listId, fresh);
        if (!written) throw new SessionEnded('lost');
        await publishEvents(
          agents.streams,
          agents.logger,
          written.map((e) => ({ tenantId: this.tenantId, threadId: this.threadId, seq: e.seq, type: 'row', data: e.data, at: e.at })),
        );
        return written.length;
      },
      rowsInList: () => agents.db.withTenant(this.tenantId, (sql) => countListRows(sql, this.tenantId, this.listId)),
      spendTokens: (n: number) => {
        this.tokens += Math.max(0, n);
        if (this.tokens >= this.deps.settings.budgets.modelTokens) {
          this.budgetNote = `model tokens (${this.tokens} of ${this.deps.settings.budgets.modelTokens})`;
          this.end('budget');
        }
      },
      get state() {
        return agentState;
      },
      saveState: async (next: Record<string, unknown>) => {
        agentState = next;
        await this.write(async (sql, _w, s) => {
          s.agent = next;
          await updateWorkflow(sql, this.tenantId, this.threadId, { state: s as unknown as Record<string, unknown> }, this.deps.workerId);
        });
      },
    };
  }

  async execute(): Promise<string> {
    try {
      if (this.workflow.stop_requested || this.workflow.status === 'stopping') return await this.finish('stopped', 'done', stoppedDone);
      const agent = this.deps.sessions?.get(this.kind);
      if (!agent) throw new Error(`no agent runs ${this.kind} sessions in this worker`);
      const outcome = await agent.run(this.context(readSessionState(this.workflow.state)));
      this.check();
      return await this.finish('completed', 'done', (rows) => ({ outcome: 'completed', summary: outcome.summary, rows }));
    } catch (err) {
      const why = err instanceof SessionEnded ? err.why : this.endedBy;
      if (why === 'stop') return await this.finish('stopped', 'done', stoppedDone);
      if (why === 'budget') {
        await this.finish('completed', 'done', (rows) => ({ outcome: 'budget', summary: `budget spent: ${this.budgetNote}; ${rows} rows written`, rows }));
        return 'budget';
      }
      if (why) {
        this.deps.agents.logger.info({ thread_id: this.threadId, why }, 'session run ended without finishing; its claim expires for another worker');
        return why;
      }
      const message = cutUnits(err instanceof Error ? err.message : String(err), 1000);
      this.deps.agents.logger.error({ err, thread_id: this.threadId }, 'session run failed');
      await this.finish('error', 'error', { message }).catch(() => 'lost');
      return 'error';
    }
  }

  /**
   * Ends the session: its status, its list's, and the last event, in one transaction; `lost` if no longer ours. A
   * function `data` gets the rows of the session's list, counted in that transaction: the session's rows, an earlier
   * run's included (a run resumed after a crash skips those as duplicates, so it cannot count them itself).
   */
  private async finish(status: string, event: string, data: Record<string, unknown> | ((rows: number) => Record<string, unknown>)): Promise<string> {
    const events: WorkflowEvent[] = [];
    const done = await this.deps.agents.db.withTenant(this.tenantId, async (sql) => {
      const w = await getWorkflow(sql, this.tenantId, this.threadId, SESSION_KINDS, true);
      if (!w || w.claimed_by !== this.deps.workerId) return false;
      if (typeof data === 'function') data = data(w.list_id ? await countListRows(sql, this.tenantId, w.list_id) : 0);
      await updateWorkflow(sql, this.tenantId, this.threadId, { status, current_step: status, stop_requested: false, claimed_by: null, claimed_until_ms: null, ...(status === 'error' ? { error_message: String(data.message) } : {}) }, this.deps.workerId);
      if (w.list_id) await updateList(sql, this.tenantId, w.list_id, { status });
      events.push(await recordEvent(sql, this.tenantId, this.threadId, event, { ...data, elapsed_ms: Date.now() - this.started }));
      return true;
    });
    await publishEvents(this.deps.agents.streams, this.deps.agents.logger, events);
    return done ? status : 'lost';
  }

  /** A worker shutting down gives its claim back and sends the session to the workers again (one transaction). */
  async handOver(): Promise<void> {
    await handOverClaim(this.deps, this.tenantId, this.threadId, 'session');
  }
}
