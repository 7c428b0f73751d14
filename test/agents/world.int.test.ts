import { upsertDirectoryRecords } from '@lore/agents';
import { OutboundHttpClient, RobotsPolicy, TargetGuard } from '@lore/outbound';
import {
  companyKey,
  generateAgentsWorld,
  listQuality,
  matching,
  matchingCompanies,
  matchingPeople,
  personKey,
  serveAgentsWorld,
  sizeBand,
  worldCsv,
  worldDirectoryRecords,
  WORLD_INDUSTRIES,
  type ServedAgentsWorld,
} from '../support/agents-world';
import type { SearxngResponse } from '../support/loopback-search';
import { LORE_AGENT, LoopbackWeb, SITE_NAMES } from '../support/loopback-web';
import { startAgentsStack } from './harness';

/**
 * The agents test world (test/support/agents-world.ts) is what docs/agents.md says: generated from its seed, served
 * as company sites on the loopback web, found by the words of a list prompt through the loopback SearXNG endpoint,
 * with a ground truth that lists are measured against — and the four usual sites are unchanged by it.
 */

const world = generateAgentsWorld(1);
let served: ServedAgentsWorld;
let client: OutboundHttpClient;

beforeAll(async () => {
  served = await serveAgentsWorld(world);
  client = new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback: true, lookup: served.web.lookup }), userAgent: `${LORE_AGENT}/1` });
});
afterAll(async () => {
  client?.close();
  await served?.close();
});

async function searchAll(q: string): Promise<SearxngResponse['results']> {
  const out: SearxngResponse['results'] = [];
  for (let pageno = 1; pageno <= 100; pageno++) {
    const res = await client.fetch({ url: `${served.search.url}/search?q=${encodeURIComponent(q)}&format=json&pageno=${pageno}` });
    expect(res.status).toBe(200);
    const body = JSON.parse(res.text()) as SearxngResponse;
    out.push(...body.results);
    if (body.results.length < 10) return out;
  }
  throw new Error('more than 100 pages of results');
}

const hostOf = (url: string) => new URL(url).hostname;

