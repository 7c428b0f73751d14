import { Registry, collectDefaultMetrics, Histogram, Counter } from 'prom-client';

export interface HttpMetrics {
  registry: Registry;
  requestDuration: Histogram<'method' | 'route' | 'status'>;
  requestsTotal: Counter<'method' | 'route' | 'status'>;
}

/** One registry per process; metric names follow `lore_<area>_<thing>_<unit>`. */
export function createMetricsRegistry(service: string, opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'lore_process_' });
  return registry;
}

export function createHttpMetrics(registry: Registry): HttpMetrics {
  // Several apps of one process (public, admin, ops listeners; the embedded mode's services) share a registry.
  const existingDuration = registry.getSingleMetric('lore_http_request_duration_seconds');
  const existingTotal = registry.getSingleMetric('lore_http_requests_total');
  if (existingDuration && existingTotal) {
    return {
      registry,
      requestDuration: existingDuration as Histogram<'method' | 'route' | 'status'>,
      requestsTotal: existingTotal as Counter<'method' | 'route' | 'status'>,
    };
  }
  // Route labels use the matched route template, never the raw path, so label values stay bounded.
  const requestDuration = new Histogram({
    name: 'lore_http_request_duration_seconds',
    help: 'HTTP request latency by route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const requestsTotal = new Counter({
    name: 'lore_http_requests_total',
    help: 'HTTP requests by route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  return { registry, requestDuration, requestsTotal };
}
