import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAiLanguageModel } from '@lore/ai';
import { BRIEF_SECTIONS, REPORT_SECTIONS, hasSections, ownReportLines, readResearchState, reportClaims, supports, type ResearchSource } from '../../services/agents/src/domain/research';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import { LoopbackModel, type LoopbackChatBody } from '../support/loopback-model';
import type { TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack, auth, eventually } from './harness';
import { readStream, type Frame } from './sse-client';

jest.setTimeout(240_000);

type Json = Record<string, any>;
const QUERY = 'fintech companies in Berlin';

/** The research's stored state: its fetched sources with their text (what the checker judged against). */
async function storedSources(s: AgentsStack, tenantId: string, thread: string): Promise<ResearchSource[]> {
  const r = await s.db.withTenant(tenantId, (sql) => sql.query<{ state: Json }>(`SELECT state FROM agents.workflows WHERE thread_id = $1`, [thread]));
  return r.rows[0]!.state.sources as ResearchSource[];
}

/** The lines of the research's report that are Lore's own (its title, partial marker, areas' headings). */
async function ownLines(s: AgentsStack, tenantId: string, thread: string): Promise<string[]> {
  const r = await s.db.withTenant(tenantId, (sql) => sql.query<{ state: Json }>(`SELECT state FROM agents.workflows WHERE thread_id = $1`, [thread]));
  return ownReportLines(readResearchState(r.rows[0]!.state));
}

