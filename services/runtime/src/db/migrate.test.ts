import { copyFile, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../config/config';
import { assertAppRole, assertSchemaNotNewer, NewerSchemaError, runMigrations, type MigrationSet } from './migrate';
import { PgliteDb } from './pglite';
import { RUNTIME_MIGRATIONS, runRuntimeMigrations } from '../outbox/outbox';

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

  it('refuses at start, read-only and as the application role, a schema a newer version migrated (the check of cluster mode, where no service migrates)', async () => {
    const own = await mkdtemp(join(tmpdir(), 'lore-migrate-ro-'));
    try {
      await writeFile(join(own, '0001_things.sql'), 'CREATE TABLE things (id bigserial PRIMARY KEY);');
      const set: MigrationSet = { schema: 'newer_ro', dir: own };
      await runMigrations(db, set);
      // This version's schema: the start goes on.
      await expect(assertSchemaNotNewer(db, [set])).resolves.toBeUndefined();
      await expect(assertAppRole(db, [set])).resolves.toMatchObject({ problems: [] });
      // A newer version's Job applied one migration more (the rollback case: no Job of this version ran since).
      await db.asOwner((sql) => sql.query(`INSERT INTO newer_ro.schema_migrations (version) VALUES ('0002_newer.sql')`));
      const refused = assertAppRole(db, [set]);
      await expect(refused).rejects.toBeInstanceOf(NewerSchemaError);
      await expect(refused).rejects.toThrow('the newer_ro schema was migrated by a newer version of Lore (0002_newer.sql is not a migration of this version)');
      await expect(assertSchemaNotNewer(db, [set])).rejects.toBeInstanceOf(NewerSchemaError);
      // Nothing was written, and the application role could not have: it only reads the record.
      const recorded = await db.asOwner((sql) => sql.query<{ version: string }>(`SELECT version FROM newer_ro.schema_migrations ORDER BY version`));
      expect(recorded.rows.map((r) => r.version)).toEqual(['0001_things.sql', '0002_newer.sql']);
      await expect(db.query(`DELETE FROM newer_ro.schema_migrations`)).rejects.toThrow(/permission denied/);
      // A role the migrations never granted cannot be checked: refused as a configuration problem, not started.
      await db.asOwner((sql) => sql.query(`REVOKE SELECT ON newer_ro.schema_migrations FROM lore_app`));
      const unread = assertSchemaNotNewer(db, [set]);
      await expect(unread).rejects.toBeInstanceOf(ConfigError);
      await expect(unread).rejects.toThrow("may not read newer_ro.schema_migrations, so the schema's version cannot be checked");
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });

  it('makes a release from before the start-up check refuse at the runtime schema, the first it migrates, before it touches any grant', async () => {
    await runRuntimeMigrations(db);
    // The runtime set as a release before the check had it: every migration up to 0005.
    const older = await mkdtemp(join(tmpdir(), 'lore-migrate-older-'));
    try {
      for (const f of (await readdir(RUNTIME_MIGRATIONS.dir)).filter((f) => /^000[1-5]_/.test(f))) await copyFile(join(RUNTIME_MIGRATIONS.dir, f), join(older, f));
      const refused = runMigrations(db, { ...RUNTIME_MIGRATIONS, dir: older });
      await expect(refused).rejects.toBeInstanceOf(NewerSchemaError);
      await expect(refused).rejects.toThrow(/the runtime schema was migrated by a newer version of Lore \(0006_schema_versions_readable\.sql/);
      // This version's start-up check still reads the runtime record as the application role.
      await expect(assertSchemaNotNewer(db, [RUNTIME_MIGRATIONS])).resolves.toBeUndefined();
    } finally {
      await rm(older, { recursive: true, force: true });
    }
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
