import type { Counter } from 'prom-client';
import WebSocket from 'ws';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld, type WorldCompany } from '../support/agents-world';
import type { TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack, auth, eventually } from './harness';
import { openSession, socketUrl, refusal, type SessionClient, type SessionMessage } from './session-socket';

jest.setTimeout(180_000);

type Json = Record<string, any>;

/**
 * Sessions over websockets (spec 3: deep search, web research, agentic crawler; docs/agents.md): the start routes,
 * the sockets through the gateway with the key in `?api-key=`, the crawler writing rows with provenance into the
 * session's list, clarification, replay from a cursor, stop, a SIGKILLed worker, and every refusal.
 */
describe('agents: sessions over websockets', () => {
  let s: AgentsStack;
  let served: ServedAgentsWorld;
  let a: TenantFixture;
  let b: TenantFixture;
  const world = generateAgentsWorld(11, { companies: 30 });
  /** Companies whose team pages robots.txt allows, with their people. */
  const open = world.companies.filter((c) => !c.teamDisallowed && world.people.filter((p) => p.companyId === c.id).length >= 2);
  const peopleOf = (c: WorldCompany) => world.people.filter((p) => p.companyId === c.id);
  const status = async (tenantId: string, thread: string) =>
    (await s.db.withTenant(tenantId, (sql) => sql.query<{ status: string; claimed_by: string | null }>(`SELECT status, claimed_by FROM agents.workflows WHERE thread_id = $1`, [thread]))).rows[0];
  const events = async (tenantId: string, thread: string) =>
    (await s.db.withTenant(tenantId, (sql) => sql.query<{ type: string }>(`SELECT type FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [thread]))).rows.map((r) => r.type);
  const rowsOf = async (tenantId: string, list: string) =>
    (await s.db.withTenant(tenantId, (sql) => sql.query<{ row_id: string; entity_key: string; cells: Json; metadata: Json }>(`SELECT row_id, entity_key, cells, metadata FROM agents.list_rows WHERE list_id = $1 ORDER BY position`, [list]))).rows;
  const crawl = (t: TenantFixture, prompt: string) => s.call('POST', '/agentic-crawler/start', auth(t), { prompt });
  const until = (c: SessionClient, type: string) => c.waitFor(type, (m) => m.type === type);
  /** The stack's count of session sockets' event-log reads for one reason. */
  const sessionLogReads = async (reason: string): Promise<number> => {
    const m = s.metrics.getSingleMetric('lore_agents_session_log_reads_total') as Counter | undefined;
    return (await m?.get())?.values.find((v) => v.labels.reason === reason)?.value ?? 0;
  };

  beforeAll(async () => {
    expect(open.length).toBeGreaterThanOrEqual(8);
    served = await serveAgentsWorld(world);
    s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup }, socketLimits: { socketsPerTenant: 4, pingMs: 500 } },
      worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, leaseMs: 2_000 }, sweepIntervalMs: 300 },
    });
    a = await s.tenant();
    b = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await served?.close();
  });

  describe('start routes', () => {
    it('the crawler and web research prepare a `ready` session with its list and the placeholder in websocket_url', async () => {
      for (const [path, socket] of [['/agentic-crawler/start', '/api/agent/agentic-crawler'], ['/webandreasearch/start', '/api/agent/web-and-research']] as const) {
        const r = await s.call('POST', path, auth(a), { prompt: 'fintech companies in Berlin' });
        expect(r.status).toBe(200);
        expect(r.json).toEqual({ success: true, message: expect.any(String), thread_id: expect.any(String), list_id: expect.any(String), websocket_url: expect.any(String), status: 'ready' });
        const u = new URL(r.json.websocket_url as string);
        expect(u.protocol).toBe('ws:');
        expect(u.host).toBe(new URL(s.gateway.publicUrl).host);
        expect(u.pathname).toBe(socket);
        expect(u.searchParams.get('api-key')).toBe('<your-api-key>');
        expect(u.searchParams.get('thread_id')).toBe(r.json.thread_id);
        const list = await s.db.withTenant(a.tenantId, (sql) => sql.query(`SELECT list_type, status FROM agents.lists WHERE list_id = $1`, [r.json.list_id]));
        expect(list.rows[0]).toMatchObject({ status: 'ready' });
      }
    });

    it('deep search answers `processing` without message, with live_url and workspace_id; upload keeps a file under server-side paths', async () => {
      const r = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'who builds payment software in Berlin', llm_model: 'claude-sonnet-4.6', live_url: true });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ success: true, thread_id: expect.any(String), list_id: expect.any(String), websocket_url: expect.any(String), status: 'processing', live_url: expect.stringContaining(r.json.thread_id), workspace_id: null });
      expect(new URL(r.json.websocket_url as string).pathname).toBe(`/api/service-deep-search/ws/${r.json.thread_id}`);
      const plain = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'x' });
      expect(plain.json.live_url).toBeNull();

      const form = new FormData();
      form.append('thread_id', r.json.thread_id as string);
      form.append('file', new Blob(['name,site\nAcme,acme.test\n'], { type: 'text/csv' }), '../../etc/passwd.csv');
      const up = await fetch(`${s.gateway.publicUrl}/service-deep-search/upload`, { method: 'POST', headers: auth(a), body: form });
      expect(up.status).toBe(200);
      const body = (await up.json()) as Json;
      expect(body).toEqual({ success: true, workspace_id: expect.any(String), paths: [expect.stringMatching(new RegExp(`^sessions/${r.json.thread_id}/[0-9a-f]{8}-passwd\\.csv$`))] });
      // Another tenant's thread is not found.
      const form2 = new FormData();
      form2.append('thread_id', r.json.thread_id as string);
      form2.append('file', new Blob(['x']), 'x.txt');
      const other = await fetch(`${s.gateway.publicUrl}/service-deep-search/upload`, { method: 'POST', headers: auth(b), body: form2 });
      expect(other.status).toBe(404);
      // No thread_id: body (a).
      const form3 = new FormData();
      form3.append('file', new Blob(['x']), 'x.txt');
      const missing = await fetch(`${s.gateway.publicUrl}/service-deep-search/upload`, { method: 'POST', headers: auth(a), body: form3 });
      expect(missing.status).toBe(422);
      expect(await missing.json()).toEqual({ status_code: 422, message: 'validation failed', errors: [{ field: 'body.thread_id', message: expect.any(String), type: 'missing' }], data: null });
      // A thread_id without a file: only the file is missing.
      const form4 = new FormData();
      form4.append('thread_id', r.json.thread_id as string);
      const noFile = await fetch(`${s.gateway.publicUrl}/service-deep-search/upload`, { method: 'POST', headers: auth(a), body: form4 });
      expect(noFile.status).toBe(422);
      expect(await noFile.json()).toEqual({ status_code: 422, message: 'validation failed', errors: [{ field: 'body.file', message: expect.any(String), type: 'missing' }], data: null });
      // Start again with the same thread and list while no question waits: body (b).
      const again = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'an answer', thread_id: r.json.thread_id, list_id: r.json.list_id });
      expect(again.status).toBe(422);
      expect(again.json).toEqual({ status_code: 422, message: expect.stringContaining('not waiting'), errors: [], data: null });
      // Another tenant answering it: 404.
      const foreign = await s.call('POST', '/service-deep-search/start', auth(b), { prompt: 'an answer', thread_id: r.json.thread_id, list_id: r.json.list_id });
      expect(foreign.status).toBe(404);
    });

    it.each([
      ['/service-deep-search/start', { prompt: 'p', llm_model: 'gpt-4' }, 'body.llm_model', 'value_error'],
      ['/webandreasearch/start', { prompt: 'p', llm_model: 'gemini-3-flash' }, 'body.llm_model', 'value_error'],
      ['/service-deep-search/start', { prompt: 'p', proxy: true }, 'body.proxy_country_code', 'missing'],
      ['/webandreasearch/start', { prompt: 'p', proxy: true, proxy_country_code: 'xx' }, 'body.proxy_country_code', 'value_error'],
      ['/service-deep-search/start', { prompt: 'p', proxy: true, proxy_country_code: 'DE' }, 'body.proxy_country_code', 'value_error'],
      ['/agentic-crawler/start', {}, 'body.prompt', 'missing'],
      ['/webandreasearch/start', { prompt: 'p', thread_id: 'not-a-uuid' }, 'body.thread_id', 'value_error'],
    ])('%s with %j answers 422 body (a) naming %s', async (path, body, field, type) => {
      const r = await s.call('POST', path, auth(a), body);
      expect(r.status).toBe(422);
      expect(r.json).toEqual({ status_code: 422, message: 'validation failed', errors: [expect.objectContaining({ field, type })], data: null });
    });

    it('serves the AsyncAPI document of the sockets without a key', async () => {
      const r = await s.call('GET', '/api/agents/asyncapi.json', {});
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ asyncapi: '3.0.0', components: { messages: { progress: {}, clarification: {}, row: {}, error: {}, done: {}, stop: {}, answer: {} } } });
    });

    it('accepts every legacy label on web research and every label and browser id on deep search', async () => {
      for (const label of ['service-r1', 'gpt-5.4 mini', 'gemini 3 flash', 'claude sonnet 4.6', 'claude opus 4.6', 'claude opus 4.7', 'qwen3.5:cloud']) {
        expect((await s.call('POST', '/webandreasearch/start', auth(a), { prompt: 'p', llm_model: label })).status).toBe(200);
      }
      for (const label of ['gemini-3-flash', 'claude-sonnet-4.6', 'claude-opus-4.6', 'gpt-5.4-mini', 'service-r1']) {
        expect((await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'p', llm_model: label })).status).toBe(200);
      }
    });
  });

  describe('socket refusals: nothing runs', () => {
    it('refuses a key in a header, a wrong key, the placeholder left, no identity at the service, another tenant, and a read-only key', async () => {
      const started = await crawl(a, `Find the people at ${served.companyUrl(open[0]!)}`);
      const thread = started.json.thread_id as string;
      const url = started.json.websocket_url as string;
      // The key in a header instead of the query; a wrong key, and the placeholder itself. The gateway's refusals are
      // in the agents' `{detail}` shape on these paths, as theirs are (and as for a plain request).
      const gatewayRefusals = [
        await refusal(url.replace('api-key=%3Cyour-api-key%3E', '').replace('api-key=<your-api-key>', ''), auth(a)),
        await refusal(socketUrl(started.json, `${a.key}x`)),
        await refusal(url),
      ];
      for (const r of gatewayRefusals) {
        expect(r.status).toBe(401);
        expect(JSON.parse(r.body)).toEqual({ detail: expect.any(String) });
      }
      // Straight to the agents listener without the gateway's identity: refused, and counted as a plain request is.
      const counted = async () => ((await s.metrics.getSingleMetric('lore_http_requests_total')!.get()).values.find((v) => v.labels.route === '/api/agent/agentic-crawler' && String(v.labels.status) === '401')?.value ?? 0);
      const before = await counted();
      const direct = url.replace(new URL(url).host, new URL(s.agentsServer.url).host).replace('<your-api-key>', a.key);
      expect((await refusal(direct)).status).toBe(401);
      expect(await counted()).toBe(before + 1);
      // Another tenant's key: not found.
      const foreign = await refusal(socketUrl(started.json, b.key));
      expect(foreign.status).toBe(404);
      // A read-only key of the same tenant may not start it.
      const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
      expect((await refusal(socketUrl(started.json, readOnly))).status).toBe(403);
      // A thread of another kind on this path: not found.
      const research = await s.call('POST', '/webandreasearch/start', auth(a), { prompt: 'p' });
      expect((await refusal(socketUrl(research.json, a.key).replace('/api/agent/web-and-research', '/api/agent/agentic-crawler'))).status).toBe(404);
      await new Promise((r) => setTimeout(r, 500));
      expect(await status(a.tenantId, thread)).toMatchObject({ status: 'ready', claimed_by: null });
      expect(await events(a.tenantId, thread)).toEqual([]);
      expect(served.web.requestsTo(open[0]!.slug)).toEqual([]);
    });

    it('refuses on the deep search and web research paths too', async () => {
      const deep = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'p' });
      const web = await s.call('POST', '/webandreasearch/start', auth(a), { prompt: 'p' });
      for (const r of [deep, web]) {
        expect((await refusal(r.json.websocket_url as string)).status).toBe(401);
        expect((await refusal(socketUrl(r.json, b.key))).status).toBe(404);
        expect(await status(a.tenantId, r.json.thread_id as string)).toMatchObject({ status: 'ready' });
      }
    });

    it('answers 404 to a thread id with a malformed %-encoding, and to a cursor that is not decimal digits 400; the service goes on', async () => {
      const deep = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'p' });
      const url = new URL(socketUrl(deep.json, a.key));
      // Until 2026-11-30 decoding this path threw outside the handshake's error handling and ended the process.
      for (const bad of ['%E0%A4%A', '%', '%zz']) {
        const malformed = new URL(url);
        malformed.pathname = `/api/service-deep-search/ws/${bad}`;
        expect([bad, (await refusal(malformed.href)).status]).toEqual([bad, 404]);
      }
      for (const cursor of ['', '0x0', '1e0', '+1', ' 1', '1.0']) {
        const r = new URL(url);
        r.searchParams.set('cursor', cursor);
        expect([cursor, (await refusal(r.href)).status]).toEqual([cursor, 400]);
      }
      expect(await status(a.tenantId, deep.json.thread_id as string)).toMatchObject({ status: 'ready' });
      expect((await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'p' })).status).toBe(200);
    });
  });

  describe('the crawler', () => {
    it('runs only once a client connects, and writes each company and person it finds into the list with provenance', async () => {
      const c = open[1]!;
      const started = await crawl(a, `Find the people at ${served.companyUrl(c)}`);
      const thread = started.json.thread_id as string;
      await new Promise((r) => setTimeout(r, 800));
      expect(await status(a.tenantId, thread)).toMatchObject({ status: 'ready' });
      expect(served.web.requestsTo(c.slug)).toEqual([]);

      const client = await openSession(socketUrl(started.json, a.key));
      const done = await client.waitFor('done', (m) => m.type === 'done', 90_000);
      expect(done).toMatchObject({ status: 'completed', outcome: 'completed', thread_id: thread, list_id: started.json.list_id });
      expect(await client.closed).toBe(1000);
      const rows = client.messages.filter((m) => m.type === 'row');
      const names = rows.map((m) => m.row.fields.name as string);
      expect(names).toEqual(expect.arrayContaining([c.name, ...peopleOf(c).map((p) => p.name)]));
      for (const m of rows) {
        expect(m.row.provenance).toEqual({ source_url: expect.stringContaining(`${c.slug}.localhost`), fetched_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), snippet: expect.any(String) });
        expect((m.row.provenance.snippet as string).length).toBeGreaterThan(0);
      }
      // Cursors are the event log's sequence numbers, in order, none missing; each message has its event's time.
      const cursors = client.messages.map((m) => m.cursor);
      expect(cursors).toEqual(cursors.map((_, i) => i + 1));
      for (const m of client.messages) expect(m.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // Every row is in the session's list, with its provenance.
      const list = await rowsOf(a.tenantId, started.json.list_id as string);
      expect(list.map((r) => r.entity_key).sort()).toEqual(rows.map((m) => m.row.entity_key as string).sort());
      for (const r of list) expect((r.metadata as Json).source).toMatchObject({ source_url: expect.any(String), fetched_at: expect.any(String), snippet: expect.any(String) });
      expect(await status(a.tenantId, thread)).toMatchObject({ status: 'completed', claimed_by: null });
      // The list getLists shows for the session is read through getSearchResult, as a search's.
      const listed = await s.call('GET', '/company-search/getLists?limit=100', auth(a));
      expect((listed.json.data as Json[]).map((l) => l.id)).toContain(started.json.list_id);
      const result = await s.call('GET', `/company-search/getSearchResult/${thread}`, auth(a));
      expect(result.status).toBe(200);
      expect(result.json).toMatchObject({ thread_id: thread, list_id: started.json.list_id, list_type: 'agentic_crawler', status: 'completed', total: list.length });
      expect((result.json.data as Json[]).map((r) => r.row_id).sort()).toEqual(list.map((r) => r.row_id).sort());
      // Robots.txt was read before any page of the site.
      const reqs = served.web.requestsTo(c.slug);
      expect(reqs[0]!.path).toBe('/robots.txt');
    });

    it('says why a page could not be read, and tries a page that may come back (503) once more, one that will not (404) once', async () => {
      const [down, gone] = [open[2]!, open[3]!];
      served.web.outage(served.companyUrl(down), 503);
      served.web.outage(served.companyUrl(gone), 404);
      try {
        const started = await crawl(a, `Find the people at ${served.companyUrl(down)} ${served.companyUrl(gone)}`);
        const client = await openSession(socketUrl(started.json, a.key));
        expect(await client.waitFor('done', (m) => m.type === 'done', 90_000)).toMatchObject({ status: 'completed' });
        const unread = client.messages.filter((m) => m.type === 'progress' && m.data?.read === false).map((m) => [m.message, m.data.reason]);
        expect(unread).toEqual([
          [`could not read ${served.companyUrl(down)}: ${served.companyUrl(down)} answered 503`, `${served.companyUrl(down)} answered 503`],
          [`could not read ${served.companyUrl(gone)}: ${served.companyUrl(gone)} answered 404`, `${served.companyUrl(gone)} answered 404`],
        ]);
        expect([served.web.requestsTo(down.slug, '/').length, served.web.requestsTo(gone.slug, '/').length]).toEqual([2, 1]);
      } finally {
        served.web.restore(served.companyUrl(down));
        served.web.restore(served.companyUrl(gone));
      }
    });

    it('a reconnect with the last cursor loses nothing, and a connect after the end replays the whole session', async () => {
      const c = open[2]!;
      const started = await crawl(a, `Crawl ${served.companyUrl(c)} for its team`);
      const opensBefore = await sessionLogReads('open');
      const first = await openSession(socketUrl(started.json, a.key));
      // The first connect starts the session and sends its start as written: no read of the event log.
      expect(await first.waitFor('the start', (m) => m.cursor === 1, 30_000)).toMatchObject({ type: 'progress', stage: 'started', thread_id: started.json.thread_id });
      expect(await sessionLogReads('open')).toBe(opensBefore);
      await first.waitFor('a row', (m) => m.type === 'row', 60_000);
      const seen = [...first.messages];
      await first.close();
      const last = seen[seen.length - 1]!.cursor as number;
      const second = await openSession(`${socketUrl(started.json, a.key)}&cursor=${last}`);
      await until(second, 'done');
      // A reconnect starts nothing: it reads the log after its cursor.
      expect(await sessionLogReads('open')).toBe(opensBefore + 1);
      const all = [...seen, ...second.messages];
      expect(all.map((m) => m.cursor)).toEqual(all.map((_, i) => i + 1));
      // After the end: the whole session again from the start, the same messages.
      const replay = await openSession(socketUrl(started.json, a.key));
      await until(replay, 'done');
      expect(replay.messages).toEqual(all);
      // A cursor at the end: nothing to send, the socket closes.
      const atEnd = await openSession(`${socketUrl(started.json, a.key)}&cursor=${all[all.length - 1]!.cursor}`);
      expect(await atEnd.closed).toBe(1000);
      expect(atEnd.messages).toEqual([]);
      // A cursor that is not a whole number is refused before the upgrade, and so is one no message carried.
      expect((await refusal(`${socketUrl(started.json, a.key)}&cursor=-1`)).status).toBe(400);
      const beyond = await refusal(`${socketUrl(started.json, a.key)}&cursor=${all[all.length - 1]!.cursor! + 1}`);
      expect([beyond.status, JSON.parse(beyond.body).detail]).toEqual([400, expect.stringMatching(/beyond this session's last message/)]);
    });

    it('asks a clarifying question when the prompt gives nothing to go on, and goes on with the answer sent over the socket', async () => {
      const c = open[3]!;
      const started = await crawl(a, 'crawl');
      const client = await openSession(socketUrl(started.json, a.key));
      const question = await until(client, 'clarification');
      expect(question).toMatchObject({ thread_id: started.json.thread_id, list_id: started.json.list_id, index: 0, question: expect.stringContaining('URL') });
      // A wrong list id is refused on the socket; nothing ends.
      client.send({ prompt: served.companyUrl(c), thread_id: started.json.thread_id, list_id: '00000000-0000-4000-8000-000000000000' });
      await client.waitFor('an error about the list', (m) => m.type === 'error' && m.cursor === null);
      client.send({ prompt: served.companyUrl(c), thread_id: started.json.thread_id, list_id: started.json.list_id });
      const done = await client.waitFor('done', (m) => m.type === 'done', 90_000);
      expect(done.status).toBe('completed');
      expect(client.messages.filter((m) => m.type === 'row').map((m) => m.row.fields.name)).toContain(c.name);
    });

    it('takes the clarifying answer from start called again with the thread and list', async () => {
      const c = open[3]!;
      const started = await crawl(a, 'crawl');
      const client = await openSession(socketUrl(started.json, a.key));
      await until(client, 'clarification');
      // Without its list, or with another list: each told what is wrong.
      const noList = await s.call('POST', '/agentic-crawler/start', auth(a), { prompt: served.companyUrl(c), thread_id: started.json.thread_id });
      expect([noList.status, JSON.stringify(noList.json)]).toEqual([422, expect.stringContaining('give its list_id too')]);
      const otherList = await s.call('POST', '/agentic-crawler/start', auth(a), { prompt: served.companyUrl(c), thread_id: started.json.thread_id, list_id: '00000000-0000-4000-8000-000000000000' });
      expect([otherList.status, JSON.stringify(otherList.json)]).toEqual([422, expect.stringContaining('list_id is not the list of the session thread_id names')]);
      const answered = await s.call('POST', '/agentic-crawler/start', auth(a), { prompt: served.companyUrl(c), thread_id: started.json.thread_id, list_id: started.json.list_id });
      expect(answered.status).toBe(200);
      expect(answered.json).toMatchObject({ thread_id: started.json.thread_id, list_id: started.json.list_id, status: 'processing' });
      const done = await client.waitFor('done', (m) => m.type === 'done', 90_000);
      expect(done.status).toBe('completed');
      expect(client.messages.some((m) => m.type === 'progress' && m.stage === 'answered')).toBe(true);
      // Answered already: a second answer is refused.
      expect((await s.call('POST', '/agentic-crawler/start', auth(a), { prompt: 'again', thread_id: started.json.thread_id, list_id: started.json.list_id })).status).toBe(422);
    });

    it('closes a socket whose client sends a frame over 16 KiB', async () => {
      const started = await crawl(a, 'crawl');
      const client = await openSession(socketUrl(started.json, a.key));
      await until(client, 'clarification');
      client.send({ prompt: 'x'.repeat(20_000), thread_id: started.json.thread_id, list_id: started.json.list_id });
      expect(await client.closed).toBe(1009);
      expect(await status(a.tenantId, started.json.thread_id as string)).toMatchObject({ status: 'processing' });
      const again = await openSession(socketUrl(started.json, a.key));
      again.send({ type: 'stop' });
      await until(again, 'done');
    });

    it('refuses a tenant\'s socket beyond its limit (429) and counts a closed one out', async () => {
      const sessions = await Promise.all([1, 2, 3, 4, 5].map(() => crawl(b, 'crawl')));
      const clients = await Promise.all(sessions.slice(0, 4).map((r) => openSession(socketUrl(r.json, b.key))));
      const refused = await refusal(socketUrl(sessions[4]!.json, b.key));
      expect([refused.status, refused.headers['retry-after']]).toEqual([429, '5']);
      expect(await status(b.tenantId, sessions[4]!.json.thread_id as string)).toMatchObject({ status: 'ready' });
      // Another tenant is not held back by b's sockets.
      const other = await crawl(a, 'crawl');
      const aClient = await openSession(socketUrl(other.json, a.key));
      aClient.send({ type: 'stop' });
      await until(aClient, 'done');
      await clients[0]!.close();
      await eventually('a free slot', async () => {
        const c = await openSession(socketUrl(sessions[4]!.json, b.key)).catch(() => null);
        if (c) clients.push(c);
        return c;
      }, 10_000);
      for (const c of clients.slice(1)) {
        c.send({ type: 'stop' });
        await until(c, 'done');
      }
    });

    it('ends a socket whose peer answers no ping, and counts it out', async () => {
      const started = await crawl(b, 'crawl');
      // A peer that is gone: its socket library answers no ping (the stack pings every 500 ms).
      const silent = new WebSocket(socketUrl(started.json, b.key), { autoPong: false });
      const code = await new Promise<number>((resolve, reject) => {
        silent.once('error', reject);
        silent.once('close', (c) => resolve(c));
      });
      // Ended by the server without a closing handshake (1006 to the client).
      expect(code).toBe(1006);
      // A peer that answers stays: a second socket on the session outlives several pings, then stops it.
      const alive = await openSession(socketUrl(started.json, b.key));
      await new Promise((r) => setTimeout(r, 1_600));
      expect(alive.ws.readyState).toBe(alive.ws.OPEN);
      alive.send({ type: 'stop' });
      await until(alive, 'done');
    });

    it('stops at once on {"type":"stop"}', async () => {
      const started = await crawl(a, `Find everyone at ${open.slice(0, 4).map((c) => served.companyUrl(c)).join(' ')}`);
      const client = await openSession(socketUrl(started.json, a.key));
      await client.waitFor('a row', (m) => m.type === 'row', 60_000);
      client.send({ type: 'stop' });
      const done = await client.waitFor('done', (m) => m.type === 'done', 30_000);
      expect(done).toMatchObject({ status: 'stopped', outcome: 'stopped' });
      expect(await status(a.tenantId, started.json.thread_id as string)).toMatchObject({ status: 'stopped', claimed_by: null });
      const rows = await rowsOf(a.tenantId, started.json.list_id as string);
      // A stopped `done` counts the list's rows, and its summary says so (it was empty before 2026-11-30).
      expect(done).toMatchObject({ rows: rows.length, summary: `stopped: ${rows.length} rows written` });
      const everyone = open.slice(0, 4).reduce((n, c) => n + 1 + peopleOf(c).length, 0);
      expect(rows.length).toBeLessThan(everyone);
    });

    it('refuses unknown client messages and too many at once without ending the session', async () => {
      const started = await crawl(a, 'crawl');
      const client = await openSession(socketUrl(started.json, a.key));
      await until(client, 'clarification');
      client.send({ hello: 'there' });
      await client.waitFor('unknown message', (m) => m.type === 'error' && /unknown message/.test(m.message as string));
      // The two client messages are closed (as the AsyncAPI document has them), and a refusal says what is wrong.
      const told = (pattern: RegExp) => client.waitFor(String(pattern), (m) => m.type === 'error' && pattern.test(m.message as string));
      client.send({ prompt: 'alpha', thread_id: started.json.thread_id, list_id: started.json.list_id, extra: 1 });
      await told(/^invalid clarifying answer: .*extra/);
      client.send({ prompt: '', thread_id: started.json.thread_id, list_id: started.json.list_id });
      await told(/^invalid clarifying answer: prompt: /);
      client.send({ type: 'stop', reason: 'x' });
      await told(/^invalid stop message: .*reason/);
      // Another type is a message Lore does not know (not a broken stop); a binary frame is refused as one, whatever
      // it holds; an answer of only white space is empty, though the session waits; a refusal quotes a prefix only.
      client.send({ type: 'ping' });
      await told(/^unknown message: type "ping"/);
      client.ws.send(Buffer.from(JSON.stringify({ type: 'stop' })), { binary: true });
      await told(/^binary frames are not accepted/);
      client.send({ prompt: '   ', thread_id: started.json.thread_id, list_id: started.json.list_id });
      await told(/^invalid clarifying answer: prompt: the answer is empty/);
      client.send({ type: 'stop', ['k'.repeat(10_000)]: 1 });
      expect((await told(/^invalid stop message: unknown field "k+…"$/)).message.length).toBeLessThan(200);
      expect(await status(a.tenantId, started.json.thread_id as string)).toMatchObject({ status: 'processing' });
      await new Promise((r) => setTimeout(r, 1_200));
      for (let i = 0; i < 30; i++) client.send({ hello: i });
      await client.waitFor('too many', (m) => m.type === 'error' && /too many messages/.test(m.message as string));
      expect(await status(a.tenantId, started.json.thread_id as string)).toMatchObject({ status: 'processing' });
      // Once the limit has refilled, a stop goes through.
      await new Promise((r) => setTimeout(r, 1_500));
      client.send({ type: 'stop' });
      await until(client, 'done');
    });

    it('tells a flooding client once a second, and cuts it off (1008) when it keeps on; the session is not ended by it', async () => {
      const started = await crawl(a, 'crawl');
      const client = await openSession(socketUrl(started.json, a.key));
      await until(client, 'clarification');
      const before = client.messages.length;
      for (let i = 0; i < 500; i++) client.send({ hello: i });
      const code = await client.closed;
      expect(code).toBe(1008);
      const told = client.messages.slice(before).filter((m) => m.type === 'error' && /too many messages/.test(m.message as string));
      expect(told.length).toBeGreaterThanOrEqual(1);
      expect(told.length).toBeLessThanOrEqual(3);
      expect(await status(a.tenantId, started.json.thread_id as string)).toMatchObject({ status: 'processing' });
    });
  });

  it('a stop that lands before the run begins ends `done` with the rows an earlier run wrote, and a summary counting them', async () => {
    await s.worker!.stop();
    const started = await crawl(a, `Find the people at ${served.companyUrl(open[5]!)}`);
    const thread = started.json.thread_id as string;
    const client = await openSession(socketUrl(started.json, a.key));
    await client.waitFor('started', (m) => m.type === 'progress');
    // Rows a run before this one wrote (a worker that died), then the stop, before any worker runs the session again.
    await s.db.withTenant(a.tenantId, (sql) =>
      sql.query(`INSERT INTO agents.list_rows (tenant_id, list_id, row_id, entity_key, position) VALUES ($1, $2, 'row_early_a', 'company:early-a', 1), ($1, $2, 'row_early_b', 'company:early-b', 2)`, [a.tenantId, started.json.list_id]),
    );
    client.send({ type: 'stop' });
    await eventually('the session to be stopping', async () => (await status(a.tenantId, thread))?.status === 'stopping', 10_000);
    await s.worker!.start();
    const done = await client.waitFor('done', (m) => m.type === 'done', 60_000);
    expect(done).toMatchObject({ status: 'stopped', outcome: 'stopped', rows: 2, summary: 'stopped: 2 rows written' });
  });

  it('a worker SIGKILLed mid-session: the sweep resumes it, the open socket gets the rest, no row twice, and done counts every row', async () => {
    const sites = open.slice(0, 8);
    await s.worker!.stop();
    const started = await crawl(a, `Find the people at ${sites.map((c) => served.companyUrl(c)).join(' ')}`);
    const thread = started.json.thread_id as string;
    const worker = s.spawnWorker({ LORE_AGENTS_ALLOW_LOOPBACK: 'true' });
    const child = worker.process;
    const client = await openSession(socketUrl(started.json, a.key));
    // Watched in the event log (the socket may hear of the child's events only at its next read of the log).
    const written = async () => Number((await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM agents.workflow_events WHERE thread_id = $1 AND type = 'row'`, [thread]))).rows[0]!.n);
    await eventually('the child to write two rows', async () => (worker.assertRunning(), (await written()) >= 2), 90_000, 10);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(await status(a.tenantId, thread)).toMatchObject({ status: 'processing', claimed_by: expect.stringMatching(/:\d+:/) });
    expect(client.messages.some((m) => m.type === 'done')).toBe(false);

    // The stack's worker again: its sweep finds the expired claim and runs the session once more.
    await s.worker!.start();
    const done = await client.waitFor('done', (m: SessionMessage) => m.type === 'done', 90_000);
    expect(done.status).toBe('completed');
    const cursors = client.messages.map((m) => m.cursor);
    expect(cursors).toEqual(cursors.map((_, i) => i + 1));
    const rowKeys = client.messages.filter((m) => m.type === 'row').map((m) => m.row.entity_key as string);
    expect(new Set(rowKeys).size).toBe(rowKeys.length);
    const list = await rowsOf(a.tenantId, started.json.list_id as string);
    expect(list.map((r) => r.row_id).length).toBe(rowKeys.length);
    // `done` counts the session's rows, the dead worker's included, not only those of the run that resumed it.
    expect(done).toMatchObject({ rows: list.length, summary: expect.stringMatching(new RegExp(`^${list.length} rows from \\d+ pages$`)) });
    // The same crawl never interrupted finds exactly the same rows.
    const again = await crawl(a, `Find the people at ${sites.map((c) => served.companyUrl(c)).join(' ')}`);
    const reference = await openSession(socketUrl(again.json, a.key));
    await reference.waitFor('done', (m) => m.type === 'done', 90_000);
    const expected = (await rowsOf(a.tenantId, again.json.list_id as string)).map((r) => r.entity_key).sort();
    expect(expected.length).toBeGreaterThan(sites.length);
    // Both crawls read the same 40 pages only if every page could be read: a page one of them could not read changes
    // which pages the page limit reaches, so name those pages rather than leave a bare difference of rows.
    const unread = async (threadId: string) =>
      (await s.db.withTenant(a.tenantId, (sql) => sql.query<{ url: string; reason: string }>(
        `SELECT data->'data'->>'url' AS url, data->'data'->>'reason' AS reason FROM agents.workflow_events WHERE thread_id = $1 AND type = 'progress' AND data->'data'->>'read' = 'false' ORDER BY seq`,
        [threadId],
      ))).rows.map((r) => `${r.url}: ${r.reason}`);
    expect({ interrupted: await unread(thread), reference: await unread(again.json.thread_id as string) }).toEqual({ interrupted: [], reference: [] });
    expect(list.map((r) => r.entity_key).sort()).toEqual(expected);
    expect(list.map((r) => (r.cells as Json).name.value)).toEqual(expect.arrayContaining(sites.map((c) => c.name)));
  });
});
