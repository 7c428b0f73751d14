import { companyKey, generateAgentsWorld, matchingCompanies, matchingPeople, personKey, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import type { TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack } from './harness';
import { readStream } from './sse-client';

/**
 * Lists built from the web only (docs/agents.md, "Benchmarks", list quality): the tenant's directory is empty, the
 * worker searches the test world's SearXNG-format endpoint and reads its sites through the guarded page reader. A
 * company is judged from its own home page, never from a page about one of its people; a people search asks for the
 * role and follows a company site's team page to its people's profiles.
 */

jest.setTimeout(180_000);

type Json = Record<string, any>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const world = generateAgentsWorld(1);
/** A row's key without the loopback port. */
const dropPort = (key: string) => key.trim().toLowerCase().replace(/(\.localhost):\d+/g, '$1');

let served: ServedAgentsWorld;
let s: AgentsStack;
let t: TenantFixture;

beforeAll(async () => {
  served = await serveAgentsWorld(world);
  s = await startAgentsStack({ service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } }, worker: { searxngUrl: served.search.url } });
  t = await s.tenant();
}, 120_000);
afterAll(async () => {
  await s?.close();
  await served?.close();
});

async function build(route: 'company-search' | 'people-search', prompt: string): Promise<{ snap: Json; keys: string[]; sources: string[]; queries: string[] }> {
  const searchMark = served.search.requests.length;
  const auth = { authorization: `Bearer ${t.key}` };
  const start = await s.call('POST', `/${route}/start`, auth, { prompt });
  expect(start.status).toBe(200);
  const thread = start.json.thread_id as string;
  let snap: Json = {};
  for (const until = Date.now() + 120_000; ; await sleep(100)) {
    snap = (await s.call('GET', `/${route}/status/${thread}`, auth)).json as Json;
    if (['completed', 'stopped', 'error'].includes(snap.status as string)) break;
    if (Date.now() > until) throw new Error(`"${prompt}" did not end: ${JSON.stringify(snap).slice(0, 300)}`);
  }
  expect(snap.status).toBe('completed');
  const keys = (snap.all_companies as Json[]).map((r) => dropPort(String(r.entity_key)));
  const sources = (snap.table_structure.rows as Json[]).map((r) => String(r.metadata?.source?.source_url ?? ''));
  const queries = served.search.requests.slice(searchMark).map((r) => String(r.params.q ?? ''));
  return { snap, keys, sources, queries };
}

