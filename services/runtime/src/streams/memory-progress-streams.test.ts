import { describeProgressStreamsContract } from './progress-streams.contract';
import { MemoryProgressStreams } from './memory-progress-streams';

describeProgressStreamsContract('MemoryProgressStreams', async () => new MemoryProgressStreams());

describe('MemoryProgressStreams: expiry without reads', () => {
  afterEach(() => jest.restoreAllMocks());

  it('sweeps streams nobody reads again once their ttl has passed', async () => {
    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const streams = new MemoryProgressStreams();
    for (let i = 0; i < 500; i++) await streams.append(`run:${i}`, { kind: 'progress' }, { ttlMs: 5_000 });
    await streams.append('kept', { kind: 'progress' });
    expect(streams.size).toBe(501);
    // Inside the sweep's interval nothing is swept yet; past it, the next append drops every expired stream.
    now += 10_000;
    await streams.append('other', { kind: 'progress' }, { ttlMs: 5_000 });
    expect(streams.size).toBe(502);
    now += MemoryProgressStreams.SWEEP_EVERY_MS;
    await streams.append('later', { kind: 'progress' }, { ttlMs: 5_000 });
    expect(streams.size).toBe(2);
    expect(await streams.list('')).toEqual(['kept', 'later']);
    await streams.close();
  });

  it('keeps a waiter on an expired stream, and wakes it with the next append', async () => {
    let now = 2_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const streams = new MemoryProgressStreams();
    const first = await streams.append('run', { n: '1' }, { ttlMs: 1_000 });
    const waiting = streams.waitFor('run', first, 30_000);
    now += 1_000 + MemoryProgressStreams.SWEEP_EVERY_MS;
    expect(await streams.describe('run')).toBeNull();
    await streams.append('other', { n: 'x' });
    const second = await streams.append('run', { n: '2' });
    expect((await waiting).map((e) => [e.id, e.fields.n])).toEqual([[second, '2']]);
    await streams.close();
  });
});
