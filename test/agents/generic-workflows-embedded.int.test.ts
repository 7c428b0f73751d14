import { useEmbedded } from '../support/embedded';
import { companyKey, generateAgentsWorld, matchingCompanies } from '../support/agents-world';
import { ended, pollUntil, seedDirectory, streamOf, type Json } from './embedded-client';

jest.setTimeout(180_000);

const PROMPT = 'Find fintech companies in Berlin with more than 50 employees';

/**
 * Spec 3's generic workflow API and seed routes in embedded mode (`npm start`): server-sent streams through the
 * embedded gateway with the development key, the in-process worker on the in-memory bus, the progress streams in
 * memory and the test world's directory in PGlite.
 */
describe('the generic workflow API and seed in embedded mode', () => {
  const embedded = useEmbedded('agents-generic-embedded');
  const call = embedded.call;
  const world = generateAgentsWorld(1);
  const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin', employeesMin: 51 }).map(companyKey);
  beforeAll(async () => {
    await seedDirectory(embedded, world);
  });
  const ids = (frames: Array<{ id: string }>) => frames.map((f) => Number(f.id));
  const oneToN = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

  let thread = '';
  let listId = '';

  it('streams a started workflow to completed: every event once, in order, its added criterion among the extracted ones; status shows it', async () => {
    expect(truth.length).toBeGreaterThanOrEqual(3);
    const read = await streamOf(embedded, 'POST', '/api/workflow/start', {}, {
      prompt: PROMPT,
      serviceId: 'crm-1',
      list_name: 'Berlin fintech',
      additional_criteria: [{ name: 'Uses Kubernetes', type: 'soft_filter', description: 'runs on Kubernetes' }],
    });
    expect(read.status).toBe(200);
    expect(read.contentType).toMatch(/^text\/event-stream/);
    expect(read.ended).toBe(true);
    const frames = read.frames;
    thread = frames[0]!.data.thread_id as string;
    listId = frames[0]!.data.list_id as string;
    expect(thread).toMatch(/^[0-9a-f-]{36}$/);
    expect(listId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids(frames)).toEqual(oneToN(frames.length));
    expect(frames.map((f) => f.data.seq)).toEqual(oneToN(frames.length));
    expect(frames[0]!.data).toMatchObject({ event: 'started', status: 'processing', current_step: 'criteria_extraction', total_target: 25, list_id: listId });
    for (const f of frames) expect(f.data.thread_id).toBe(thread);
    const extracted = frames.find((f) => f.data.event === 'criteria_extracted')!;
    expect((extracted.data.criteria as Json[]).map((c) => c.column_name)).toEqual(expect.arrayContaining(['industry', 'location', 'employees', 'uses_kubernetes']));
    expect(frames[frames.length - 1]!.data).toMatchObject({ event: 'completed', status: 'completed', current_step: 'completed', current_count: truth.length });
    expect(frames.filter((f) => ended(f.data))).toHaveLength(1);

    const snap = await call('GET', `/api/workflow/status/${thread}`);
    expect(snap.status).toBe(200);
    expect(snap.json).toMatchObject({
      success: true,
      thread_id: thread,
      status: 'completed',
      title: 'Berlin fintech',
      list_id: listId,
      serviceId: 'crm-1',
      type: 'list_builder',
      goal: { description: expect.any(String), category: 'company_search', total_target: 25, current_count: truth.length },
    });
    expect(new Set(snap.json.all_companies.map((r: Json) => r.entity_key))).toEqual(new Set(truth));
    expect(snap.json.table_structure.columns.map((c: Json) => c.id)).toContain('uses_kubernetes');
  });

  it('resumes a stream the client left with Last-Event-ID: nothing missed, nothing twice, equal to a full replay', async () => {
    const first = await streamOf(embedded, 'POST', '/api/workflow/start', {}, { prompt: PROMPT, total_target: 30 }, (frames) => frames.length === 2);
    expect(first.ended).toBe(false);
    expect(ids(first.frames)).toEqual([1, 2]);
    const t = first.frames[0]!.data.thread_id as string;
    const rest = await streamOf(embedded, 'GET', `/api/workflow/stream/${t}`, { 'last-event-id': '2' });
    expect(rest.status).toBe(200);
    expect(rest.ended).toBe(true);
    const together = [...first.frames, ...rest.frames];
    expect(ids(together)).toEqual(oneToN(together.length));
    expect(rest.frames[rest.frames.length - 1]!.data).toMatchObject({ event: 'completed', status: 'completed' });
    const replay = await streamOf(embedded, 'GET', `/api/workflow/stream/${t}`);
    expect(replay.frames.map((f) => f.data)).toEqual(together.map((f) => f.data));
    const fromQuery = await streamOf(embedded, 'GET', `/api/workflow/stream/${t}?last_event_id=${together.length - 1}`);
    expect(ids(fromQuery.frames)).toEqual([together.length]);
    const atEnd = await streamOf(embedded, 'GET', `/api/workflow/stream/${t}`, { 'last-event-id': String(together.length) });
    expect(atEnd).toMatchObject({ status: 200, ended: true, frames: [] });
    const beyond = await call('GET', `/api/workflow/stream/${t}?last_event_id=${together.length + 1}`);
    expect(beyond.status).toBe(422);
    expect(beyond.json.detail[0]).toMatchObject({ loc: ['query', 'last_event_id'], type: 'value_error' });
  });

  it('continues with an added criterion (streamed from its event), then removes that criterion and its column', async () => {
    const before = (await streamOf(embedded, 'GET', `/api/workflow/stream/${thread}`)).frames.length;
    const cont = await streamOf(embedded, 'POST', '/api/workflow/continue', {}, { thread_id: thread, total_target: 40, serviceId: 'crm-2', additional_criteria: [{ name: 'Remote friendly', type: 'soft_filter' }] });
    expect(cont.status).toBe(200);
    expect(cont.ended).toBe(true);
    expect(cont.frames[0]!.data).toMatchObject({ event: 'continued', status: 'continuing', total_target: 40, seq: before + 1 });
    expect((cont.frames[0]!.data.criteria as Json[]).map((c) => c.column_name)).toContain('remote_friendly');
    expect(cont.frames[cont.frames.length - 1]!.data.status).toBe('completed');

    const removed = await call('POST', '/api/workflow/remove-criteria', { thread_id: thread, column_name: 'remote_friendly', note: 'an open object' });
    expect(removed.status).toBe(200);
    expect(Object.keys(removed.json).sort()).toEqual(['columns', 'current_count', 'notes', 'rows', 'sources', 'total_target']);
    expect(removed.json.columns.map((c: Json) => c.id)).not.toContain('remote_friendly');
    expect(removed.json.rows).toHaveLength(truth.length);
    for (const row of removed.json.rows) expect(Object.keys(row.cells)).not.toContain('remote_friendly');
    const snap = (await call('GET', `/api/workflow/status/${thread}`)).json as Json;
    expect(snap).toMatchObject({ status: 'completed', total_target: 40, serviceId: 'crm-2' });
    expect(snap.criteria.map((c: Json) => c.column_name)).not.toContain('remote_friendly');
    expect(snap.criteria.map((c: Json) => c.column_name)).toContain('uses_kubernetes');
    const all = (await streamOf(embedded, 'GET', `/api/workflow/stream/${thread}`)).frames;
    expect(all[all.length - 1]!.data).toMatchObject({ event: 'criteria_removed' });
    const missing = await call('POST', '/api/workflow/remove-criteria', { thread_id: thread, column_name: 'no_such' });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ detail: expect.stringMatching(/no_such/) });
  });

  it('lists the caller\'s threads, company and people apart, and runs a people workflow to completed', async () => {
    const people = await call('POST', '/api/workflow/people/start', { prompt: 'Find CTOs of fintech companies in Berlin', serviceId: 'crm-1' });
    expect(people.status).toBe(200);
    const peopleThread = people.json as string;
    expect(peopleThread).toMatch(/^[0-9a-f-]{36}$/);
    const done = await pollUntil(embedded, `/api/workflow/people/status/${peopleThread}`, ended);
    expect(done).toMatchObject({ status: 'completed', category: 'people_search', type: 'people_search', serviceId: 'crm-1' });
    expect(done.table_structure.rows.length).toBeGreaterThan(0);
    for (const row of done.table_structure.rows) expect(row.cells.title.value).toBe('Chief Technology Officer');

    const threads = (await call('GET', '/api/workflow/threads')).json as Json[];
    const item = threads.find((t) => t.thread_id === thread);
    expect(item).toEqual({ thread_id: thread, tenant_id: embedded.lore.credentials.tenant_id, order_id: 'crm-2', status: 'completed', created_at: expect.any(String), last_updated: expect.any(String) });
    expect(threads.map((t) => t.thread_id)).not.toContain(peopleThread);
    const peopleThreads = (await call('GET', '/api/workflow/people/threads')).json as Json[];
    expect(peopleThreads.map((t) => t.thread_id)).toContain(peopleThread);
    expect(peopleThreads.map((t) => t.thread_id)).not.toContain(thread);
  });

  it('stops a running workflow (answering its id): the resumed stream ends `stopped` after the stop\'s event; a people workflow too', async () => {
    const long = await streamOf(embedded, 'POST', '/api/workflow/start', {}, { prompt: 'Find companies with more than 10 employees', total_target: 400 }, (frames) => frames.length >= 1);
    const t = long.frames[0]!.data.thread_id as string;
    const stop = await call('POST', `/api/workflow/stop/${t}`);
    expect(stop.status).toBe(200);
    expect(stop.json).toBe(t);
    const rest = await streamOf(embedded, 'GET', `/api/workflow/stream/${t}`, { 'last-event-id': long.frames[long.frames.length - 1]!.id });
    expect(rest.ended).toBe(true);
    const events = rest.frames.map((f) => f.data.event);
    expect(events).toContain('stop_requested');
    expect(events).not.toContain('completed');
    expect(rest.frames[rest.frames.length - 1]!.data).toMatchObject({ event: 'stopped', status: 'stopped' });
    expect(ids([...long.frames, ...rest.frames])).toEqual(oneToN(long.frames.length + rest.frames.length));
    expect((await call('GET', `/api/workflow/status/${t}`)).json.status).toBe('stopped');

    const p = (await call('POST', '/api/workflow/people/start', { prompt: 'Find engineers at companies in Germany', total_target: 400 })).json as string;
    const pstop = await call('POST', `/api/workflow/people/stop/${p}`);
    expect(pstop.status).toBe(200);
    expect(pstop.json).toBe(p);
    expect((await pollUntil(embedded, `/api/workflow/people/status/${p}`, ended)).status).toBe('stopped');
  });

  it('seeds company and people lists, reports their statuses, skips them on a second start, and clears completed or all statuses', async () => {
    const company = await call('POST', '/api/seed/start/company');
    expect(company.status).toBe(200);
    expect(company.json).toMatchObject({ success: true, total_prompts: 5, successful: 5, failed: 0, skipped: 0, status: 'completed' });
    expect(company.json.results.map((r: Json) => r.index)).toEqual([0, 1, 2, 3, 4]);
    for (const r of company.json.results as Json[]) expect(r).toMatchObject({ status: 'completed', list_id: expect.stringMatching(/^[0-9a-f-]{36}$/), current_status: expect.any(String) });
    const statuses = await call('GET', '/api/seed/status?seed_type=company');
    expect(statuses.status).toBe(200);
    expect(statuses.json).toMatchObject({ success: true, count: 5, summary: { total: 5, pending: 0, processing: 0, list_created: 0, people_workflow_started: 0, completed: 5, failed: 0, skipped: 0 } });
    expect(new Set((statuses.json.statuses as Json[]).map((x) => x.list_id))).toEqual(new Set(company.json.results.map((r: Json) => r.list_id)));
    // Each list is a real one: its workflow is of the seed's type, named after its prompt.
    const berlin = (statuses.json.statuses as Json[]).find((x) => x.prompt_id === 'company-fintech-berlin')!;
    expect((await call('GET', `/api/workflow/status/${berlin.thread_id}`)).json).toMatchObject({ list_id: berlin.list_id, type: 'predefined_agent', title: 'Find fintech companies in Berlin' });
    const again = await call('POST', '/api/seed/start/company');
    expect(again.json).toMatchObject({ success: true, successful: 0, skipped: 5 });
    expect(again.json.results.map((r: Json) => [r.status, r.reason, r.list_id])).toEqual(company.json.results.map((r: Json) => ['skipped', 'already completed', r.list_id]));

    const people = await call('POST', '/api/seed/start/people');
    expect(people.json).toMatchObject({ success: true, total_prompts: 5, successful: 5, skipped: 0 });
    expect((await call('GET', '/api/seed/status')).json).toMatchObject({ count: 10, summary: { total: 10, completed: 10 } });

    const cleared = await call('DELETE', '/api/seed/status?seed_type=company');
    expect(cleared.status).toBe(200);
    expect(cleared.json).toMatchObject({ success: true, deleted_count: 5, cleared_type: 'company' });
    expect(cleared.json.deleted_keys).toEqual(['company:company-cybersecurity-europe', 'company:company-ecommerce-paris', 'company:company-fintech-berlin', 'company:company-healthcare-germany', 'company:company-saas-london']);
    expect((await call('GET', '/api/seed/status?seed_type=company')).json).toMatchObject({ count: 0 });
    expect((await call('GET', '/api/seed/status?seed_type=people')).json.count).toBe(5);
    const everything = await call('DELETE', '/api/seed/status?clear_all=true');
    expect(everything.json).toMatchObject({ deleted_count: 5, cleared_type: 'all' });
    expect((await call('GET', '/api/seed/status')).json).toMatchObject({ count: 0, summary: { total: 0 } });
  });

  // Last: on PGlite a restore that never answers holds the process's one database connection for good.
  it('restores the list as a workflow', async () => {
    const restored = await Promise.race([
      call('GET', `/api/workflow/restore/${listId}`),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('GET /api/workflow/restore did not answer within 15 s')), 15_000)),
    ]);
    expect(restored.status).toBe(200);
    expect(restored.json).toMatchObject({ list_id: listId, status: 'restored', thread_id: thread, listType: 'company_search', supervisor_started: false, title: 'Berlin fintech', total_target: 40 });
    expect(restored.json.table_structure.rows).toHaveLength(truth.length);
    expect(new Set(restored.json.table_structure.rows.map((r: Json) => r.cells.domain.value))).toEqual(new Set(truth));
    expect(restored.json.criteria.map((c: Json) => c.column_name)).not.toContain('remote_friendly');
  });
});
