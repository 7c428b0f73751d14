import pino from 'pino';
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