describe('the agents test world', () => {
  it('is generated from its seed: 200 companies and 600 people, the same for the same seed, other ones for another', () => {
    expect(world.companies).toHaveLength(200);
    expect(world.people).toHaveLength(600);
    expect(generateAgentsWorld(1)).toEqual(world);
    expect(generateAgentsWorld(2).companies.map((c) => c.name)).not.toEqual(world.companies.map((c) => c.name));
    expect(new Set(world.companies.map((c) => c.domain)).size).toBe(200);
    expect(new Set(world.people.map((p) => personKey(p))).size).toBe(600);
    const industries = new Set(world.companies.map((c) => c.industry));
    expect([...industries].every((i) => WORLD_INDUSTRIES.some((x) => x.name === i))).toBe(true);
    expect(industries.size).toBe(WORLD_INDUSTRIES.length);
    // Every company has a chief executive and two others; employees and founding years are in range.
    for (const c of world.companies) {
      const staff = world.people.filter((p) => p.companyId === c.id);
      expect(staff.map((p) => p.title)[0]).toBe('Chief Executive Officer');
      expect(staff).toHaveLength(3);
      expect(c.employees).toBeGreaterThanOrEqual(5);
      expect(c.employees).toBeLessThanOrEqual(5000);
      expect(c.founded).toBeGreaterThanOrEqual(1990);
      expect(c.founded).toBeLessThanOrEqual(2024);
    }
    expect(sizeBand(120)).toBe('51-200');
    expect(sizeBand(5001)).toBe('5001+');
  });

  it('serves each company a site: home page with JSON-LD Organization and visible facts, about and team pages, profiles', async () => {
    const c = world.companies.find((x) => x.structured && !x.teamDisallowed)!;
    const home = await client.fetch({ url: served.companyUrl(c) });
    expect(home.status).toBe(200);
    const html = home.text();
    const ld = JSON.parse(/<script type="application\/ld\+json">([\s\S]*?)<\/script>/.exec(html)![1]!) as Record<string, unknown>;
    expect(ld).toMatchObject({ '@type': 'Organization', name: c.name, industry: c.industry, foundingDate: String(c.founded), numberOfEmployees: { value: c.employees }, address: { addressLocality: c.city } });
    expect(html).toContain(`<h1>${c.name}</h1>`);
    expect(html).toContain(`${c.employees} employees`);
    const about = await client.fetch({ url: `${served.companyUrl(c)}about.html` });
    expect(about.text()).toContain(`founded in ${c.founded} in ${c.city}`);
    const team = (await client.fetch({ url: `${served.companyUrl(c)}team.html` })).text();
    for (const p of world.people.filter((x) => x.companyId === c.id)) {
      expect(team).toContain(`${p.name}</a> — ${p.title}`);
      const profile = await client.fetch({ url: served.profileUrl(p) });
      expect(profile.status).toBe(200);
      expect(profile.text()).toContain(`"jobTitle":"${p.title}"`);
    }
    // A company without structured data has only meta tags and text.
    const plain = world.companies.find((x) => !x.structured)!;
    const plainHtml = (await client.fetch({ url: served.companyUrl(plain) })).text();
    expect(plainHtml).not.toContain('application/ld+json');
    expect(plainHtml).toContain(`<meta property="og:title" content="${plain.name}">`);
  });

  it("keeps robots.txt: a company that disallows /team is disallowed there for Lore's fetchers, and others are not", async () => {
    const robots = new RobotsPolicy({ client });
    const shut = world.companies.find((c) => c.teamDisallowed)!;
    const open = world.companies.find((c) => !c.teamDisallowed)!;
    expect(await robots.isAllowed(`${served.companyUrl(shut)}team.html`, LORE_AGENT)).toBe(false);
    expect(await robots.isAllowed(served.companyUrl(shut), LORE_AGENT)).toBe(true);
    expect(await robots.isAllowed(`${served.companyUrl(open)}team.html`, LORE_AGENT)).toBe(true);
    expect(served.web.pages(shut.slug).find((p) => p.path === '/team.html')!.robotsAllowed).toBe(false);
  });

  it('is found through the SearXNG endpoint by the words of a list prompt, exactly the companies the truth holds', async () => {
    const truth = matchingCompanies(world, { industry: 'fintech', city: 'Berlin' });
    expect(truth.length).toBeGreaterThanOrEqual(8);
    const results = await searchAll('fintech companies in Berlin');
    const found = new Set(results.map((r) => hostOf(r.url)));
    const quality = listQuality(found, truth.map(companyKey));
    expect(quality).toMatchObject({ precision: 1, recall: 1 });
    // A narrower prompt: SaaS in France — the country's name is on the home page.
    const saas = await searchAll('SaaS companies France');
    expect(listQuality(new Set(saas.map((r) => hostOf(r.url))), matchingCompanies(world, { industry: 'saas', country: 'FR' }).map(companyKey))).toMatchObject({ precision: 1, recall: 1 });
  });

  it('finds people by title through their profiles, measured against the truth', async () => {
    const truth = matchingPeople(world, { title: 'Chief Technology Officer', company: { industry: 'Fintech' } });
    expect(truth.length).toBeGreaterThan(0);
    const results = await searchAll('"Chief Technology Officer" fintech');
    const profiles = results.filter((r) => new URL(r.url).pathname.startsWith('/team/'));
    const found = profiles.map((r) => {
      const p = world.people.find((x) => served.profileUrl(x) === r.url)!;
      return personKey(p);
    });
    const quality = listQuality(found, truth.map(personKey));
    expect(quality.recall).toBe(1);
    expect(quality.precision).toBe(1);
  });

  it('answers criteria from its ground truth, and measures lists with precision and recall', () => {
    const mid = matchingCompanies(world, { industry: 'Fintech', city: 'berlin', employeesMin: 50, employeesMax: 200 });
    expect(mid.length).toBeGreaterThan(0);
    expect(mid.every((c) => c.industry === 'Fintech' && c.city === 'Berlin' && c.employees >= 50 && c.employees <= 200)).toBe(true);
    expect(matching(world, { kind: 'company', country: 'DE' })).toEqual(matching(world, { kind: 'company', country: 'Germany' }));
    const ctos = matching(world, { kind: 'person', seniority: 'c_level', department: 'Engineering' });
    expect(ctos.length).toBeGreaterThan(0);
    const all = mid.map(companyKey);
    const half = listQuality([...all.slice(0, 1), 'elsewhere.localhost'], all);
    expect(half.precision).toBe(0.5);
    expect(half.recall).toBeCloseTo(1 / all.length);
    expect(half.falsePositives).toEqual(['elsewhere.localhost']);
    expect(half.missed).toEqual(all.slice(1));
  });

  it('gives the world as directory records and as CSV', () => {
    const records = worldDirectoryRecords(world, { port: served.web.port });
    expect(records).toHaveLength(800);
    const c = world.companies[0]!;
    expect(records[0]).toEqual({
      id: c.id,
      kind: 'company',
      source: served.companyUrl(c),
      data: expect.objectContaining({ name: c.name, domain: c.domain, website: served.companyUrl(c), industry: c.industry, employees: c.employees, founded: c.founded, location: { city: c.city, region: c.region, country: c.countryCode } }),
    });
    const p = world.people[0]!;
    expect(records[200]).toMatchObject({ kind: 'person', data: { name: p.name, title: p.title, company_domain: p.companyDomain, profile_url: served.profileUrl(p) } });

    const csv = worldCsv(world, 'company');
    const lines = csv.trimEnd().split('\r\n');
    expect(lines).toHaveLength(201);
    expect(lines[0]).toBe('name,domain,website,industry,city,country,employees,founded,description,products');
    expect(lines[1]!.startsWith(`${c.name},${c.domain},http://${c.domain}/,${c.industry},`)).toBe(true);
    expect(worldCsv(world, 'person').trimEnd().split('\r\n')).toHaveLength(601);
  });

  it("seeds a tenant's directory with its records, whose database search agrees with the ground truth", async () => {
    const s = await startAgentsStack();
    try {
      const { tenantId, key } = await s.tenant();
      const records = worldDirectoryRecords(world, { port: served.web.port });
      expect(await upsertDirectoryRecords(s.db, tenantId, records.map(({ kind, data, source }) => ({ kind, data, source })))).toBe(800);
      const res = await s.call('POST', '/company-search/database-search', { authorization: `Bearer ${key}` }, { filter: { industry: 'Fintech', 'location.city': 'Berlin', employees: { $gte: 50, $lte: 200 } }, limit: 100 });
      expect(res.status).toBe(200);
      const found = (res.json.data as Array<{ domain: string }>).map((r) => r.domain);
      const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin', employeesMin: 50, employeesMax: 200 }).map(companyKey);
      expect(truth.length).toBeGreaterThan(0);
      expect(listQuality(found, truth)).toMatchObject({ precision: 1, recall: 1 });
      const people = await s.call('POST', '/people-search/database-search', { authorization: `Bearer ${key}` }, { filter: { seniority: 'c_level', department: 'Engineering' }, limit: 100 });
      expect(people.json.count).toBe(matchingPeople(world, { seniority: 'c_level', department: 'Engineering' }).length);
    } finally {
      await s.close();
    }
  });

  it('leaves the four usual sites as they are without the world', async () => {
    const plain = await new LoopbackWeb({ seed: 1 }).start();
    try {
      const shape = (w: LoopbackWeb) =>
        w.pages().filter((p) => (SITE_NAMES as readonly string[]).includes(p.site)).map((p) => ({ site: p.site, path: p.path, title: p.title, keyword: p.keyword, text: p.text.replaceAll(String(w.port), 'PORT'), lastmod: p.lastmod }));
      expect(shape(served.web)).toEqual(shape(plain));
      expect(plain.pages()).toHaveLength(shape(plain).length);
    } finally {
      await plain.close();
    }
  });
});
