import { upsertDirectoryRecords, type ListSources } from '@lore/agents';
import { companyKey, generateAgentsWorld, matchingCompanies, matchingPeople, personKey, worldDirectoryRecords, type AgentsWorld } from '../support/agents-world';
import type { TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack, auth, eventually } from './harness';
import { readStream } from './sse-client';

jest.setTimeout(180_000);

type Json = Record<string, any>;



/** The world in a tenant's directory: every company and person as a record. */
async function seedDirectory(s: AgentsStack, tenantId: string, world: AgentsWorld): Promise<void> {
  await upsertDirectoryRecords(s.db, tenantId, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
}

async function finished(s: AgentsStack, t: TenantFixture, path: string, timeoutMs = 60_000): Promise<Json> {
  return eventually(`${path} to end`, async () => {
    const res = await s.call('GET', path, auth(t));
    expect(res.status).toBe(200);
    return ['completed', 'stopped', 'error'].includes(res.json.status as string) ? (res.json as Json) : null;
  }, timeoutMs);
}

const world = generateAgentsWorld(1);

/** Set by a test: the next batch `when` picks waits at its scoring until released (the test acts mid-batch). */
const hold: { next: { when: (candidates: number) => boolean; entered: () => void; released: Promise<void> } | null } = { next: null };
/** Set by a test: the next look-up of a company's people (a contacts enrichment) waits until released. */
const contactsHold: { next: { entered: () => void; released: Promise<void> } | null } = { next: null };
const holdable = (sources: ListSources): ListSources => ({
  ...sources,
  ...(sources.directory
    ? {
        directory: {
          ...sources.directory,
          async search(tenantId, kind, filter, options) {
            const h = contactsHold.next;
            if (h && kind === 'person' && (filter as Record<string, unknown>).company_domain) {
              contactsHold.next = null;
              h.entered();
              await h.released;
            }
            return sources.directory!.search(tenantId, kind, filter, options);
          },
        },
      }
    : {}),
  scorer: {
    async score(tenantId, kind, candidates, criteria) {
      const h = hold.next;
      if (h?.when(candidates.length)) {
        hold.next = null;
        h.entered();
        await h.released;
      }
      return sources.scorer.score(tenantId, kind, candidates, criteria);
    },
  },
});

describe('company and people search workflows through the gateway (worker on real Kafka, streams on real Redis)', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    s = await startAgentsStack({ worker: { settings: { heartbeatMs: 200, leaseMs: 3_000, stopPollMs: 100, batchRows: 3 }, sources: holdable } });
    a = await s.tenant();
    b = await s.tenant();
    await seedDirectory(s, a.tenantId, world);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  it('builds a company list to completed: every row meets the prompt, every completed cell names its source', async () => {
    const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin', employeesMin: 51 }).map(companyKey);
    expect(truth.length).toBeGreaterThanOrEqual(3);
    expect(truth.length).toBeLessThan(matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' }).length);
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find fintech companies in Berlin with more than 50 employees', list_name: 'Berlin fintech', list_description: 'for the test' });
    expect(start.status).toBe(200);
    expect(start.json).toEqual({ success: true, message: expect.any(String), thread_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'processing' });
    const thread = start.json.thread_id as string;

    const snap = await finished(s, a, `/company-search/status/${thread}`);
    expect(snap).toMatchObject({ success: true, thread_id: thread, status: 'completed', current_step: 'completed', category: 'company_search', error_message: '', total_target: 25, title: 'Berlin fintech', description: 'for the test' });
    // Spec 3's fields, and Lore's `status` and `credits_used` (docs/agents.md, "Credits": a row costs a credit here).
    expect(Object.keys(snap).sort()).toEqual(
      ['all_companies', 'category', 'credits_used', 'criteria', 'current_step', 'description', 'error_message', 'goal', 'processed_companies', 'status', 'step_companies', 'success', 'table_structure', 'thread_id', 'title', 'total_target'].sort(),
    );
    expect(snap.credits_used).toBe(truth.length);
    expect(snap.criteria.map((c: Json) => c.column_name)).toEqual(expect.arrayContaining(['industry', 'location', 'employees']));
    for (const c of snap.criteria) expect(Object.keys(c).sort()).toEqual(['columnType', 'column_name', 'description', 'maxWidth', 'minWidth', 'name', 'type', 'value', 'width']);
    const table = snap.table_structure;
    expect(table.sources).toEqual(['directory']);
    expect(table.notes.join(' ')).toMatch(/no web search provider/);
    // The directory holds every matching company: all of them, nothing else.
    const keys = snap.all_companies.map((r: Json) => r.entity_key);
    expect(new Set(keys)).toEqual(new Set(truth));
    expect(table.current_count).toBe(truth.length);
    expect(table.rows).toHaveLength(truth.length);
    expect(snap.processed_companies.sort()).toEqual([...truth].sort());
    for (const row of table.rows) {
      expect(Object.keys(row).sort()).toEqual(['cells', 'id', 'metadata', 'step_source']);
      for (const cell of Object.values(row.cells) as Json[]) {
        expect(cell.row_id).toBe(row.id);
        expect(cell.status).not.toBe('pending');
        if (cell.status === 'completed') {
          expect(cell.metadata.source_url).toMatch(/^(https?:\/\/|directory:)/);
          expect(typeof cell.metadata.fetched_at).toBe('string');
        } else {
          expect(cell.status).toBe('error');
          expect(cell.metadata.reason).toEqual(expect.any(String));
        }
      }
      expect(row.cells.name.status).toBe('completed');
      expect(row.cells.industry).toMatchObject({ status: 'completed', value: 'Fintech' });
      // The size criterion's cell is filled by the enrichment step from the record's field, quoted as evidence.
      expect(row.cells.employees).toMatchObject({ status: 'completed', metadata: { met: true, snippet: expect.stringMatching(/^employees: \d+/) } });
      expect(Number(row.cells.employees.value)).toBeGreaterThan(50);
    }
    const columnIds = table.columns.map((c: Json) => c.id);
    expect(columnIds).toEqual(expect.arrayContaining(['name', 'domain', 'industry', 'location', 'employees']));

    // The event log and the progress stream hold the run; the list is saved.
    const events = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ type: string }>(`SELECT type FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [thread]));
    const types = events.rows.map((r) => r.type);
    expect(types[0]).toBe('started');
    expect(types.filter((t) => t === 'criteria_extracted')).toHaveLength(1);
    expect(types).toEqual(expect.arrayContaining(['rows_added', 'rows_enriched']));
    expect(types[types.length - 1]).toBe('completed');
    const stream = await s.call('GET', `/api/stream/stream-status/workflow:${thread}`, auth(a));
    expect(stream.status).toBe(200);
    expect(stream.json).toEqual({ stream_key: `workflow:${thread}`, active: false, length: types.length, first_entry_id: expect.stringMatching(/^\d+-\d+$/), last_entry_id: expect.stringMatching(/^\d+-\d+$/), age_seconds: expect.any(Number) });
    const active = await s.call('GET', '/api/stream/active-streams', auth(a));
    expect(active.status).toBe(200);
    expect((active.json as unknown as string).split(',')).toContain(`workflow:${thread}`);

    const lists = await s.call('GET', '/company-search/getLists?limit=10', auth(a));
    expect(lists.status).toBe(200);
    const item = (lists.json.data as Json[]).find((l) => l.listLinkID === thread);
    expect(item).toMatchObject({ listName: 'Berlin fintech', listDescription: 'for the test', listStatus: 'completed', listType: 'company_search', noOfRecords: truth.length, type: 'company', author: 0 });
    expect(Number.isNaN(Date.parse(item!.createdAt))).toBe(false);
    const result = await s.call('GET', `/company-search/getSearchResult/${thread}`, auth(a));
    expect(result.status).toBe(200);
    expect(result.json).toMatchObject({ success: true, thread_id: thread, list_id: item!.id, list_type: 'company_search', status: 'completed', total: truth.length });
    expect(new Set((result.json.data as Json[]).map((r) => r.domain))).toEqual(new Set(truth));

    const metrics = await s.metrics.metrics();
    expect(metrics).toMatch(/lore_agents_workflows_total\{kind="company_search",status="completed"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/lore_agents_step_duration_seconds_count\{[^}]*kind="company_search",step="data_collection"[^}]*\} [1-9]/);
  });

  it('sets the first target from a count in the prompt, continues to a larger one without duplicates, and refuses a target not above the rows found', async () => {
    const germany = matchingCompanies(world, { country: 'DE' }).map(companyKey);
    expect(germany.length).toBeGreaterThan(8);
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find 4 companies in Germany' });
    const thread = start.json.thread_id as string;
    const first = await finished(s, a, `/company-search/status/${thread}`);
    expect(first).toMatchObject({ status: 'completed', total_target: 4 });
    expect(first.table_structure.rows).toHaveLength(4);

    const same = await s.call('POST', '/company-search/continue', auth(a), { thread_id: thread, total_target: 4 });
    expect(same.status).toBe(422);
    expect(same.json).toEqual({ status_code: 422, message: 'total_target must exceed the 4 rows already found', errors: [], data: null });

    const more = await s.call('POST', '/company-search/continue', auth(a), { thread_id: thread, total_target: 7 });
    expect(more.status).toBe(200);
    expect(more.json).toEqual({ success: true, thread_id: thread, status: 'continuing' });
    const second = await eventually('the continued run', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.status === 'completed' && r.json.total_target === 7 ? (r.json as Json) : null;
    });
    const keys = second.all_companies.map((r: Json) => r.entity_key as string);
    expect(keys).toHaveLength(7);
    expect(new Set(keys).size).toBe(7);
    for (const k of keys) expect(germany).toContain(k);
    // The first run's rows are kept, in their places.
    expect(keys.slice(0, 4)).toEqual(first.all_companies.map((r: Json) => r.entity_key));

    // Beyond what the directory holds: every German company once, none skipped by an earlier run, and a note saying
    // the sources ran dry.
    const all = await s.call('POST', '/company-search/continue', auth(a), { thread_id: thread, total_target: germany.length + 3 });
    expect(all.status).toBe(200);
    const third = await eventually('the run to exhaust its sources', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.status === 'completed' && r.json.total_target === germany.length + 3 ? (r.json as Json) : null;
    });
    const everyKey = third.all_companies.map((r: Json) => r.entity_key as string);
    expect(everyKey).toHaveLength(germany.length);
    expect(new Set(everyKey)).toEqual(new Set(germany));
    expect(everyKey.slice(0, 7)).toEqual(keys);
    expect(third.table_structure.notes).toContain(`sources exhausted: ${germany.length} of ${germany.length + 3} rows found`);
  });

  it('takes a continue that changes the criteria while a continued run is mid-batch: the run reads the sources again for the new criteria', async () => {
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find fintech companies in Berlin' });
    const thread = start.json.thread_id as string;
    const first = await finished(s, a, `/company-search/status/${thread}`);
    const found = first.table_structure.rows.length as number;
    expect(found).toBeGreaterThan(0);
    // A continue whose run is held in the batch that finds its sources dry (read, not yet written)...
    let entered!: () => void;
    let release!: () => void;
    const inBatch = new Promise<void>((r) => (entered = r));
    hold.next = { when: (candidates) => candidates === 0, entered, released: new Promise<void>((r) => (release = r)) };
    expect((await s.call('POST', '/company-search/continue', auth(a), { thread_id: thread, total_target: found + 1 })).status).toBe(200);
    await inBatch;
    // ...then another continue with other criteria, answered (its first frame) while that batch is still held.
    const saas = matchingCompanies(world, { industry: 'SaaS' }).map(companyKey);
    const criteria = [{ name: 'Industry', value: 'SaaS', column_name: 'industry' }, { name: 'Location', value: 'Paris, France', column_name: 'location' }];
    const second = await readStream(s, 'POST', '/api/workflow/continue', auth(a), { thread_id: thread, total_target: found + 10, current_criteria: criteria }, (frames) => frames.length > 0);
    expect(second.status).toBe(200);
    release();
    const done = await eventually('the run with the new criteria', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.status === 'completed' && r.json.total_target === found + 10 ? (r.json as Json) : null;
    });
    // The held batch, judged for the old pass, was dropped: the run read its sources again for SaaS in Paris.
    const added = (done.all_companies as Json[]).slice(found).map((r) => r.entity_key as string);
    expect(added.length).toBeGreaterThan(0);
    for (const k of added) expect(saas).toContain(k);
    expect(done.table_structure.notes.some((n: string) => n.startsWith('sources exhausted') && n.includes(`${found} of`))).toBe(false);
  });

  it('fills a column asked for while an enrichment batch runs: the run goes back for it instead of completing with it pending', async () => {
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find 3 robotics companies in Munich' });
    const thread = start.json.thread_id as string;
    await finished(s, a, `/company-search/status/${thread}`);
    let entered!: () => void;
    let release!: () => void;
    const inBatch = new Promise<void>((r) => (entered = r));
    contactsHold.next = { entered, released: new Promise<void>((r) => (release = r)) };
    expect((await s.call('POST', '/company-search/start-enrichment', auth(a), { thread_id: thread, column_name: 'Key contacts', enrichment_type: 'contacts' })).status).toBe(200);
    // The batch that fills every row's contacts (the last batch) is running...
    await inBatch;
    // ...when another column is asked for.
    expect((await s.call('POST', '/company-search/start-enrichment', auth(a), { thread_id: thread, column_name: 'Website' })).status).toBe(200);
    release();
    const done = await eventually('both columns filled', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      const filled = r.json.table_structure.rows.every((row: Json) => row.cells.enrich_website?.status === 'completed' && row.cells.enrich_key_contacts?.status === 'completed');
      return r.json.status === 'completed' && filled ? (r.json as Json) : null;
    }, 30_000);
    expect(done.table_structure.rows.length).toBeGreaterThan(0);
  });

  it('builds a people list to completed, judging each person by their employer too', async () => {
    const truth = matchingPeople(world, { title: 'Chief Executive Officer', company: { industry: 'Fintech' } }).map((p) => personKey(p));
    expect(truth.length).toBeGreaterThan(3);
    const start = await s.call('POST', '/people-search/start', auth(a), { prompt: 'Find 3 CEOs of fintech companies', search_mode: 'fast' });
    expect(start.status).toBe(200);
    expect(start.json.status).toBe('processing');
    const thread = start.json.thread_id as string;
    const snap = await finished(s, a, `/people-search/status/${thread}`);
    expect(snap).toMatchObject({ status: 'completed', current_step: 'completed', category: 'people_search', total_target: 3 });
    // Unnamed, the list takes the criteria's title.
    expect(snap.title).toMatch(/CEO/);
    expect(snap.title).not.toBe('Find 3 CEOs of fintech companies');
    const keys = snap.all_companies.map((r: Json) => r.entity_key as string);
    expect(keys).toHaveLength(3);
    for (const k of keys) expect(truth).toContain(k);
    for (const row of snap.table_structure.rows) expect(row.cells.title).toMatchObject({ status: 'completed', value: 'Chief Executive Officer' });
    // People results are read through the company-search routes; the company status route does not show a people search.
    expect((await s.call('GET', `/company-search/getSearchResult/${thread}`, auth(a))).json).toMatchObject({ list_type: 'people_search', total: 3 });
    expect((await s.call('GET', `/company-search/status/${thread}`, auth(a))).status).toBe(404);
  });

  it('fills an enrichment column: contacts from the directory, each with its source', async () => {
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find 3 robotics companies in Munich' });
    const thread = start.json.thread_id as string;
    await finished(s, a, `/company-search/status/${thread}`);
    const enrich = await s.call('POST', '/company-search/start-enrichment', auth(a), { thread_id: thread, column_name: 'Key contacts', enrichment_type: 'contacts' });
    expect(enrich.status).toBe(200);
    expect(enrich.json).toEqual({ success: true, thread_id: thread, column_id: 'enrich_key_contacts', column_name: 'Key contacts', enrichment_type: 'contacts', status: 'processing', message: expect.any(String) });
    const snap = await eventually('the enrichment', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.status === 'completed' && r.json.table_structure.rows.every((row: Json) => row.cells.enrich_key_contacts?.status !== 'pending') ? (r.json as Json) : null;
    });
    expect(snap.table_structure.columns.map((c: Json) => c.id)).toContain('enrich_key_contacts');
    for (const row of snap.table_structure.rows) {
      const cell = row.cells.enrich_key_contacts;
      expect(cell).toMatchObject({ status: 'completed', metadata: { source: 'directory', source_url: expect.stringMatching(/^directory:/) } });
      expect(cell.value).toMatch(/Chief Executive Officer/);
    }
    const bad = await s.call('POST', '/company-search/start-enrichment', auth(a), { thread_id: thread, column_name: 'Odd', enrichment_type: 'telepathy' });
    expect(bad.status).toBe(422);
    expect(bad.json).toEqual({ status_code: 422, message: 'enrichment_type must be custom or contacts', errors: [], data: null });
    // Only what spec 3's people route names (thread and column): a custom column filled by its own name.
    const byName = await s.call('POST', '/company-search/start-enrichment', auth(a), { thread_id: thread, column_name: 'Website' });
    expect([byName.status, byName.json.enrichment_type, byName.json.column_id]).toEqual([200, 'custom', 'enrich_website']);
    const named = await eventually('the column filled by its name', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.table_structure.rows.every((row: Json) => row.cells.enrich_website?.status === 'completed') ? (r.json as Json) : null;
    });
    for (const row of named.table_structure.rows) expect(row.cells.enrich_website.value).toMatch(/^https?:\/\//);
    const stopE = await s.call('POST', `/company-search/stop-enrichment/${thread}`, auth(a));
    expect(stopE.status).toBe(200);
    expect(stopE.json).toMatchObject({ success: true, thread_id: thread, status: 'stopped' });
  });

  it("answers 404 for another tenant's workflow, result, stop and stream, and lists none of its lists or streams", async () => {
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find 2 cybersecurity companies in London' });
    const thread = start.json.thread_id as string;
    await finished(s, a, `/company-search/status/${thread}`);
    for (const [method, path] of [
      ['GET', `/company-search/status/${thread}`],
      ['GET', `/company-search/getSearchResult/${thread}`],
      ['POST', `/company-search/stop/${thread}`],
      ['POST', `/company-search/stop-enrichment/${thread}`],
    ] as const) {
      const res = await s.call(method, path, auth(b));
      expect(res.status).toBe(404);
      expect(res.json).toEqual({ status_code: 404, message: 'workflow not found', errors: [], data: null });
    }
    const cont = await s.call('POST', '/company-search/continue', auth(b), { thread_id: thread, total_target: 50 });
    expect(cont.status).toBe(404);
    const stream = await s.call('GET', `/api/stream/stream-status/workflow:${thread}`, auth(b));
    expect(stream.status).toBe(404);
    expect(stream.json).toEqual({ detail: 'stream not found' });
    expect((await s.call('GET', `/api/stream/stream-status/workflow:${thread}`, auth(a))).status).toBe(200);
    const active = await s.call('GET', '/api/stream/active-streams', auth(b));
    expect(active.status).toBe(200);
    expect(active.json).toBe('');
    const lists = await s.call('GET', '/company-search/getLists', auth(b));
    expect(lists.json).toEqual({ success: true, data: [], total: 0 });
    // A stream key that is not a workflow's, or a thread id that is not one, is simply not found.
    expect((await s.call('GET', '/api/stream/stream-status/agents:whatever', auth(a))).status).toBe(404);
    expect((await s.call('GET', '/company-search/status/not-a-thread', auth(a))).status).toBe(404);
  });

  it("keeps a signed-in member's searches to that member (and the tenant's administrators)", async () => {
    const alice = await s.user(a.tenantId, 'member');
    const bob = await s.user(a.tenantId, 'member');
    const admin = await s.user(a.tenantId, 'admin');
    const as = (u: { token: string }) => ({ authorization: `Bearer ${u.token}` });
    const start = await s.call('POST', '/company-search/start', as(alice), { prompt: 'Find 2 healthcare companies in New York', list_name: 'Alice NY' });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    await eventually('alice\'s search', async () => (await s.call('GET', `/company-search/status/${thread}`, as(alice))).json.status === 'completed');
    expect((await s.call('GET', `/company-search/status/${thread}`, as(bob))).status).toBe(404);
    expect((await s.call('POST', `/company-search/stop/${thread}`, as(bob))).status).toBe(404);
    expect((await s.call('GET', `/api/stream/stream-status/workflow:${thread}`, as(bob))).status).toBe(404);
    expect((await s.call('GET', '/api/stream/active-streams', as(bob))).json).toBe('');
    expect((await s.call('GET', '/api/stream/active-streams', as(alice))).json).toBe(`workflow:${thread}`);
    expect(((await s.call('GET', '/company-search/getLists', as(bob))).json.data as Json[]).map((l) => l.listLinkID)).not.toContain(thread);
    const mine = (await s.call('GET', '/company-search/getLists', as(alice))).json;
    expect(mine).toMatchObject({ total: 1, data: [{ listLinkID: thread, listName: 'Alice NY', author: expect.any(Number) }] });
    // The tenant's administrator (a session) and its keys see it.
    expect((await s.call('GET', `/company-search/status/${thread}`, as(admin))).status).toBe(200);
    expect((await s.call('GET', `/company-search/status/${thread}`, auth(a))).status).toBe(200);
    expect(((await s.call('GET', '/api/stream/active-streams', as(admin))).json as string).split(',')).toContain(`workflow:${thread}`);
  });

  it('starts searches whose prompt puts an emoji where their title or searches are cut, and stores them whole', async () => {
    // The list's title is the prompt's first 79 UTF-16 units: unit 79 is the first half of the emoji.
    const prompt = `${'x'.repeat(78)}😀 fintech companies in Berlin`;
    for (const path of ['/company-search/start', '/people-search/start']) {
      // Until 2026-11-30 the title kept the emoji's first half, which jsonb refused: 500, nothing started.
      const r = await s.call('POST', path, auth(a), { prompt });
      expect([path, r.status]).toEqual([path, 200]);
      const status = await s.call('GET', `${path.replace('/start', '/status')}/${r.json.thread_id as string}`, auth(a));
      expect(status.status).toBe(200);
      await s.call('POST', `${path.replace('/start', '/stop')}/${r.json.thread_id as string}`, auth(a));
    }
  });

  it('answers every bad input with 422 body (a) naming the field, and refusals as a whole with body (b)', async () => {
    const cases: Array<[string, string, unknown, Array<{ field: string; type: string }>]> = [
      ['POST', '/company-search/start', {}, [{ field: 'body.prompt', type: 'missing' }]],
      ['POST', '/company-search/start', { prompt: '   ' }, [{ field: 'body.prompt', type: 'value_error' }]],
      ['POST', '/company-search/start', { prompt: 'x'.repeat(4001) }, [{ field: 'body.prompt', type: 'value_error' }]],
      ['POST', '/company-search/start', { prompt: 'ok', list_name: 7 }, [{ field: 'body.list_name', type: 'value_error' }]],
      ['POST', '/people-search/start', { prompt: 42 }, [{ field: 'body.prompt', type: 'value_error' }]],
      ['POST', '/company-search/continue', { thread_id: 'x' }, [{ field: 'body.total_target', type: 'missing' }]],
      ['POST', '/company-search/continue', { thread_id: 'x', total_target: 0 }, [{ field: 'body.total_target', type: 'value_error' }]],
      ['POST', '/company-search/continue', { thread_id: 'x', total_target: 1001 }, [{ field: 'body.total_target', type: 'value_error' }]],
      ['POST', '/company-search/continue', { thread_id: 'x', total_target: 2.5 }, [{ field: 'body.total_target', type: 'value_error' }]],
      ['POST', '/people-search/continue', { total_target: 5 }, [{ field: 'body.thread_id', type: 'missing' }]],
      ['POST', '/company-search/start-enrichment', { thread_id: 'x' }, [{ field: 'body.column_name', type: 'missing' }]],
      ['POST', `/company-search/stop-enrichment/${'x'.repeat(513)}`, undefined, [{ field: 'path.thread_id', type: 'value_error' }]],
      ['GET', '/company-search/getLists?limit=0', undefined, [{ field: 'query.limit', type: 'value_error' }]],
      ['GET', '/company-search/getLists?offset=-1', undefined, [{ field: 'query.offset', type: 'value_error' }]],
      // Decimal digits only: Number() would have read 1e1 as 10 and 0x10 as 16.
      ['GET', '/company-search/getLists?limit=1e1', undefined, [{ field: 'query.limit', type: 'value_error' }]],
      ['GET', '/company-search/getLists?offset=0x10', undefined, [{ field: 'query.offset', type: 'value_error' }]],
    ];
    for (const [method, path, body, errors] of cases) {
      const res = await s.call(method, path, auth(a), body);
      expect({ path, body, status: res.status }).toEqual({ path, body, status: 422 });
      expect(res.json).toEqual({ status_code: 422, message: 'validation failed', errors: errors.map((e) => ({ ...e, message: expect.any(String) })), data: null });
    }
    // A read-only key may look, never start.
    const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
    const refused = await s.call('POST', '/company-search/start', { authorization: `Bearer ${readOnly}` }, { prompt: 'Find fintech companies' });
    expect(refused.status).toBe(403);
    expect((await s.call('GET', '/company-search/getLists', { authorization: `Bearer ${readOnly}` })).status).toBe(200);
  });
});

describe('stopping a running search', () => {
  let s: AgentsStack;
  let a: TenantFixture;

  beforeAll(async () => {
    // A wall-time budget far away, rows written one at a time, and a slow directory read: the run is long enough to
    // be stopped in the middle.
    s = await startAgentsStack({ worker: { settings: { heartbeatMs: 200, leaseMs: 3_000, stopPollMs: 100, batchRows: 1 } } });
    a = await s.tenant();
    await seedDirectory(s, a.tenantId, generateAgentsWorld(2, { companies: 400 }));
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  it('honours stop within a second: the workflow ends stopped, its list keeps the rows written', async () => {
    // A size criterion gives every row a cell the enrichment step fills, one row per checkpoint.
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find 400 companies with more than 10 employees' });
    const thread = start.json.thread_id as string;
    await eventually('rows to be written', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.table_structure.current_count > 0 && r.json.status === 'processing';
    }, 60_000, 20);
    const asked = Date.now();
    const stop = await s.call('POST', `/company-search/stop/${thread}`, auth(a));
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({ success: true, thread_id: thread, status: 'stopping', message: expect.any(String) });
    const snap = await eventually('the stop', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.status === 'stopped' ? (r.json as Json) : null;
    }, 5_000, 20);
    expect(Date.now() - asked).toBeLessThan(1_000);
    expect(snap.table_structure.current_count).toBeLessThan(400);
    // A stopped workflow stays stopped: stop again answers its status.
    const again = await s.call('POST', `/company-search/stop/${thread}`, auth(a));
    expect(again.json).toMatchObject({ status: 'stopped' });
  });

  it('stops a workflow no worker holds: the next worker to take its message marks it stopped', async () => {
    await s.worker!.stop();
    try {
      const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find 3 companies' });
      const thread = start.json.thread_id as string;
      const stop = await s.call('POST', `/company-search/stop/${thread}`, auth(a));
      expect(stop.json.status).toBe('stopping');
      expect((await s.call('GET', `/company-search/status/${thread}`, auth(a))).json.status).toBe('stopping');
      await s.worker!.start();
      await eventually('the stop', async () => (await s.call('GET', `/company-search/status/${thread}`, auth(a))).json.status === 'stopped', 30_000);
    } finally {
      await s.worker!.start();
    }
  });
});

describe('one worker, several tenants', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;
  // Tenant a's runs with "held" in their prompt wait at their criteria until released: long runs that hold slots.
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const planning = new Set<string>();

  beforeAll(async () => {
    s = await startAgentsStack({
      worker: {
        maxRunning: 3,
        settings: { heartbeatMs: 200, leaseMs: 3_000, stopPollMs: 100 },
        sources: (sources) => ({
          ...sources,
          planner: {
            async plan(prompt, kind, signal) {
              if (prompt.includes('held')) {
                planning.add(prompt);
                await Promise.race([released, new Promise((r) => signal.addEventListener('abort', r, { once: true }))]);
                planning.delete(prompt);
              }
              return sources.planner.plan(prompt, kind, signal);
            },
          },
        }),
      },
    });
    a = await s.tenant();
    b = await s.tenant();
    await seedDirectory(s, a.tenantId, world);
    await seedDirectory(s, b.tenantId, world);
  }, 120_000);
  afterAll(async () => {
    release();
    await s?.close();
  });

  it('keeps a slot for another tenant, and ends a stopped workflow that was waiting for a slot at once', async () => {
    // a fills the worker: six long runs for three slots.
    const held: string[] = [];
    for (let i = 0; i < 6; i++) held.push((await s.call('POST', '/company-search/start', auth(a), { prompt: `Find 3 companies, held ${i}` })).json.thread_id as string);
    // a runs at most two of them (all the slots but one)...
    await eventually('two of a\'s runs at their criteria', async () => planning.size === 2, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(planning.size).toBe(2);
    expect(s.worker!.running()).toBe(2);
    // ...so b's search runs at once, to the end, while a's wait.
    const bStart = await s.call('POST', '/company-search/start', auth(b), { prompt: 'Find 3 fintech companies in Berlin' });
    const bDone = await finished(s, b, `/company-search/status/${bStart.json.thread_id}`, 20_000);
    expect(bDone.status).toBe('completed');
    // A waiting workflow of a's, stopped, ends at once: its stop does not wait for a slot.
    const waiting = held[5]!;
    expect((await s.call('GET', `/company-search/status/${waiting}`, auth(a))).json.status).toBe('processing');
    expect((await s.call('POST', `/company-search/stop/${waiting}`, auth(a))).json.status).toBe('stopping');
    const stopped = await finished(s, a, `/company-search/status/${waiting}`, 5_000);
    expect(stopped.status).toBe('stopped');
    // Released, every other one of a's runs in its turn and completes; none ran twice at once.
    release();
    for (const thread of held.slice(0, 5)) expect((await finished(s, a, `/company-search/status/${thread}`, 60_000)).status).toBe('completed');
    expect(s.worker!.running()).toBe(0);
  });
});
