import { useEmbedded } from '../support/embedded';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld, type WorldCompany } from '../support/agents-world';
import type { Json } from './embedded-client';

jest.setTimeout(180_000);

/**
 * Spec 3's utility routes in embedded mode (`npm start`), through the embedded gateway with the development key:
 * health, service routing (the rule decides: the embedded extractive model is not asked) and company overviews read
 * from the test world's loopback sites (LORE_AGENTS_ALLOW_LOOPBACK, as a developer's machine would set it), and the
 * overview's HTML rendering with every value escaped.
 */
describe('utility routes in embedded mode', () => {
  const embedded = useEmbedded('agents-utility-embedded', { LORE_AGENTS_ALLOW_LOOPBACK: 'true' });
  const call = embedded.call;
  const world = generateAgentsWorld(3, { companies: 20 });
  let served: ServedAgentsWorld;
  beforeAll(async () => {
    served = await serveAgentsWorld(world);
  });
  afterAll(async () => {
    await served?.close();
  });
  const staff = (c: WorldCompany) => world.people.filter((p) => p.companyId === c.id).map((p) => ({ name: p.name, title: p.title }));

  it('answers health and describes itself without a credential', async () => {
    const health = await fetch(`${embedded.lore.url}/api/health`);
    expect(health.status).toBe(200);
    const h = (await health.json()) as Json;
    expect(h).toEqual({ status: 'healthy', timestamp: expect.any(String), version: '1.0.0', environment: expect.any(String) });
    const root = await fetch(`${embedded.lore.url}/`);
    expect(await root.json()).toEqual({ name: 'Lore agents API', version: '1.0.0', environment: h.environment, docs_url: '/api/agents/openapi.json', health_url: '/api/health' });
    expect(await (await fetch(`${embedded.lore.url}/api/service-routing/health`)).json()).toEqual({ status: 'healthy', router: 'rules' });
  });

  it('routes a prompt of each kind to its service and route, and refuses an empty prompt', async () => {
    const route = async (prompt: string) => {
      const res = await call('POST', '/api/service-routing/route', { prompt });
      expect(res.status).toBe(200);
      return res.json;
    };
    expect(await route('find 50 SaaS companies in France')).toEqual({ name: 'list_builder', category: 'company_search', url: '/api/workflow/start', reasoning: expect.stringContaining('companies'), success: true });
    expect(await route('Find the CTOs of fintech companies in Berlin')).toMatchObject({ name: 'list_builder', category: 'people_search', url: '/api/workflow/people/start', success: true });
    expect(await route('What is the market size of European fintech?')).toMatchObject({ name: 'ai_search', category: 'research', url: '/research/start', success: true });
    expect(await route('Analyze this list')).toMatchObject({ name: 'analyze', category: 'list_analysis', url: '/research/start', success: true });
    expect(await route('please refine my list to companies with more than 100 employees')).toMatchObject({ name: 'optimize', category: 'list_optimization', url: '/api/workflow/continue', success: true });
    for (const prompt of ['', '  \n\t ']) {
      const empty = await call('POST', '/api/service-routing/route', { prompt });
      expect(empty.status).toBe(422);
      expect(empty.json).toEqual({ detail: [{ loc: ['body', 'prompt'], msg: 'prompt is empty', type: 'value_error' }] });
    }
    const anonymous = await fetch(`${embedded.lore.url}/api/service-routing/route`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'find 50 SaaS companies in France' }) });
    expect(anonymous.status).toBe(401);
  });

  it('reads a company overview from its loopback site: structured data, plain text, and the team page for key people', async () => {
    for (const c of [world.companies.find((x) => x.structured && !x.teamDisallowed)!, world.companies.find((x) => !x.structured && !x.teamDisallowed)!]) {
      const res = await call('POST', '/api/company/companyOverview', { companyUrl: served.companyUrl(c), companyName: 'ignored when the site names itself' });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        company_name: c.name,
        website: served.companyUrl(c),
        description: c.description,
        industry: c.industry,
        headquarters: `${c.city}, ${c.country}`,
        founded: String(c.founded),
        products: c.products,
        key_people: staff(c),
      });
      expect(served.web.requestsTo(c.slug, '/team.html')).toHaveLength(1);
      expect(served.web.requestsTo(c.slug, '/robots.txt').length).toBeGreaterThanOrEqual(1);
    }
    // Addresses Lore never reads, loopback switch or not.
    const metadata = await call('POST', '/api/company/companyOverview', { companyUrl: 'http://169.254.169.254/latest/meta-data/' });
    expect(metadata.status).toBe(400);
    expect(metadata.json).toEqual({ detail: expect.stringContaining('Lore does not read this address') });
    const missing = await call('POST', '/api/company/companyOverview', { companyName: 'Acme' });
    expect(missing.status).toBe(422);
    expect(missing.json).toEqual({ detail: [{ loc: ['body', 'companyUrl'], msg: 'Field required', type: 'missing' }] });
  });

  it('renders an overview as HTML with every value escaped: a <script> in a value comes out inert', async () => {
    const c = world.companies.find((x) => x.structured && !x.teamDisallowed)!;
    const data = (await call('POST', '/api/company/companyOverview', { companyUrl: served.companyUrl(c) })).json;
    const res = await call('POST', '/api/company/companyOverview/html', { companyData: data });
    expect(res.status).toBe(200);
    expect(res.json.success).toBe(true);
    expect(res.json.html).toContain(`<h1>${c.name}</h1>`);
    for (const p of c.products) expect(res.json.html).toContain(`<li>${p}</li>`);

    const hostile = await call('POST', '/api/company/companyOverview/html', {
      companyData: { company_name: '<script>alert(1)</script>', website: 'javascript:alert(1)', description: '"><img src=x onerror=alert(1)>', industry: "Tom & Jerry's", key_people: [{ name: '<svg onload=alert(1)>', title: 'CEO' }] },
    });
    expect(hostile.status).toBe(200);
    const html = hostile.json.html as string;
    expect(html).not.toMatch(/<script|<img|<svg|href="javascript/i);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&lt;svg onload=alert(1)&gt;');
    expect(html).toMatch(/Tom &amp; Jerry(&#39;|&#x27;)s/);
    const invalid = await call('POST', '/api/company/companyOverview/html', { companyData: 'text' });
    expect(invalid.status).toBe(422);
  });
});
