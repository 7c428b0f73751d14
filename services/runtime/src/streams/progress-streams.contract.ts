/**
 * The `ProgressStreams` contract: one suite, run against MemoryProgressStreams (unit tests) and RedisProgressStreams
 * on a real Redis (test/runtime). Not a test file itself: each adapter's test calls `describeProgressStreamsContract`.
 */
import { randomBytes } from 'node:crypto';
import { compareEntryIds, type ProgressStreams } from '../ports/progress-streams';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function describeProgressStreamsContract(name: string, open: () => Promise<ProgressStreams>): void {
  describe(`ProgressStreams contract: ${name}`, () => {
    let streams: ProgressStreams;
    const runId = randomBytes(4).toString('hex');
    // Keys unique per run, so a shared Redis holds no state from an earlier one.
    const k = (s: string) => `contract:${runId}:${s}`;

    beforeAll(async () => {
      streams = await open();
    });
    afterAll(async () => {
      await streams?.close();
    });

    it('appends entries with growing ids and reads them back from an id', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await streams.append(k('a'), { n: String(i), type: 'progress' }));
      for (let i = 1; i < ids.length; i++) expect(compareEntryIds(ids[i]!, ids[i - 1]!)).toBeGreaterThan(0);
      const all = await streams.read(k('a'), '0-0');
      expect(all.map((e) => e.fields.n)).toEqual(['0', '1', '2', '3', '4']);
      expect(all.map((e) => e.id)).toEqual(ids);
      expect(all[0]!.fields).toEqual({ n: '0', type: 'progress' });
      const after = await streams.read(k('a'), ids[2]!);
      expect(after.map((e) => e.fields.n)).toEqual(['3', '4']);
      expect((await streams.read(k('a'), '0-0', 2)).map((e) => e.fields.n)).toEqual(['0', '1']);
      expect(await streams.read(k('a'), ids[4]!)).toEqual([]);
      expect(await streams.read(k('never'), '0-0')).toEqual([]);
    });

    it('refuses an id that is not <ms>-<seq>', async () => {
      await expect(streams.read(k('a'), 'latest')).rejects.toThrow();
      await expect(streams.waitFor(k('a'), '12', 10)).rejects.toThrow();
    });

    it('wakes a waiting reader when an entry is appended, and times out with nothing otherwise', async () => {
      const last = await streams.append(k('w'), { n: 'first' });
      const started = Date.now();
      const waiting = streams.waitFor(k('w'), last, 5_000);
      await sleep(100);
      await streams.append(k('w'), { n: 'second' });
      const got = await waiting;
      expect(got.map((e) => e.fields.n)).toEqual(['second']);
      expect(Date.now() - started).toBeLessThan(3_000);

      const t0 = Date.now();
      expect(await streams.waitFor(k('w'), got[0]!.id, 150)).toEqual([]);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(120);
      // An entry already there is answered at once.
      expect((await streams.waitFor(k('w'), last, 5_000)).map((e) => e.fields.n)).toEqual(['second']);
    });

    it('serves several blocked readers at once, and other commands while they wait', async () => {
      const waits = Array.from({ length: 3 }, (_, i) => streams.waitFor(k(`multi-${i}`), '0-0', 5_000));
      await sleep(50);
      expect(await streams.read(k('a'), '0-0', 1)).toHaveLength(1);
      for (let i = 0; i < 3; i++) await streams.append(k(`multi-${i}`), { i: String(i) });
      expect((await Promise.all(waits)).map((r) => r.map((e) => e.fields.i))).toEqual([['0'], ['1'], ['2']]);
    });

    it('serves hundreds of waiters on many streams, several on one stream from different ids, each from its own id', async () => {
      const first = await streams.append(k('shared'), { n: '0' });
      const many = Array.from({ length: 200 }, (_, i) => streams.waitFor(k(`many-${i}`), '0-0', 10_000));
      const fromStart = streams.waitFor(k('shared'), '0-0', 10_000);
      const fromFirst = streams.waitFor(k('shared'), first, 10_000);
      // An entry already there is answered at once; the reader after it waits.
      expect((await fromStart).map((e) => e.fields.n)).toEqual(['0']);
      await sleep(50);
      const t0 = Date.now();
      for (let i = 0; i < 200; i++) await streams.append(k(`many-${i}`), { i: String(i) });
      await streams.append(k('shared'), { n: '1' });
      const got = await Promise.all(many);
      expect(got.map((r) => r.map((e) => e.fields.i).join())).toEqual(Array.from({ length: 200 }, (_, i) => String(i)));
      expect((await fromFirst).map((e) => e.fields.n)).toEqual(['1']);
      expect(Date.now() - t0).toBeLessThan(3_000);
    });

    it('serves a reader that starts waiting while another waits, without waiting for the other', async () => {
      const long = streams.waitFor(k('quiet'), '0-0', 8_000);
      await sleep(100);
      const t0 = Date.now();
      const late = streams.waitFor(k('busy'), '0-0', 8_000);
      await sleep(50);
      await streams.append(k('busy'), { n: 'x' });
      expect((await late).map((e) => e.fields.n)).toEqual(['x']);
      expect(Date.now() - t0).toBeLessThan(1_500);
      await streams.append(k('quiet'), { n: 'y' });
      expect((await long).map((e) => e.fields.n)).toEqual(['y']);
    });

    it('ends every wait with nothing when closed', async () => {
      const other = await open();
      const waiting = other.waitFor(k('closing'), '0-0', 10_000);
      await sleep(50);
      const t0 = Date.now();
      await other.close();
      expect(await waiting).toEqual([]);
      expect(Date.now() - t0).toBeLessThan(2_000);
    });

    it('describes a stream: length, first and last ids, age; null when absent', async () => {
      const first = await streams.append(k('d'), { n: '1' });
      await streams.append(k('d'), { n: '2' });
      const last = await streams.append(k('d'), { n: '3' });
      const info = await streams.describe(k('d'));
      expect(info).toEqual({ key: k('d'), length: 3, firstEntryId: first, lastEntryId: last, ageSeconds: expect.any(Number) });
      expect(info!.ageSeconds).toBeLessThanOrEqual(1);
      expect(await streams.describe(k('absent'))).toBeNull();
    });

    it('lists the streams under a prefix, sorted and bounded, and no other keys', async () => {
      for (const s of ['p:b', 'p:a', 'p:c', 'q:a', 'p*:x']) await streams.append(k(s), { x: '1' });
      expect(await streams.list(k('p:'))).toEqual([k('p:a'), k('p:b'), k('p:c')]);
      expect(await streams.list(k('p:'), 2)).toEqual([k('p:a'), k('p:b')]);
      expect(await streams.list(k('p*'))).toEqual([k('p*:x')]);
      expect(await streams.list(k('none:'))).toEqual([]);
    });

    it('trims to about MAXLEN, oldest first, on append and on demand', async () => {
      let last = '';
      for (let i = 0; i < 250; i++) last = await streams.append(k('t'), { i: String(i) }, { maxLen: 10 });
      const info = await streams.describe(k('t'));
      expect(info!.length).toBeGreaterThanOrEqual(10);
      expect(info!.length).toBeLessThan(250);
      expect(info!.lastEntryId).toBe(last);
      for (let i = 0; i < 250; i++) await streams.append(k('t2'), { i: String(i) });
      const removed = await streams.trim(k('t2'), 10);
      const after = await streams.describe(k('t2'));
      expect(removed).toBeGreaterThan(0);
      expect(after!.length).toBe(250 - removed);
      expect(after!.length).toBeGreaterThanOrEqual(10);
      const entries = await streams.read(k('t2'), '0-0', 1000);
      expect(entries[entries.length - 1]!.fields.i).toBe('249');
      expect(entries[0]!.fields.i).toBe(String(removed));
    });

    it('lets an idle stream expire after its ttl', async () => {
      await streams.append(k('ttl'), { x: '1' }, { ttlMs: 100 });
      expect(await streams.describe(k('ttl'))).not.toBeNull();
      await sleep(250);
      expect(await streams.describe(k('ttl'))).toBeNull();
      expect(await streams.list(k('ttl'))).toEqual([]);
    });

    it('answers ping', async () => {
      await expect(streams.ping()).resolves.toBeUndefined();
    });
  });
}
