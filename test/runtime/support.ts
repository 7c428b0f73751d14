import pino from 'pino';
import type { Sql } from '@lore/runtime';
import { PostgresDb } from '../../services/runtime/src/db/postgres';
import { freshDatabase, type TestDatabase } from '../support/infra';

export const silentLogger = pino({ level: process.env.LORE_TEST_LOG_LEVEL ?? 'silent' });

/** A PostgresDb on a fresh database of the test server: the app role for queries, the owner for migrations. */
export async function freshPostgresDb(): Promise<{ db: PostgresDb; database: TestDatabase; close(): Promise<void> }> {
  const database = await freshDatabase();
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 5 }).init();
  return {
    db,
    database,
    async close() {
      await db.close();
      await database.drop();
    },
  };
}

/**
 * Rows this transaction has read so far (by index or by scanning) from the tables of these schemas, or of these
 * tables only: PostgreSQL's per-transaction counters. The plans suites measure planner mistakes with it, in rows
 * read rather than time (a plan that reads the whole table per input row reads millions).
 */
export async function rowsRead(sql: Sql, schemas: readonly string[], tables?: readonly string[]): Promise<number> {
  const r = await sql.query<{ n: string | number }>(
    `SELECT coalesce(sum(coalesce(idx_tup_fetch, 0) + seq_tup_read), 0) AS n FROM pg_stat_xact_user_tables
      WHERE schemaname = ANY($1::text[]) AND ($2::text[] IS NULL OR relname = ANY($2::text[]))`,
    [[...schemas], tables ? [...tables] : null],
  );
  return Number(r.rows[0]?.n);
}
