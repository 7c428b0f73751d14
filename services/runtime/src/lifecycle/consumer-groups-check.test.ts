import type { GroupMembership, GroupMembershipSource } from '../ports/event-bus';
import { consumerGroupsCheck } from './consumer-groups-check';

function membership(group: string, state: GroupMembership['state'], partitions = 1): GroupMembership {
  return { group, topics: ['lore.events'], state, partitions, since: '2026-11-24T00:00:00.000Z' };
}

function sourceOf(memberships: GroupMembership[], lag: (group: string) => Promise<Record<string, number>> = async () => ({ 'lore.events': 3 })) {
  const calls: string[] = [];
  const source: GroupMembershipSource = {
    memberships: () => memberships,
    groupLag: async (group) => {
      calls.push(group);
      return lag(group);
    },
  };
  return { source, calls };
}

describe('consumerGroupsCheck', () => {
  it('is ready when every subscription is a member (an idle one too) or rebalancing, and reports the lag as information', async () => {
    const { source } = sourceOf([membership('a', 'member'), membership('b', 'member', 0), membership('c', 'rebalancing')]);
    const r = await consumerGroupsCheck(source)();
    expect(r.ok).toBe(true);
    expect(r.details).toEqual({
      groups: [
        expect.objectContaining({ group: 'a', state: 'member', partitions: 1, lag: { 'lore.events': 3 } }),
        expect.objectContaining({ group: 'b', state: 'member', partitions: 0, lag: { 'lore.events': 3 } }),
        expect.objectContaining({ group: 'c', state: 'rebalancing', lag: { 'lore.events': 3 } }),
      ],
    });
  });

  it.each(['joining', 'restarting', 'crashed', 'stopped'] as const)('is not ready while one subscription is %s', async (state) => {
    const { source } = sourceOf([membership('a', 'member'), membership('b', state)]);
    const r = await consumerGroupsCheck(source)();
    expect(r.ok).toBe(false);
    expect(r.details).toEqual({ groups: [expect.objectContaining({ group: 'a' }), expect.objectContaining({ group: 'b', state })] });
  });

  it('is not ready without any subscription: a worker always has some', async () => {
    expect((await consumerGroupsCheck(sourceOf([]).source)()).ok).toBe(false);
  });

  it('asks the broker for lag at most once per cache period, and a lag failure does not fail readiness', async () => {
    let t = 0;
    const { source, calls } = sourceOf([membership('a', 'member')], async () => {
      throw new Error('coordinator not available');
    });
    const check = consumerGroupsCheck(source, { lagCacheMs: 10_000, now: () => t });
    const first = await check();
    expect(first).toEqual({ ok: true, details: { groups: [expect.objectContaining({ lag_error: 'coordinator not available' })] } });
    t = 9_999;
    await check();
    expect(calls).toEqual(['a']);
    t = 10_000;
    await check();
    expect(calls).toEqual(['a', 'a']);
  });

  it('waits a bounded time for a lag reading, then answers without it', async () => {
    const { source } = sourceOf([membership('a', 'member')], () => new Promise(() => undefined));
    const r = await consumerGroupsCheck(source, { lagWaitMs: 10 })();
    expect(r.ok).toBe(true);
    expect(r.details).toEqual({ groups: [expect.not.objectContaining({ lag: expect.anything() })] });
  });
});
