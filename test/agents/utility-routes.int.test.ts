import { OpenAiLanguageModel } from '@lore/ai';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld, type WorldCompany } from '../support/agents-world';
import { LoopbackModel } from '../support/loopback-model';
import { startAgentsStack, type AgentsStack } from './harness';

/**
 * Spec 3's service routing and company overview through the gateway: routing by the rule and by a model (on the
 * loopback model, with the rule as fallback), overviews read from the agents test world's company sites through
 * the guarded client (structured data, meta and text, robots.txt), refusals of addresses Lore does not contact,
 * sites that cannot be read, and the HTML rendering with every value escaped.
 */

const world = generateAgentsWorld(3);
let served: ServedAgentsWorld;
let s: AgentsStack;
let key: string;
/** A second stack: web reads without the loopback switch (as in production), and a language model. */
let strict: AgentsStack;
let strictKey: string;
let model: LoopbackModel;

beforeAll(async () => {
  served = await serveAgentsWorld(world);
  model = await new LoopbackModel().start();
  s = await startAgentsStack({ service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } } });
  key = (await s.tenant()).key;
  strict = await startAgentsStack({ service: { webTargets: { allowLoopback: false, lookup: served.web.lookup }, languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }) } });
  strictKey = (await strict.tenant()).key;
});
afterAll(async () => {
  await s?.close();
  await strict?.close();
  await model?.stop();
  await served?.close();
});

const auth = (k: string) => ({ authorization: `Bearer ${k}` });
const staff = (c: WorldCompany) => world.people.filter((p) => p.companyId === c.id).map((p) => ({ name: p.name, title: p.title }));

describe('service routing', () => {
  it('routes prompts by the rule: list building, questions, analysis, optimisation', async () => {
    const route = async (prompt: string) => {
      const res = await s.call('POST', '/api/service-routing/route', auth(key), { prompt });
      expect(res.status).toBe(200);
      return res.json;
    };
    expect(await route('find 50 SaaS companies in France')).toEqual({ name: 'list_builder', category: 'company_search', url: '/api/workflow/start', reasoning: expect.stringContaining('companies'), success: true });
    expect(await route('Find the CTOs of fintech companies in Berlin')).toMatchObject({ name: 'list_builder', category: 'people_search', url: '/api/workflow/people/start' });
    expect(await route('What is the market size of European fintech?')).toMatchObject({ name: 'ai_search', category: 'research', url: '/research/start' });
    expect(await route('Analyze this list')).toMatchObject({ name: 'analyze', category: 'list_analysis' });
    expect(await route('please refine my list to companies with more than 100 employees')).toMatchObject({ name: 'optimize', category: 'list_optimization', url: '/api/workflow/continue' });
  });

  it('refuses a blank or missing prompt with 422 body (c), and a call without a credential with 401', async () => {
    for (const prompt of ['', '   \n\t ']) {
      const res = await s.call('POST', '/api/service-routing/route', auth(key), { prompt });
      expect(res.status).toBe(422);
      expect(res.json).toEqual({ detail: [{ loc: ['body', 'prompt'], msg: 'prompt is empty', type: 'value_error' }] });
    }
    const missing = await s.call('POST', '/api/service-routing/route', auth(key), {});
    expect(missing.status).toBe(422);
    expect(missing.json).toEqual({ detail: [{ loc: ['body', 'prompt'], msg: expect.any(String), type: 'missing' }] });
    const tooLong = await s.call('POST', '/api/service-routing/route', auth(key), { prompt: 'x'.repeat(20_001) });
    expect(tooLong.status).toBe(422);
    const anonymous = await s.call('POST', '/api/service-routing/route', {}, { prompt: 'find 50 SaaS companies in France' });
    expect(anonymous.status).toBe(401);
  });

  it('lets a read-only key route (routing starts nothing)', async () => {
    const { tenantId } = await s.tenant();
    const readOnly = await s.key(tenantId, { scopes: { access: 'read' } });
    const res = await s.call('POST', '/api/service-routing/route', auth(readOnly), { prompt: 'find 50 SaaS companies in France' });
    expect(res.status).toBe(200);
    expect(res.json.name).toBe('list_builder');
    const html = await s.call('POST', '/api/company/companyOverview/html', auth(readOnly), { companyData: { company_name: 'Acme' } });
    expect(html.status).toBe(200);
    // A write elsewhere is still refused to the same key.
    expect((await s.call('POST', '/company-search/start', auth(readOnly), { prompt: 'find 50 SaaS companies in France' })).status).toBe(403);
  });

  it('reports its health without a credential: rules without a model, model with one', async () => {
    const res = await s.call('GET', '/api/service-routing/health', {});
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'healthy', router: 'rules' });
    expect((await strict.call('GET', '/api/service-routing/health', {})).json).toEqual({ status: 'healthy', router: 'model' });
  });

  it("asks a configured model with a JSON schema, takes its choice with Lore's URL, and falls back to the rule on a bad answer", async () => {
    model.turns.push({ content: JSON.stringify({ name: 'analyze', category: 'list_analysis', reasoning: 'The user wants the list examined.' }) });
    const chosen = await strict.call('POST', '/api/service-routing/route', auth(strictKey), { prompt: 'what stands out in these companies' });
    expect(chosen.status).toBe(200);
    expect(chosen.json).toEqual({ name: 'analyze', category: 'list_analysis', url: '/research/start', reasoning: 'The user wants the list examined.', success: true });
    const asked = model.bodies.at(-1) as unknown as { response_format?: { type: string; json_schema: { schema: { properties: { name: { enum: string[] } } } } } };
    expect(asked.response_format?.type).toBe('json_schema');
    expect(asked.response_format?.json_schema.schema.properties.name.enum).toEqual(['list_builder', 'ai_search', 'analyze', 'optimize']);

    // A service that does not exist (twice: the model port retries once) → the rule decides.
    model.turns.push({ content: JSON.stringify({ name: 'launch_rocket', category: 'research', reasoning: 'x' }) }, { content: 'not json at all' });
    const fallback = await strict.call('POST', '/api/service-routing/route', auth(strictKey), { prompt: 'find 50 SaaS companies in France' });
    expect(fallback.status).toBe(200);
    expect(fallback.json).toMatchObject({ name: 'list_builder', category: 'company_search', url: '/api/workflow/start', reasoning: expect.stringContaining('the rule decided') });

    // A category that does not fit the service is replaced by the service's own.
    model.turns.push({ content: JSON.stringify({ name: 'optimize', category: 'research', reasoning: 'Refine it.' }) });
    const mixed = await strict.call('POST', '/api/service-routing/route', auth(strictKey), { prompt: 'make it better' });
    expect(mixed.json).toMatchObject({ name: 'optimize', category: 'list_optimization', url: '/api/workflow/continue' });
  });
});

