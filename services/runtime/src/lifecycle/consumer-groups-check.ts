import type { GroupMembership, GroupMembershipSource } from '../ports/event-bus';
import type { HealthCheck } from './lifecycle';

export interface ConsumerGroupsCheckOptions {
  /** How long a lag reading is reused before the broker is asked again. Default 10 s. */
  lagCacheMs?: number;
  /** How long one check waits for a fresh lag reading before reporting the last one it has. Default 1 s. */
  lagWaitMs?: number;
  now?: () => number;
}

/** States in which a subscription counts as in its group: a rebalance is routine (every scale-up causes one). */
const IN_GROUP: ReadonlySet<GroupMembership['state']> = new Set(['member', 'rebalancing']);

/**
 * The readiness check of a worker: ready while every subscription of the bus is in its consumer group (a member,
 * with partitions or idle, or rejoining in a rebalance); not ready while one is still joining, restarting after a
 * crash, crashed or stopped. Lag (messages behind the committed offsets) is reported per group and topic as
 * information only: a worker that is behind is still the right place for the work, and failing readiness would
 * not make it catch up (docs/runtime.md, "Readiness"). A process without subscriptions is not ready: a worker
 * always has some.
 */
export function consumerGroupsCheck(source: GroupMembershipSource, options: ConsumerGroupsCheckOptions = {}): HealthCheck {
  const lagCacheMs = options.lagCacheMs ?? 10_000;
  const lagWaitMs = options.lagWaitMs ?? 1_000;
  const now = options.now ?? Date.now;
  const lagByGroup = new Map<string, { at: number; lag?: Record<string, number>; error?: string; pending?: Promise<void> }>();

  const refreshLag = (m: GroupMembership): Promise<void> => {
    const entry = lagByGroup.get(m.group) ?? { at: -Infinity };
    lagByGroup.set(m.group, entry);
    if (entry.pending) return entry.pending;
    if (now() - entry.at < lagCacheMs) return Promise.resolve();
    entry.pending = source
      .groupLag(m.group, m.topics)
      .then(
        (lag) => Object.assign(entry, { lag, error: undefined }),
        (err: unknown) => Object.assign(entry, { error: err instanceof Error ? err.message : String(err) }),
      )
      .then(() => {
        entry.at = now();
        entry.pending = undefined;
      });
    return entry.pending;
  };

  return async () => {
    const memberships = source.memberships();
    const inGroup = memberships.length > 0 && memberships.every((m) => IN_GROUP.has(m.state));
    // Lag is only asked of groups the process is in; a bounded wait, then the last reading (or none yet).
    const refreshing = memberships.filter((m) => IN_GROUP.has(m.state)).map(refreshLag);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(refreshing), new Promise((resolve) => (timer = setTimeout(resolve, lagWaitMs)))]);
    clearTimeout(timer);
    const groups = memberships.map((m) => {
      const lag = lagByGroup.get(m.group);
      return {
        group: m.group,
        state: m.state,
        partitions: m.partitions,
        since: m.since,
        ...(m.error ? { error: m.error } : {}),
        ...(lag?.lag ? { lag: lag.lag } : {}),
        ...(lag?.error ? { lag_error: lag.error } : {}),
      };
    });
    return { ok: inGroup, details: { groups } };
  };
}
