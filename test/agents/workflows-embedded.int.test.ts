import { useEmbedded } from '../support/embedded';
import { companyKey, generateAgentsWorld, matchingCompanies, matchingPeople, personKey } from '../support/agents-world';
import { ended, pollUntil, seedDirectory, streamOf, type Json } from './embedded-client';

jest.setTimeout(180_000);

/**
 * Company and people search in embedded mode (`npm start`): the agents worker runs in the process on the in-memory
 * bus, PGlite holds the workflows and the test world's directory, the progress streams are in memory, and the one
 * outbox relay publishes the workflows' messages. Every call goes through the embedded gateway with the development
 * key: start, status, continue toward a larger target, stop, enrichment, the saved lists and a search's result.
 */
describe('company and people search in embedded mode', () => {
  const embedded = useEmbedded('agents-embedded');
  const call = embedded.call;
  const world = generateAgentsWorld(1);
  beforeAll(async () => {
    await seedDirectory(embedded, world);
  });
  const status = (thread: string) => `/company-search/status/${thread}`;

  it('runs to completed with the directory\'s matching companies, and reports its progress stream', async () => {
    const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' }).map(companyKey);
    expect(truth.length).toBeGreaterThan(0);
    const start = await call('POST', '/company-search/start', { prompt: 'Find fintech companies in Berlin', list_name: 'Berlin fintech', list_description: 'embedded' });
    expect(start.status).toBe(200);
    expect(start.json).toEqual({ success: true, message: expect.any(String), thread_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'processing' });
    const thread = start.json.thread_id as string;
    const snap = await pollUntil(embedded, status(thread), ended);
    expect(snap).toMatchObject({ status: 'completed', current_step: 'completed', category: 'company_search', title: 'Berlin fintech', description: 'embedded' });
    expect(new Set(snap.all_companies.map((r: Json) => r.entity_key))).toEqual(new Set(truth));
    // Embedded mode has no web search provider: the directory and the tenant's knowledge, and a note saying so.
    expect(snap.table_structure.sources).toEqual(['directory', 'knowledge']);
    expect(snap.table_structure.notes.join(' ')).toMatch(/no web search provider/);
    for (const row of snap.table_structure.rows) {
      expect(row.cells.industry).toMatchObject({ status: 'completed', value: 'Fintech' });
      expect(row.cells.name.metadata.source_url).toMatch(/^(https?:\/\/|directory:)/);
    }
    const stream = await call('GET', `/api/stream/stream-status/workflow:${thread}`);
    expect(stream.status).toBe(200);
    expect(stream.json).toMatchObject({ stream_key: `workflow:${thread}`, active: false });
    expect(stream.json.length).toBeGreaterThanOrEqual(4);
    expect((await call('GET', '/api/stream/active-streams')).json).toContain(`workflow:${thread}`);

    // The saved list and the search's result.
    const lists = await call('GET', '/company-search/getLists?limit=100');
    expect(lists.status).toBe(200);
    const item = (lists.json.data as Json[]).find((l) => l.listLinkID === thread);
    expect(item).toMatchObject({ listName: 'Berlin fintech', listDescription: 'embedded', listStatus: 'completed', listType: 'company_search', noOfRecords: truth.length, type: 'company', author: 0 });
    expect(lists.json.total).toBeGreaterThanOrEqual(1);
    const result = await call('GET', `/company-search/getSearchResult/${thread}`);
    expect(result.status).toBe(200);
    expect(result.json).toMatchObject({ success: true, thread_id: thread, list_id: item!.id, list_type: 'company_search', status: 'completed', total: truth.length });
    expect(new Set((result.json.data as Json[]).map((r) => r.domain))).toEqual(new Set(truth));
  });

  it('continues toward a larger total_target: the first rows kept in place, no duplicates; a target not above the rows found is refused', async () => {
    const germany = matchingCompanies(world, { country: 'DE' }).map(companyKey);
    expect(germany.length).toBeGreaterThan(8);
    const thread = (await call('POST', '/company-search/start', { prompt: 'Find 4 companies in Germany' })).json.thread_id as string;
    const first = await pollUntil(embedded, status(thread), ended);
    expect(first).toMatchObject({ status: 'completed', total_target: 4 });
    expect(first.table_structure.rows).toHaveLength(4);

    const same = await call('POST', '/company-search/continue', { thread_id: thread, total_target: 4 });
    expect(same.status).toBe(422);
    expect(same.json).toEqual({ status_code: 422, message: 'total_target must exceed the 4 rows already found', errors: [], data: null });
    const more = await call('POST', '/company-search/continue', { thread_id: thread, total_target: 7 });
    expect(more.status).toBe(200);
    expect(more.json).toEqual({ success: true, thread_id: thread, status: 'continuing' });
    const second = await pollUntil(embedded, status(thread), (j) => j.status === 'completed' && j.total_target === 7);
    const keys = second.all_companies.map((r: Json) => r.entity_key as string);
    expect(keys).toHaveLength(7);
    expect(new Set(keys).size).toBe(7);
    for (const k of keys) expect(germany).toContain(k);
    expect(keys.slice(0, 4)).toEqual(first.all_companies.map((r: Json) => r.entity_key));
    // The stream tells the continue after the first run's end.
    const frames = (await streamOf(embedded, 'GET', `/api/workflow/stream/${thread}`)).frames.map((f) => f.data.event);
    expect(frames.filter((x) => x === 'completed')).toHaveLength(2);
    expect(frames.indexOf('continued')).toBeGreaterThan(frames.indexOf('completed'));
  });

  it('stops a running search: stop answers `stopping`, the status reads `stopping` then `stopped`, the rows written are kept', async () => {
    // Every company of the directory wanted, their rows enriched five a checkpoint: a run long enough to stop mid-way.
    const start = await call('POST', '/company-search/start', { prompt: 'Find 300 companies with more than 10 employees', list_name: 'to stop' });
    const thread = start.json.thread_id as string;
    const running = await pollUntil(embedded, status(thread), (j) => j.table_structure.current_count > 0 || ended(j), 60_000, 10);
    expect(running.status).toBe('processing');
    const asked = Date.now();
    const stop = await call('POST', `/company-search/stop/${thread}`);
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({ success: true, thread_id: thread, status: 'stopping', message: expect.any(String) });
    const seen: string[] = [];
    const snap = await pollUntil(embedded, status(thread), (j) => (seen.push(j.status as string), ended(j)), 10_000, 10);
    expect(snap.status).toBe('stopped');
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(seen[0]).toMatch(/^(stopping|stopped)$/);
    expect(seen.filter((x) => x !== 'stopping' && x !== 'stopped')).toEqual([]);
    // The rows written are kept; some cells were still to be filled when it stopped.
    expect(snap.table_structure.current_count).toBeGreaterThan(0);
    expect(snap.table_structure.rows).toHaveLength(snap.table_structure.current_count);
    expect(snap.processed_companies.length).toBeLessThan(snap.table_structure.current_count);
    const events = (await streamOf(embedded, 'GET', `/api/workflow/stream/${thread}`)).frames.map((f) => f.data.event);
    expect(events.slice(-2)).toEqual(['stop_requested', 'stopped']);
    expect(events).not.toContain('completed');
    const lists = (await call('GET', '/company-search/getLists?limit=100')).json.data as Json[];
    expect(lists.find((l) => l.listLinkID === thread)).toMatchObject({ listName: 'to stop', listStatus: 'stopped', noOfRecords: snap.table_structure.current_count });
    // Stop again: the workflow has ended, stop answers its status.
    expect((await call('POST', `/company-search/stop/${thread}`)).json).toMatchObject({ status: 'stopped' });
  });

  it('fills an enrichment column with the directory\'s contacts, each with its source; stop-enrichment stops a running one', async () => {
    const robotics = matchingCompanies(world, { industry: 'Robotics', city: 'Munich' });
    const thread = (await call('POST', '/company-search/start', { prompt: 'Find 3 robotics companies in Munich' })).json.thread_id as string;
    await pollUntil(embedded, status(thread), ended);
    const enrich = await call('POST', '/company-search/start-enrichment', { thread_id: thread, column_name: 'Key contacts', enrichment_type: 'contacts' });
    expect(enrich.status).toBe(200);
    expect(enrich.json).toEqual({ success: true, thread_id: thread, column_id: 'enrich_key_contacts', column_name: 'Key contacts', enrichment_type: 'contacts', status: 'processing', message: expect.any(String) });
    const snap = await pollUntil(embedded, status(thread), (j) => j.status === 'completed' && j.table_structure.rows.every((row: Json) => row.cells.enrich_key_contacts?.status !== 'pending'));
    expect(snap.table_structure.columns.map((c: Json) => c.id)).toContain('enrich_key_contacts');
    expect(snap.table_structure.rows).toHaveLength(3);
    for (const row of snap.table_structure.rows) {
      const company = robotics.find((c) => companyKey(c) === row.cells.domain.value)!;
      const ceo = world.people.find((p) => p.companyId === company.id && p.title === 'Chief Executive Officer')!;
      const cell = row.cells.enrich_key_contacts;
      expect(cell).toMatchObject({ status: 'completed', metadata: { source: 'directory', source_url: expect.stringMatching(/^directory:/) } });
      expect(cell.value).toContain(ceo.name);
    }

    // A second column on the whole list of a bigger search, stopped at once: its stop answers the column it stopped.
    const big = (await call('POST', '/company-search/start', { prompt: 'Find 150 companies' })).json.thread_id as string;
    await pollUntil(embedded, status(big), ended);
    const second = await call('POST', '/company-search/start-enrichment', { thread_id: big, column_name: 'Who to call', enrichment_type: 'contacts' });
    expect(second.status).toBe(200);
    const stopE = await call('POST', `/company-search/stop-enrichment/${big}`);
    expect(stopE.status).toBe(200);
    expect(stopE.json).toEqual({ success: true, thread_id: big, column_id: 'enrich_who_to_call', column_name: 'Who to call', enrichment_type: 'contacts', status: 'stopped', message: 'stopped 1 enrichment column(s)' });
    const after = await pollUntil(embedded, status(big), ended);
    const cells = after.table_structure.rows.map((row: Json) => row.cells.enrich_who_to_call.status as string);
    expect(cells.length).toBe(150);
    expect(cells.filter((c: string) => c === 'pending').length).toBeGreaterThan(0);
    // Nothing left running: a second stop has nothing to stop.
    expect((await call('POST', `/company-search/stop-enrichment/${big}`)).json).toMatchObject({ status: 'stopped', column_id: '', message: 'no enrichment was running' });
    const bad = await call('POST', '/company-search/start-enrichment', { thread_id: thread, column_name: 'Odd', enrichment_type: 'telepathy' });
    expect(bad.status).toBe(422);
    expect(bad.json).toEqual({ status_code: 422, message: 'enrichment_type must be custom or contacts', errors: [], data: null });
  });

  it('builds a people list: start, status with every person holding the title, its result read through the company-search routes', async () => {
    const truth = matchingPeople(world, { title: 'Chief Executive Officer', company: { industry: 'Fintech' } }).map((p) => personKey(p));
    expect(truth.length).toBeGreaterThan(3);
    const start = await call('POST', '/people-search/start', { prompt: 'Find 3 CEOs of fintech companies', search_mode: 'fast', list_name: 'Fintech CEOs' });
    expect(start.status).toBe(200);
    expect(start.json).toEqual({ success: true, message: expect.any(String), thread_id: expect.any(String), status: 'processing' });
    const thread = start.json.thread_id as string;
    const snap = await pollUntil(embedded, `/people-search/status/${thread}`, ended);
    expect(snap).toMatchObject({ status: 'completed', current_step: 'completed', category: 'people_search', total_target: 3, title: 'Fintech CEOs' });
    const keys = snap.all_companies.map((r: Json) => r.entity_key as string);
    expect(keys).toHaveLength(3);
    for (const k of keys) expect(truth).toContain(k);
    for (const row of snap.table_structure.rows) expect(row.cells.title).toMatchObject({ status: 'completed', value: 'Chief Executive Officer' });
    const result = await call('GET', `/company-search/getSearchResult/${thread}`);
    expect(result.json).toMatchObject({ success: true, list_type: 'people_search', status: 'completed', total: 3 });
    expect((result.json.data as Json[]).map((r) => r.name).sort()).toEqual(snap.all_companies.map((r: Json) => r.name).sort());
    const lists = (await call('GET', '/company-search/getLists?limit=100')).json.data as Json[];
    expect(lists.find((l) => l.listLinkID === thread)).toMatchObject({ listName: 'Fintech CEOs', listType: 'people_search', type: 'people', noOfRecords: 3 });
    // Each route its own kind.
    expect((await call('GET', status(thread))).status).toBe(404);
  });
});
