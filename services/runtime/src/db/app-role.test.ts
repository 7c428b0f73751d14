import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../config/config';
import { assertAppRole, checkAppRole } from './app-role';
import { runMigrations, type MigrationSet } from './migrate';
import { PgliteDb } from './pglite';
import { probeVector } from './vector';

jest.setTimeout(60_000);

describe('the application role check (embedded PostgreSQL, role lore_app)', () => {
  let db: PgliteDb;
  let dir: string;
  let set: MigrationSet;

  beforeAll(async () => {
    db = await PgliteDb.open();
    dir = await mkdtemp(join(tmpdir(), 'lore-app-role-'));
    await writeFile(
      join(dir, '0001_things.sql'),
      `CREATE TABLE things (id bigserial PRIMARY KEY, v text);
       CREATE TABLE journal (line text);
       CREATE FUNCTION answer() RETURNS int LANGUAGE sql AS 'SELECT 42';`,
    );
    set = { schema: 'roles_t', dir, appPrivileges: { journal: ['SELECT', 'INSERT'] } };
    await runMigrations(db, set);
  });

  afterAll(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('has nothing to report once the migrations granted the role what its set says', async () => {
    await expect(checkAppRole(db, [set])).resolves.toEqual({ role: 'lore_app', problems: [] });
  });

  it('names every missing privilege, judged against what the set grants that table', async () => {
    await db.asOwner(async (sql) => {
      await sql.query(`REVOKE UPDATE, DELETE ON roles_t.things FROM lore_app`);
      await sql.query(`REVOKE INSERT ON roles_t.journal FROM lore_app`);
      await sql.query(`REVOKE USAGE ON SEQUENCE roles_t.things_id_seq FROM lore_app`);
      await sql.query(`REVOKE EXECUTE ON FUNCTION roles_t.answer() FROM lore_app, PUBLIC`);
    });
    const { problems } = await checkAppRole(db, [set]);
    expect(problems).toEqual([
      'the application role "lore_app" lacks INSERT on roles_t.journal',
      'the application role "lore_app" lacks UPDATE, DELETE on roles_t.things',
      'the application role "lore_app" lacks EXECUTE on function roles_t.answer',
      'the application role "lore_app" lacks USAGE on sequence roles_t.things_id_seq',
    ]);
    // Running the migrations again re-grants everything.
    await runMigrations(db, set);
    await expect(checkAppRole(db, [set])).resolves.toEqual({ role: 'lore_app', problems: [] });
  });

  it('refuses with a configuration error naming LORE_DATABASE_URL: no USAGE on a schema, a schema never migrated', async () => {
    await db.asOwner((sql) => sql.query(`REVOKE USAGE ON SCHEMA roles_t FROM lore_app`));
    const missing: MigrationSet = { schema: 'never_migrated', dir };
    const refused = assertAppRole(db, [set, missing]);
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow('LORE_DATABASE_URL: the application role "lore_app" lacks USAGE on schema roles_t');
    await expect(refused).rejects.toThrow('LORE_DATABASE_URL: schema never_migrated does not exist: the migrations have not run on this database');
    await runMigrations(db, set);
    await expect(assertAppRole(db, [set])).resolves.toEqual({ role: 'lore_app', problems: [] });
  });

  it('reports pgvector usable in public, and not usable from a schema the role cannot reach', async () => {
    await expect(probeVector(db)).resolves.toEqual({ installed: true, schema: 'public', usable: true });
    await db.asOwner(async (sql) => {
      await sql.query(`CREATE SCHEMA hidden_ext`);
      await sql.query(`ALTER EXTENSION vector SET SCHEMA hidden_ext`);
    });
    try {
      const probe = await probeVector(db);
      expect(probe).toMatchObject({ installed: true, schema: 'hidden_ext', usable: false });
      expect(probe.problem).toMatch(/^pgvector is installed in schema hidden_ext, but the application role cannot use it with its search_path/);
    } finally {
      await db.asOwner((sql) => sql.query(`ALTER EXTENSION vector SET SCHEMA public`));
    }
    await expect(probeVector(db)).resolves.toMatchObject({ usable: true });
  });
});
