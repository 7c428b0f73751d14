import type { Db, Logger } from '@lore/runtime';

/**
 * Planner statistics for the embedded database. PostgreSQL's autovacuum analyzes a table once enough of it changed;
 * PGlite runs no autovacuum and keeps no counts of changed rows, so without this a table's statistics stay as the
 * first start left them (none at all), and the planner may read every row of a session or a graph where an index
 * would find one. A plan like that runs on the process's own thread, so every tenant waits for it.
 *
 * The stand-in: a table whose size on disk differs by more than a tenth (at least 8 pages) from the size its last
 * ANALYZE recorded (`pg_class.relpages`), or that was never analyzed, is analyzed. At start every such table is; then
 * every `intervalMs` at most `perTick` of them, those that grew or shrank most first, so a tick holds the database for
 * about what a few tables' samples take (ANALYZE reads a sample of at most 30,000 rows a table).
 */
export interface StatisticsUpkeep {
  /** Analyzes the tables that need it now (all of them); answers their names. */
  analyzeStale(limit?: number): Promise<string[]>;
  /** Runs a CHECKPOINT if anything was written since the last one it ran; answers whether it ran one. */
  checkpoint(): Promise<boolean>;
  stop(): void;
}

/**
 * PGlite has no checkpointer process either: without a CHECKPOINT the database keeps every WAL segment since its
 * last clean stop (6–8 MB a minute under load) and a crash replays all of it. So every `checkpointIntervalMs`
 * (5 minutes) the upkeep runs one, when the WAL moved since the last one it ran; PostgreSQL then recycles the
 * segments before it.
 */
const CHECKPOINT_INTERVAL_MS = 5 * 60_000;

const SCHEMAS = ['runtime', 'gateway', 'graph', 'core', 'agents'];

export function statisticsUpkeep(db: Db, logger: Logger, options: { intervalMs?: number; perTick?: number; checkpointIntervalMs?: number } = {}): StatisticsUpkeep {
  const perTick = options.perTick ?? 3;
  let running: Promise<string[]> | null = null;
  /** The end of the WAL after the last CHECKPOINT this upkeep ran (the checkpoint's own record included). */
  let checkpointedAt: string | null = null;

  const walEnd = async (): Promise<string> =>
    (await db.asOwner((sql) => sql.query<{ lsn: string }>(`SELECT pg_current_wal_lsn()::text AS lsn`))).rows[0]!.lsn;

  const checkpoint = async (): Promise<boolean> => {
    if (checkpointedAt !== null && (await walEnd()) === checkpointedAt) return false;
    await db.asOwner((sql) => sql.query(`CHECKPOINT`));
    checkpointedAt = await walEnd();
    logger.debug({ wal_lsn: checkpointedAt }, 'database checkpointed');
    return true;
  };

  const stale = async (limit: number): Promise<string[]> => {
    const r = await db.asOwner((sql) =>
      sql.query<{ name: string }>(
        `SELECT format('%I.%I', n.nspname, c.relname) AS name
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY($1::text[])
            AND (c.reltuples < 0 OR abs(pg_relation_size(c.oid) / 8192 - c.relpages) > greatest(8, c.relpages / 10))
          ORDER BY abs(pg_relation_size(c.oid) / 8192 - c.relpages) DESC
          LIMIT $2`,
        [SCHEMAS, limit],
      ),
    );
    return r.rows.map((row) => row.name);
  };

  const analyzeStale = (limit = 1_000): Promise<string[]> => {
    running ??= (async () => {
      const names = await stale(limit);
      // One statement a table, each its own turn at the database: requests wait for one table's sample, not all.
      for (const name of names) await db.asOwner((sql) => sql.query(`ANALYZE ${name}`));
      if (names.length > 0) logger.debug({ tables: names }, 'planner statistics refreshed');
      return names;
    })().finally(() => {
      running = null;
    });
    return running;
  };

  const timer = setInterval(() => {
    analyzeStale(perTick).catch((err: unknown) => logger.warn({ err }, 'planner statistics could not be refreshed'));
  }, options.intervalMs ?? 30_000);
  timer.unref();
  const checkpoints = setInterval(() => {
    checkpoint().catch((err: unknown) => logger.warn({ err }, 'database checkpoint failed; the next tick tries again'));
  }, options.checkpointIntervalMs ?? CHECKPOINT_INTERVAL_MS);
  checkpoints.unref();

  return {
    analyzeStale,
    checkpoint,
    stop: () => {
      clearInterval(timer);
      clearInterval(checkpoints);
    },
  };
}
