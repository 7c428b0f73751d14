import type { Counter, Registry } from 'prom-client';
import { counterOn } from '../metrics/registry';

export interface BusMetrics {
  published: Counter<'topic'>;
  consumed: Counter<'topic'>;
  handlerFailures: Counter<'topic'>;
  deadLetters: Counter<'topic' | 'group'>;
  uncleanStarts: Counter<'topic' | 'group'>;
  consumerReplacements: Counter<'group'>;
}

/**
 * The bus counters, labelled by topic (topic names are a closed set from contracts) and, for dead letters, by
 * consumer group (a closed set per install: each process names its groups in code or config). Both are logical
 * names, without the install's prefix. Registering twice on one registry (two buses in one process, as in embedded
 * mode) returns the counters already there.
 */
export function busMetrics(registry?: Registry): BusMetrics {
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> => counterOn(registry, { name, help, labelNames });
  return {
    published: counter('lore_bus_messages_published_total', 'Messages the broker acknowledged, by topic', ['topic'] as const),
    consumed: counter('lore_bus_messages_consumed_total', 'Messages whose handler resolved, by topic', ['topic'] as const),
    handlerFailures: counter('lore_bus_handler_failures_total', 'Handler attempts that threw, by topic', ['topic'] as const),
    deadLetters: counter(
      'lore_bus_dead_letters_total',
      'Messages moved to the dead-letter topic after their handler kept failing (or consumers kept stopping on them), by original topic and consumer group',
      ['topic', 'group'] as const,
    ),
    uncleanStarts: counter(
      'lore_bus_unclean_starts_total',
      'Consumer starts at a message a consumer of the same group stopped on before without a graceful stop (a crash, an out-of-memory kill, a hang), by topic and consumer group',
      ['topic', 'group'] as const,
    ),
    consumerReplacements: counter(
      'lore_bus_consumer_replacements_total',
      'Consumers the Kafka bus replaced with a new one after they stayed out of their group past the rejoin bound (a restart that hung, a final crash), by consumer group',
      ['group'] as const,
    ),
  };
}