describe('company overview', () => {
  const overview = (body: unknown, stack = s, k = key) => stack.call('POST', '/api/company/companyOverview', auth(k), body);

  it("reads a company's site: JSON-LD Organization, and its team page for key people", async () => {
    const c = world.companies.find((x) => x.structured && !x.teamDisallowed)!;
    const res = await overview({ companyUrl: served.companyUrl(c), companyName: 'ignored when the site names itself' });
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
  });

  it('reads a site without structured data from its meta tags and visible text', async () => {
    const c = world.companies.find((x) => !x.structured && !x.teamDisallowed)!;
    const res = await overview({ companyUrl: served.companyUrl(c) });
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
  });

  it("honours robots.txt: a site that disallows /team is not read there, and its people come from structured data only", async () => {
    const c = world.companies.find((x) => x.teamDisallowed && x.structured)!;
    served.web.clearRequests();
    const res = await overview({ companyUrl: served.companyUrl(c) });
    expect(res.status).toBe(200);
    expect(res.json.key_people).toEqual([staff(c)[0]]);
    expect(served.web.requestsTo(c.slug, '/team.html')).toHaveLength(0);
    expect(served.web.requestsTo(c.slug, '/robots.txt').length).toBeGreaterThanOrEqual(1);
  });

  it('refuses private, link-local and metadata addresses with 400, and loopback without the switch, before any request', async () => {
    for (const companyUrl of ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/admin', 'http://[fd00::1]/', 'ftp://example.com/']) {
      const res = await overview({ companyUrl });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ detail: expect.stringContaining('Lore does not read this address') });
    }
    const c = world.companies[0]!;
    served.web.clearRequests();
    for (const companyUrl of [served.companyUrl(c), `${served.web.url}/`, `http://localhost:${served.web.port}/`]) {
      const res = await overview({ companyUrl }, strict, strictKey);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ detail: expect.stringContaining('Lore does not read this address') });
    }
    expect(served.web.requests).toHaveLength(0);
  });

  it('answers 502 with a clear message for a site that cannot be read', async () => {
    const cases: Array<[string, RegExp]> = [
      ['http://nowhere-at-all.invalid/', /could not be reached/],
      // A localhost name is this machine (RFC 6761): the loopback web serves no such site and says so.
      [`http://nowhere-at-all.localhost:${served.web.port}/`, /answered 421/],
      ['http://127.0.0.1:1/', /robots\.txt could not be fetched/],
      [served.web.special.redirectMetadata, /redirects to an address Lore does not contact/],
      [`${served.web.siteUrl('alpha')}/docs/missing.html`, /answered 404/],
      [served.web.special.pdf, /not an HTML page/],
      // delta's robots.txt answers 500: RFC 9309 says the whole site is disallowed.
      [`${served.web.siteUrl('delta')}/`, /robots\.txt could not be fetched/],
      [served.web.special.disallowed, /robots\.txt does not allow/],
    ];
    for (const [companyUrl, message] of cases) {
      const res = await overview({ companyUrl });
      expect({ companyUrl, status: res.status }).toEqual({ companyUrl, status: 502 });
      expect(res.json).toEqual({ detail: expect.stringMatching(message) });
    }
    const c = world.companies[1]!;
    served.web.outage(served.companyUrl(c), 503);
    try {
      const res = await overview({ companyUrl: served.companyUrl(c) });
      expect(res.status).toBe(502);
      expect(res.json.detail).toMatch(/answered 503/);
    } finally {
      served.web.restore(served.companyUrl(c));
    }
  });

  it('refuses a missing, empty or malformed companyUrl with 422 body (c)', async () => {
    const missing = await overview({ companyName: 'Acme' });
    expect(missing.status).toBe(422);
    expect(missing.json).toEqual({ detail: [{ loc: ['body', 'companyUrl'], msg: 'Field required', type: 'missing' }] });
    const empty = await overview({ companyUrl: ' ' });
    expect(empty.json).toEqual({ detail: [{ loc: ['body', 'companyUrl'], msg: 'companyUrl is empty', type: 'value_error' }] });
    // A value that is too long or not a string says so (not "Field required", which only a missing field is).
    const long = await overview({ companyUrl: `https://example.com/${'a'.repeat(3000)}` });
    expect(long.json).toEqual({ detail: [{ loc: ['body', 'companyUrl'], msg: 'companyUrl is longer than 2,048 characters', type: 'value_error' }] });
    const notString = await overview({ companyUrl: 42 });
    expect(notString.json).toEqual({ detail: [{ loc: ['body', 'companyUrl'], msg: 'companyUrl must be a string', type: expect.any(String) }] });
    const bad = await overview({ companyUrl: 'http://' });
    expect(bad.status).toBe(422);
    expect(bad.json).toEqual({ detail: [{ loc: ['body', 'companyUrl'], msg: 'companyUrl is not a URL', type: 'value_error' }] });
    expect((await overview({ companyUrl: served.companyUrl(world.companies[0]!) }, s, '')).status).toBe(401);
  });

  it('renders an overview as HTML with every value escaped: a <script> comes out inert', async () => {
    const c = world.companies.find((x) => x.structured && !x.teamDisallowed)!;
    const data = (await overview({ companyUrl: served.companyUrl(c) })).json;
    const res = await s.call('POST', '/api/company/companyOverview/html', auth(key), { companyData: data });
    expect(res.status).toBe(200);
    expect(res.json.success).toBe(true);
    expect(res.json.html).toContain(`<h1>${c.name}</h1>`);
    expect(res.json.html).toContain(`<li>${c.products[0]}</li>`);

    const hostile = await s.call('POST', '/api/company/companyOverview/html', auth(key), {
      companyData: { company_name: '<script>alert(1)</script>', website: 'javascript:alert(1)', description: '"><img src=x onerror=alert(1)>', key_people: [{ name: '<svg onload=alert(1)>', title: 'CEO' }] },
    });
    expect(hostile.status).toBe(200);
    const html = hostile.json.html as string;
    expect(html).not.toMatch(/<script|<img|<svg|href="javascript/i);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');

    const invalid = await s.call('POST', '/api/company/companyOverview/html', auth(key), { companyData: 'text' });
    expect(invalid.status).toBe(422);
    expect(invalid.json).toEqual({ detail: [{ loc: ['body', 'companyData'], msg: expect.any(String), type: expect.any(String) }] });
  });
});

describe('answers no route gave', () => {
  it('come in the path\'s error family: {detail} under /api/, spec 3\'s envelope elsewhere', async () => {
    const direct = async (path: string) => {
      const r = await fetch(`${s.agentsServer.url}${path}`);
      return { status: r.status, json: (await r.json()) as unknown };
    };
    expect(await direct('/api/no-such-route')).toEqual({ status: 404, json: { detail: 'route not found' } });
    expect(await direct('/company-search/no/such/route')).toEqual({ status: 404, json: { status_code: 404, message: 'route not found', errors: [], data: null } });
  });
});
