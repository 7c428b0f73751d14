jest.setTimeout(60_000);

import { createLogger, PgliteDb } from '@lore/runtime';
import { statisticsUpkeep } from './statistics';

describe('planner statistics in embedded mode', () => {
  it('analyzes the tables never analyzed, then those whose size moved by more than a tenth, and the planner uses them', async () => {
    const db = await PgliteDb.open();
    const upkeep = statisticsUpkeep(db, createLogger({ level: 'silent', service: 'test' }), { intervalMs: 3_600_000 });
    try {
      await db.asOwner((sql) =>
        sql.query(`CREATE SCHEMA core; CREATE TABLE core.items (tenant_id text, session_id int, item_id int, PRIMARY KEY (tenant_id, item_id));
                   CREATE INDEX items_session ON core.items (tenant_id, session_id, item_id);
                   CREATE TABLE core.quiet (v int)`),
      );
      const stats = async () =>
        Object.fromEntries(
          (await db.asOwner((sql) => sql.query<{ relname: string; reltuples: number }>(`SELECT relname, reltuples FROM pg_class WHERE relname IN ('items', 'quiet')`))).rows.map((r) => [r.relname, Number(r.reltuples)]),
        );
      // Never analyzed: PGlite has no autovacuum to do it.
      expect(await stats()).toEqual({ items: -1, quiet: -1 });
      await db.asOwner((sql) => sql.query(`INSERT INTO core.items SELECT 't', i % 3, i FROM generate_series(1, 20000) AS i`));
      const first = await upkeep.analyzeStale();
      expect(first).toEqual(expect.arrayContaining(['core.items', 'core.quiet']));
      expect((await stats()).items).toBeGreaterThan(15_000);
      // Nothing moved: nothing to do.
      expect(await upkeep.analyzeStale()).toEqual([]);
      // Grown by half: analyzed again; a table that did not change is left alone.
      await db.asOwner((sql) => sql.query(`INSERT INTO core.items SELECT 't', i % 3, i FROM generate_series(20001, 30000) AS i`));
      expect(await upkeep.analyzeStale()).toEqual(['core.items']);
      expect((await stats()).items).toBeGreaterThan(25_000);
      // With statistics, a look-up by the whole key is an index condition, not a filter over the session's rows.
      const plan = await db.asOwner((sql) => sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT * FROM core.items WHERE tenant_id = 't' AND session_id = 1 AND item_id = 4`));
      const lines = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(lines).toMatch(/Index Cond: .*item_id = 4/);
      expect(lines).not.toMatch(/Filter:/);
    } finally {
      upkeep.stop();
      await db.close();
    }
  });

  it('checkpoints the database on its tick when something was written since its last checkpoint, and only then', async () => {
    const db = await PgliteDb.open();
    const upkeep = statisticsUpkeep(db, createLogger({ level: 'silent', service: 'test' }), { intervalMs: 3_600_000, checkpointIntervalMs: 50 });
    const checkpointLsn = async () =>
      (await db.asOwner((sql) => sql.query<{ lsn: string }>(`SELECT checkpoint_lsn::text AS lsn FROM pg_control_checkpoint()`))).rows[0]!.lsn;
    try {
      await db.asOwner((sql) => sql.query(`CREATE SCHEMA core; CREATE TABLE core.items (v int); INSERT INTO core.items SELECT generate_series(1, 1000)`));
      const before = await checkpointLsn();
      // The tick runs a CHECKPOINT of its own: the control file's checkpoint moves past what was written.
      const deadline = Date.now() + 5_000;
      while ((await checkpointLsn()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(await checkpointLsn()).not.toBe(before);
      // The timer stopped (a tick in progress given time to end), the same checks by hand: nothing written since the
      // last checkpoint, nothing to do; a write, a checkpoint.
      upkeep.stop();
      await new Promise((r) => setTimeout(r, 200));
      expect(await upkeep.checkpoint()).toBe(false);
      await db.asOwner((sql) => sql.query(`INSERT INTO core.items VALUES (1001)`));
      expect(await upkeep.checkpoint()).toBe(true);
    } finally {
      upkeep.stop();
      await db.close();
    }
  });
});
