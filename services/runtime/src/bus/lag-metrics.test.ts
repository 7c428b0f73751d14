import { Registry } from 'prom-client';
import type { GroupMembership, GroupMembershipSource } from '../ports/event-bus';
import { CONSUMER_LAG_METRIC, ConsumerLagGauge, consumerLagGauge } from './lag-metrics';

function membership(group: string, topics: string[], state: GroupMembership['state'] = 'member'): GroupMembership {
  return { group, topics, state, partitions: 1, since: '2026-11-28T00:00:00.000Z' };
}

/** A source whose memberships and broker answers the test sets; it records the lag reads asked of it. */
function source(initial: GroupMembership[]) {
  const state = {
    memberships: initial,
    lag: (group: string, topics: string[]): Promise<Record<string, number>> => Promise.resolve(Object.fromEntries(topics.map((t, i) => [t, group.length * 10 + i]))),
    calls: [] as Array<{ group: string; topics: string[] }>,
  };
  const s: GroupMembershipSource = {
    memberships: () => state.memberships,
    groupLag: (group, topics) => {
      state.calls.push({ group, topics });
      return state.lag(group, topics);
    },
  };
  return { s, state };
}

/** The gauge's lines of the registry's text exposition (what a scrape reads). */
async function lagLines(registry: Registry): Promise<string[]> {
  return (await registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith(`${CONSUMER_LAG_METRIC}{`))
    .sort();
}

describe('lore_bus_consumer_lag_messages', () => {
  it('renders each group and topic of the subscriptions in their group, with the registry default labels, asking the broker once per group', async () => {
    const registry = new Registry();
    registry.setDefaultLabels({ service: 'graph-worker' });
    const { s, state } = source([membership('graph-index', ['lore.events', 'lore.memory']), membership('graph-index', ['lore.memory']), membership('joining', ['lore.events'], 'joining')]);
    new ConsumerLagGauge(registry).add(s);
    expect(await lagLines(registry)).toEqual([
      'lore_bus_consumer_lag_messages{topic="lore.events",group="graph-index",service="graph-worker"} 110',
      'lore_bus_consumer_lag_messages{topic="lore.memory",group="graph-index",service="graph-worker"} 111',
    ]);
    // One read for the group, with the union of its subscriptions' topics; none for a group not joined yet.
    expect(state.calls).toEqual([{ group: 'graph-index', topics: ['lore.events', 'lore.memory'] }]);
  });

  it('follows the lag as it changes, drops groups no subscription is in any more, and stops reporting a removed source', async () => {
    const registry = new Registry();
    const gauge = new ConsumerLagGauge(registry);
    const { s, state } = source([membership('a', ['t'])]);
    gauge.add(s);
    let behind = 5;
    state.lag = async () => ({ t: behind });
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="a"} 5']);
    behind = 0;
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="a"} 0']);
    state.memberships = [membership('b', ['t'])];
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="b"} 0']);
    gauge.remove(s);
    expect(await lagLines(registry)).toEqual([]);
  });

  it('renders the last reading when the broker is slow or failing, and nothing once that reading is older than maxAgeMs', async () => {
    const registry = new Registry();
    let clock = 1_000_000;
    const errors: string[] = [];
    const gauge = new ConsumerLagGauge(registry, { waitMs: 20, maxAgeMs: 60_000, now: () => clock, onError: (err, group) => errors.push(`${group}: ${(err as Error).message}`) });
    const { s, state } = source([membership('a', ['t'])]);
    gauge.add(s);
    state.lag = async () => ({ t: 7 });
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="a"} 7']);

    // A broker that does not answer within the scrape's wait: the last reading, and no second read while one is pending.
    let answer: (v: Record<string, number>) => void = () => undefined;
    state.lag = () => new Promise((resolve) => (answer = resolve));
    clock += 10_000;
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="a"} 7']);
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="a"} 7']);
    expect(state.calls).toHaveLength(2);
    answer({ t: 9 });
    await new Promise((r) => setImmediate(r));
    state.lag = () => Promise.reject(new Error('broker unreachable'));
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="a"} 9']);
    expect(errors).toEqual(['a: broker unreachable']);

    clock += 60_001;
    expect(await lagLines(registry)).toEqual([]);
  });

  it('is one gauge per registry, shared by the buses of a process', async () => {
    const registry = new Registry();
    const one = source([membership('a', ['t'])]);
    const two = source([membership('b', ['u'])]);
    consumerLagGauge(registry).add(one.s);
    consumerLagGauge(registry).add(two.s);
    expect(consumerLagGauge(registry)).toBe(consumerLagGauge(registry));
    expect(await lagLines(registry)).toEqual(['lore_bus_consumer_lag_messages{topic="t",group="a"} 10', 'lore_bus_consumer_lag_messages{topic="u",group="b"} 10']);
  });
});
