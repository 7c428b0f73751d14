import { BRIEF_SECTIONS, REPORT_SECTIONS, hasSections, ownReportLines, reportClaims } from '../../services/agents/src/domain/research';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import { useEmbedded } from '../support/embedded';
import { ended, pollUntil, streamOf, until } from './embedded-client';

jest.setTimeout(180_000);

/**
 * Deep research in embedded mode (`npm start`): PGlite, the in-process bus and progress streams, the embedded
 * (extractive) model — so the brief and the report are Lore's own — and the web through a SearXNG endpoint over the
 * test world's sites (LORE_AGENTS_SEARXNG_URL, with loopback reads allowed).
 */
describe('deep research in embedded mode', () => {
  let served: ServedAgentsWorld | undefined;
  const env: Record<string, string> = { LORE_AGENTS_ALLOW_LOOPBACK: 'true' };
  // Registered before the embedded process's own hook, so the search endpoint's address is in its environment.
  beforeAll(async () => {
    served = await serveAgentsWorld(generateAgentsWorld(1));
    env.LORE_AGENTS_SEARXNG_URL = served.search.url;
  });
  afterAll(async () => {
    await served?.close();
  });
  const embedded = useEmbedded('research-embedded', env);

  it('researches the world\'s pages to a complete report whose every claim cites a page it read', async () => {
    const start = await embedded.call('POST', '/research/start', { query: 'fintech companies in Berlin', serviceId: 'embedded', max_researcher_iterations: 2 });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    let status: any = null;
    for (let i = 0; i < 600 && !['completed', 'error', 'stopped'].includes(status?.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await embedded.call('GET', `/research/status/${thread}`)).json;
    }
    expect(status).toMatchObject({ status: 'completed', partial: false, message: expect.stringMatching(/^research completed: \d+ pages read, \d+ cited$/) });
    expect(hasSections(status.research_brief, BRIEF_SECTIONS)).toBe(true);
    expect(hasSections(status.final_report, REPORT_SECTIONS)).toBe(true);
    expect(status.sources.length).toBeGreaterThan(2);
    const read = new Set(status.sources.map((x: any) => x.n));
    const res = await fetch(`${embedded.lore.url}/research/stream/${thread}`, { headers: { 'x-api-key': embedded.lore.credentials.api_key, 'last-event-id': '1' } });
    const text = await res.text();
    const frames = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!));
    // Every line of the report but Lore's own (its title and the areas' headings, from the brief's event) is checked.
    const areas = (frames.find((f) => f.type === 'brief')!.data.areas as string[]).map((question) => ({ question }));
    const claims = reportClaims(status.final_report, ownReportLines({ query: status.query, clarification: null, partial: false, message: status.message, areas }));
    expect(claims.length).toBeGreaterThan(2);
    for (const c of claims) {
      expect(c.markers.length).toBeGreaterThan(0);
      for (const n of c.markers) expect(read.has(n)).toBe(true);
    }
    for (const x of status.sources) expect(served!.web.requests.some((r) => String(x.url).includes(r.host))).toBe(true);
    expect(frames[0]).toMatchObject({ seq: 2 });
    expect(frames[frames.length - 1]).toMatchObject({ event: 'complete', final_report: status.final_report });
  });
  it('asks a clarifying question, waits for it, and goes on once it is answered with respond; a second answer is refused', async () => {
    const start = await embedded.call('POST', '/research/start', { query: 'fintech companies', serviceId: 'embedded', allow_clarification: true, max_concurrent_research_units: 2, max_researcher_iterations: 1 });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    const waiting = await streamOf(embedded, 'GET', `/research/stream/${thread}`, {}, undefined, (f) => f.some((x) => x.data.event === 'clarification'));
    const question = waiting.frames.find((f) => f.data.event === 'clarification')!;
    expect(question.data).toMatchObject({ event: 'clarification', status: 'awaiting_clarification', question: expect.stringMatching(/what should it focus on/) });
    const status = await pollUntil(embedded, `/research/status/${thread}`, (j) => j.status === 'awaiting_clarification');
    expect(status).toMatchObject({ current_step: 'clarification', clarification_question: question.data.question });
    const active = await embedded.call('GET', '/research/active');
    expect(active.json.workflows).toContainEqual(expect.objectContaining({ thread_id: thread, status: 'awaiting_clarification', query: 'fintech companies', serviceId: 'embedded' }));

    const answered = await embedded.call('POST', `/research/respond/${thread}`, { response: 'in Berlin' });
    expect(answered.status).toBe(200);
    expect(answered.json).toEqual({ thread_id: thread, status: 'processing', message: 'clarification received; the research continues' });
    const again = await embedded.call('POST', `/research/respond/${thread}`, { response: 'twice' });
    expect(again.status).toBe(422);
    expect(again.json).toEqual({ status_code: 422, message: expect.stringMatching(/not waiting for an answer/), errors: [], data: null });
    // The stream resumed after the question: the answer, then the research to its report.
    const rest = await streamOf(embedded, 'GET', `/research/stream/${thread}`, { 'last-event-id': question.id });
    expect(rest.ended).toBe(true);
    expect(rest.frames[0]!.data).toMatchObject({ event: 'progress', type: 'clarification_answered' });
    const last = rest.frames[rest.frames.length - 1]!.data;
    expect(last).toMatchObject({ event: 'complete', status: 'completed' });
    expect(last.research_brief).toContain('fintech companies (in Berlin)');
    expect(hasSections(last.final_report, REPORT_SECTIONS)).toBe(true);
    expect([...waiting.frames.filter((f) => Number(f.id) <= Number(question.id)), ...rest.frames].map((f) => Number(f.id))).toEqual(Array.from({ length: Number(question.id) + rest.frames.length }, (_, i) => i + 1));
  });

  it('stops a running research (its stream ends `stopped`) and one waiting for an answer at once', async () => {
    const start = await embedded.call('POST', '/research/start', { query: 'fintech companies in Berlin', serviceId: 'embedded', max_concurrent_research_units: 1, max_researcher_iterations: 10 });
    const thread = start.json.thread_id as string;
    await streamOf(embedded, 'GET', `/research/stream/${thread}`, {}, undefined, (f) => f.some((x) => x.data.type === 'researcher_started'));
    const stop = await embedded.call('DELETE', `/research/stop/${thread}`);
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({ success: true, thread_id: thread, status: 'stopping', message: expect.any(String) });
    const end = await pollUntil(embedded, `/research/status/${thread}`, ended, 30_000);
    expect(end.status).toBe('stopped');
    const read = await streamOf(embedded, 'GET', `/research/stream/${thread}`);
    expect(read.ended).toBe(true);
    expect(read.frames[read.frames.length - 1]!.data).toMatchObject({ event: 'stopped', status: 'stopped' });
    expect(read.frames.some((f) => f.data.event === 'complete')).toBe(false);
    expect((await embedded.call('DELETE', `/research/stop/${thread}`)).json).toMatchObject({ status: 'stopped', message: expect.stringMatching(/already ended/) });

    const waiting = (await embedded.call('POST', '/research/start', { query: 'payment firms', serviceId: 'embedded', allow_clarification: true })).json.thread_id as string;
    await until('the question', async () => (await embedded.call('GET', `/research/status/${waiting}`)).json.status === 'awaiting_clarification');
    expect((await embedded.call('DELETE', `/research/stop/${waiting}`)).json).toMatchObject({ success: true, thread_id: waiting, status: 'stopped' });
    expect((await embedded.call('GET', `/research/status/${waiting}`)).json.status).toBe('stopped');
    expect((await embedded.call('GET', '/research/active')).json.workflows.map((w: { thread_id: string }) => w.thread_id)).not.toContain(waiting);
  });
});
