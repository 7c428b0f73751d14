import { upsertDirectoryRecords } from '@lore/agents';
import { createLogger, RedisProgressStreams } from '@lore/runtime';
import type { Counter } from 'prom-client';
import { publishEvents, recordEvent, type WorkflowEvent } from '../../services/agents/src/application/progress';
import { requireEnv, uniqueSuffix } from '../support/infra';
import { companyKey, generateAgentsWorld, matchingCompanies, worldDirectoryRecords } from '../support/agents-world';
import type { TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack, auth, eventually } from './harness';
import { readStream, type Frame, type StreamRead } from './sse-client';

jest.setTimeout(180_000);

type Json = Record<string, any>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


async function eventSeqs(s: AgentsStack, tenantId: string, thread: string): Promise<number[]> {
  const r = await s.db.withTenant(tenantId, (sql) => sql.query<{ seq: string }>(`SELECT seq FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [thread]));
  return r.rows.map((x) => Number(x.seq));
}

const world = generateAgentsWorld(1);
const PROMPT = 'Find fintech companies in Berlin with more than 50 employees';

describe('the generic workflow API with the worker (real Kafka, Redis, PostgreSQL, through the gateway)', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin', employeesMin: 51 }).map(companyKey);

  beforeAll(async () => {
    s = await startAgentsStack({
      worker: { settings: { heartbeatMs: 200, leaseMs: 3_000, stopPollMs: 100, batchRows: 1 } },
      service: { genericWorkflows: { keepaliveMs: 300 } },
    });
    a = await s.tenant();
    b = await s.tenant();
    await upsertDirectoryRecords(s.db, a.tenantId, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  let thread = '';
  let listId = '';

  it('streams a started workflow to completed: every event of its log once, in order, with its added criterion', async () => {
    const read = await readStream(s, 'POST', '/api/workflow/start', auth(a), {
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
    // `id:` is the event's number in the log: 1, 2, 3 ... with nothing missing and nothing twice.
    const seqs = await eventSeqs(s, a.tenantId, thread);
    expect(frames.map((f) => Number(f.id))).toEqual(seqs);
    expect(frames.map((f) => f.data.seq)).toEqual(seqs);
    expect(frames[0]!.data).toMatchObject({ event: 'started', status: 'processing', current_step: 'criteria_extraction', total_target: 25, list_id: listId });
    for (const f of frames) {
      expect(f.data.thread_id).toBe(thread);
      expect(Object.keys(f.data).sort()).toEqual(['at', 'criteria', 'current_count', 'current_step', 'data', 'event', 'list_id', 'message', 'seq', 'status', 'thread_id', 'total_target']);
    }
    const extracted = frames.find((f) => f.data.event === 'criteria_extracted')!;
    expect(extracted.data.current_step).toBe('data_collection');
    const columns = (extracted.data.criteria as Json[]).map((c) => c.column_name);
    expect(columns).toEqual(expect.arrayContaining(['industry', 'location', 'employees', 'uses_kubernetes']));
    const last = frames[frames.length - 1]!.data;
    expect(last).toMatchObject({ event: 'completed', status: 'completed', current_step: 'completed', current_count: truth.length });
    expect(frames.filter((f) => ['completed', 'stopped', 'error'].includes(f.data.status as string))).toHaveLength(1);

    // The snapshot: goal an object, the serviceId, the type, the list.
    const snap = await s.call('GET', `/api/workflow/status/${thread}`, auth(a));
    expect(snap.status).toBe(200);
    expect(snap.json).toMatchObject({
      success: true,
      thread_id: thread,
      status: 'completed',
      current_step: 'completed',
      title: 'Berlin fintech',
      list_id: listId,
      serviceId: 'crm-1',
      type: 'list_builder',
      goal: { description: expect.any(String), category: 'company_search', total_target: 25, current_count: truth.length },
    });
    expect(new Set(snap.json.all_companies.map((r: Json) => r.entity_key))).toEqual(new Set(truth));
    expect(snap.json.table_structure.columns.map((c: Json) => c.id)).toContain('uses_kubernetes');
  });

  it('resumes a stream the client left mid-run with Last-Event-ID: nothing missed, nothing twice, the same frames as a full replay', async () => {
    const first = await readStream(s, 'POST', '/api/workflow/start', auth(a), { prompt: PROMPT, total_target: 30 }, (frames) => frames.length === 2);
    expect(first.ended).toBe(false);
    expect(first.frames.map((f) => f.id)).toEqual(['1', '2']);
    const t = first.frames[0]!.data.thread_id as string;
    // The workflow goes on without a client; resume after the last id received (the header) ...
    const rest = await readStream(s, 'GET', `/api/workflow/stream/${t}`, { ...auth(a), 'last-event-id': '2' });
    expect(rest.status).toBe(200);
    expect(rest.ended).toBe(true);
    const seqs = await eventSeqs(s, a.tenantId, t);
    const got = [...first.frames, ...rest.frames].map((f) => Number(f.id));
    expect(got).toEqual(seqs);
    expect(new Set(got).size).toBe(got.length);
    expect(rest.frames[rest.frames.length - 1]!.data.status).toBe('completed');
    // ... the whole log again without an id, equal frame for frame (a frame is the workflow after its event).
    const replay = await readStream(s, 'GET', `/api/workflow/stream/${t}`, auth(a));
    expect(replay.frames.map((f) => f.data)).toEqual([...first.frames, ...rest.frames].map((f) => f.data));
    // ?last_event_id= resumes the same way; an ended workflow resumed at its end answers nothing and ends.
    const fromQuery = await readStream(s, 'GET', `/api/workflow/stream/${t}?last_event_id=${seqs.length - 1}`, auth(a));
    expect(fromQuery.frames.map((f) => Number(f.id))).toEqual([seqs.length]);
    const atEnd = await readStream(s, 'GET', `/api/workflow/stream/${t}`, { ...auth(a), 'last-event-id': String(seqs.length) });
    expect(atEnd).toMatchObject({ status: 200, ended: true, frames: [] });
  });

  it('continues with edited and added criteria and streams from the continue on', async () => {
    const snap = (await s.call('GET', `/api/workflow/status/${thread}`, auth(a))).json as Json;
    const current = (snap.criteria as Json[]).filter((c) => c.column_name !== 'uses_kubernetes').map((c) => (c.column_name === 'industry' ? { ...c, description: 'edited' } : c));
    const before = (await eventSeqs(s, a.tenantId, thread)).length;
    const read = await readStream(s, 'POST', '/api/workflow/continue', auth(a), {
      thread_id: thread,
      total_target: 40,
      serviceId: 'crm-2',
      current_criteria: current,
      additional_criteria: [{ name: 'Remote friendly', type: 'soft_filter' }],
    });
    expect(read.status).toBe(200);
    expect(read.ended).toBe(true);
    expect(read.frames[0]!.data).toMatchObject({ event: 'continued', status: 'continuing', total_target: 40, seq: before + 1 });
    expect(read.frames.map((f) => Number(f.id))).toEqual((await eventSeqs(s, a.tenantId, thread)).slice(before));
    const criteria = (read.frames[0]!.data.criteria as Json[]).map((c) => c.column_name);
    expect(criteria).toContain('remote_friendly');
    expect(criteria).not.toContain('uses_kubernetes');
    expect(read.frames[read.frames.length - 1]!.data.status).toBe('completed');
    const after = (await s.call('GET', `/api/workflow/status/${thread}`, auth(a))).json as Json;
    expect(after).toMatchObject({ status: 'completed', total_target: 40, serviceId: 'crm-2' });
    expect(after.criteria.find((c: Json) => c.column_name === 'industry').description).toBe('edited');
    const ids = after.table_structure.columns.map((c: Json) => c.id);
    expect(ids).toContain('remote_friendly');
    expect(ids).not.toContain('uses_kubernetes');
    // The dropped criterion's cells left the rows found before the continue, as its column left the table.
    expect((after.table_structure.rows as Json[]).length).toBeGreaterThan(0);
    for (const row of after.table_structure.rows as Json[]) expect(Object.keys(row.cells)).not.toContain('uses_kubernetes');
    // The directory holds no more matches: the same rows, and a note saying so.
    expect(after.table_structure.current_count).toBe(truth.length);
  });

  it('removes a criterion and its column from an ended workflow; answers the table structure', async () => {
    const r = await s.call('POST', '/api/workflow/remove-criteria', auth(a), { thread_id: thread, column_name: 'remote_friendly', note: 'open object' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json).sort()).toEqual(['columns', 'current_count', 'notes', 'rows', 'sources', 'total_target']);
    expect(r.json.columns.map((c: Json) => c.id)).not.toContain('remote_friendly');
    expect(r.json.rows).toHaveLength(truth.length);
    for (const row of r.json.rows) expect(Object.keys(row.cells)).not.toContain('remote_friendly');
    const snap = (await s.call('GET', `/api/workflow/status/${thread}`, auth(a))).json as Json;
    expect(snap.criteria.map((c: Json) => c.column_name)).not.toContain('remote_friendly');
    // By name too; a fixed column (industry) stays while its criterion goes.
    const byName = await s.call('POST', '/api/workflow/remove-criteria', auth(a), { thread_id: thread, name: 'industry' });
    expect(byName.status).toBe(200);
    expect(byName.json.columns.map((c: Json) => c.id)).toContain('industry');
    const again = (await s.call('GET', `/api/workflow/status/${thread}`, auth(a))).json as Json;
    expect(again.criteria.map((c: Json) => c.column_name)).not.toContain('industry');
    // The stream tells it as well.
    const seqs = await eventSeqs(s, a.tenantId, thread);
    const tail = await readStream(s, 'GET', `/api/workflow/stream/${thread}`, { ...auth(a), 'last-event-id': String(seqs.length - 2) });
    expect(tail.frames.map((f) => f.data.event)).toEqual(['criteria_removed', 'criteria_removed']);
    expect(tail.frames[1]!.data.criteria.map((c: Json) => c.column_name)).not.toContain('industry');
    // Unknown criterion: 404.
    const missing = await s.call('POST', '/api/workflow/remove-criteria', auth(a), { thread_id: thread, column_name: 'no_such' });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ detail: expect.stringMatching(/no_such/) });
  });

  it('restores the list as a workflow, lists the caller\'s threads, and stops a workflow (answering its id)', async () => {
    const restored = await s.call('GET', `/api/workflow/restore/${listId}`, auth(a));
    expect(restored.status).toBe(200);
    expect(restored.json).toMatchObject({ list_id: listId, status: 'restored', thread_id: thread, listType: 'company_search', supervisor_started: false, title: 'Berlin fintech', total_target: 40 });
    expect(restored.json.table_structure.rows).toHaveLength(truth.length);
    expect(Object.keys(restored.json).sort()).toEqual(['criteria', 'description', 'list_id', 'listType', 'status', 'supervisor_started', 'table_structure', 'thread_id', 'title', 'total_target'].sort());

    const startPeople = await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CTOs of fintech companies in Berlin', serviceId: 'crm-1' });
    expect(startPeople.status).toBe(200);
    const peopleThread = startPeople.json as unknown as string;
    expect(peopleThread).toMatch(/^[0-9a-f-]{36}$/);

    const threads = await s.call('GET', '/api/workflow/threads', auth(a));
    expect(threads.status).toBe(200);
    const mine = threads.json as unknown as Json[];
    expect(mine.map((t) => t.thread_id)).toContain(thread);
    expect(mine.map((t) => t.thread_id)).not.toContain(peopleThread);
    const item = mine.find((t) => t.thread_id === thread)!;
    expect(item).toEqual({ thread_id: thread, tenant_id: a.tenantId, order_id: 'crm-2', status: 'completed', created_at: expect.any(String), last_updated: expect.any(String) });
    expect(Date.parse(item.last_updated)).toBeGreaterThanOrEqual(Date.parse(item.created_at));
    const people = (await s.call('GET', '/api/workflow/people/threads', auth(a))).json as unknown as Json[];
    expect(people.map((t) => t.thread_id)).toEqual([peopleThread]);
    expect((await s.call('GET', '/api/workflow/threads', auth(b))).json).toEqual([]);

    // The people workflow runs to its end; its snapshot is a people one.
    const done = await eventually('the people workflow to end', async () => {
      const r = await s.call('GET', `/api/workflow/people/status/${peopleThread}`, auth(a));
      return ['completed', 'stopped', 'error'].includes(r.json.status as string) ? (r.json as Json) : null;
    });
    expect(done).toMatchObject({ status: 'completed', category: 'people_search', type: 'people_search', serviceId: 'crm-1' });
    expect(done.criteria.map((c: Json) => c.column_name)).toContain('title');

    // A long run (400 rows wanted, one row a checkpoint): the client leaves after its first rows, resumes with
    // Last-Event-ID while the run goes on, receives live frames, stops it, and reads to its end.
    const long = await readStream(s, 'POST', '/api/workflow/start', auth(a), { prompt: 'Find companies with more than 10 employees', total_target: 400 }, (frames) => frames.some((f) => f.data.event === 'rows_added'));
    expect(long.ended).toBe(false);
    const longThread = long.frames[0]!.data.thread_id as string;
    let stop: ReturnType<AgentsStack['call']> | null = null;
    const resumed = await readStream(s, 'GET', `/api/workflow/stream/${longThread}`, { ...auth(a), 'last-event-id': long.frames[long.frames.length - 1]!.id }, undefined, (frames) => {
      if (frames.length >= 2 && !stop) stop = s.call('POST', `/api/workflow/stop/${longThread}`, auth(a));
      return false;
    });
    const stopped = await stop!;
    expect(stopped.status).toBe(200);
    expect(stopped.json).toBe(longThread);
    expect(resumed.ended).toBe(true);
    const events = resumed.frames.map((f) => f.data.event);
    // Frames came while the run was going (before the stop), and the stop's events after them.
    expect(events.indexOf('stop_requested')).toBeGreaterThanOrEqual(2);
    expect(resumed.frames.slice(0, 2).every((f) => f.data.status === 'processing')).toBe(true);
    expect(resumed.frames[resumed.frames.length - 1]!.data).toMatchObject({ event: 'stopped', status: 'stopped' });
    const all = [...long.frames, ...resumed.frames].map((f) => Number(f.id));
    expect(all).toEqual(await eventSeqs(s, a.tenantId, longThread));
  });

  it("answers 404 for another tenant's workflow, list and stream", async () => {
    for (const [method, path, body] of [
      ['GET', `/api/workflow/status/${thread}`],
      ['GET', `/api/workflow/people/status/${thread}`],
      ['GET', `/api/workflow/restore/${listId}`],
      ['GET', `/api/workflow/stream/${thread}`],
      ['POST', `/api/workflow/stop/${thread}`],
      ['POST', `/api/workflow/people/stop/${thread}`],
      ['POST', '/api/workflow/continue', { thread_id: thread, total_target: 50 }],
      ['POST', '/api/workflow/people/continue', { thread_id: thread, total_target: 50 }],
      ['POST', '/api/workflow/remove-criteria', { thread_id: thread, column_name: 'location' }],
      ['POST', '/api/workflow/people/remove-criteria', { thread_id: thread, column_name: 'location' }],
    ] as Array<[string, string, unknown?]>) {
      const r = await s.call(method, path, auth(b), body);
      expect([path, r.status]).toEqual([path, 404]);
      expect(r.json).toEqual({ detail: expect.any(String) });
    }
    // A company thread is not a people one either.
    expect((await s.call('GET', `/api/workflow/people/status/${thread}`, auth(a))).status).toBe(404);
  });
});

describe('the generic workflow API without a worker (Redis, PostgreSQL, through the gateway): limits, conflicts, bad input, live frames, seed', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    // No worker: started workflows stay running, so limits and running-state refusals are deterministic.
    // Progress streams on real Redis here too (the harness gives a stack without a worker memory ones).
    const streams = new RedisProgressStreams(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: `agents-generic-${uniqueSuffix()}:` });
    s = await startAgentsStack({ service: { streams, genericWorkflows: { maxRunningPerService: 2, keepaliveMs: 300, maxOpenStreams: 8 } } });
    a = await s.tenant();
    b = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  const leaveAtOnce = (frames: Frame[]) => frames.length >= 1;

  it('limits running workflows per (tenant, serviceId): the next start or continue is 429; other services and tenants are free', async () => {
    const started: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await readStream(s, 'POST', '/api/workflow/start', auth(a), { prompt: `Find fintech companies number ${i}`, serviceId: 'svc-1' }, leaveAtOnce);
      expect(r.status).toBe(200);
      started.push(r.frames[0]!.data.thread_id as string);
    }
    const third = await s.call('POST', '/api/workflow/start', auth(a), { prompt: 'Find fintech companies', serviceId: 'svc-1' });
    expect(third.status).toBe(429);
    expect(third.json).toEqual({ detail: expect.stringMatching(/svc-1 already has 2 running workflows/) });
    expect(third.headers['retry-after']).toBe('10');
    const people = await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CTOs', serviceId: 'svc-1' });
    expect(people.status).toBe(429);
    // Another serviceId, no serviceId, another tenant: admitted.
    expect((await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CTOs', serviceId: 'svc-2' })).status).toBe(200);
    expect((await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CTOs' })).status).toBe(200);
    expect((await s.call('POST', '/api/workflow/people/start', auth(b), { prompt: 'Find CTOs', serviceId: 'svc-1' })).status).toBe(200);
    // Three at once for a fresh service: exactly two get in.
    const burst = await Promise.all([0, 1, 2].map((i) => s.call('POST', '/api/workflow/people/start', auth(a), { prompt: `Find CTOs ${i}`, serviceId: 'svc-3' })));
    expect(burst.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    // Stopping one frees no slot until it has stopped (stopping still runs); nothing was written for a refused start.
    const count = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM agents.workflows WHERE state->>'service_id' = 'svc-1'`));
    expect(Number(count.rows[0]!.n)).toBe(2);
    // Continue with a serviceId that is full is refused too (the workflow is moved to that service only if admitted).
    const other = (await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CFOs', serviceId: 'svc-4' })).json as unknown as string;
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE agents.workflows SET status = 'completed' WHERE thread_id = $1`, [other]));
    const cont = await s.call('POST', '/api/workflow/people/continue', auth(a), { thread_id: other, total_target: 30, serviceId: 'svc-1' });
    expect(cont.status).toBe(429);
    const contOk = await s.call('POST', '/api/workflow/people/continue', auth(a), { thread_id: other, total_target: 30 });
    expect(contOk.status).toBe(200);
    expect(contOk.json).toBe(other);
  });

  it('delivers new events live to a waiting stream, keeps a quiet stream open, and lets the workflow run on when the client leaves', async () => {
    const start = await readStream(s, 'POST', '/api/workflow/start', auth(a), { prompt: 'Find SaaS companies in London' }, leaveAtOnce);
    const t = start.frames[0]!.data.thread_id as string;
    // A stream resumed after event 1 waits (keep-alive comments) until stop writes event 2, which arrives live.
    let stop: ReturnType<AgentsStack['call']> | null = null;
    const read = readStream(s, 'GET', `/api/workflow/stream/${t}`, { ...auth(a), 'last-event-id': '1' }, undefined, (frames: Frame[], comments: number) => {
      if (comments >= 2 && !stop) stop = s.call('POST', `/api/workflow/stop/${t}`, auth(a));
      return frames.length >= 1;
    });
    const got = await read.catch(async (err: unknown) => {
      const r = await stop;
      throw new Error(`${String(err)}; stop answered ${r?.status} ${r?.text}`);
    });
    expect((await stop!).status).toBe(200);
    expect(got.comments).toBeGreaterThanOrEqual(2);
    expect(got.frames.map((f) => f.id)).toEqual(['2']);
    expect(got.frames[0]!.data).toMatchObject({ event: 'stop_requested', status: 'stopping', thread_id: t });
    // The client left; the workflow is still there, still stopping (no worker here).
    const snap = await s.call('GET', `/api/workflow/status/${t}`, auth(a));
    expect(snap.json.status).toBe('stopping');
    // Removing a criterion from a running workflow is refused.
    const remove = await s.call('POST', '/api/workflow/remove-criteria', auth(a), { thread_id: t, column_name: 'industry' });
    expect(remove.status).toBe(409);
    expect(remove.json).toEqual({ detail: expect.stringMatching(/stopping/) });
  });

  it('takes a chosen threadId and list_id, refuses taken ones with 409, and refuses a Last-Event-ID beyond the log', async () => {
    const threadId = '3f0c8a52-7d1e-4c3b-9a5e-0b1c2d3e4f50';
    const listId = '4a1d9b63-8e2f-4d4c-8b6f-1c2d3e4f5061';
    const r = await readStream(s, 'POST', '/api/workflow/start', auth(a), { prompt: 'Find fintech companies in Berlin', threadId, list_id: listId, total_target: 7, type: 'base_data_list' }, leaveAtOnce);
    expect(r.frames[0]!.data).toMatchObject({ thread_id: threadId, list_id: listId, total_target: 7 });
    const snap = (await s.call('GET', `/api/workflow/status/${threadId}`, auth(a))).json as Json;
    expect(snap).toMatchObject({ type: 'base_data_list', total_target: 7, list_id: listId });
    const again = await s.call('POST', '/api/workflow/start', auth(a), { prompt: 'Find fintech companies', threadId });
    expect(again.status).toBe(409);
    expect(again.json).toEqual({ detail: expect.stringMatching(/already a workflow/) });
    const sameList = await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CTOs', list_id: listId });
    expect(sameList.status).toBe(409);
    // Another tenant may use the same ids (they are the tenant's own).
    expect((await s.call('POST', '/api/workflow/people/start', auth(b), { prompt: 'Find CTOs', threadId, list_id: listId })).status).toBe(200);

    const beyond = await s.call('GET', `/api/workflow/stream/${threadId}`, { ...auth(a), 'last-event-id': '99' });
    expect(beyond.status).toBe(422);
    expect(beyond.json).toEqual({ detail: [{ loc: ['header', 'Last-Event-ID'], msg: expect.stringMatching(/last event is 1/), type: 'value_error' }] });
    const junk = await s.call('GET', `/api/workflow/stream/${threadId}?last_event_id=abc`, auth(a));
    expect(junk.status).toBe(422);
    expect(junk.json.detail[0].loc).toEqual(['query', 'last_event_id']);
  });

  it('answers 422 body (c) for every bad body, path and query', async () => {
    const cases: Array<[string, string, unknown, Array<string | number>]> = [
      ['POST', '/api/workflow/start', { prompt: '   ' }, ['body', 'prompt']],
      ['POST', '/api/workflow/start', {}, ['body', 'prompt']],
      ['POST', '/api/workflow/start', { prompt: 'x', total_target: 0 }, ['body', 'total_target']],
      ['POST', '/api/workflow/start', { prompt: 'x', total_target: 1001 }, ['body', 'total_target']],
      ['POST', '/api/workflow/start', { prompt: 'x', type: 'people_search' }, ['body', 'type']],
      ['POST', '/api/workflow/start', { prompt: 'x', threadId: 'not-a-uuid' }, ['body', 'threadId']],
      ['POST', '/api/workflow/start', { prompt: 'x', serviceId: 'has spaces' }, ['body', 'serviceId']],
      ['POST', '/api/workflow/start', { prompt: 'x', additional_criteria: [{ value: 'no name' }] }, ['body', 'additional_criteria', 0, 'name']],
      ['POST', '/api/workflow/start', { prompt: 'x', additional_criteria: [{ name: 'a', type: 'must' }] }, ['body', 'additional_criteria', 0, 'type']],
      ['POST', '/api/workflow/start', { prompt: 'x', additional_criteria: Array.from({ length: 31 }, (_, i) => ({ name: `c${i}` })) }, ['body', 'additional_criteria']],
      ['POST', '/api/workflow/start', { prompt: 'x'.repeat(4001) }, ['body', 'prompt']],
      ['POST', '/api/workflow/people/start', { prompt: 'x', type: 'list_builder' }, ['body', 'type']],
      ['POST', '/api/workflow/continue', { total_target: 5 }, ['body', 'thread_id']],
      ['POST', '/api/workflow/continue', { thread_id: 'x', total_target: 'many' }, ['body', 'total_target']],
      ['POST', '/api/workflow/people/continue', { thread_id: 'x', current_criteria: 'industry' }, ['body', 'current_criteria']],
      ['POST', '/api/workflow/remove-criteria', { thread_id: 'x' }, ['body', 'column_name']],
      ['POST', '/api/workflow/people/remove-criteria', { column_name: 'x' }, ['body', 'thread_id']],
      ['GET', `/api/workflow/status/${'x'.repeat(513)}`, undefined, ['path', 'thread_id']],
      ['GET', '/api/workflow/threads?limit=0', undefined, ['query', 'limit']],
      ['GET', '/api/workflow/threads?limit=1e1', undefined, ['query', 'limit']],
      ['GET', '/api/seed/status?seed_type=places', undefined, ['query', 'seed_type']],
      ['DELETE', '/api/seed/status?clear_all=maybe', undefined, ['query', 'clear_all']],
    ];
    for (const [method, path, body, loc] of cases) {
      const r = await s.call(method, path, auth(a), body);
      expect([path, r.status]).toEqual([path, 422]);
      expect(r.json.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, msg: expect.any(String), type: expect.any(String) })]));
    }
    // Spec 3 names two seed start routes; any other seed type is no route at all.
    expect((await s.call('POST', '/api/seed/start/places', auth(a))).status).toBe(404);
    // An unknown or foreign thread is 404, not 422.
    expect((await s.call('POST', '/api/workflow/continue', auth(a), { thread_id: 'x', total_target: 5 })).status).toBe(404);
    // A read-only key may read, never start.
    const ro = await s.key(a.tenantId, { scopes: { access: 'read' } });
    expect((await s.call('GET', '/api/workflow/threads', { authorization: `Bearer ${ro}` })).status).toBe(200);
    expect((await s.call('POST', '/api/workflow/people/start', { authorization: `Bearer ${ro}` }, { prompt: 'Find CTOs' })).status).toBe(403);
  });

  it('seeds company lists: every prompt started, its list stored and continued; a second start skips them all', async () => {
    const first = await s.call('POST', '/api/seed/start/company', auth(a));
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ success: true, total_prompts: 5, successful: 5, failed: 0, skipped: 0, status: 'completed' });
    expect(first.json.results.map((r: Json) => r.index)).toEqual([0, 1, 2, 3, 4]);
    for (const r of first.json.results as Json[]) {
      expect(Object.keys(r).sort()).toEqual(['current_status', 'index', 'list_id', 'prompt_id', 'reason', 'status']);
      expect(r).toMatchObject({ status: 'completed', list_id: expect.stringMatching(/^[0-9a-f-]{36}$/), current_status: 'continuing' });
    }
    // Each list is a real list of a workflow that was started then continued.
    const statuses = await s.call('GET', '/api/seed/status?seed_type=company', auth(a));
    expect(statuses.status).toBe(200);
    expect(statuses.json).toMatchObject({ success: true, count: 5, summary: { total: 5, pending: 0, processing: 0, list_created: 0, people_workflow_started: 0, completed: 5, failed: 0, skipped: 0 } });
    for (const item of statuses.json.statuses as Json[]) {
      const w = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ list_id: string; status: string }>(`SELECT list_id::text AS list_id, status FROM agents.workflows WHERE thread_id = $1`, [item.thread_id]));
      expect(w.rows[0]).toEqual({ list_id: item.list_id, status: 'continuing' });
      const types = (await eventSeqs(s, a.tenantId, item.thread_id)).length;
      expect(types).toBe(2);
    }
    const second = await s.call('POST', '/api/seed/start/company', auth(a));
    expect(second.json).toMatchObject({ success: true, total_prompts: 5, successful: 0, failed: 0, skipped: 5 });
    expect(second.json.results.map((r: Json) => [r.status, r.reason, r.list_id])).toEqual(first.json.results.map((r: Json) => ['skipped', 'already completed', r.list_id]));
    // No workflow was started twice.
    const n = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM agents.workflows WHERE state->>'workflow_type' = 'predefined_agent'`));
    expect(Number(n.rows[0]!.n)).toBe(5);
    // Another tenant's seed is its own.
    expect((await s.call('GET', '/api/seed/status', auth(b))).json).toMatchObject({ count: 0, summary: { total: 0 } });
  });

  it('seeds people lists, reports statuses by type, and clears completed or all statuses', async () => {
    const people = await s.call('POST', '/api/seed/start/people', auth(a));
    expect(people.json).toMatchObject({ success: true, total_prompts: 5, successful: 5, skipped: 0 });
    const all = await s.call('GET', '/api/seed/status', auth(a));
    expect(all.json.count).toBe(10);
    expect(all.json.summary).toMatchObject({ total: 10, completed: 10 });
    const kinds = await s.db.withTenant(a.tenantId, (sql) =>
      sql.query<{ kind: string; n: string }>(`SELECT kind, count(*) AS n FROM agents.workflows WHERE state->>'workflow_type' IN ('predefined_agent', 'people_search') AND prompt LIKE 'Find %' AND thread_id IN (SELECT thread_id FROM agents.seed_statuses) GROUP BY kind ORDER BY kind`),
    );
    expect(kinds.rows.map((r) => [r.kind, Number(r.n)])).toEqual([['company_search', 5], ['people_search', 5]]);

    // A failed item (marked so here) is tried again; the others are skipped.
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE agents.seed_statuses SET status = 'failed', reason = 'test' WHERE seed_type = 'people' AND prompt_id = 'people-recruiters-paris'`));
    const retry = await s.call('POST', '/api/seed/start/people', auth(a));
    expect(retry.json).toMatchObject({ successful: 1, skipped: 4, failed: 0 });
    expect(retry.json.results[4]).toMatchObject({ prompt_id: 'people-recruiters-paris', status: 'completed' });

    // An item a start left at people_workflow_started: in that start's hands while fresh (skipped), resumed at the
    // continue once untouched for 10 minutes (its process stopped) — its workflow is not started again.
    const cto = "seed_type = 'people' AND prompt_id = 'people-cto-fintech-berlin'";
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE agents.seed_statuses SET status = 'people_workflow_started' WHERE ${cto}`));
    const busy = await s.call('POST', '/api/seed/start/people', auth(a));
    expect(busy.json).toMatchObject({ successful: 0, skipped: 5 });
    expect(busy.json.results[0]).toMatchObject({ status: 'skipped', reason: 'another seed start is processing it', list_id: people.json.results[0].list_id, current_status: 'continuing' });
    const countWorkflows = async () => Number((await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM agents.workflows`))).rows[0]!.n);
    const workflowsBefore = await countWorkflows();
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE agents.seed_statuses SET updated_at = now() - interval '11 minutes' WHERE ${cto}`));
    const resumed = await s.call('POST', '/api/seed/start/people', auth(a));
    expect(resumed.json).toMatchObject({ successful: 1, skipped: 4 });
    expect(resumed.json.results[0]).toMatchObject({ status: 'completed', list_id: people.json.results[0].list_id });
    expect(await countWorkflows()).toBe(workflowsBefore);

    // Clearing only completed ones by default; one left pending survives.
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE agents.seed_statuses SET status = 'pending' WHERE seed_type = 'company' AND prompt_id = 'company-fintech-berlin'`));
    const cleared = await s.call('DELETE', '/api/seed/status?seed_type=company', auth(a));
    expect(cleared.status).toBe(200);
    expect(cleared.json).toMatchObject({ success: true, deleted_count: 4, cleared_type: 'company' });
    expect(cleared.json.deleted_keys).toEqual(['company:company-cybersecurity-europe', 'company:company-ecommerce-paris', 'company:company-healthcare-germany', 'company:company-saas-london']);
    expect((await s.call('GET', '/api/seed/status?seed_type=company', auth(a))).json).toMatchObject({ count: 1, summary: { total: 1, pending: 1 } });
    expect((await s.call('GET', '/api/seed/status?seed_type=people', auth(a))).json.count).toBe(5);
    const everything = await s.call('DELETE', '/api/seed/status?clear_all=true', auth(a));
    expect(everything.json).toMatchObject({ deleted_count: 6, cleared_type: 'all' });
    expect((await s.call('GET', '/api/seed/status', auth(a))).json).toMatchObject({ count: 0 });
    // Cleared prompts are seeded again by the next start.
    const reseed = await s.call('POST', '/api/seed/start/company', auth(a));
    expect(reseed.json).toMatchObject({ successful: 5, skipped: 0 });
  });

  it('gives each prompt to one of two seed starts running at once: five workflows, never ten', async () => {
    const c = await s.tenant();
    const [x, y] = await Promise.all([s.call('POST', '/api/seed/start/company', auth(c)), s.call('POST', '/api/seed/start/company', auth(c))]);
    expect([x.status, y.status]).toEqual([200, 200]);
    expect(x.json.successful + y.json.successful).toBe(5);
    expect(x.json.skipped + y.json.skipped).toBe(5);
    expect(x.json.failed + y.json.failed).toBe(0);
    const n = await s.db.withTenant(c.tenantId, (sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM agents.workflows`));
    expect(Number(n.rows[0]!.n)).toBe(5);
    expect((await s.call('GET', '/api/seed/status', auth(c))).json.summary).toMatchObject({ total: 5, completed: 5 });
  });

  it('serves at most maxOpenStreams streams at once (503 beyond), a quarter of them to one tenant (429 beyond), and a client that leaves gives its slot back', async () => {
    // Four tenants, each with a running workflow; each tenant's clients wait on it (they resume after its one event).
    const tenants = [a, b, await s.tenant(), await s.tenant()];
    const threads = await Promise.all(tenants.map(async (t) => (await s.call('POST', '/api/workflow/people/start', auth(t), { prompt: 'Find CTOs in Berlin' })).json as unknown as string));
    let open = 0;
    let leave = false;
    const follow = (i: number) => {
      let counted = false;
      return readStream(s, 'GET', `/api/workflow/stream/${threads[i]}`, { ...auth(tenants[i]!), 'last-event-id': '1' }, undefined, (_frames, comments) => {
        if (comments >= 1 && !counted) {
          counted = true;
          open++;
        }
        return leave;
      });
    };
    // a holds its share (8 / 4 = 2): a third stream of a's is 429, whatever the instance has left.
    const waiting = [follow(0), follow(0)];
    await eventually('a\'s two streams open', async () => open === 2);
    const third = await s.call('GET', `/api/workflow/stream/${threads[0]}`, { ...auth(a), 'last-event-id': '1' });
    expect([third.status, third.headers['retry-after'], third.json]).toEqual([429, '5', { detail: expect.stringMatching(/the most one tenant may hold/) }]);
    // Another tenant is not held back by a's streams; the instance fills up with theirs.
    waiting.push(follow(1), follow(1), follow(2), follow(2), follow(3), follow(3));
    await eventually('eight streams open', async () => open === 8);
    const fifth = await s.tenant();
    const busy = await s.call('GET', `/api/workflow/stream/${threads[1]}`, { ...auth(b), 'last-event-id': '1' });
    expect(busy.status).toBe(429);
    const full = await s.call('GET', '/api/workflow/threads', auth(fifth));
    expect(full.status).toBe(200);
    // A start that would stream is refused before it starts anything: the instance is full.
    expect((await s.call('POST', '/api/workflow/start', auth(fifth), { prompt: 'Find fintech companies' })).status).toBe(503);
    const refused = await s.call('POST', '/api/workflow/start', auth(fifth), { prompt: 'Find fintech companies' });
    expect([refused.status, refused.headers['retry-after'], refused.json]).toEqual([503, '5', { detail: expect.stringMatching(/too many open workflow streams/) }]);
    expect(((await s.call('GET', '/api/workflow/threads', auth(fifth))).json as unknown as Json[]).length).toBe(0);
    // The clients leave; their slots come back (the server notices within a keep-alive interval).
    leave = true;
    const left = await Promise.all(waiting);
    expect(left.map((r) => r.status)).toEqual(Array(8).fill(200));
    await eventually('a\'s two slots free again', async () => {
      const probes = await Promise.all([0, 1].map(() => readStream(s, 'GET', `/api/workflow/stream/${threads[0]}`, { ...auth(a), 'last-event-id': '1' }, undefined, (_f, comments) => comments >= 1, 5_000)));
      return probes.every((p) => p.status === 200);
    }, 10_000, 500);
  });
});

