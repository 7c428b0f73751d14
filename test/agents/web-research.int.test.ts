import { OpenAiLanguageModel } from '@lore/ai';
import { LoopbackModel } from '../support/loopback-model';
import { generateAgentsWorld, matchingCompanies, matchingPeople, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import { HeadlessBrowser } from '../support/headless-browser';
import { LoopbackProxy } from '../support/loopback-proxy';
import { textPdf } from '../memory/files';
import { http, type TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack, auth, eventually } from './harness';
import { openSession, socketUrl, type SessionClient, type SessionMessage } from './session-socket';

jest.setTimeout(240_000);

type Json = Record<string, any>;

/**
 * Web research and deep search (spec 3; docs/agents.md, "Web research and deep search agents", "Egress proxies",
 * "Live session page") end to end: start through the gateway, the socket with the key in `?api-key=`, the agents on
 * agents-worker against the test world's sites and its SearXNG endpoint. Rows are checked against the world's
 * truth with their provenance; a vague prompt is asked about; pages go through the loopback egress proxy of the
 * session's country (and forbidden targets never reach it); the live page is loaded in headless Chromium and shows
 * the session's events as they arrive; a spent fetch budget ends a session cleanly.
 */
describe('agents: web research and deep search', () => {
  let s: AgentsStack;
  let served: ServedAgentsWorld;
  let de: LoopbackProxy;
  let fr: LoopbackProxy;
  let a: TenantFixture;
  let b: TenantFixture;
  const world = generateAgentsWorld(11, { companies: 30 });
  const berlinFintech = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' });
  const hostOf = (url: string) => new URL(url).host;
  const rowsOf = async (tenantId: string, list: string) =>
    (await s.db.withTenant(tenantId, (sql) => sql.query<{ entity_key: string; metadata: Json; cells: Json }>(`SELECT entity_key, metadata, cells FROM agents.list_rows WHERE list_id = $1 ORDER BY position`, [list]))).rows;
  const rowsIn = (c: SessionClient) => c.messages.filter((m) => m.type === 'row').map((m) => m.row as Json);
  const done = (c: SessionClient, ms = 120_000) => c.waitFor('done', (m) => m.type === 'done' || (m.type === 'error' && m.cursor !== null), ms);

  /** Starts a session and runs it over its socket to the end. */
  async function run(path: string, body: Json, t: TenantFixture = a): Promise<{ start: Json; client: SessionClient; end: SessionMessage }> {
    const r = await s.call('POST', path, auth(t), body);
    expect(r.status).toBe(200);
    const client = await openSession(socketUrl(r.json, t.key));
    const end = await done(client);
    return { start: r.json, client, end };
  }

  beforeAll(async () => {
    expect(berlinFintech.length).toBeGreaterThanOrEqual(4);
    served = await serveAgentsWorld(world);
    de = await new LoopbackProxy({ label: 'de' }).start();
    fr = await new LoopbackProxy({ label: 'fr', credentials: { user: 'lore', password: 'egress pw' } }).start();
    s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup }, egressProxies: { de: de.url, fr: fr.url } },
      worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, leaseMs: 2_000 }, sweepIntervalMs: 300 },
    });
    a = await s.tenant();
    b = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await de?.close();
    await fr?.close();
    await served?.close();
  });
  beforeEach(() => {
    de.requests.length = 0;
    fr.requests.length = 0;
  });

  describe('web research', () => {
    it('finds exactly the companies the prompt asks for, each row with the page it was read from', async () => {
      const { start, client, end } = await run('/webandreasearch/start', { prompt: 'fintech companies in Berlin' });
      expect(end).toMatchObject({ type: 'done', status: 'completed', outcome: 'completed' });
      const rows = rowsIn(client);
      expect(rows.map((r) => r.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
      for (const r of rows) {
        const company = berlinFintech.find((c) => c.name === r.fields.name)!;
        expect(r).toMatchObject({ entity_type: 'company', entity_key: `company:${hostOf(served.companyUrl(company))}` });
        expect(r.fields).toMatchObject({ industry: 'Fintech', url: served.companyUrl(company) });
        expect(r.provenance).toEqual({ source_url: served.companyUrl(company), fetched_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), snippet: expect.stringMatching(/fintech/i) });
      }
      // The list holds the same rows with their provenance.
      const list = await rowsOf(a.tenantId, start.list_id as string);
      expect(list.map((r) => r.entity_key).sort()).toEqual(rows.map((r) => r.entity_key as string).sort());
      for (const r of list) expect(r.metadata.source).toMatchObject({ source_url: expect.stringContaining('.localhost'), snippet: expect.any(String) });
      // Planning and the pages it read were reported; nothing went through a proxy it did not ask for.
      expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'planning')).toMatchObject({ data: { target: 'company', terms: ['fintech', 'berlin'] } });
      expect(client.messages.filter((m) => m.type === 'progress' && m.stage === 'visited').length).toBeGreaterThanOrEqual(berlinFintech.length);
      expect([...de.requests, ...fr.requests]).toEqual([]);
    });

    it('finds the people holding the role asked for through the companies\' team pages', async () => {
      const truth = matchingPeople(world, { title: 'Chief Executive Officer', company: { industry: 'Fintech', city: 'Berlin' } }).filter((p) => !world.companies.find((c) => c.id === p.companyId)!.teamDisallowed);
      expect(truth.length).toBeGreaterThanOrEqual(3);
      const { client, end } = await run('/webandreasearch/start', { prompt: 'CEOs of fintech companies in Berlin' });
      expect(end).toMatchObject({ status: 'completed' });
      const rows = rowsIn(client);
      expect(rows.map((r) => r.fields.name).sort()).toEqual(truth.map((p) => p.name).sort());
      for (const r of rows) {
        const p = truth.find((x) => x.name === r.fields.name)!;
        expect(r).toMatchObject({ entity_type: 'person', fields: { title: 'Chief Executive Officer', url: served.profileUrl(p) } });
        expect(r.provenance).toMatchObject({ source_url: served.profileUrl(p), snippet: expect.any(String) });
      }
    });

    it('reads sizes and founding years as criteria and "or" as alternatives: company prompts that mention staff find exactly their companies', async () => {
      const cases: Array<{ path: string; prompt: string; truth: ReturnType<typeof matchingCompanies>; criteria: string[] }> = [
        // A size word ("employees", "staff") qualifies the companies: no people search, and no "than" or "500" on the page.
        { path: '/webandreasearch/start', prompt: 'Find cybersecurity companies in London with more than 500 employees', truth: matchingCompanies(world, { industry: 'Cybersecurity', city: 'London', employeesMin: 501 }), criteria: ['Company size: 501+'] },
        { path: '/service-deep-search/start', prompt: 'Find SaaS companies in Lyon with more than 100 staff', truth: matchingCompanies(world, { industry: 'SaaS', city: 'Lyon', employeesMin: 101 }), criteria: ['Company size: 101+'] },
        { path: '/webandreasearch/start', prompt: 'Find fintech companies in Berlin founded after 2004', truth: matchingCompanies(world, { industry: 'Fintech', city: 'Berlin', foundedFrom: 2005 }), criteria: ['Founded: 2005 or later'] },
        { path: '/service-deep-search/start', prompt: 'Find SaaS companies in Paris or Lyon', truth: matchingCompanies(world, { industry: 'SaaS', city: ['Paris', 'Lyon'] }), criteria: [] },
      ];
      for (const c of cases) {
        // Each case leaves some of the place's companies out, and finds more than one.
        expect(c.truth.length).toBeGreaterThan(1);
        const { client, end } = await run(c.path, { prompt: c.prompt });
        expect(end).toMatchObject({ status: 'completed', summary: expect.stringMatching(new RegExp(`^${c.truth.length} companies found`)) });
        const planning = client.messages.find((m) => m.type === 'progress' && m.stage === 'planning')!;
        expect(planning.data).toMatchObject({ target: 'company', criteria: c.criteria });
        expect((planning.data as Json).terms.some((t: string) => /^\d|^(than|after|more)$/.test(t))).toBe(false);
        const rows = rowsIn(client);
        expect({ prompt: c.prompt, names: rows.map((r) => r.fields.name).sort() }).toEqual({ prompt: c.prompt, names: c.truth.map((x) => x.name).sort() });
        for (const r of rows) expect(r.entity_type).toBe('company');
      }
    });

    it('asks a clarifying question when the prompt names nothing to look for, and goes on with the answer sent over the socket', async () => {
      const r = await s.call('POST', '/webandreasearch/start', auth(a), { prompt: 'Find me some companies please' });
      const client = await openSession(socketUrl(r.json, a.key));
      const question = await client.waitFor('clarification', (m) => m.type === 'clarification', 60_000);
      expect(question).toMatchObject({ thread_id: r.json.thread_id, list_id: r.json.list_id, index: 0, question: expect.stringMatching(/What should the research look for/) });
      // Nothing was searched or read before the answer.
      expect(client.messages.filter((m) => m.type === 'progress' && ['searching', 'visited'].includes(m.stage))).toEqual([]);
      client.send({ prompt: 'fintech in Berlin', thread_id: r.json.thread_id, list_id: r.json.list_id });
      const end = await done(client);
      expect(end).toMatchObject({ status: 'completed' });
      expect(rowsIn(client).map((x) => x.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
    });
  });

  describe('egress proxies', () => {
    it('reads every page through the proxy of the session\'s country, with its credentials, and none through another', async () => {
      const { client, end } = await run('/webandreasearch/start', { prompt: 'fintech companies in Berlin', proxy: true, proxy_country_code: 'fr' });
      expect(end).toMatchObject({ status: 'completed' });
      expect(rowsIn(client).length).toBe(berlinFintech.length);
      const visited = client.messages.filter((m) => m.type === 'progress' && m.stage === 'visited').map((m) => m.data.url as string);
      expect(visited.length).toBeGreaterThan(0);
      const through = fr.requests.filter((r) => r.status === 200).map((r) => r.target);
      for (const url of visited) expect(through).toContain(url);
      // robots.txt too; every request carried the proxy's credentials; the search engine is the operator's, not proxied.
      expect(through.some((t) => t.endsWith('/robots.txt'))).toBe(true);
      expect(new Set(fr.requests.map((r) => r.authorization))).toEqual(new Set([`Basic ${Buffer.from('lore:egress pw').toString('base64')}`]));
      expect(fr.requests.some((r) => r.target.includes(hostOf(served.search.url)))).toBe(false);
      expect(de.requests).toEqual([]);
    });

    it('still refuses forbidden targets a prompt names: nothing of them reaches the proxy', async () => {
      const { client, end } = await run('/service-deep-search/start', { prompt: 'fintech pages at http://169.254.169.254/latest/meta-data/ and http://10.0.0.1/admin', proxy: true, proxy_country_code: 'de' });
      expect(end).toMatchObject({ status: 'completed' });
      const refused = client.messages.filter((m) => m.type === 'progress' && m.stage === 'visited' && /169\.254|10\.0\.0\.1/.test(m.data.url as string));
      expect(refused.length).toBe(2);
      for (const m of refused) expect(m.data).toMatchObject({ read: false, reason: expect.stringContaining('Lore does not read this address') });
      expect(de.requests.filter((r) => /169\.254|10\.0\.0\.1/.test(r.target))).toEqual([]);
      expect(rowsIn(client).filter((r) => /169\.254|10\.0\.0\.1/.test(r.provenance.source_url as string))).toEqual([]);
    });

    it('refuses a country with no configured proxy at start with body (a), before anything is kept', async () => {
      for (const path of ['/webandreasearch/start', '/service-deep-search/start']) {
        const r = await s.call('POST', path, auth(a), { prompt: 'fintech companies in Berlin', proxy: true, proxy_country_code: 'jp' });
        expect(r.status).toBe(422);
        expect(r.json).toEqual({ status_code: 422, message: 'validation failed', errors: [{ field: 'body.proxy_country_code', message: 'no egress proxy is configured for "jp" (configured: de, fr)', type: 'value_error' }], data: null });
      }
    });
  });

  describe('deep search', () => {
    it('reads the sites its reference file names first, and the clarifying answer comes by calling start again', async () => {
      const target = berlinFintech[berlinFintech.length - 1]!;
      const r = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'companies' });
      expect(r.status).toBe(200);
      const form = new FormData();
      form.append('thread_id', r.json.thread_id as string);
      form.append('file', new Blob([`name,site\n${target.name},${served.companyUrl(target)}\n`], { type: 'text/csv' }), 'reference.csv');
      const up = await fetch(`${s.gateway.publicUrl}/service-deep-search/upload`, { method: 'POST', headers: auth(a), body: form });
      expect(up.status).toBe(200);
      const client = await openSession(socketUrl(r.json, a.key));
      await client.waitFor('clarification', (m) => m.type === 'clarification', 60_000);
      // The answer: start again with the thread and its list.
      const answer = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'fintech in Berlin', thread_id: r.json.thread_id, list_id: r.json.list_id });
      expect(answer.status).toBe(200);
      const end = await done(client);
      expect(end).toMatchObject({ status: 'completed' });
      expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'reference')).toMatchObject({ data: { file: expect.stringMatching(/reference\.csv$/), read: true, urls: 1 } });
      const firstVisit = client.messages.find((m) => m.type === 'progress' && m.stage === 'visited');
      expect(firstVisit?.data.url).toBe(served.companyUrl(target));
      expect(rowsIn(client).map((x) => x.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
    });
  });

  it('deep search reads the URLs of an uploaded PDF reference, and notes a file it cannot read', async () => {
    const target = berlinFintech[0]!;
    const r = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'fintech companies in Berlin' });
    for (const [bytes, name] of [[await textPdf(['Companies to check first:', served.companyUrl(target)]), 'shortlist.pdf'], [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]), 'logo.png']] as const) {
      const form = new FormData();
      form.append('thread_id', r.json.thread_id as string);
      form.append('file', new Blob([bytes]), name);
      expect((await fetch(`${s.gateway.publicUrl}/service-deep-search/upload`, { method: 'POST', headers: auth(a), body: form })).status).toBe(200);
    }
    const client = await openSession(socketUrl(r.json, a.key));
    expect(await done(client)).toMatchObject({ status: 'completed' });
    const notes = client.messages.filter((m) => m.type === 'progress' && m.stage === 'reference').map((m) => m.data);
    expect(notes).toEqual([
      { file: expect.stringMatching(/shortlist\.pdf$/), read: true, urls: 1 },
      { file: expect.stringMatching(/logo\.png$/), read: false },
    ]);
    expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'visited')?.data.url).toBe(served.companyUrl(target));
    expect(rowsIn(client).map((x) => x.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
  });

  describe('the live page', () => {
    let browser: HeadlessBrowser;
    beforeAll(async () => {
      browser = await HeadlessBrowser.start();
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('shows the session live in a real browser: the events arrive in the page as the session runs', async () => {
      const r = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'fintech companies in Berlin', live_url: true });
      expect(r.status).toBe(200);
      const liveUrl = r.json.live_url as string;
      expect(new URL(liveUrl).origin).toBe(new URL(s.gateway.publicUrl).origin);
      expect(new URL(liveUrl).pathname).toBe(`/service-deep-search/live/${r.json.thread_id}`);
      expect(new URL(liveUrl).searchParams.get('token')).toMatch(/^v1\./);

      // The page is open before the session runs: it shows the prompt and waits.
      const page = await browser.open(liveUrl);
      expect(await page.evaluate('document.getElementById("prompt").textContent')).toBe('fintech companies in Berlin');
      expect(await page.evaluate('document.querySelectorAll("tr.row").length')).toBe(0);
      const main = page.responses.find((x) => x.url === liveUrl);
      expect(main).toMatchObject({ status: 200, mimeType: 'text/html' });

      // The session runs once a client connects; the page receives its events over its stream.
      const client = await openSession(socketUrl(r.json, a.key));
      await page.waitFor('document.querySelectorAll("tr.row").length > 0', 60_000);
      const end = await done(client);
      expect(end).toMatchObject({ status: 'completed' });
      await page.waitFor('document.getElementById("status").textContent === "completed"', 30_000);
      const shown = await page.evaluate<{ rows: string[]; pages: number; visited: number }>(
        '({ rows: [...document.querySelectorAll("tr.row td:first-child")].map((td) => td.textContent), pages: Number(document.getElementById("pages").textContent), visited: document.querySelectorAll("#visited li").length })',
      );
      expect(shown.rows.sort()).toEqual(berlinFintech.map((c) => c.name).sort());
      expect(shown.pages).toBeGreaterThanOrEqual(berlinFintech.length);
      expect(shown.visited).toBe(shown.pages);
      const stream = page.responses.find((x) => x.url.includes('/events'));
      expect(stream).toMatchObject({ status: 200, mimeType: 'text/event-stream' });
      expect(page.console.filter((l) => l.startsWith('exception'))).toEqual([]);
      await page.close();
    });

    it('streams an ended session again from Last-Event-ID, the socket\'s messages with their cursors, and answers 204 after the last', async () => {
      const { start, client } = await run('/service-deep-search/start', { prompt: 'fintech companies in Berlin', live_url: true });
      const url = new URL(start.live_url as string);
      const events = `${url.pathname}/events${url.search}`;
      const all = await http(s.gateway.publicUrl, 'GET', events);
      expect(all.status).toBe(200);
      expect(all.headers['content-type']).toMatch(/^text\/event-stream/);
      const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(ids(all.text)).toEqual(client.messages.map((m) => m.cursor));
      const rows = [...all.text.matchAll(/^event: row\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Json);
      expect(rows).toEqual(client.messages.filter((m) => m.type === 'row'));
      const last = ids(all.text).at(-1)!;
      const resumed = await http(s.gateway.publicUrl, 'GET', events, { headers: { 'last-event-id': String(last - 2) } });
      expect(ids(resumed.text)).toEqual([last - 1, last]);
      expect(resumed.text).toMatch(/event: done\n/);
      const after = await http(s.gateway.publicUrl, 'GET', events, { headers: { 'last-event-id': String(last) } });
      expect(after.status).toBe(204);
    });

    it('answers the live stream at once for a session that has not run yet', async () => {
      const r = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'fintech companies in Berlin', live_url: true });
      const url = new URL(r.json.live_url as string);
      const ac = new AbortController();
      const started = Date.now();
      // Nothing is connected, so the session writes nothing: the status line must not wait for a keep-alive (15 s).
      const res = await fetch(`${s.gateway.publicUrl}${url.pathname}/events${url.search}`, { signal: ac.signal });
      expect({ status: res.status, type: res.headers.get('content-type'), soon: Date.now() - started < 5_000 }).toEqual({ status: 200, type: 'text/event-stream; charset=utf-8', soon: true });
      ac.abort();
    });

    it('answers 404 to a forged, foreign or missing token, and serves the page with a strict policy', async () => {
      const r = await s.call('POST', '/service-deep-search/start', auth(a), { prompt: 'fintech companies in Berlin', live_url: true });
      const other = await s.call('POST', '/service-deep-search/start', auth(b), { prompt: 'saas companies in Paris', live_url: true });
      const url = new URL(r.json.live_url as string);
      const token = url.searchParams.get('token')!;
      const get = (path: string, headers: Record<string, string> = {}) => http(s.gateway.publicUrl, 'GET', path, { headers });
      const page = await get(`${url.pathname}${url.search}`);
      expect(page.status).toBe(200);
      expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'nonce-[^']+'/);
      expect(page.headers['referrer-policy']).toBe('no-referrer');
      expect(page.headers['cache-control']).toBe('no-store');
      const otherToken = new URL(other.json.live_url as string).searchParams.get('token')!;
      const forged = `${token.slice(0, -4)}${token.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
      for (const bad of [`${url.pathname}`, `${url.pathname}?token=${encodeURIComponent(forged)}`, `${url.pathname}?token=${encodeURIComponent(otherToken)}`, `${url.pathname}/events?token=${encodeURIComponent(otherToken)}`]) {
        const res = await get(bad);
        expect({ bad, status: res.status }).toEqual({ bad, status: 404 });
      }
      // A thread id that is not even a UUID answers the same 404, with a key or without, on the page and its stream
      // (until 2026-11-30: 401 without a key, 422 with one).
      const missing = await get(`${url.pathname}`);
      for (const id of ['abc', '%E0%A4%A', '0'.repeat(65)]) {
        for (const path of [`/service-deep-search/live/${id}?token=x`, `/service-deep-search/live/${id}/events?token=x`]) {
          for (const headers of [{}, { 'x-api-key': a.key }] as Array<Record<string, string>>) {
            const res = await get(path, headers);
            expect({ path, headers, status: res.status, message: (res.json as Json)?.message }).toEqual({ path, headers, status: 404, message: (missing.json as Json).message });
          }
        }
      }
      // Another tenant's own page opens for them only.
      const theirs = new URL(other.json.live_url as string);
      expect((await get(`${theirs.pathname}${theirs.search}`)).status).toBe(200);
    });
  });

  describe('with a configured model', () => {
    let model: LoopbackModel;
    let withModel: AgentsStack;
    beforeAll(async () => {
      model = await new LoopbackModel().start();
      // The model plans with the schema it is given: companies, one query of its own, no question.
      model.reply = (body) => (body.response_format?.json_schema?.name === 'web_research_plan' ? { content: JSON.stringify({ target: 'company', queries: ['fintech Berlin Germany'], clarification: null }) } : null);
      withModel = await startAgentsStack({
        service: { webTargets: { allowLoopback: true, lookup: served.web.lookup }, languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }) },
        worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, leaseMs: 2_000, budgets: { fetches: 200, wallMs: 60_000, modelTokens: 1_000 } }, sweepIntervalMs: 300 },
      });
    }, 120_000);
    afterAll(async () => {
      await withModel?.close();
      await model?.server.close();
    });

    it('plans with the model\'s queries, while the prompt\'s terms still judge every page', async () => {
      const t = await withModel.tenant();
      const r = await withModel.call('POST', '/webandreasearch/start', auth(t), { prompt: 'fintech companies in Berlin', llm_model: 'gpt-5.4 mini' });
      const client = await openSession(socketUrl(r.json, t.key));
      expect(await done(client)).toMatchObject({ status: 'completed', outcome: 'completed' });
      const asked = model.bodies.filter((b) => b.response_format?.json_schema?.name === 'web_research_plan');
      expect(asked).toHaveLength(1);
      expect(asked[0]!.messages?.find((m) => m.role === 'user')?.content).toBe('fintech companies in Berlin');
      expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'planning')).toMatchObject({ data: { planned_by: 'model', queries: ['fintech Berlin Germany', 'fintech berlin'] } });
      expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'searching')).toMatchObject({ data: { query: 'fintech Berlin Germany' } });
      expect(rowsIn(client).map((x) => x.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
    });

    it('a plan the model-token budget cannot pay for ends the session before the model is asked', async () => {
      const t = await withModel.tenant();
      const before = model.bodies.length;
      // 600 tokens a plan plus the prompt's length / 4: past the budget of 1,000.
      const prompt = `fintech companies in Berlin ${'with a long description of what is wanted '.repeat(40)}`;
      const r = await withModel.call('POST', '/webandreasearch/start', auth(t), { prompt });
      const client = await openSession(socketUrl(r.json, t.key));
      expect(await done(client)).toMatchObject({ status: 'completed', outcome: 'budget', summary: expect.stringMatching(/^budget spent: model tokens/), rows: 0 });
      expect(model.bodies.length).toBe(before);
      expect(client.messages.filter((m) => m.type === 'progress' && ['searching', 'visited'].includes(m.stage))).toEqual([]);
    });
  });

  describe('budgets', () => {
    let small: AgentsStack;
    beforeAll(async () => {
      small = await startAgentsStack({
        service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
        worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, leaseMs: 2_000, budgets: { fetches: 4, wallMs: 60_000, modelTokens: 50_000 } }, sweepIntervalMs: 300 },
      });
    }, 120_000);
    afterAll(async () => {
      await small?.close();
    });

    it('a spent fetch budget ends the session cleanly, the rows found so far kept', async () => {
      const t = await small.tenant();
      const r = await small.call('POST', '/webandreasearch/start', auth(t), { prompt: 'fintech companies in Berlin' });
      const client = await openSession(socketUrl(r.json, t.key));
      const end = await done(client);
      expect(end).toMatchObject({ type: 'done', status: 'completed', outcome: 'budget', summary: expect.stringMatching(/^budget spent: fetches \(4 of 4\)/) });
      const visited = client.messages.filter((m) => m.type === 'progress' && m.stage === 'visited' && m.data.read === true);
      // One search and three pages: the fourth fetch was the last the budget allowed.
      expect(visited.length).toBeLessThanOrEqual(3);
      const list = await eventually('the list', async () => (await small.db.withTenant(t.tenantId, (sql) => sql.query(`SELECT status FROM agents.lists WHERE list_id = $1`, [r.json.list_id]))).rows[0]);
      expect(list).toMatchObject({ status: 'completed' });
      expect((await small.db.withTenant(t.tenantId, (sql) => sql.query(`SELECT count(*)::int AS n FROM agents.list_rows WHERE list_id = $1`, [r.json.list_id]))).rows[0]).toEqual({ n: rowsIn(client).length });
    });

    it('a spent wall-time budget stops a long session mid-way, the rows found so far kept', async () => {
      const brief = await startAgentsStack({
        service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
        worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, leaseMs: 2_000, budgets: { fetches: 200, wallMs: 1_500, modelTokens: 50_000 } }, sweepIntervalMs: 300 },
      });
      try {
        const t = await brief.tenant();
        // People: a team page and its profiles per company, 250 ms apart on each site: far longer than 1.5 s.
        const r = await brief.call('POST', '/webandreasearch/start', auth(t), { prompt: 'CEOs of fintech companies in Berlin' });
        const connected = Date.now();
        const client = await openSession(socketUrl(r.json, t.key));
        const end = await done(client);
        expect(end).toMatchObject({ type: 'done', status: 'completed', outcome: 'budget', summary: expect.stringMatching(/^budget spent: wall time \(2 s\)/) });
        expect(end.rows).toBeLessThan(berlinFintech.length);
        expect(Date.now() - connected).toBeLessThan(10_000);
        const n = (await brief.db.withTenant(t.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents.list_rows WHERE list_id = $1`, [r.json.list_id]))).rows[0]!.n;
        expect(n).toBe(rowsIn(client).length);
      } finally {
        await brief.close();
      }
    });
  });
});
