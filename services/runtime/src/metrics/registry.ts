import {
  Counter,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type HistogramConfiguration,
  type MetricValue,
  type MetricValueWithName,
} from 'prom-client';

/** One registry per process; metric names follow `lore_<area>_<thing>_<unit>`. */
export function createMetricsRegistry(service: string, opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'lore_process_' });
  return registry;
}

/**
 * The counter `config.name` of `registry`: the one already there when another part of the process registered it
 * first (embedded mode runs several services on one registry), else a new one registered there. Without a
 * registry, a counter registered nowhere.
 */
export function counterOn<L extends string>(registry: Registry | undefined, config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
  const existing = registry?.getSingleMetric(config.name) as Counter<L> | undefined;
  return existing ?? new Counter<L>({ ...config, registers: registry ? [registry] : [] });
}

/** The histogram `config.name` of `registry`, shared the way `counterOn` shares a counter. */
export function histogramOn<L extends string>(registry: Registry | undefined, config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
  const existing = registry?.getSingleMetric(config.name) as Histogram<L> | undefined;
  return existing ?? new Histogram<L>({ ...config, registers: registry ? [registry] : [] });
}

const DURATION_NAME = 'lore_http_request_duration_seconds';
const TOTAL_NAME = 'lore_http_requests_total';
/** Upper bounds (seconds) of the request duration histogram. */
export const HTTP_DURATION_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type HttpLabels = { method: string; route: string; status: string };

/** One (method, route template, status) series: per-bucket counts (the last one is +Inf), sum and count. */
class HttpSeries {
  readonly counts = new Float64Array(HTTP_DURATION_BUCKETS.length + 1);
  sum = 0;
  count = 0;
  readonly labels: HttpLabels;

  constructor(method: string, route: string, status: number) {
    this.labels = { method, route, status: String(status) };
  }
}

/**
 * The RED metrics of every Koa app of a process: `lore_http_request_duration_seconds` (histogram) and
 * `lore_http_requests_total` (counter), labelled by method, route template and status.
 *
 * Recording is on every request's path, so series are kept here rather than in prom-client's Histogram and
 * Counter (whose every observation validates, hashes and looks up its label set): a series is found through
 * nested maps keyed by the method, route and status values themselves (no label object, no hash string) and
 * updated in place. Both metrics are registered in the prom-client registry as metric objects of their own, so
 * `/metrics` renders them with the registry's default labels exactly as prom-client's types would.
 */
export class HttpMetrics {
  private readonly series = new Map<string, Map<string, Map<number, HttpSeries>>>();

  constructor(readonly registry: Registry) {}

  /** Records one finished request (`seconds` from its start to the end of the kit's middleware). */
  observe(method: string, route: string, status: number, seconds: number): void {
    let routes = this.series.get(method);
    if (routes === undefined) this.series.set(method, (routes = new Map()));
    let statuses = routes.get(route);
    if (statuses === undefined) routes.set(route, (statuses = new Map()));
    let s = statuses.get(status);
    if (s === undefined) statuses.set(status, (s = new HttpSeries(method, route, status)));
    let i = 0;
    while (i < HTTP_DURATION_BUCKETS.length && seconds > HTTP_DURATION_BUCKETS[i]!) i++;
    s.counts[i]! += 1;
    s.sum += seconds;
    s.count += 1;
  }

  *all(): IterableIterator<HttpSeries> {
    for (const routes of this.series.values()) for (const statuses of routes.values()) yield* statuses.values();
  }

  reset(): void {
    this.series.clear();
  }
}

/** The shape of a prom-client metric the registry can render, collect as JSON, reset and merge. */
abstract class HttpMetricView {
  abstract readonly name: string;
  abstract readonly help: string;
  abstract readonly type: 'histogram' | 'counter';
  readonly aggregator = 'sum' as const;

  constructor(readonly http: HttpMetrics) {}

  abstract values(): Array<MetricValue<string> | MetricValueWithName<string>>;

  /** What prom-client's own metric types answer: the registry renders, merges and collects it as JSON. */
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Array<MetricValue<string> | MetricValueWithName<string>> }> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() });
  }

  reset(): void {
    this.http.reset();
  }
}

class DurationView extends HttpMetricView {
  readonly name = DURATION_NAME;
  readonly help = 'HTTP request latency by route template and status';
  readonly type = 'histogram' as const;

  values(): MetricValueWithName<string>[] {
    const out: MetricValueWithName<string>[] = [];
    for (const s of this.http.all()) {
      let cumulative = 0;
      for (let i = 0; i < HTTP_DURATION_BUCKETS.length; i++) {
        cumulative += s.counts[i]!;
        out.push({ metricName: `${DURATION_NAME}_bucket`, labels: { ...s.labels, le: HTTP_DURATION_BUCKETS[i]! }, value: cumulative });
      }
      out.push({ metricName: `${DURATION_NAME}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      out.push({ metricName: `${DURATION_NAME}_sum`, labels: { ...s.labels }, value: s.sum });
      out.push({ metricName: `${DURATION_NAME}_count`, labels: { ...s.labels }, value: s.count });
    }
    return out;
  }
}

class TotalView extends HttpMetricView {
  readonly name = TOTAL_NAME;
  readonly help = 'HTTP requests by route template and status';
  readonly type = 'counter' as const;

  values(): MetricValue<string>[] {
    return Array.from(this.http.all(), (s) => ({ labels: { ...s.labels }, value: s.count }));
  }
}

/**
 * The HTTP RED metrics of `registry`, registered on first use. Several apps of one process (public, admin, ops
 * listeners; the embedded mode's services) share a registry and so share these series.
 */
export function createHttpMetrics(registry: Registry): HttpMetrics {
  const existing = registry.getSingleMetric(DURATION_NAME) as unknown as HttpMetricView | undefined;
  if (existing) return existing.http;
  // Route labels use the matched route template, never the raw path, so label values stay bounded.
  const http = new HttpMetrics(registry);
  registry.registerMetric(new DurationView(http) as never);
  registry.registerMetric(new TotalView(http) as never);
  return http;
}
