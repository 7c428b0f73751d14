import type { Sql } from '@lore/runtime';
import type { AgentsDeps } from './context';
import { StopWatch, type ClaimEnd } from './claim-watch';

const T1 = '00000000-0000-4000-8000-000000000001';
const T2 = '00000000-0000-4000-8000-000000000002';
const T3 = '00000000-0000-4000-8000-000000000003';

/** A database holding workflow flags per tenant, counting its transactions and the thread ids each one named. */
function flagsDb(flags: Record<string, Record<string, { claimed_by: string | null; stop_requested: boolean }>>) {
  const reads: Array<{ tenant: string; ids: string[] }> = [];
  let failing = false;
  const db = {
    withTenant: async <T>(tenant: string, fn: (sql: Sql) => Promise<T>): Promise<T> => {
      if (failing) throw new Error('the database is away');
      const sql: Sql = {
        query: async <R>(text: string, params?: unknown[]) => {
          expect(text).toContain('FROM agents.workflows');
          const ids = params![1] as string[];
          reads.push({ tenant, ids: [...ids] });
          const rows = ids.filter((id) => flags[tenant]?.[id]).map((id) => ({ thread_id: id, ...flags[tenant]![id]! }));
          return { rows: rows as R[], rowCount: rows.length };
        },
      };
      return fn(sql);
    },
  };
  return { agents: { db } as unknown as AgentsDeps, reads, fail: (on: boolean) => (failing = on) };
}

function ends() {
  const seen: Array<[string, ClaimEnd]> = [];
  return { seen, end: (id: string) => (why: ClaimEnd) => void seen.push([id, why]) };
}

describe('StopWatch', () => {
  it('reads every run of a tenant in one statement a tick, and tells each run its end', async () => {
    const mine = { claimed_by: 'w1', stop_requested: false };
    const f = flagsDb({ a: { [T1]: mine, [T2]: { claimed_by: 'w1', stop_requested: true } }, b: { [T3]: { claimed_by: 'w2', stop_requested: false } } });
    const watch = new StopWatch({ agents: f.agents, workerId: 'w1', settings: { stopPollMs: 60_000 } });
    const e = ends();
    const stops = [watch.watch('a', T1, e.end(T1)), watch.watch('a', T2.toUpperCase(), e.end(T2)), watch.watch('b', T3, e.end(T3))];
    await watch.tick();
    // Two tenants: two statements, each naming all of its runs.
    expect(f.reads.map((r) => [r.tenant, r.ids.length])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    // T2's stop was asked; T3 is claimed by another worker; T1 runs on.
    expect(e.seen.sort()).toEqual([
      [T2, 'stop'],
      [T3, 'lost'],
    ]);
    for (const stop of stops) stop();
    expect(watch.size).toBe(0);
  });

  it('ends a run whose workflow is gone, says nothing to a run that stopped watching, and tries again after a failed read', async () => {
    const f = flagsDb({ a: { [T1]: { claimed_by: 'w1', stop_requested: true } } });
    const watch = new StopWatch({ agents: f.agents, workerId: 'w1', settings: { stopPollMs: 60_000 } });
    const e = ends();
    const stopGone = watch.watch('a', T2, e.end(T2));
    const stopT1 = watch.watch('a', T1, e.end(T1));
    f.fail(true);
    await watch.tick();
    expect(e.seen).toEqual([]);
    f.fail(false);
    stopT1();
    await watch.tick();
    expect(e.seen).toEqual([[T2, 'lost']]);
    expect(f.reads.at(-1)!.ids).toEqual([T2]);
    stopGone();
    await watch.tick();
    expect(f.reads).toHaveLength(1);
  });

  it('polls on its own every stopPollMs while a run is watched, and stops polling when none is', async () => {
    const f = flagsDb({ a: { [T1]: { claimed_by: 'w1', stop_requested: false } } });
    const watch = new StopWatch({ agents: f.agents, workerId: 'w1', settings: { stopPollMs: 20 } });
    const stop = watch.watch('a', T1, () => undefined);
    await new Promise((r) => setTimeout(r, 150));
    stop();
    const polled = f.reads.length;
    expect(polled).toBeGreaterThanOrEqual(3);
    await new Promise((r) => setTimeout(r, 100));
    expect(f.reads.length).toBe(polled);
  });
});
