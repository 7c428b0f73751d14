import { Counter, type Registry } from 'prom-client';

export interface BusMetrics {
  published: Counter<'topic'>;
  consumed: Counter<'topic'>;
  handlerFailures: Counter<'topic'>;
}

/**
 * The bus counters, labelled by topic only (topic names are a closed set from contracts). Registering twice on one
 * registry (two buses in one process, as in embedded mode) returns the counters already there.
 */
export function busMetrics(registry?: Registry): BusMetrics {
  const counter = (name: string, help: string): Counter<'topic'> => {
    const existing = registry?.getSingleMetric(name);
    if (existing) return existing as Counter<'topic'>;
    return new Counter({ name, help, labelNames: ['topic'] as const, registers: registry ? [registry] : [] });
  };
  return {
    published: counter('lore_bus_messages_published_total', 'Messages the broker acknowledged, by topic'),
    consumed: counter('lore_bus_messages_consumed_total', 'Messages whose handler resolved, by topic'),
    handlerFailures: counter('lore_bus_handler_failures_total', 'Handler attempts that threw (each is retried), by topic'),
  };
}
