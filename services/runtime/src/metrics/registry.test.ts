import { Counter, Histogram, Registry } from 'prom-client';
import { counterOn, createHttpMetrics, createMetricsRegistry, histogramOn, HTTP_DURATION_BUCKETS } from './registry';

/** The sample lines of an exposition, each with its labels sorted (label order carries no meaning). */
function samples(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([^{ ]+)(?:\{(.*)\})? (.+)$/.exec(l);
      if (!m) throw new Error(`not a sample line: ${l}`);
      const labels = (m[2] ?? '').match(/[a-z_]+="(?:[^"\\]|\\.)*"/g) ?? [];
      return `${m[1]}{${labels.sort().join(',')}} ${m[3]}`;
    })
    .sort();
}

const OBSERVATIONS: Array<[string, string, number, number]> = [
  ['GET', '/items/:id', 200, 0.0004],
  ['GET', '/items/:id', 200, 0.003],
  ['GET', '/items/:id', 200, 0.0025], // on a bound: counted in that bucket
  ['GET', '/items/:id', 404, 0.02],
  ['POST', '/items', 201, 0.3],
  ['POST', '/items', 201, 42], // past the last bound: +Inf only
  ['GET', 'unmatched', 404, 0.0001],
  ['GET', '/odd/"quoted"\\path', 200, 0.001],
];

describe('HTTP RED metrics', () => {
  it("render exactly what prom-client's Histogram and Counter render for the same requests", async () => {
    const registry = createMetricsRegistry('svc', { defaultMetrics: false });
    const http = createHttpMetrics(registry);
    const reference = new Registry();
    reference.setDefaultLabels({ service: 'svc' });
    const labelNames = ['method', 'route', 'status'] as const;
    const histogram = new Histogram({ name: 'lore_http_request_duration_seconds', help: 'HTTP request latency by route template and status', labelNames, buckets: [...HTTP_DURATION_BUCKETS], registers: [reference] });
    const counter = new Counter({ name: 'lore_http_requests_total', help: 'HTTP requests by route template and status', labelNames, registers: [reference] });
    for (const [method, route, status, seconds] of OBSERVATIONS) {
      http.observe(method, route, status, seconds);
      histogram.observe({ method, route, status: String(status) }, seconds);
      counter.inc({ method, route, status: String(status) });
    }
    const mine = await registry.metrics();
    expect(samples(mine)).toEqual(samples(await reference.metrics()));
    expect(mine).toContain('# TYPE lore_http_request_duration_seconds histogram');
    expect(mine).toContain('# TYPE lore_http_requests_total counter');
    expect(mine).toContain('lore_http_requests_total{method="POST",route="/items",status="201",service="svc"} 2');
    expect(samples(mine)).toContain('lore_http_request_duration_seconds_bucket{le="0.0025",method="GET",route="/items/:id",service="svc",status="200"} 2');
  });

  it('are shared by every app of a registry, and reset with it', async () => {
    const registry = createMetricsRegistry('svc', { defaultMetrics: false });
    const a = createHttpMetrics(registry);
    const b = createHttpMetrics(registry);
    expect(b).toBe(a);
    a.observe('GET', '/x', 200, 0.01);
    b.observe('GET', '/x', 200, 0.01);
    expect(await registry.metrics()).toContain('lore_http_requests_total{method="GET",route="/x",status="200",service="svc"} 2');
    const json = await registry.getMetricsAsJSON();
    expect(json.find((m) => m.name === 'lore_http_requests_total')?.values).toEqual([{ labels: { method: 'GET', route: '/x', status: '200', service: 'svc' }, value: 2 }]);
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('route="/x"');
  });
});

describe('metrics shared on a registry', () => {
  it('are made once per name: a second caller gets the one registered first', () => {
    const registry = new Registry();
    const first = counterOn(registry, { name: 'lore_test_things_total', help: 'things', labelNames: ['kind'] });
    expect(counterOn(registry, { name: 'lore_test_things_total', help: 'things', labelNames: ['kind'] })).toBe(first);
    const latency = histogramOn(registry, { name: 'lore_test_latency_seconds', help: 'latency', buckets: [0.1, 1] });
    expect(histogramOn(registry, { name: 'lore_test_latency_seconds', help: 'latency', buckets: [0.1, 1] })).toBe(latency);
    expect(registry.getMetricsAsArray().map((m) => m.name).sort()).toEqual(['lore_test_latency_seconds', 'lore_test_things_total']);
  });

  it('without a registry are registered nowhere', async () => {
    const counter = counterOn(undefined, { name: 'lore_test_loose_total', help: 'loose' });
    counter.inc();
    expect((await counter.get()).values[0]!.value).toBe(1);
    expect(counterOn(undefined, { name: 'lore_test_loose_total', help: 'loose' })).not.toBe(counter);
  });
});