describe('lists from the web (the test world behind a SearXNG-format endpoint, through the gateway and the worker)', () => {
  it("lists a company only from its own home page: SaaS companies in France, none of them from a person's profile", async () => {
    const truth = new Set(matchingCompanies(world, { industry: 'SaaS', country: 'FR' }).map(companyKey));
    const { keys, sources } = await build('company-search', 'SaaS companies in France');
    expect(keys.length).toBeGreaterThan(0);
    // Every row is a SaaS company of France (before, London and New York companies came in through a profile of an
    // employee living in France).
    expect(keys.filter((k) => !truth.has(k))).toEqual([]);
    // Each row's source is its site's home page.
    expect(sources.length).toBe(keys.length);
    for (const src of sources) expect(new URL(src).pathname).toBe('/');
  });

  it('searches the web with the criteria as the generic workflow API edits them, at start and on continue', async () => {
    const auth = { authorization: `Bearer ${t.key}` };
    let mark = served.search.requests.length;
    const started = await readStream(s, 'POST', '/api/workflow/start', auth, {
      prompt: 'SaaS companies in France',
      total_target: 2,
      additional_criteria: [{ name: 'Location', value: 'Germany', column_name: 'location', type: 'hard_filter' }],
    });
    expect(started.status).toBe(200);
    const thread = started.frames[0]!.data.thread_id as string;
    const last = started.frames[started.frames.length - 1]!.data;
    expect(last.status).toBe('completed');
    const queries = () => served.search.requests.slice(mark).map((r) => String(r.params.q ?? ''));
    // The added place replaced the prompt's: the search asks for Germany, not France.
    expect(queries().length).toBeGreaterThan(0);
    for (const q of queries()) expect(q).toMatch(/Germany/);
    for (const q of queries()) expect(q).not.toMatch(/France/);
    mark = served.search.requests.length;
    const status = (await s.call('GET', `/api/workflow/status/${thread}`, auth)).json as Json;
    const current = (status.criteria as Json[]).map((c) => (c.column_name === 'industry' ? { ...c, value: 'Fintech' } : c));
    const continued = await readStream(s, 'POST', '/api/workflow/continue', auth, { thread_id: thread, total_target: 4, current_criteria: current });
    expect(continued.status).toBe(200);
    expect(queries().length).toBeGreaterThan(0);
    for (const q of queries()) expect(q).toMatch(/Fintech.*Germany|Germany.*Fintech/);
    for (const q of queries()) expect(q).not.toMatch(/SaaS/);
  });

  it('reads a home page that answered 503 once more a second later (and lists its company), one that answered 404 once', async () => {
    const [down, gone] = matchingCompanies(world, { industry: 'SaaS', country: 'FR' });
    const mark = served.web.requests.length;
    const homeReads = (slug: string) => served.web.requests.slice(mark).filter((r) => r.site === slug && r.path === '/');
    served.web.outage(served.companyUrl(down!), 503);
    served.web.outage(served.companyUrl(gone!), 404);
    // The 503 lasts until the worker's first read of the page: the second read, a second later, finds it back.
    const watching = (async () => {
      while (homeReads(down!.slug).length === 0) await sleep(10);
      served.web.restore(served.companyUrl(down!));
    })();
    try {
      const { keys } = await build('company-search', 'SaaS companies in France');
      await watching;
      // The worker reads one page at a time, so a page tried once more is read twice in a row (a list reads a home
      // page again later for other reasons).
      const log = served.web.requests.slice(mark).map((r) => `${r.site} ${r.path} ${r.status}`);
      const pairs = log.slice(1).map((x, i) => `${log[i]} → ${x}`);
      expect(pairs).toContain(`${down!.slug} / 503 → ${down!.slug} / 200`);
      expect(log).toContain(`${gone!.slug} / 404`);
      expect(pairs).not.toContain(`${gone!.slug} / 404 → ${gone!.slug} / 404`);
      expect(keys).toContain(companyKey(down!));
      expect(keys).not.toContain(companyKey(gone!));
    } finally {
      served.web.restore(served.companyUrl(down!));
      served.web.restore(served.companyUrl(gone!));
    }
  });

  it('tries the search provider again when it is overloaded or rate limited (twice), and lists as if nothing happened', async () => {
    const truth = new Set(matchingCompanies(world, { industry: 'SaaS', country: 'FR' }).map(companyKey));
    const mark = served.search.requests.length;
    served.search.failNext(1, 503);
    served.search.failNext(1, 429, { retryAfterSeconds: 1 });
    const { keys } = await build('company-search', 'SaaS companies in France');
    expect(served.search.requests.slice(mark, mark + 3).map((r) => r.status)).toEqual([503, 429, 200]);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((k) => !truth.has(k))).toEqual([]);
  });

  it('searches people with the role and follows team pages to profiles: every head of marketing in Germany', async () => {
    const truth = matchingPeople(world, { title: 'Head of Marketing', country: 'DE' }).map((p) => personKey(p));
    expect(truth.length).toBeGreaterThan(0);
    const { keys, sources, queries } = await build('people-search', 'heads of marketing in Germany');
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) expect(q).toMatch(/head of marketing/i);
    // Before, the searches carried only "Germany" and found none of them.
    expect(keys.filter((k) => truth.includes(k)).sort()).toEqual([...truth].sort());
    expect(keys.filter((k) => !truth.includes(k))).toEqual([]);
    for (const src of sources) expect(new URL(src).pathname).toMatch(/^\/team\/[^/]+\.html$/);
  });

  it("falls back to the plan's words when the role finds nothing, and still reaches profiles through team pages: C-level executives at SaaS companies", async () => {
    const truth = new Set(matchingPeople(world, { seniority: 'c_level', company: { industry: 'SaaS' } }).map((p) => personKey(p)));
    const { keys, queries } = await build('people-search', 'C-level executives at SaaS companies');
    // The role's words first, then the industry alone.
    expect(queries[0]).toMatch(/c-level/i);
    expect(queries.slice(1).some((q) => !/c-level/i.test(q))).toBe(true);
    expect(keys.filter((k) => !truth.has(k))).toEqual([]);
    expect(keys.length).toBeGreaterThanOrEqual(20);
  });
});