describe('the workflow stream builds live frames from the progress stream and reads the event log only to catch up (Redis, PostgreSQL, through the gateway)', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  const logger = createLogger({ level: 'silent', service: 'agents-test' });

  beforeAll(async () => {
    const streams = new RedisProgressStreams(requireEnv('LORE_TEST_REDIS_URL'), { keyPrefix: `agents-live-${uniqueSuffix()}:` });
    // A long keep-alive: a quiet log read comes only after 4 s, so what the test sees in between is live or a gap's.
    s = await startAgentsStack({ service: { streams, genericWorkflows: { keepaliveMs: 4_000 } } });
    a = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  /** The stack's stream counters: log reads by reason, frames by source. */
  type Counts = Record<'catch_up' | 'gap' | 'quiet' | 'log' | 'stream', number>;
  async function counters(): Promise<Counts> {
    const out: Counts = { catch_up: 0, gap: 0, quiet: 0, log: 0, stream: 0 };
    for (const name of ['lore_agents_stream_log_reads_total', 'lore_agents_stream_frames_total']) {
      const m = s.metrics.getSingleMetric(name) as Counter | undefined;
      for (const v of (await m?.get())?.values ?? []) out[String(v.labels.reason ?? v.labels.source) as keyof Counts] = v.value;
    }
    return out;
  }

  /** Records events in the log (one transaction) and appends to the progress stream only those `publish` picks. */
  async function record(thread: string, events: Array<[string, Record<string, unknown>]>, publish: (seq: number) => boolean): Promise<number[]> {
    const written: WorkflowEvent[] = await s.db.withTenant(a.tenantId, async (sql) => {
      const out: WorkflowEvent[] = [];
      for (const [type, data] of events) out.push(await recordEvent(sql, a.tenantId, thread, type, data));
      return out;
    });
    await publishEvents(s.streams, logger, written.filter((e) => publish(e.seq)));
    return written.map((e) => e.seq);
  }

  /** Opens a stream after `after` and resolves once it has caught up from the log (its catch-up read counted). */
  async function follow(thread: string, after: number, frames: number): Promise<{ read: Promise<StreamRead> }> {
    const before = (await counters()).catch_up;
    const read = readStream(s, 'GET', `/api/workflow/stream/${thread}`, { ...auth(a), 'last-event-id': String(after) }, undefined, (f) => f.length >= frames, 30_000);
    await eventually('the stream to catch up', async () => (await counters()).catch_up > before, 10_000, 20);
    await sleep(200);
    // Wrapped: an async function's answer would otherwise wait for the stream itself.
    return { read };
  }

  it('writes a live follower its frames from the progress-stream entries, without reading the log, the same frames a replay gives', async () => {
    const thread = (await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CTOs of fintech companies in Berlin' })).json as unknown as string;
    const { read: reading } = await follow(thread, 1, 3);
    const before = await counters();
    const seqs = await record(thread, [['criteria_extracted', { criteria: [], total_target: 25 }], ['rows_added', { total: 4, total_target: 25 }], ['rows_added', { total: 9, total_target: 25 }]], () => true);
    expect(seqs).toEqual([2, 3, 4]);
    const live = await reading;
    const after = await counters();
    expect(live.frames.map((f) => f.id)).toEqual(['2', '3', '4']);
    expect(live.frames[2]!.data).toMatchObject({ seq: 4, event: 'rows_added', current_count: 9, current_step: 'data_collection', thread_id: thread });
    expect(after.stream - before.stream).toBe(3);
    expect(after.log - before.log).toBe(0);
    expect(after.catch_up + after.gap + after.quiet).toBe(before.catch_up + before.gap + before.quiet);
    // A client resuming after event 1 now reads the same three from the log: the same frames.
    const replay = await readStream(s, 'GET', `/api/workflow/stream/${thread}`, { ...auth(a), 'last-event-id': '1' }, undefined, (f) => f.length >= 3, 30_000);
    expect(replay.frames).toEqual(live.frames);
    expect((await counters()).log - after.log).toBe(3);
  });

  it('catches a gap up from the log (an entry the progress stream lost), then an event with no entry at all after a quiet period', async () => {
    const thread = (await s.call('POST', '/api/workflow/people/start', auth(a), { prompt: 'Find CFOs of insurers in Munich' })).json as unknown as string;
    const { read: reading } = await follow(thread, 1, 3);
    const before = await counters();
    // Events 2 and 3 in the log; only 3 reaches the progress stream: the follower sees 3 follow 1 and reads 2 from the log.
    await record(thread, [['criteria_extracted', { criteria: [], total_target: 25 }], ['rows_added', { total: 2, total_target: 25 }]], (seq) => seq === 3);
    await eventually('the gap caught up', async () => (await counters()).log >= before.log + 2, 3_000, 20);
    const mid = await counters();
    expect(mid.gap - before.gap).toBe(1);
    expect(mid.log - before.log).toBe(2);
    expect(mid.stream - before.stream).toBe(0);
    // Event 4 reaches the log only: the quiet period's log read delivers it.
    await record(thread, [['stop_requested', {}]], () => false);
    const got = await reading;
    const after = await counters();
    expect(got.frames.map((f) => f.id)).toEqual(['2', '3', '4']);
    expect(got.frames.map((f) => f.data.event)).toEqual(['criteria_extracted', 'rows_added', 'stop_requested']);
    expect(got.frames[2]!.data.status).toBe('stopping');
    expect(after.quiet).toBeGreaterThan(mid.quiet);
    expect(after.log - mid.log).toBe(1);
    expect(got.comments).toBeGreaterThanOrEqual(1);
  });
});
