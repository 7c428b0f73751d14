import { useEmbedded } from '../support/embedded';
import { generateAgentsWorld, matchingCompanies, matchingPeople, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import { refusal, type SessionClient, type SessionMessage } from './session-socket';
import { sessionOf, type Json } from './embedded-client';

jest.setTimeout(180_000);

/**
 * Session sockets in embedded mode (`npm start`): the gateway in the process upgrades each socket and splices it to
 * the agents listener on its unix socket; the in-process worker runs the crawler, web research and deep search on
 * the in-memory bus against the test world's sites and its SearXNG-format endpoint (LORE_AGENTS_SEARXNG_URL, with
 * loopback reads allowed). Every start and socket uses the development key.
 */
describe('session sockets in embedded mode', () => {
  const world = generateAgentsWorld(11, { companies: 30 });
  const berlinFintech = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' });
  const open = world.companies.filter((c) => !c.teamDisallowed && world.people.filter((p) => p.companyId === c.id).length >= 2);
  let served: ServedAgentsWorld | undefined;
  const env: Record<string, string> = { LORE_AGENTS_ALLOW_LOOPBACK: 'true' };
  // Registered before the embedded process's own hook, so the search endpoint's address is in its environment.
  beforeAll(async () => {
    served = await serveAgentsWorld(world);
    env.LORE_AGENTS_SEARXNG_URL = served.search.url;
  });
  afterAll(async () => {
    await served?.close();
  });
  const embedded = useEmbedded('agents-sessions-embedded', env);
  const start = async (path: string, body: Json): Promise<Json> => {
    const r = await embedded.call('POST', path, body);
    expect(r.status).toBe(200);
    return r.json as Json;
  };
  const done = (c: SessionClient, ms = 90_000) => c.waitFor('done', (m) => m.type === 'done' || (m.type === 'error' && m.cursor !== null), ms);
  const rowsIn = (c: SessionClient) => c.messages.filter((m) => m.type === 'row').map((m) => m.row as Json);
  const consecutive = (messages: SessionMessage[]) => expect(messages.map((m) => m.cursor)).toEqual(messages.map((_, i) => i + 1));
  const sessionRow = async (thread: string) =>
    (await embedded.lore.parts.db.withTenant(embedded.lore.credentials.tenant_id, (sql) => sql.query<{ status: string }>(`SELECT status FROM agents.workflows WHERE thread_id = $1`, [thread]))).rows[0];
  const listRows = async (list: string) =>
    (await embedded.lore.parts.db.withTenant(embedded.lore.credentials.tenant_id, (sql) => sql.query<{ entity_key: string; metadata: Json }>(`SELECT entity_key, metadata FROM agents.list_rows WHERE list_id = $1 ORDER BY position`, [list]))).rows;

  beforeAll(() => {
    expect(berlinFintech.length).toBeGreaterThanOrEqual(4);
    expect(open.length).toBeGreaterThanOrEqual(4);
  });

  it('the crawler runs once the socket connects and sends the rows it writes, with provenance; a socket without the key is refused', async () => {
    const c = open[0]!;
    const people = world.people.filter((p) => p.companyId === c.id);
    const started = await start('/agentic-crawler/start', { prompt: `Find the people at ${served!.companyUrl(c)}` });
    expect(started.status).toBe('ready');
    const url = started.websocket_url as string;
    expect(new URL(url).host).toBe(new URL(embedded.lore.url).host);
    expect((await refusal(url)).status).toBe(401);

    const client = await sessionOf(embedded, started);
    const end = await done(client);
    expect(end).toMatchObject({ type: 'done', status: 'completed', thread_id: started.thread_id });
    const rows = rowsIn(client);
    expect(rows.map((r) => r.fields.name)).toEqual(expect.arrayContaining([c.name, ...people.map((p) => p.name)]));
    for (const r of rows) expect(r.provenance.source_url).toContain(`${c.slug}.localhost`);
    consecutive(client.messages);
  });

  it('web research: starts `ready`, runs on connect, and finds exactly the companies asked for, each row with its page', async () => {
    const started = await start('/webandreasearch/start', { prompt: 'fintech companies in Berlin' });
    expect(started).toEqual({ success: true, message: expect.any(String), thread_id: expect.any(String), list_id: expect.any(String), websocket_url: expect.any(String), status: 'ready' });
    expect(new URL(started.websocket_url as string).pathname).toBe('/api/agent/web-and-research');
    expect(await sessionRow(started.thread_id as string)).toEqual({ status: 'ready' });
    const client = await sessionOf(embedded, started);
    const end = await done(client);
    expect(end).toMatchObject({ type: 'done', status: 'completed', outcome: 'completed' });
    const rows = rowsIn(client);
    expect(rows.map((r) => r.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
    for (const r of rows) {
      const company = berlinFintech.find((c) => c.name === r.fields.name)!;
      expect(r.fields).toMatchObject({ industry: 'Fintech', url: served!.companyUrl(company) });
      expect(r.provenance).toEqual({ source_url: served!.companyUrl(company), fetched_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), snippet: expect.stringMatching(/fintech/i) });
    }
    expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'planning')).toMatchObject({ data: { target: 'company', terms: ['fintech', 'berlin'] } });
    consecutive(client.messages);
    // The session's list holds the same rows with their provenance.
    const list = await listRows(started.list_id as string);
    expect(list.map((r) => r.entity_key).sort()).toEqual(rows.map((r) => r.entity_key as string).sort());
    expect(await sessionRow(started.thread_id as string)).toEqual({ status: 'completed' });
  });

  it('web research asks a clarifying question for a vague prompt and goes on with the answer sent over the socket', async () => {
    const started = await start('/webandreasearch/start', { prompt: 'Find me some companies please' });
    const client = await sessionOf(embedded, started);
    const question = await client.waitFor('clarification', (m) => m.type === 'clarification', 60_000);
    expect(question).toMatchObject({ thread_id: started.thread_id, list_id: started.list_id, index: 0, question: expect.stringMatching(/What should the research look for/) });
    expect(client.messages.filter((m) => m.type === 'progress' && ['searching', 'visited'].includes(m.stage))).toEqual([]);
    client.send({ prompt: 'fintech in Berlin', thread_id: started.thread_id, list_id: started.list_id });
    expect(await done(client)).toMatchObject({ status: 'completed' });
    expect(rowsIn(client).map((x) => x.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
  });

  it('deep search: start, a reference file uploaded, then the socket: the file\'s site read first, rows arrive, done', async () => {
    const target = berlinFintech[berlinFintech.length - 1]!;
    const started = await start('/service-deep-search/start', { prompt: 'fintech companies in Berlin', llm_model: 'claude-sonnet-4.6' });
    expect(started).toEqual({ success: true, thread_id: expect.any(String), list_id: expect.any(String), websocket_url: expect.any(String), status: 'processing', live_url: null, workspace_id: null });
    expect(new URL(started.websocket_url as string).pathname).toBe(`/api/service-deep-search/ws/${started.thread_id}`);
    const form = new FormData();
    form.append('thread_id', started.thread_id as string);
    form.append('file', new Blob([`name,site\n${target.name},${served!.companyUrl(target)}\n`], { type: 'text/csv' }), 'reference.csv');
    const up = await fetch(`${embedded.lore.url}/service-deep-search/upload`, { method: 'POST', headers: { 'x-api-key': embedded.lore.credentials.api_key }, body: form });
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ success: true, workspace_id: expect.any(String), paths: [expect.stringMatching(new RegExp(`^sessions/${started.thread_id}/[0-9a-f]{8}-reference\\.csv$`))] });

    const client = await sessionOf(embedded, started);
    expect(await done(client)).toMatchObject({ type: 'done', status: 'completed', outcome: 'completed', rows: berlinFintech.length });
    expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'reference')).toMatchObject({ data: { file: expect.stringMatching(/reference\.csv$/), read: true, urls: 1 } });
    expect(client.messages.find((m) => m.type === 'progress' && m.stage === 'visited')?.data.url).toBe(served!.companyUrl(target));
    expect(rowsIn(client).map((x) => x.fields.name).sort()).toEqual(berlinFintech.map((c) => c.name).sort());
    consecutive(client.messages);
  });

  it('stops a session over its socket at any time: mid-way with the rows so far kept, and before it found anything', async () => {
    const ceos = matchingPeople(world, { title: 'Chief Executive Officer', company: { industry: 'Fintech', city: 'Berlin' } });
    // People: each company's team page and its profiles, 250 ms apart on a site: long enough to stop mid-way.
    const started = await start('/webandreasearch/start', { prompt: 'CEOs of fintech companies in Berlin' });
    const client = await sessionOf(embedded, started);
    await client.waitFor('a page read', (m) => m.type === 'progress' && m.stage === 'visited', 60_000);
    client.send({ type: 'stop' });
    const end = await done(client, 30_000);
    expect(end).toMatchObject({ type: 'done', status: 'stopped', outcome: 'stopped' });
    expect(await client.closed).toBe(1000);
    expect(await sessionRow(started.thread_id as string)).toEqual({ status: 'stopped' });
    const kept = await listRows(started.list_id as string);
    expect(kept.length).toBe(rowsIn(client).length);
    expect(kept.length).toBeLessThan(ceos.length);

    // Stopped as soon as it connects, before any row: the session ends stopped all the same.
    const early = await start('/service-deep-search/start', { prompt: 'CEOs of fintech companies in Berlin' });
    const second = await sessionOf(embedded, early);
    second.send({ type: 'stop' });
    expect(await done(second, 30_000)).toMatchObject({ status: 'stopped', outcome: 'stopped' });
    expect(rowsIn(second).length).toBeLessThan(ceos.length);
    expect(await sessionRow(early.thread_id as string)).toEqual({ status: 'stopped' });
  });

  it('a reconnect with the last cursor replays what was missed: nothing lost, nothing twice; after the end a connect replays the whole session', async () => {
    const c = open[1]!;
    const started = await start('/agentic-crawler/start', { prompt: `Crawl ${served!.companyUrl(c)} for its team` });
    const first = await sessionOf(embedded, started);
    await first.waitFor('a row', (m) => m.type === 'row', 60_000);
    const seen = [...first.messages];
    await first.close();
    const last = seen[seen.length - 1]!.cursor as number;
    const second = await sessionOf(embedded, started, last);
    await done(second);
    expect(second.messages[0]!.cursor).toBe(last + 1);
    const all = [...seen, ...second.messages];
    consecutive(all);
    expect(all.filter((m) => m.type === 'row').map((m) => m.row.fields.name)).toEqual(expect.arrayContaining([c.name]));
    const replay = await sessionOf(embedded, started);
    await done(replay);
    expect(replay.messages).toEqual(all);
    const atEnd = await sessionOf(embedded, started, all[all.length - 1]!.cursor as number);
    expect(await atEnd.closed).toBe(1000);
    expect(atEnd.messages).toEqual([]);
  });
});
