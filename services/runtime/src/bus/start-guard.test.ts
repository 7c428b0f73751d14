import { PartitionStarts, startVerdict, type PartitionStartsOptions } from './start-guard';
import { MemoryStartJournal, type ConsumerStartJournal } from './start-journal';

describe('startVerdict', () => {
  it('is normal on a first start, suspect once a consumer stopped there before, dead-letter beyond the bound', () => {
    expect([1, 2, 3, 4, 5].map((n) => startVerdict(n, 3))).toEqual(['normal', 'suspect', 'suspect', 'dead-letter', 'dead-letter']);
    expect(startVerdict(2, 2)).toBe('suspect');
    expect(startVerdict(3, 2)).toBe('dead-letter');
    expect(startVerdict(1_000, Infinity)).toBe('suspect');
  });
});

const silent: Pick<PartitionStartsOptions, 'onJournalError'> = {
  onJournalError: (err) => {
    throw err;
  },
};

/**
 * One partition as kafkajs hands it to a consumer: each process reads from the committed offset, a fetch at a time,
 * and the committed offset moves at the end of a fetch (or after each message, when the guard says so). A message in
 * `kills` ends the process there (nothing more is committed, nothing forgotten); a restart is a new process.
 */
class PartitionModel {
  committed = 0;
  crashes = 0;
  readonly handled: string[] = [];
  readonly dead: Array<{ key: string; stops: number }> = [];

  constructor(
    private readonly log: string[],
    private readonly kills: Set<string>,
    private readonly journal: ConsumerStartJournal,
    private readonly opts: { maxStarts: number; fetch: number; chunk: number; suspectMessages?: number },
  ) {}

  /** One process's life: returns 'crashed' or 'idle' (it read everything). */
  async run(): Promise<'crashed' | 'idle'> {
    const guard = new PartitionStarts({ group: 'g', journal: this.journal, maxStarts: this.opts.maxStarts, suspectMessages: this.opts.suspectMessages, ...silent });
    while (this.committed < this.log.length) {
      const end = Math.min(this.log.length, this.committed + this.opts.fetch) - 1;
      let resolved = this.committed;
      for (let i = this.committed; i <= end; ) {
        const decision = await guard.before('t', 0, String(i), String(end));
        const size = decision.oneAtATime ? 1 : this.opts.chunk;
        const chunk = this.log.slice(i, Math.min(end + 1, i + size));
        if (decision.deadLetter) {
          this.dead.push({ key: chunk[0]!, stops: decision.deadLetter.stops });
        } else {
          for (const key of chunk) {
            if (this.kills.has(key)) {
              this.crashes += 1;
              return 'crashed';
            }
          }
          this.handled.push(...chunk);
        }
        resolved = i + chunk.length;
        if (decision.oneAtATime) this.committed = resolved;
        guard.after('t', 0, String(i + chunk.length - 1), chunk.length);
        i += chunk.length;
      }
      this.committed = resolved;
    }
    return 'idle';
  }

  /** Restarts the process each time it dies, at most `limit` times. */
  async untilIdle(limit = 50): Promise<void> {
    for (let i = 0; i < limit; i++) if ((await this.run()) === 'idle') return;
    throw new Error(`still crashing after ${limit} starts`);
  }
}

describe('PartitionStarts: a message that kills the process', () => {
  const log = ['ok1', 'boom', 'ok2', 'ok3', 'ok4', 'ok5'];

  it.each([
    ['one message at a time (eachMessage)', 1],
    ['in batches (eachBatch, maxBatch 4)', 4],
  ])('is dead-lettered after a bounded number of crashes, %s; every other message is handled', async (_name, chunk) => {
    const journal = new MemoryStartJournal();
    const p = new PartitionModel(log, new Set(['boom']), journal, { maxStarts: 3, fetch: 100, chunk });
    await p.untilIdle();
    // One crash somewhere in the first fetch, one that pins it down (one at a time), then two more on it alone.
    expect(p.crashes).toBe(4);
    expect(p.dead).toEqual([{ key: 'boom', stops: 3 }]);
    expect(new Set(p.handled)).toEqual(new Set(['ok1', 'ok2', 'ok3', 'ok4', 'ok5']));
    expect(p.committed).toBe(log.length);
  });

  it('takes maxStarts crashes when the killer is the first message of a start', async () => {
    const journal = new MemoryStartJournal();
    const p = new PartitionModel(['boom', 'ok1'], new Set(['boom']), journal, { maxStarts: 3, fetch: 100, chunk: 1 });
    await p.untilIdle();
    expect(p.crashes).toBe(3);
    expect(p.dead).toEqual([{ key: 'boom', stops: 3 }]);
    expect(p.handled).toEqual(['ok1']);
  });

  it('finds a killer deep in a large fetch, keeping the progress made before it', async () => {
    const big = Array.from({ length: 3_000 }, (_, i) => `m${i}`);
    const journal = new MemoryStartJournal();
    // The window of one-at-a-time (10 messages) is shorter than the fetch: it lasts through the fetch anyway.
    const p = new PartitionModel(big, new Set(['m2500']), journal, { maxStarts: 3, fetch: 2_800, chunk: 1, suspectMessages: 10 });
    await p.untilIdle();
    expect(p.crashes).toBe(4);
    expect(p.dead).toEqual([{ key: 'm2500', stops: 3 }]);
    expect(new Set(p.handled).size).toBe(2_999);
  });

  it('dead-letters two killers of one partition, each after its own crashes', async () => {
    const journal = new MemoryStartJournal();
    const p = new PartitionModel(log, new Set(['boom', 'ok4']), journal, { maxStarts: 2, fetch: 100, chunk: 3 });
    await p.untilIdle();
    expect(p.dead.map((d) => d.key)).toEqual(['boom', 'ok4']);
    expect(p.crashes).toBe(5);
    expect(new Set(p.handled)).toEqual(new Set(['ok1', 'ok2', 'ok3', 'ok5']));
  });

  it('without crashes, records one start per process and nothing is one at a time', async () => {
    const journal = new MemoryStartJournal();
    const record = jest.spyOn(journal, 'record');
    const p = new PartitionModel(log, new Set(), journal, { maxStarts: 3, fetch: 2, chunk: 2 });
    await p.untilIdle();
    expect(p.handled).toEqual(log);
    expect(record).toHaveBeenCalledTimes(1);
  });
});

