import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NewerSchemaError, runMigrations, type MigrationSet } from './migrate';
import { PgliteDb } from './pglite';
import { runRuntimeMigrations } from '../outbox/outbox';

jest.setTimeout(60_000);

describe('migrations (embedded PostgreSQL)', () => {
  let db: PgliteDb;
  let dir: string;

  beforeAll(async () => {
    db = await PgliteDb.open();
    dir = await mkdtemp(join(tmpdir(), 'lore-migrate-'));
  });
  afterAll(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a schema a newer version migrated, naming the migrations it does not know, and changes nothing', async () => {
    await writeFile(join(dir, '0001_things.sql'), 'CREATE TABLE things (id bigserial PRIMARY KEY);');
    await writeFile(join(dir, '0002_more.sql'), 'ALTER TABLE things ADD COLUMN v text;');
    const set: MigrationSet = { schema: 'newer_t', dir };
    await expect(runMigrations(db, set)).resolves.toEqual(['0001_things.sql', '0002_more.sql']);
    // The same database, as the newer version left it: one migration more than these files.
    await db.asOwner((sql) => sql.query(`INSERT INTO newer_t.schema_migrations (version) VALUES ('0003_newer.sql')`));
    await writeFile(join(dir, '0004_pending.sql'), 'ALTER TABLE things ADD COLUMN w text;');
    const refused = runMigrations(db, set);
    await expect(refused).rejects.toBeInstanceOf(NewerSchemaError);
    await expect(refused).rejects.toThrow('the newer_t schema was migrated by a newer version of Lore (0003_newer.sql is not a migration of this version)');
    // The pending migration of this version was not applied either.
    const columns = await db.asOwner((sql) => sql.query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'newer_t' AND table_name = 'things' ORDER BY column_name`));
    expect(columns.rows.map((r) => r.column_name)).toEqual(['id', 'v']);
  });

  it("gives the bus checkpoint its replays column where the first 0003 left it out", async () => {
    await runRuntimeMigrations(db);
    // A database that applied 0003 as it first shipped, without `replays`.
    await db.asOwner(async (sql) => {
      await sql.query(`ALTER TABLE runtime.bus_checkpoint DROP COLUMN replays`);
      await sql.query(`DELETE FROM runtime.schema_migrations WHERE version = '0004_bus_checkpoint_replays.sql'`);
    });
    await runRuntimeMigrations(db);
    const replays = await db.asOwner((sql) => sql.query<{ replays: number }>(`SELECT replays FROM runtime.bus_checkpoint`));
    expect(replays.rows).toEqual([{ replays: 0 }]);
  });
});
