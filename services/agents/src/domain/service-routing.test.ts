import { routeByRules, serviceUrl, type RouteCategory, type ServiceName } from './service-routing';

const cases: Array<[prompt: string, name: ServiceName, category: RouteCategory]> = [
  ['find 50 SaaS companies in France', 'list_builder', 'company_search'],
  ['Find fintech companies in Berlin with 50-200 employees', 'list_builder', 'company_search'],
  ['Please build me a list of logistics startups in Spain', 'list_builder', 'company_search'],
  ['Can you give me 20 cybersecurity firms in London?', 'list_builder', 'company_search'],
  ['I want 100 healthcare companies founded after 2015', 'list_builder', 'company_search'],
  ['CTOs of fintech companies in Berlin', 'list_builder', 'people_search'],
  ['find the CTOs of fintech companies in Berlin', 'list_builder', 'people_search'],
  ['Get me 30 VPs of Sales at SaaS companies in the US', 'list_builder', 'people_search'],
  ['robotics companies in Munich', 'list_builder', 'company_search'],
  ['marketing managers in Paris', 'list_builder', 'people_search'],
  ['What is the market size of European fintech?', 'ai_search', 'research'],
  ['how do solid-state batteries work', 'ai_search', 'research'],
  ['Who founded the company that makes the Bavex Pay wallet', 'ai_search', 'research'],
  ['Is there a trend toward insurtech consolidation?', 'ai_search', 'research'],
  ['the history of the printing press', 'ai_search', 'research'],
  ['find the capital of Australia', 'ai_search', 'research'],
  ['Analyze this list', 'analyze', 'list_analysis'],
  ['compare the companies in my list by employee count', 'analyze', 'list_analysis'],
  ['Could you summarize the results by country', 'analyze', 'list_analysis'],
  ['give me insights on this list and its distribution by industry', 'analyze', 'list_analysis'],
  ['Improve my list', 'optimize', 'list_optimization'],
  ['please refine the criteria to companies with more than 100 employees', 'optimize', 'list_optimization'],
  ['optimize the search for better results', 'optimize', 'list_optimization'],
  ['this list needs to be better, narrower please', 'optimize', 'list_optimization'],
];

describe('service routing by rules', () => {
  it.each(cases)('routes %j to %s (%s)', (prompt, name, category) => {
    const d = routeByRules(prompt);
    expect({ name: d.name, category: d.category }).toEqual({ name, category });
    expect(d.url).toBe(serviceUrl(name, category));
    expect(d.reasoning.length).toBeGreaterThan(20);
  });

  it('is deterministic and ignores case, spacing and politeness', () => {
    const a = routeByRules('find 50 SaaS companies in France');
    expect(routeByRules('  Please,   FIND 50 saas companies IN france ')).toEqual({ ...a, reasoning: expect.any(String) });
    expect(routeByRules('find 50 SaaS companies in France')).toEqual(a);
  });

  it('gives each service the route a client calls next', () => {
    expect(routeByRules('find 50 SaaS companies in France').url).toBe('/api/workflow/start');
    expect(routeByRules('find marketing managers at SaaS companies').url).toBe('/api/workflow/people/start');
    expect(routeByRules('What is a unicorn?').url).toBe('/research/start');
    expect(routeByRules('improve my list').url).toBe('/api/workflow/continue');
  });

  it('reads only the first 4,000 characters of a very long prompt', () => {
    const long = `find 50 SaaS companies in France ${'and more words '.repeat(10_000)}`;
    const started = performance.now();
    expect(routeByRules(long).name).toBe('list_builder');
    expect(performance.now() - started).toBeLessThan(500);
  });
});
