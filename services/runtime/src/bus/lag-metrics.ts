import { Gauge, type Registry } from 'prom-client';
import type { GroupMembership, GroupMembershipSource } from '../ports/event-bus';

export const CONSUMER_LAG_METRIC = 'lore_bus_consumer_lag_messages';

/** States in which a subscription is in its group, so its group's committed offsets mean something. */
const IN_GROUP: ReadonlySet<GroupMembership['state']> = new Set(['member', 'rebalancing']);

export interface ConsumerLagOptions {
  /** How long one scrape waits for fresh readings before rendering the last ones. Default 2 s. */
  waitMs?: number;
  /** A reading older than this is not rendered (the broker has not answered since): the series goes away. Default 2 min. */
  maxAgeMs?: number;
  /** Called when the broker could not answer a reading (the series keeps its last reading until `maxAgeMs`). */
  onError?: (err: unknown, group: string) => void;
  now?: () => number;
}

interface Reading {
  at: number;
  lag?: Record<string, number>;
  pending?: Promise<void>;
}

/**
 * `lore_bus_consumer_lag_messages{topic, group}`: the messages each topic holds beyond the committed offsets of
 * each consumer group a subscription of this process is in, read from the broker when the registry is collected
 * (a Prometheus scrape). Every member of a group reports the group's whole lag, so the series of a group's
 * replicas agree and a query takes their `max`. A scrape waits a bounded time for the broker, then renders the
 * last readings; a group whose last reading is older than `maxAgeMs` has no series until the broker answers again.
 * Logical topic and group names (without the install's prefix), as the bus counters have.
 */
export class ConsumerLagGauge {
  private readonly sources = new Map<GroupMembershipSource, Map<string, Reading>>();
  private readonly waitMs: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(
    registry: Registry,
    private readonly options: ConsumerLagOptions = {},
  ) {
    this.waitMs = options.waitMs ?? 2_000;
    this.maxAgeMs = options.maxAgeMs ?? 120_000;
    this.now = options.now ?? Date.now;
    const read = () => this.read();
    new Gauge({
      name: CONSUMER_LAG_METRIC,
      help: 'Messages a topic holds beyond the committed offsets of a consumer group this process is in, by topic and consumer group (read from the broker at scrape)',
      labelNames: ['topic', 'group'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const { group, topic, value } of await read()) this.set({ topic, group }, value);
      },
    });
  }

  /** Reports the groups of `source`'s subscriptions from now on. */
  add(source: GroupMembershipSource): void {
    if (!this.sources.has(source)) this.sources.set(source, new Map());
  }

  /** Stops reporting `source` (a closed bus). */
  remove(source: GroupMembershipSource): void {
    this.sources.delete(source);
  }

  /** The readings a collect renders: refreshed within `waitMs`, else the last ones younger than `maxAgeMs`. */
  async read(): Promise<Array<{ group: string; topic: string; value: number }>> {
    const wanted: Array<{ readings: Map<string, Reading>; group: string }> = [];
    const refreshing: Promise<void>[] = [];
    for (const [source, readings] of this.sources) {
      const groups = new Map<string, Set<string>>();
      for (const m of source.memberships()) {
        if (!IN_GROUP.has(m.state)) continue;
        const topics = groups.get(m.group) ?? new Set<string>();
        for (const t of m.topics) topics.add(t);
        groups.set(m.group, topics);
      }
      // Groups no subscription is in any more are forgotten.
      for (const group of readings.keys()) if (!groups.has(group)) readings.delete(group);
      for (const [group, topics] of groups) {
        const reading = readings.get(group) ?? { at: -Infinity };
        readings.set(group, reading);
        reading.pending ??= source.groupLag(group, [...topics]).then(
          (lag) => {
            Object.assign(reading, { lag, at: this.now(), pending: undefined });
          },
          (err: unknown) => {
            reading.pending = undefined;
            this.options.onError?.(err, group);
          },
        );
        refreshing.push(reading.pending);
        wanted.push({ readings, group });
      }
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(refreshing), new Promise((resolve) => (timer = setTimeout(resolve, this.waitMs)))]);
    clearTimeout(timer);
    const out: Array<{ group: string; topic: string; value: number }> = [];
    for (const { readings, group } of wanted) {
      const reading = readings.get(group);
      if (!reading?.lag || this.now() - reading.at > this.maxAgeMs) continue;
      for (const [topic, value] of Object.entries(reading.lag)) out.push({ group, topic, value });
    }
    return out;
  }
}

const gauges = new WeakMap<Registry, ConsumerLagGauge>();

/** The consumer lag gauge of `registry`, registered on first use (several buses of one process share it). */
export function consumerLagGauge(registry: Registry, options?: ConsumerLagOptions): ConsumerLagGauge {
  let gauge = gauges.get(registry);
  if (!gauge) gauges.set(registry, (gauge = new ConsumerLagGauge(registry, options)));
  return gauge;
}
