import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PgliteDb, runMigrations, runRuntimeMigrations } from '@lore/runtime';

export interface EarlierDatabase {
  /** Embedded mode's database, migrated as an earlier version left it. */
  db: PgliteDb;
  /** Runs the whole migration directory over it, as this version's start does. */
  upgrade(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * An embedded database migrated as a data directory written by an earlier version is: the runtime's migrations, then
 * of a service's migration directory only the numbered files `keep` keeps. Upgrade tests write the data of that time,
 * then `upgrade()`.
 */
export async function earlierDatabase(set: { schema: string; dir: string }, keep: (file: string) => boolean): Promise<EarlierDatabase> {
  const db = await PgliteDb.open();
  const copy = await mkdtemp(join(tmpdir(), 'lore-migrations-'));
  try {
    await runRuntimeMigrations(db);
    for (const f of await readdir(set.dir)) if (/^\d{4}_/.test(f) && keep(f)) await copyFile(join(set.dir, f), join(copy, f));
    await runMigrations(db, { schema: set.schema, dir: copy });
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
  return { db, upgrade: () => runMigrations(db, set), close: () => db.close() };
}