describe('PartitionStarts: what is not a crash', () => {
  it('does not count a partition handed back to the same process at the offset it recorded (a rebalance)', async () => {
    const journal = new MemoryStartJournal();
    const guard = new PartitionStarts({ group: 'g', journal, maxStarts: 3, ...silent });
    expect(await guard.before('t', 0, '10')).toEqual({ oneAtATime: false });
    // The handler was interrupted by a rebalance; the partition comes back at 10, three times.
    for (let i = 0; i < 3; i++) expect(await guard.before('t', 0, '10')).toEqual({ oneAtATime: false });
    expect(journal.peek('g', 't', 0)).toEqual({ offset: '10', starts: 1 });
    guard.after('t', 0, '10', 1);
    // Messages that follow are no starts: the journal is not asked.
    const record = jest.spyOn(journal, 'record');
    expect(await guard.before('t', 0, '11')).toEqual({ oneAtATime: false });
    expect(record).not.toHaveBeenCalled();
  });

  it('forgets on a graceful stop, so restarts during a long retry never add up', async () => {
    const journal = new MemoryStartJournal();
    for (let i = 0; i < 10; i++) {
      const guard = new PartitionStarts({ group: 'g', journal, maxStarts: 3, ...silent });
      expect(await guard.before('t', 0, '10')).toEqual({ oneAtATime: false });
      await guard.before('t', 1, '3');
      await guard.forgetAll();
      expect(journal.peek('g', 't', 0)).toBeUndefined();
      expect(journal.peek('g', 't', 1)).toBeUndefined();
    }
  });

  it('a graceful stop leaves alone what another consumer recorded since at another offset', async () => {
    const journal = new MemoryStartJournal();
    const a = new PartitionStarts({ group: 'g', journal, maxStarts: 3, ...silent });
    await a.before('t', 0, '10');
    // The partition moved to another member, which went on and is counting its own starts at 20.
    await journal.record('g', 't', 0, '20');
    await journal.record('g', 't', 0, '20');
    await a.forgetAll();
    expect(journal.peek('g', 't', 0)).toEqual({ offset: '20', starts: 2 });
  });
});

describe('PartitionStarts: one message at a time', () => {
  it('lasts through the fetch it began in and at least the window, recording each message before it is handled', async () => {
    const journal = new MemoryStartJournal();
    await journal.record('g', 't', 0, '0');
    const guard = new PartitionStarts({ group: 'g', journal, maxStarts: 3, suspectMessages: 3, ...silent });
    const seen: boolean[] = [];
    for (let offset = 0; offset < 8; offset++) {
      const d = await guard.before('t', 0, String(offset), '4');
      seen.push(d.oneAtATime);
      if (d.oneAtATime) expect(journal.peek('g', 't', 0)).toEqual({ offset: String(offset), starts: offset === 0 ? 2 : 1 });
      guard.after('t', 0, String(offset), 1);
    }
    // Offsets 0..4 (the fetch, longer than the window of 3), then normal again.
    expect(seen).toEqual([true, true, true, true, true, false, false, false]);
    expect(journal.peek('g', 't', 0)).toEqual({ offset: '4', starts: 1 });
  });

  it('lasts the window when the fetch is shorter', async () => {
    const journal = new MemoryStartJournal();
    await journal.record('g', 't', 0, '0');
    const guard = new PartitionStarts({ group: 'g', journal, maxStarts: 3, suspectMessages: 3, ...silent });
    const seen: boolean[] = [];
    for (let offset = 0; offset < 5; offset++) {
      seen.push((await guard.before('t', 0, String(offset), '0')).oneAtATime);
      guard.after('t', 0, String(offset), 1);
    }
    expect(seen).toEqual([true, true, true, false, false]);
  });
});

describe('PartitionStarts: the journal failing', () => {
  it('goes on without it (never holds a partition), reporting each failure', async () => {
    const errors: string[] = [];
    const broken: ConsumerStartJournal = {
      record: async () => {
        throw new Error('database unreachable');
      },
      forget: async () => {
        throw new Error('database unreachable');
      },
    };
    const guard = new PartitionStarts({ group: 'g', journal: broken, maxStarts: 3, onJournalError: (err, where) => void errors.push(`${where.call}: ${(err as Error).message}`) });
    expect(await guard.before('t', 0, '5')).toEqual({ oneAtATime: false });
    guard.after('t', 0, '5', 1);
    await guard.forgetAll();
    expect(errors).toEqual(['record: database unreachable']);
    // Unrecorded, so the next start asks again.
    expect(await guard.before('t', 0, '9')).toEqual({ oneAtATime: false });
    expect(errors).toHaveLength(2);
  });

  it('refuses a bound below 2: a first stop only says "somewhere in that batch"', () => {
    expect(() => new PartitionStarts({ group: 'g', journal: new MemoryStartJournal(), maxStarts: 1, ...silent })).toThrow(/at least 2/);
  });
});