async function eventsOf(s: AgentsStack, tenantId: string, thread: string): Promise<Array<{ seq: number; type: string; data: Json }>> {
  const r = await s.db.withTenant(tenantId, (sql) => sql.query<{ seq: string; type: string; data: Json }>(`SELECT seq, type, data FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [thread]));
  return r.rows.map((e) => ({ seq: Number(e.seq), type: e.type, data: e.data }));
}

/** The most researchers running at once, as the event log's started/finished order tells it. */
function mostAtOnce(events: Array<{ type: string }>): number {
  let now = 0;
  let most = 0;
  for (const e of events) {
    if (e.type === 'researcher_started') most = Math.max(most, ++now);
    if (e.type === 'researcher_finished') now--;
  }
  return most;
}

/** Every claim of the report (each line but the run's own) cites a fetched source, and each cited source supports it. */
function expectEveryClaimSupported(report: string, sources: ResearchSource[], own: string[]): number {
  const byN = new Map(sources.map((x) => [x.n, x]));
  const claims = reportClaims(report, own);
  for (const c of claims) {
    expect(c.markers.length).toBeGreaterThan(0);
    for (const n of c.markers) {
      expect(byN.has(n)).toBe(true);
      expect(supports(c.claim, byN.get(n)!)).toBe(true);
    }
  }
  return claims.length;
}

const start = (s: AgentsStack, t: TenantFixture, body: Json) => s.call('POST', '/research/start', auth(t), { serviceId: 'svc-research', ...body });
const untilEnded = (s: AgentsStack, t: TenantFixture, thread: string) =>
  eventually('the research to end', async () => {
    const r = await s.call('GET', `/research/status/${thread}`, auth(t));
    return ['completed', 'stopped', 'error'].includes(r.json.status) ? (r.json as Json) : null;
  }, 120_000, 100);

describe('deep research on the test world (through the gateway, worker on Kafka, Redis streams)', () => {
  let served: ServedAgentsWorld;
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const world = generateAgentsWorld(1);

  beforeAll(async () => {
    served = await serveAgentsWorld(world);
    s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
      worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, stopPollMs: 100, budgets: { fetches: 500, wallMs: 120_000, modelTokens: 50_000 } } },
    });
    a = await s.tenant();
    b = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await served?.close();
  });

  it('starts with the defaults, streams progress to complete, and reports with five sections, every claim cited to a fetched page that supports it', async () => {
    const started = await start(s, a, { query: QUERY });
    expect(started.status).toBe(200);
    expect(started.json).toEqual({ thread_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'processing', message: 'research in progress', research_brief: '', final_report: '' });
    const thread = started.json.thread_id as string;
    const read = await readStream(s, 'GET', `/research/stream/${thread}`, auth(a));
    expect(read.status).toBe(200);
    expect(read.contentType).toMatch(/^text\/event-stream/);
    expect(read.ended).toBe(true);
    expect(read.body).toMatch(/^(?:(?:id: \d+\ndata: \{[^\n]*\}\n\n)|(?:: keepalive\n\n))+$/);
    expect(read.frames.map((f) => Number(f.id))).toEqual(read.frames.map((_, i) => i + 1));
    const events = read.frames.map((f) => f.data.event);
    expect(new Set(events.slice(0, -1))).toEqual(new Set(['progress']));
    const last = read.frames[read.frames.length - 1]!.data;
    expect(last).toMatchObject({ event: 'complete', status: 'completed', thread_id: thread, partial: false });
    expect(hasSections(last.research_brief, BRIEF_SECTIONS)).toBe(true);
    expect(hasSections(last.final_report, REPORT_SECTIONS)).toBe(true);
    expect(read.frames.filter((f) => f.data.type === 'researcher_started')).toHaveLength(5);

    const status = await s.call('GET', `/research/status/${thread}`, auth(a));
    expect(status.json).toMatchObject({
      success: true,
      thread_id: thread,
      status: 'completed',
      current_step: 'completed',
      query: QUERY,
      research_brief: last.research_brief,
      final_report: last.final_report,
      partial: false,
      serviceId: 'svc-research',
      max_concurrent_research_units: 5,
      max_researcher_iterations: 3,
      clarification_question: null,
      message: expect.stringMatching(/^research completed: \d+ pages read, \d+ cited$/),
    });
    const sources = await storedSources(s, a.tenantId, thread);
    expect(sources.length).toBeGreaterThan(3);
    // Every source was fetched from the world (no URL twice), and the report's sources list only cited ones.
    expect(new Set(sources.map((x) => x.url)).size).toBe(sources.length);
    for (const x of sources) expect(served.web.requests.some((r) => x.url.includes(r.host) && x.url.endsWith(r.path))).toBe(true);
    expect(expectEveryClaimSupported(last.final_report, sources, await ownLines(s, a.tenantId, thread))).toBeGreaterThan(3);
    const listed = [...String(last.final_report.split('## Sources')[1]).matchAll(/^(\d+)\. \[/gm)].map((m) => Number(m[1]));
    const cited = [...new Set([...String(last.final_report.split('## Sources')[0]).matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))].sort((x, y) => x - y);
    expect(listed).toEqual(cited);
    // A fintech company of Berlin the world has is named, with a fact its page states.
    const names = world.companies.filter((c) => c.industry === 'Fintech' && c.city === 'Berlin').map((c) => c.name);
    expect(names.some((n) => last.final_report.includes(n))).toBe(true);

    const ev = await eventsOf(s, a.tenantId, thread);
    expect(mostAtOnce(ev)).toBe(5);
    for (const e of ev.filter((x) => x.type === 'researcher_progress')) expect(e.data.iteration).toBeLessThanOrEqual(3);
    expect((await s.call('GET', '/research/active', auth(a))).json.workflows.map((w: Json) => w.thread_id)).not.toContain(thread);
    // Its progress stream is the tenant's like any workflow's: listed, and described as ended.
    expect((await s.call('GET', '/api/stream/active-streams', auth(a))).json).toContain(`workflow:${thread}`);
    const stream = await s.call('GET', `/api/stream/stream-status/workflow:${thread}`, auth(a));
    expect(stream.json).toMatchObject({ stream_key: `workflow:${thread}`, active: false, length: ev.length });
  });

  it('broadens a question whose every word no page holds, and still reports from pages it read', async () => {
    const thread = (await start(s, a, { query: 'Which fintech companies in Berlin compete on payments?', max_researcher_iterations: 1 })).json.thread_id as string;
    const done = await untilEnded(s, a, thread);
    expect(done.status).toBe('completed');
    const sources = await storedSources(s, a.tenantId, thread);
    expect(sources.length).toBeGreaterThan(0);
    expect(expectEveryClaimSupported(done.final_report, sources, await ownLines(s, a.tenantId, thread))).toBeGreaterThan(0);
    const queries = (await eventsOf(s, a.tenantId, thread)).filter((e) => e.type === 'researcher_progress' && e.data.unit === 0).map((e) => e.data.query);
    expect(queries).toEqual(['fintech companies Berlin']);
  });

  it('never runs more researchers at once than max_concurrent_research_units, and keeps each to max_researcher_iterations', async () => {
    const started = await start(s, a, { query: QUERY, max_concurrent_research_units: 2, max_researcher_iterations: 2 });
    const thread = started.json.thread_id as string;
    expect((await untilEnded(s, a, thread)).status).toBe('completed');
    const ev = await eventsOf(s, a.tenantId, thread);
    expect(ev.filter((e) => e.type === 'researcher_started')).toHaveLength(5);
    expect(mostAtOnce(ev)).toBe(2);
    for (const e of ev.filter((x) => x.type === 'researcher_started')) expect(e.data.active).toBeLessThanOrEqual(2);
    const perUnit = new Map<number, number[]>();
    for (const e of ev.filter((x) => x.type === 'researcher_progress')) perUnit.set(e.data.unit, [...(perUnit.get(e.data.unit) ?? []), e.data.iteration]);
    for (const its of perUnit.values()) expect(Math.max(...its)).toBeLessThanOrEqual(2);
  });

  it('asks a clarifying question when allowed, waits, lists the run as active, and continues once answered', async () => {
    const started = await start(s, a, { query: 'fintech companies', allow_clarification: true, max_concurrent_research_units: 3, max_researcher_iterations: 1 });
    const thread = started.json.thread_id as string;
    const waiting = await readStream(s, 'GET', `/research/stream/${thread}`, auth(a), undefined, (f) => f.some((x) => x.data.event === 'clarification'));
    const question = waiting.frames.find((f) => f.data.event === 'clarification')!;
    expect(question.data).toMatchObject({ event: 'clarification', status: 'awaiting_clarification', question: expect.stringMatching(/what should it focus on/) });
    const status = await eventually('the status to wait', async () => {
      const r = await s.call('GET', `/research/status/${thread}`, auth(a));
      return r.json.status === 'awaiting_clarification' ? (r.json as Json) : null;
    });
    expect(status).toMatchObject({ current_step: 'clarification', clarification_question: question.data.question, message: question.data.question });
    const active = await s.call('GET', '/research/active', auth(a));
    expect(active.json.workflows).toContainEqual(expect.objectContaining({ thread_id: thread, status: 'awaiting_clarification', query: 'fintech companies', serviceId: 'svc-research' }));
    expect(active.json.count).toBe(active.json.workflows.length);
    // Waiting is not running: nobody holds the claim, so the sweep leaves it alone.
    const claim = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ claimed_by: string | null }>(`SELECT claimed_by FROM agents.workflows WHERE thread_id = $1`, [thread]));
    expect(claim.rows[0]!.claimed_by).toBeNull();

    // Spec 3's query parameter `response` (a JSON body's `response` works too, below).
    const answered = await s.call('POST', `/research/respond/${thread}?response=${encodeURIComponent('in Berlin')}`, auth(a));
    expect(answered.status).toBe(200);
    expect(answered.json).toEqual({ thread_id: thread, status: 'processing', message: 'clarification received; the research continues' });
    const again = await s.call('POST', `/research/respond/${thread}`, auth(a), { response: 'twice' });
    expect(again.status).toBe(422);
    expect(again.json).toEqual({ status_code: 422, message: expect.stringMatching(/not waiting for an answer/), errors: [], data: null });
    const rest = await readStream(s, 'GET', `/research/stream/${thread}`, { ...auth(a), 'last-event-id': question.id });
    expect(rest.frames[0]!.data).toMatchObject({ type: 'clarification_answered', event: 'progress' });
    const done = rest.frames[rest.frames.length - 1]!.data;
    expect(done.event).toBe('complete');
    expect(done.research_brief).toContain('fintech companies (in Berlin)');
    expect(expectEveryClaimSupported(done.final_report, await storedSources(s, a.tenantId, thread), await ownLines(s, a.tenantId, thread))).toBeGreaterThan(0);
  });

  it('resumes a stream with Last-Event-ID (header or query): every frame once, equal to a full replay; at the end an empty stream', async () => {
    const thread = (await start(s, a, { query: QUERY, max_researcher_iterations: 2 })).json.thread_id as string;
    const first = await readStream(s, 'GET', `/research/stream/${thread}`, auth(a), undefined, (f) => f.length >= 3);
    expect(first.ended).toBe(false);
    expect(first.frames.map((f) => f.id)).toEqual(['1', '2', '3']);
    const rest = await readStream(s, 'GET', `/research/stream/${thread}`, { ...auth(a), 'last-event-id': '3' });
    expect(rest.ended).toBe(true);
    const together: Frame[] = [...first.frames, ...rest.frames];
    expect(together.map((f) => Number(f.id))).toEqual(together.map((_, i) => i + 1));
    const replay = await readStream(s, 'GET', `/research/stream/${thread}`, auth(a));
    expect(replay.frames).toEqual(together);
    const byQuery = await readStream(s, 'GET', `/research/stream/${thread}?last_event_id=${together.length - 2}`, auth(a));
    expect(byQuery.frames).toEqual(together.slice(-2));
    const atEnd = await readStream(s, 'GET', `/research/stream/${thread}`, { ...auth(a), 'last-event-id': String(together.length) });
    expect(atEnd).toMatchObject({ status: 200, ended: true, frames: [] });
    const beyond = await s.call('GET', `/research/stream/${thread}`, { ...auth(a), 'last-event-id': String(together.length + 1) });
    expect(beyond.status).toBe(422);
    expect(beyond.json).toEqual({ status_code: 422, message: 'validation failed', errors: [{ field: 'header.Last-Event-ID', message: expect.stringMatching(/last event is \d+/), type: 'value_error' }], data: null });
    const word = await s.call('GET', `/research/stream/${thread}?last_event_id=abc`, auth(a));
    expect(word.json.errors).toEqual([{ field: 'query.last_event_id', message: expect.any(String), type: 'value_error' }]);
  });

  it('stops a running research within a second or two (its stream ends stopped), and one waiting for a clarification at once', async () => {
    const thread = (await start(s, a, { query: QUERY, max_concurrent_research_units: 1, max_researcher_iterations: 10 })).json.thread_id as string;
    await eventually('a researcher to start', async () => (await eventsOf(s, a.tenantId, thread)).some((e) => e.type === 'researcher_started'), 30_000, 20);
    const asked = Date.now();
    const stop = await s.call('DELETE', `/research/stop/${thread}`, auth(a));
    expect(stop.json).toEqual({ success: true, thread_id: thread, status: 'stopping', message: expect.any(String) });
    const ended = await untilEnded(s, a, thread);
    expect(ended.status).toBe('stopped');
    expect(Date.now() - asked).toBeLessThan(3_000);
    const read = await readStream(s, 'GET', `/research/stream/${thread}`, auth(a));
    // Both frames of the stop name the step it came in (before 2026-11-30 their step was '').
    expect(read.frames[read.frames.length - 1]!.data).toMatchObject({ event: 'stopped', status: 'stopped', step: 'research' });
    expect(read.frames.find((f) => f.data.type === 'stop_requested')!.data).toMatchObject({ status: 'stopping', step: 'research' });
    expect((await s.call('DELETE', `/research/stop/${thread}`, auth(a))).json).toMatchObject({ status: 'stopped', message: expect.stringMatching(/already ended/) });

    const waiting = (await start(s, a, { query: 'payment firms', allow_clarification: true })).json.thread_id as string;
    await eventually('the question', async () => (await s.call('GET', `/research/status/${waiting}`, auth(a))).json.status === 'awaiting_clarification');
    expect((await s.call('DELETE', `/research/stop/${waiting}`, auth(a))).json).toMatchObject({ success: true, status: 'stopped' });
    // The unanswered question is no longer the message: nothing waits for it.
    expect((await s.call('GET', `/research/status/${waiting}`, auth(a))).json).toMatchObject({ status: 'stopped', message: 'the research was stopped while waiting for a clarification' });
  });

  it("answers 404 for another tenant's research on every route, and lists none of it as active", async () => {
    const thread = (await start(s, a, { query: 'payment firms', allow_clarification: true })).json.thread_id as string;
    await eventually('the question', async () => (await s.call('GET', `/research/status/${thread}`, auth(a))).json.status === 'awaiting_clarification');
    for (const [method, path, body] of [
      ['GET', `/research/status/${thread}`, undefined],
      ['GET', `/research/stream/${thread}`, undefined],
      ['POST', `/research/respond/${thread}`, { response: 'x' }],
      ['DELETE', `/research/stop/${thread}`, undefined],
    ] as const) {
      const r = await s.call(method, path, auth(b), body);
      expect([path, r.status]).toEqual([path, 404]);
      expect(r.json).toEqual({ status_code: 404, message: 'research not found', errors: [], data: null });
    }
    expect((await s.call('GET', '/research/active', auth(b))).json).toEqual({ success: true, workflows: [], count: 0 });
    expect((await s.call('GET', `/research/status/${thread}`, auth(a))).json.status).toBe('awaiting_clarification');
    expect((await s.call('GET', '/research/status/not-a-uuid', auth(a))).status).toBe(404);
    await s.call('DELETE', `/research/stop/${thread}`, auth(a));
  });

  it('refuses bad input with spec 3 body (a), field by field, and starts nothing', async () => {
    const before = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents.workflows WHERE kind = 'deep_research'`));
    const cases: Array<[Json, string, string]> = [
      [{ serviceId: 's' }, 'body.query', 'missing'],
      [{ query: QUERY }, 'body.serviceId', 'missing'],
      [{ query: '   ', serviceId: 's' }, 'body.query', 'value_error'],
      [{ query: 7, serviceId: 's' }, 'body.query', 'value_error'],
      [{ query: QUERY, serviceId: 'has space' }, 'body.serviceId', 'value_error'],
      [{ query: QUERY, serviceId: 's', max_concurrent_research_units: 0 }, 'body.max_concurrent_research_units', 'value_error'],
      [{ query: QUERY, serviceId: 's', max_concurrent_research_units: 21 }, 'body.max_concurrent_research_units', 'value_error'],
      [{ query: QUERY, serviceId: 's', max_concurrent_research_units: 2.5 }, 'body.max_concurrent_research_units', 'value_error'],
      [{ query: QUERY, serviceId: 's', max_researcher_iterations: 11 }, 'body.max_researcher_iterations', 'value_error'],
      [{ query: QUERY, serviceId: 's', allow_clarification: 'yes' }, 'body.allow_clarification', 'value_error'],
      [{ query: 'x'.repeat(4001), serviceId: 's' }, 'body.query', 'value_error'],
    ];
    for (const [body, field, type] of cases) {
      const r = await s.call('POST', '/research/start', auth(a), body);
      expect([field, r.status]).toEqual([field, 422]);
      expect(r.json).toEqual({ status_code: 422, message: 'validation failed', errors: [expect.objectContaining({ field, type, message: expect.any(String) })], data: null });
    }
    const after = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents.workflows WHERE kind = 'deep_research'`));
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
    const noAnswer = await s.call('POST', `/research/respond/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`, auth(a), {});
    expect(noAnswer.json).toEqual({ status_code: 422, message: 'validation failed', errors: [{ field: 'body.response', message: 'response is required', type: 'missing' }], data: null });
    const longQuery = await s.call('POST', '/research/start', auth(a), { query: 'q'.repeat(4001), serviceId: 's' });
    expect(longQuery.json.errors).toEqual([expect.objectContaining({ field: 'body.query', message: 'query is longer than 4,000 characters' })]);
    const long = await s.call('GET', `/research/status/${'a'.repeat(513)}`, auth(a));
    expect(long.json).toEqual({ status_code: 422, message: 'validation failed', errors: [expect.objectContaining({ field: 'path.thread_id' })], data: null });
    const notJson = await s.call('POST', '/research/start', { ...auth(a), 'content-type': 'text/plain' }, 'query');
    expect(notJson.status).toBe(415);
    expect(notJson.json).toMatchObject({ status_code: 415, errors: [], data: null });
  });

  it('lets a read-only key read research but not start or stop it', async () => {
    const reader = await s.key(a.tenantId, { scopes: { access: 'read' } });
    const h = { authorization: `Bearer ${reader}` };
    expect((await s.call('GET', '/research/active', h)).status).toBe(200);
    const refused = await s.call('POST', '/research/start', h, { query: QUERY, serviceId: 's' });
    expect(refused.status).toBe(403);
    expect((await s.call('DELETE', `/research/stop/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`, h)).status).toBe(403);
    expect((await s.call('GET', '/research/active', {})).status).toBe(401);
  });
});

describe('deep research budgets, a configured model, and a killed worker', () => {
  let served: ServedAgentsWorld;
  const world = generateAgentsWorld(1);

  beforeAll(async () => {
    served = await serveAgentsWorld(world);
  });
  afterAll(async () => {
    await served?.close();
  });

  it('ends cleanly when the fetch budget is spent, with a report marked partial that still cites only what it read; the model is still asked for it', async () => {
    // The model's answers are unusable (no JSON, no sections): the brief and the report are Lore's, but it was asked.
    const model = await new LoopbackModel().start();
    const s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup }, languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }) },
      worker: { searxngUrl: served.search.url, settings: { budgets: { fetches: 8, wallMs: 120_000, modelTokens: 50_000 } } },
    });
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: QUERY })).json.thread_id as string;
      const done = await untilEnded(s, t, thread);
      expect(done).toMatchObject({ status: 'completed', partial: true, message: expect.stringMatching(/^partial report: budget spent: fetches \(\d+ of 8\)$/) });
      expect(done.final_report).toMatch(/^# Research report: [^\n]+\n\n> \*\*Partial report\*\*: budget spent: fetches \(\d+ of 8\)/);
      expect(hasSections(done.final_report, REPORT_SECTIONS)).toBe(true);
      const sources = await storedSources(s, t.tenantId, thread);
      expect(sources.length).toBeLessThan(8);
      // Searches asked ahead and pages read at once are each counted before they go out: never more than the budget.
      const spent = await s.db.withTenant(t.tenantId, (sql) => sql.query<{ n: number }>(`SELECT (state->'spent'->>'fetches')::int AS n FROM agents.workflows WHERE thread_id = $1`, [thread]));
      expect(spent.rows[0]!.n).toBeLessThanOrEqual(8);
      expectEveryClaimSupported(done.final_report, sources, await ownLines(s, t.tenantId, thread));
      const types = (await eventsOf(s, t.tenantId, thread)).map((e) => e.type);
      expect(types).toContain('budget_spent');
      expect(types[types.length - 1]).toBe('completed');
      const frames = await readStream(s, 'GET', `/research/stream/${thread}`, auth(t));
      expect(frames.frames[frames.frames.length - 1]!.data).toMatchObject({ event: 'complete', partial: true });
      expect(await s.metrics.metrics()).toMatch(/lore_agents_workflows_total\{kind="deep_research",status="budget"[^}]*\} 1/);
      // A spent fetch budget does not skip the model's report (until 2026-11-30 any spent budget did).
      expect(model.bodies.map((b) => b.response_format?.json_schema?.name ?? 'report')).toEqual(['research_brief', 'research_brief', 'report']);
    } finally {
      await s.close();
      await model.stop();
    }
  });

  /**
   * The world's search engine behind a listener that answers each search `delayMs` late, as a remote one does;
   * `onSearch` sees each search as it arrives and may return what to do once it is answered.
   */
  async function slowSearch(delayMs: number, onSearch: (url: URL) => (() => void) | void = () => undefined) {
    const proxy = createServer((req, res) => {
      const answered = onSearch(new URL(req.url ?? '/', 'http://x'));
      setTimeout(() => {
        fetch(`${served.search.url}${req.url}`)
          .then(async (r) => res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(await r.text()))
          .catch(() => res.writeHead(502).end())
          .finally(() => answered?.());
      }, delayMs);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    return proxy;
  }

  /** A stack whose worker searches through `proxy`, with budgets large enough for the runs below. */
  function searchingStack(proxy: ReturnType<typeof createServer>) {
    return startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
      worker: { searxngUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, settings: { budgets: { fetches: 500, wallMs: 120_000, modelTokens: 50_000 } } },
    });
  }

  it('asks the search engine at most one search per researcher at once and each result page once a run; an area ends at a round with nothing new', async () => {
    // A search engine that takes 40 ms an answer, as a remote one does, in front of the world's: it counts the searches
    // in flight and what each asked.
    let inFlight = 0;
    let most = 0;
    const asked: string[] = [];
    const proxy = await slowSearch(40, (url) => {
      inFlight++;
      most = Math.max(most, inFlight);
      asked.push(`${url.searchParams.get('q')} p${url.searchParams.get('pageno') ?? '1'}`);
      return () => inFlight--;
    });
    const s = await searchingStack(proxy);
    try {
      const t = await s.tenant();
      for (const units of [5, 2]) {
        most = 0;
        asked.length = 0;
        const thread = (await start(s, t, { query: QUERY, max_concurrent_research_units: units, max_researcher_iterations: 3 })).json.thread_id as string;
        const done = await untilEnded(s, t, thread);
        expect(done.status).toBe('completed');
        expect(most).toBeGreaterThan(0);
        expect(most).toBeLessThanOrEqual(units);
        expect(new Set(asked).size).toBe(asked.length);
        const ev = await eventsOf(s, t.tenantId, thread);
        // Each researcher: started, its iterations in order, finished; no iteration after one that read nothing.
        for (let unit = 0; unit < 5; unit++) {
          const mine = ev.filter((e) => e.data.unit === unit);
          expect(mine[0]!.type).toBe('researcher_started');
          expect(mine[mine.length - 1]!.type).toBe('researcher_finished');
          const progress = mine.slice(1, -1);
          expect(progress.map((e) => e.type)).toEqual(progress.map(() => 'researcher_progress'));
          expect(progress.map((e) => e.data.iteration)).toEqual(progress.map((_, k) => k + 1));
          expect(progress.length).toBeLessThanOrEqual(3);
          expect(progress.slice(0, -1).every((e) => e.data.read.length > 0)).toBe(true);
        }
        // The question's words find Berlin's fintech companies: no area broadened them into another city's.
        const berlin = world.companies.filter((c) => c.industry === 'Fintech' && c.city === 'Berlin').map((c) => c.name);
        const sources = await storedSources(s, t.tenantId, thread);
        expect(sources.length).toBeGreaterThan(3);
        for (const x of sources) expect(berlin.some((n) => x.title.includes(n))).toBe(true);
        expect(asked.every((q) => q.startsWith('fintech companies Berlin'))).toBe(true);
        expectEveryClaimSupported(done.final_report, sources, await ownLines(s, t.tenantId, thread));
      }
    } finally {
      await s.close();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('never lets the stored state run ahead of the event log: every source and iteration it holds is named by a researcher_progress event committed with it', async () => {
    // A slow search engine, as in the crash that showed it: a researcher waits for the search it asked ahead after its
    // pages are read, while the others write their checkpoints. A crash may come at any commit, so every commit counts.
    const proxy = await slowSearch(250);
    const s = await searchingStack(proxy);
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: QUERY, max_concurrent_research_units: 3, max_researcher_iterations: 4 })).json.thread_id as string;
      const ahead: string[] = [];
      let looks = 0;
      for (let ended = false; !ended; ) {
        // One statement: the state and the log as one commit left them.
        const r = await s.db.withTenant(t.tenantId, (sql) =>
          sql.query<{ status: string; state: Json; progress: Json[] }>(
            `SELECT w.status, w.state, COALESCE((SELECT jsonb_agg(e.data ORDER BY e.seq) FROM agents.workflow_events e WHERE e.thread_id = w.thread_id AND e.type = 'researcher_progress'), '[]'::jsonb) AS progress
               FROM agents.workflows w WHERE w.thread_id = $1`,
            [thread],
          ),
        );
        const { status, state, progress } = r.rows[0]!;
        looks++;
        const logged = new Set(progress.flatMap((p) => p.read as string[]));
        for (const x of (state.sources ?? []) as ResearchSource[]) if (!logged.has(x.url)) ahead.push(`source ${x.n} ${x.url}`);
        for (const [unit, u] of Object.entries((state.units ?? {}) as Record<string, Json>)) {
          const events = progress.filter((p) => String(p.unit) === unit).length;
          if (u.iterations !== events) ahead.push(`unit ${unit}: ${u.iterations} iterations, ${events} events`);
        }
        ended = ['completed', 'stopped', 'error'].includes(status);
        if (!ended) await new Promise((w) => setTimeout(w, 5));
      }
      expect(looks).toBeGreaterThan(10);
      expect([...new Set(ahead)]).toEqual([]);
      const ev = await eventsOf(s, t.tenantId, thread);
      expect(ev[ev.length - 1]!.type).toBe('completed');
      expect((await storedSources(s, t.tenantId, thread)).length).toBeGreaterThan(3);
    } finally {
      await s.close();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('refuses a start over the serviceId\'s running workflows with 429 and Retry-After, writing nothing; other serviceIds go on', async () => {
    // No worker: started runs stay running.
    const s = await startAgentsStack({ service: { genericWorkflows: { maxRunningPerService: 1 } } });
    try {
      const t = await s.tenant();
      expect((await start(s, t, { query: QUERY, serviceId: 'crm-1' })).status).toBe(200);
      const over = await start(s, t, { query: QUERY, serviceId: 'crm-1' });
      expect(over.status).toBe(429);
      expect(over.headers['retry-after']).toBe('10');
      expect(over.json).toEqual({ status_code: 429, message: expect.stringMatching(/^serviceId crm-1 already has 1 running workflows/), errors: [], data: null });
      expect((await start(s, t, { query: QUERY, serviceId: 'crm-2' })).status).toBe(200);
      const n = await s.db.withTenant(t.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents.workflows WHERE kind = 'deep_research'`));
      expect(n.rows[0]!.n).toBe(2);
      const active = await s.call('GET', '/research/active', auth(t));
      expect(active.json.workflows.map((w: Json) => w.serviceId).sort()).toEqual(['crm-1', 'crm-2']);
    } finally {
      await s.close();
    }
  });

  it('shows a signed-in member only their own research; an administrator sees the tenant\'s', async () => {
    const s = await startAgentsStack();
    try {
      const t = await s.tenant();
      const member = await s.user(t.tenantId, 'member');
      const other = await s.user(t.tenantId, 'member');
      const admin = await s.user(t.tenantId, 'admin');
      const as = (token: string) => ({ authorization: `Bearer ${token}` });
      const mine = await s.call('POST', '/research/start', as(member.token), { query: QUERY, serviceId: 'ui' });
      expect(mine.status).toBe(200);
      const thread = mine.json.thread_id as string;
      expect((await s.call('GET', `/research/status/${thread}`, as(member.token))).status).toBe(200);
      expect((await s.call('GET', `/research/status/${thread}`, as(other.token))).status).toBe(404);
      expect((await s.call('DELETE', `/research/stop/${thread}`, as(other.token))).status).toBe(404);
      expect((await s.call('GET', '/research/active', as(other.token))).json.count).toBe(0);
      expect((await s.call('GET', '/research/active', as(admin.token))).json.workflows.map((w: Json) => w.thread_id)).toEqual([thread]);
      expect((await s.call('GET', `/research/status/${thread}`, as(admin.token))).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  /** The run's stored state: what it spent, and its sources. */
  async function spentOf(s: AgentsStack, tenantId: string, thread: string): Promise<{ fetches: number; model_tokens: number }> {
    const r = await s.db.withTenant(tenantId, (sql) => sql.query<{ state: Json }>(`SELECT state FROM agents.workflows WHERE thread_id = $1`, [thread]));
    return r.rows[0]!.state.spent;
  }

  it('makes no model call whose charge does not fit in the tokens left: the budget is spent and the report partial', async () => {
    const model = await new LoopbackModel().start();
    model.reply = () => ({ content: JSON.stringify({ research_brief: '## Research question\nq', areas: [] }) });
    const s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup }, languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }) },
      worker: { searxngUrl: served.search.url, settings: { budgets: { fetches: 500, wallMs: 120_000, modelTokens: 1_000 } } },
    });
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: QUERY })).json.thread_id as string;
      const done = await untilEnded(s, t, thread);
      // The brief's call (1,500 tokens and its prompt) does not fit in 1,000: it is not made (until 2026-11-30 it was,
      // and charged past the budget).
      expect(done).toMatchObject({ status: 'completed', partial: true, message: expect.stringMatching(/^partial report: budget spent: model tokens \(0 of 1000; the next call needs 1\d{3}\)$/) });
      expect(model.bodies).toHaveLength(0);
      expect((await spentOf(s, t.tenantId, thread)).model_tokens).toBe(0);
      expect(hasSections(done.research_brief, BRIEF_SECTIONS)).toBe(true);
      expect(hasSections(done.final_report, REPORT_SECTIONS)).toBe(true);
      const types = (await eventsOf(s, t.tenantId, thread)).map((e) => e.type);
      expect(types.slice(-3)).toEqual(['budget_spent', 'notes_compressed', 'completed']);
    } finally {
      await s.close();
      await model.stop();
    }
  });

  it('charges every request a model call sends (the retry after a refused answer too) and never spends past the token budget', async () => {
    // The brief's answers are not JSON, twice: two requests, each charged. The report's call then does not fit.
    const model = await new LoopbackModel().start();
    model.reply = () => ({ content: 'Here is a plan, not JSON.' });
    const s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup }, languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }) },
      worker: { searxngUrl: served.search.url, settings: { budgets: { fetches: 500, wallMs: 120_000, modelTokens: 5_000 } } },
    });
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: QUERY, max_researcher_iterations: 1 })).json.thread_id as string;
      const done = await untilEnded(s, t, thread);
      expect(model.bodies.map((b) => b.response_format?.json_schema?.name ?? 'report')).toEqual(['research_brief', 'research_brief']);
      const spent = await spentOf(s, t.tenantId, thread);
      // Each brief request: 1,500 and its prompt / 4 (the retry's prompt carries the feedback).
      expect(spent.model_tokens).toBeGreaterThan(3_000);
      expect(spent.model_tokens).toBeLessThanOrEqual(5_000);
      expect(done).toMatchObject({ status: 'completed', partial: true, message: expect.stringMatching(/^partial report: budget spent: model tokens \(\d+ of 5000; the next call needs \d+\)$/) });
      expect(done.final_report).toMatch(/^# Research report: [^\n]+\n\n> \*\*Partial report\*\*: budget spent: model tokens/);
      const sources = await storedSources(s, t.tenantId, thread);
      expect(sources.length).toBeGreaterThan(0);
      expectEveryClaimSupported(done.final_report, sources, await ownLines(s, t.tenantId, thread));
      const types = (await eventsOf(s, t.tenantId, thread)).map((e) => e.type);
      expect(types.slice(-3)).toEqual(['notes_compressed', 'budget_spent', 'completed']);
    } finally {
      await s.close();
      await model.stop();
    }
  });

  it('bounds a model call by the wall time left: a model that never answers holds a 3 s budget for about 3 s, not its timeouts and retries', async () => {
    let asked = 0;
    const hung = createServer((req) => {
      asked++;
      req.resume(); // never answered
    });
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', () => r()));
    const s = await startAgentsStack({
      service: {
        webTargets: { allowLoopback: true, lookup: served.web.lookup },
        languageModel: new OpenAiLanguageModel({ baseUrl: `http://127.0.0.1:${(hung.address() as AddressInfo).port}/v1`, model: 'hung', timeoutMs: 20_000, retries: 2, backoffMs: 1 }),
      },
      worker: { searxngUrl: served.search.url, settings: { budgets: { fetches: 500, wallMs: 3_000, modelTokens: 50_000 } } },
    });
    try {
      const t = await s.tenant();
      const began = Date.now();
      const thread = (await start(s, t, { query: QUERY })).json.thread_id as string;
      const done = await untilEnded(s, t, thread);
      // Until 2026-11-30 the brief's call alone took three attempts of 20 s.
      expect(Date.now() - began).toBeLessThan(10_000);
      expect(done).toMatchObject({ status: 'completed', partial: true, message: expect.stringMatching(/^partial report: budget spent: wall time \([34] s of 3 s\)$/) });
      // One request, cut off at the deadline and not retried; no report call once the wall time is spent.
      expect(asked).toBe(1);
      expect(hasSections(done.final_report, REPORT_SECTIONS)).toBe(true);
    } finally {
      await s.close();
      hung.closeAllConnections();
      await new Promise((r) => hung.close(r));
    }
  });

  it("charges no fetch for an address the guard refuses, stops reading at 60 sources, and says so when every search failed", async () => {
    // A search engine whose result pages hold private addresses (refused before any connection) among pages of a site
    // on loopback, each result a new page, so five researchers of ten iterations would read 75.
    let mode: 'pages' | 'down' = 'pages';
    let searches = 0;
    const pages: string[] = [];
    const site = createServer((req, res) => {
      if (req.url === '/robots.txt') return void res.writeHead(404).end();
      pages.push(req.url ?? '');
      const id = (req.url ?? '').replace(/\W+/g, ' ').trim();
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><head><title>Fintech company ${id}</title></head><body><p>The fintech company ${id} is one of the fintech companies in Berlin, founded there to build payment software for small shops.</p></body></html>`);
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
    const origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    const engine = createServer((req, res) => {
      searches++;
      if (mode === 'down') return void res.writeHead(503).end('overloaded');
      const url = new URL(req.url ?? '/', 'http://x');
      const key = `${url.searchParams.get('q')} ${url.searchParams.get('pageno') ?? '1'}`.replace(/\W+/g, '-');
      // An odd result page begins with a private address: a researcher reads it and one page, an even page two pages.
      const odd = Number(url.searchParams.get('pageno') ?? '1') % 2 === 1;
      const results = Array.from({ length: 10 }, (_, i) => ({ url: odd && i === 0 ? `http://10.20.30.${i + 1}/${key}` : `${origin}/${key}/${i}`, title: `Result ${i}`, content: 'fintech companies in Berlin' }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ query: url.searchParams.get('q'), results }));
    });
    await new Promise<void>((r) => engine.listen(0, '127.0.0.1', () => r()));
    const s = await searchingStack(engine);
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: QUERY, max_concurrent_research_units: 5, max_researcher_iterations: 10 })).json.thread_id as string;
      const done = await untilEnded(s, t, thread);
      expect(done).toMatchObject({ status: 'completed', partial: false });
      const sources = await storedSources(s, t.tenantId, thread);
      expect(sources).toHaveLength(60);
      // No page was read past the cap (until 2026-11-30 pages went on being read, charged and thrown away).
      expect(pages).toHaveLength(60);
      // Each search and each page asked for is a fetch; a refused address is none (until 2026-11-30 each was charged).
      const spent = await spentOf(s, t.tenantId, thread);
      expect(spent.fetches).toBe(searches + pages.length);
      expect(done.credits_used).toBe(searches + pages.length);

      mode = 'down';
      searches = 0;
      const failed = (await start(s, t, { query: QUERY, max_researcher_iterations: 1 })).json.thread_id as string;
      const nothing = await untilEnded(s, t, failed);
      // Still completed, as docs/agents.md says a failed search is read; but the run says the engine failed.
      expect(nothing).toMatchObject({ status: 'completed', partial: false, message: 'research completed without sources: every web search failed (the search engine did not answer)' });
      expect(nothing.final_report).toContain('_Every web search failed (the search engine did not answer), so no page was read._');
      const ev = await eventsOf(s, t.tenantId, failed);
      expect(ev.find((e) => e.type === 'search_failed')!.data).toMatchObject({ searches, message: expect.stringMatching(/^every web search failed/) });
    } finally {
      await s.close();
      await new Promise((r) => engine.close(r));
      await new Promise((r) => site.close(r));
    }
  });

  it('ends when the wall time is spent, the report marked partial', async () => {
    const s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
      worker: { searxngUrl: served.search.url, settings: { budgets: { fetches: 500, wallMs: 1, modelTokens: 50_000 } } },
    });
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: QUERY })).json.thread_id as string;
      const done = await untilEnded(s, t, thread);
      expect(done).toMatchObject({ status: 'completed', partial: true, message: expect.stringMatching(/budget spent: wall time/) });
    } finally {
      await s.close();
    }
  });

  it('with a configured model: its question, its brief, and its report with the invented claim removed by the checker', async () => {
    const model = await new LoopbackModel().start();
    let invented = '';
    model.reply = (body: LoopbackChatBody) => {
      const schema = body.response_format?.json_schema?.name;
      if (schema === 'clarification') return { content: JSON.stringify({ need_clarification: true, question: 'Which city should the research cover?' }) };
      if (schema === 'research_brief') {
        const brief = ['# Brief', '## Research question', 'Fintech in Berlin.', '## Objectives', '- Name them.', '## Research areas', '1. Companies', '## Methodology', 'Web search.', '## Expected deliverables', '- A report.'].join('\n');
        return { content: JSON.stringify({ research_brief: brief, areas: [{ question: 'Which fintech companies are in Berlin?', query: 'fintech Berlin' }, { question: 'When were they founded?', query: 'fintech Berlin founded' }] }) };
      }
      // The report: one note restated faithfully, one claim no page states, one claim citing a source never read.
      const user = body.messages?.find((m) => m.role === 'user')?.content ?? '';
      const note = /^\[(\d+)\] (.+?)\.?$/m.exec(user)!;
      invented = `${note[2]!.split(' ')[0]} was acquired by Globex Holdings for 900 million dollars in 2021 [${note[1]}].`;
      return {
        content: [
          '# Fintech in Berlin',
          '## Executive summary',
          `${note[2]} [${note[1]}]. ${invented}`,
          // Invented claims dressed as a quote, an italic remark, a heading and a rule: checked like prose.
          '> Berlin fintech companies were all founded in 1850 and employ 90000 people each.',
          '_Berlin fintech companies are run by convicted fraudsters according to regulators._',
          '### Berlin fintech companies all went bankrupt in 2023',
          '--- Berlin fintech companies owe 5 billion euros.',
          '## Key findings',
          `- ${note[2]} [${note[1]}].`,
          '- Berlin banks lend to every startup in the city [99].',
          '## Detailed analysis',
          `${note[2]} [${note[1]}].`,
          '## Conclusions',
          `${note[2]} [${note[1]}].`,
          '## Sources',
        ].join('\n'),
      };
    };
    const s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup }, languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }) },
      worker: { searxngUrl: served.search.url },
    });
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: 'fintech companies', allow_clarification: true, max_researcher_iterations: 1 })).json.thread_id as string;
      const waiting = await eventually('the question', async () => {
        const r = await s.call('GET', `/research/status/${thread}`, auth(t));
        return r.json.status === 'awaiting_clarification' ? (r.json as Json) : null;
      });
      expect(waiting.clarification_question).toBe('Which city should the research cover?');
      await s.call('POST', `/research/respond/${thread}`, auth(t), { query: 'Berlin' });
      const done = await untilEnded(s, t, thread);
      expect(done.status).toBe('completed');
      expect(done.research_brief).toMatch(/^# Brief\n## Research question\nFintech in Berlin\./);
      // The title is Lore's; the model wrote the sections.
      expect(done.final_report).toMatch(/^# Research report: fintech companies \(Berlin\)\n\n## Executive summary\n/);
      expect(done.final_report).not.toMatch(/1850|fraudsters|bankrupt|5 billion/);
      expect(invented).not.toBe('');
      expect(done.final_report).not.toContain('Globex');
      expect(done.final_report).not.toContain('[99]');
      expect(done.final_report).not.toContain('Berlin banks');
      expectEveryClaimSupported(done.final_report, await storedSources(s, t.tenantId, thread), await ownLines(s, t.tenantId, thread));
      const ev = await eventsOf(s, t.tenantId, thread);
      expect(ev.find((e) => e.type === 'completed')!.data.removed_claims).toBe(6);
      expect(ev.filter((e) => e.type === 'researcher_started')).toHaveLength(2);
      expect(model.bodies.map((x) => x.response_format?.json_schema?.name ?? 'report')).toEqual(['clarification', 'research_brief', 'report']);
    } finally {
      await s.close();
      await model.stop();
    }
  });

  it('resumes a research whose worker was killed mid-run: its researcher started once, each iteration once with the pages it kept, one brief, one report', async () => {
    const s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
      worker: { start: false, searxngUrl: served.search.url, settings: { heartbeatMs: 200, leaseMs: 2_000 }, sweepIntervalMs: 300 },
    });
    try {
      const t = await s.tenant();
      const thread = (await start(s, t, { query: QUERY, max_concurrent_research_units: 1, max_researcher_iterations: 10 })).json.thread_id as string;
      const worker = s.spawnWorker({ LORE_AGENTS_SEARXNG_URL: served.search.url, LORE_AGENTS_ALLOW_LOOPBACK: 'true' });
      const child = worker.process;
      await eventually('the child to research a few iterations', async () => {
        worker.assertRunning();
        return (await eventsOf(s, t.tenantId, thread)).filter((e) => e.type === 'researcher_progress').length >= 3;
      }, 90_000, 20);
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const mid = await s.call('GET', `/research/status/${thread}`, auth(t));
      expect(mid.json).toMatchObject({ status: 'processing', current_step: 'research' });

      await s.worker!.start();
      const done = await untilEnded(s, t, thread);
      expect(done.status).toBe('completed');
      const ev = await eventsOf(s, t.tenantId, thread);
      expect(ev.filter((e) => e.type === 'brief')).toHaveLength(1);
      expect(ev.filter((e) => e.type === 'completed')).toHaveLength(1);
      const iterations = ev.filter((e) => e.type === 'researcher_progress').map((e) => `${e.data.unit}:${e.data.iteration}`);
      expect(new Set(iterations).size).toBe(iterations.length);
      // Each researcher resumed where it was: started once (the one killed mid-way too), its iterations 1, 2, 3 ... in order.
      const startedUnits = ev.filter((e) => e.type === 'researcher_started').map((e) => e.data.unit as number);
      expect(startedUnits).toEqual(startedUnits.map((_, k) => k));
      for (const unit of startedUnits) {
        const mine = iterations.filter((x) => x.startsWith(`${unit}:`));
        expect(mine).toEqual(mine.map((_, k) => `${unit}:${k + 1}`));
      }
      const sources = await storedSources(s, t.tenantId, thread);
      expect(new Set(sources.map((x) => x.url)).size).toBe(sources.length);
      // Every page kept is named by the event of the iteration that read it.
      const logged = new Set(ev.filter((e) => e.type === 'researcher_progress').flatMap((e) => e.data.read as string[]));
      expect(sources.filter((x) => !logged.has(x.url))).toEqual([]);
      expect(sources.map((x) => x.n)).toEqual(sources.map((_, i) => i + 1));
      expectEveryClaimSupported(done.final_report, sources, await ownLines(s, t.tenantId, thread));
      expect(await s.metrics.metrics()).toMatch(/lore_agents_workflows_resumed_total\{[^}]*\} [1-9]/);
    } finally {
      await s.close();
    }
  });
});
