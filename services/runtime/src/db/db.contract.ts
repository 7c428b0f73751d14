/**
 * The `Db` contract: one suite, run against PGlite (unit tests) and real PostgreSQL (test/runtime). Not a test
 * file itself: each adapter's test calls `describeDbContract`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Db } from '../ports/db';
import { runMigrations } from './migrate';

export interface DbFixture {
  db: Db;
  /** The role that owns the schemas, when it is a role the application must not be able to assume. */
  ownerRole?: string;
  close(): Promise<void>;
}

const NOTES = `
CREATE TABLE notes (
  tenant_id text NOT NULL,
  id text NOT NULL,
  body text NOT NULL,
  n bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, id)
);
ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE notes FORCE ROW LEVEL SECURITY;
CREATE POLICY notes_tenant ON notes
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));
CREATE TABLE kinds (k bigint, b bytea, j jsonb, t timestamptz, a text[], num numeric);
`;

export function describeDbContract(name: string, open: () => Promise<DbFixture>): void {
  describe(`Db contract: ${name}`, () => {
    let fx: DbFixture;
    let db: Db;
    let dir: string;
    let schema: string;

    beforeAll(async () => {
      fx = await open();
      db = fx.db;
      dir = await mkdtemp(join(tmpdir(), 'lore-mig-'));
      schema = `c_${randomBytes(4).toString('hex')}`;
      await writeFile(join(dir, '0001_notes.sql'), NOTES);
      await runMigrations(db, { schema, dir });
    });

    afterAll(async () => {
      await fx?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const insertNote = (tenant: string, id: string, body: string) =>
      db.withTenant(tenant, (sql) => sql.query(`INSERT INTO ${schema}.notes (tenant_id, id, body) VALUES ($1, $2, $3)`, [tenant, id, body]));

    it('returns values the way node-postgres does (bigint as string, bytea as Buffer, jsonb parsed, timestamptz as Date)', async () => {
      const when = new Date('2026-01-02T03:04:05.678Z');
      const r = await db.tx(async (sql) => {
        await sql.query(`INSERT INTO ${schema}.kinds VALUES ($1, $2, $3::jsonb, $4, $5, $6)`, [
          '9007199254740993',
          Buffer.from([0, 1, 254, 255]),
          JSON.stringify({ a: [1, 'x'] }),
          when,
          ['x', 'y'],
          '1.50',
        ]);
        return sql.query<Record<string, unknown>>(`SELECT * FROM ${schema}.kinds`);
      });
      expect(r.rowCount).toBe(1);
      const row = r.rows[0]!;
      expect(row.k).toBe('9007199254740993');
      expect(Buffer.isBuffer(row.b)).toBe(true);
      expect([...(row.b as Buffer)]).toEqual([0, 1, 254, 255]);
      expect(row.j).toEqual({ a: [1, 'x'] });
      expect(row.t).toBeInstanceOf(Date);
      expect((row.t as Date).toISOString()).toBe(when.toISOString());
      expect(row.a).toEqual(['x', 'y']);
      expect(row.num).toBe('1.50');
      const count = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.kinds`);
      expect(count).toEqual({ rows: [{ n: '1' }], rowCount: 1 });
    });

    it('reports rows touched by INSERT, UPDATE and DELETE in rowCount', async () => {
      await db.tx(async (sql) => {
        expect((await sql.query(`INSERT INTO ${schema}.kinds (k) VALUES (1), (2), (3)`)).rowCount).toBe(3);
        expect((await sql.query(`UPDATE ${schema}.kinds SET k = k + 10 WHERE k < $1`, [3])).rowCount).toBe(2);
        expect((await sql.query(`DELETE FROM ${schema}.kinds WHERE k > $1`, [0])).rowCount).toBe(4);
      });
    });

    it('commits a transaction whose callback resolves and rolls back one that throws', async () => {
      await db.withTenant('t-tx', (sql) => sql.query(`INSERT INTO ${schema}.notes (tenant_id, id, body) VALUES ('t-tx', 'kept', 'a')`));
      await expect(
        db.withTenant('t-tx', async (sql) => {
          await sql.query(`INSERT INTO ${schema}.notes (tenant_id, id, body) VALUES ('t-tx', 'gone', 'b')`);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      const ids = await db.withTenant('t-tx', (sql) => sql.query<{ id: string }>(`SELECT id FROM ${schema}.notes ORDER BY id`));
      expect(ids.rows.map((r) => r.id)).toEqual(['kept']);
    });

    it('shows each tenant only its own rows, and shows nothing without a tenant', async () => {
      await insertNote('t-a', 'n1', 'alpha');
      await insertNote('t-b', 'n1', 'beta');
      const a = await db.withTenant('t-a', (sql) => sql.query<{ body: string }>(`SELECT body FROM ${schema}.notes WHERE id = 'n1'`));
      const b = await db.withTenant('t-b', (sql) => sql.query<{ body: string }>(`SELECT body FROM ${schema}.notes WHERE id = 'n1'`));
      expect(a.rows).toEqual([{ body: 'alpha' }]);
      expect(b.rows).toEqual([{ body: 'beta' }]);
      expect((await db.query(`SELECT * FROM ${schema}.notes`)).rowCount).toBe(0);
      expect((await db.tx((sql) => sql.query(`SELECT * FROM ${schema}.notes`))).rowCount).toBe(0);
    });

    it("cannot write, change or delete another tenant's rows", async () => {
      await insertNote('t-own', 'x', 'mine');
      await insertNote('t-other', 'y', 'theirs');
      await expect(
        db.withTenant('t-other', (sql) => sql.query(`INSERT INTO ${schema}.notes (tenant_id, id, body) VALUES ('t-own', 'z', 'forged')`)),
      ).rejects.toThrow(/row-level security/);
      const touched = await db.withTenant('t-other', async (sql) => [
        (await sql.query(`UPDATE ${schema}.notes SET body = 'hijacked' WHERE tenant_id = 't-own'`)).rowCount,
        (await sql.query(`DELETE FROM ${schema}.notes WHERE tenant_id = 't-own'`)).rowCount,
      ]);
      expect(touched).toEqual([0, 0]);
      await expect(
        db.withTenant('t-other', (sql) => sql.query(`UPDATE ${schema}.notes SET tenant_id = 't-own' WHERE id = 'y'`)),
      ).rejects.toThrow(/row-level security/);
      const mine = await db.withTenant('t-own', (sql) => sql.query<{ id: string; body: string }>(`SELECT id, body FROM ${schema}.notes`));
      expect(mine.rows).toEqual([{ id: 'x', body: 'mine' }]);
    });

    it('runs a prepared statement like any other, again and again, in and out of tenant transactions', async () => {
      const select = `SELECT id, body FROM ${schema}.notes WHERE id = ANY($1::text[]) ORDER BY id`;
      await insertNote('t-prep', 'p1', 'one');
      await insertNote('t-prep', 'p2', 'two');
      for (let i = 0; i < 8; i++) {
        const rows = await db.withTenant('t-prep', async (sql) => (await sql.query(select, [['p1', 'p2']], { prepare: true })).rows);
        expect(rows).toEqual([
          { id: 'p1', body: 'one' },
          { id: 'p2', body: 'two' },
        ]);
        // The same prepared text sees only the tenant of its transaction, and nothing without one.
        const other = await db.withTenant('t-prep-other', async (sql) => (await sql.query(select, [['p1']], { prepare: true })).rowCount);
        expect(other).toBe(0);
        expect((await db.query(select, [['p1']], { prepare: true })).rowCount).toBe(0);
      }
      const updated = await db.withTenant('t-prep', (sql) =>
        sql.query(`UPDATE ${schema}.notes SET n = n + $2 WHERE id = $1`, ['p1', 5], { prepare: true }),
      );
      expect(updated.rowCount).toBe(1);
    });

    it('runs one statement as a tenant atomically, values exactly as bound parameters would be, under the tenant policy', async () => {
      const tenant = `t-one-${randomBytes(3).toString('hex')}`;
      const tricky = `it's a \\ back'slash'; DROP TABLE notes; -- $1 and $2`;
      const inserted = await db.statementAsTenant<{ id: string; body: string; n: string }>(
        tenant,
        `INSERT INTO ${schema}.notes (tenant_id, id, body, n) VALUES ($1, $2, $3, $4) RETURNING id, body, n`,
        [tenant, 'one', tricky, 42],
      );
      expect(inserted).toEqual({ rows: [{ id: 'one', body: tricky, n: '42' }], rowCount: 1 });
      // The policy applies: another tenant's row cannot be written, and reads see only the tenant's rows.
      await expect(db.statementAsTenant(tenant, `INSERT INTO ${schema}.notes (tenant_id, id, body) VALUES ($1, $2, $3)`, ['someone-else', 'x', 'y'])).rejects.toThrow();
      await insertNote(`${tenant}-b`, 'two', 'not yours');
      const seen = await db.statementAsTenant<{ id: string }>(tenant, `SELECT id FROM ${schema}.notes ORDER BY id`);
      expect(seen.rows).toEqual([{ id: 'one' }]);
      // Values of every kind round-trip as with bound parameters (null, bytea, jsonb, timestamptz, arrays, numeric).
      const when = new Date('2026-03-04T05:06:07.089Z');
      const kinds = await db.statementAsTenant<Record<string, unknown>>(
        tenant,
        `SELECT $1::bigint AS k, $2::bytea AS b, $3::jsonb AS j, $4::timestamptz AS t, $5::text[] AS a, $6::numeric AS num, $7::text AS nothing, $8::text[] AS empty`,
        ['9007199254740993', Buffer.from([0, 1, 254, 255]), JSON.stringify({ q: "it's \\ \"x\"" }), when, ['a,b', "c'd", 'e"f', null], '1.50', null, []],
      );
      const row = kinds.rows[0]!;
      expect(row.k).toBe('9007199254740993');
      expect([...(row.b as Buffer)]).toEqual([0, 1, 254, 255]);
      expect(row.j).toEqual({ q: "it's \\ \"x\"" });
      expect((row.t as Date).toISOString()).toBe(when.toISOString());
      expect(row.a).toEqual(['a,b', "c'd", 'e"f', null]);
      expect(row.num).toBe('1.50');
      expect(row.nothing).toBeNull();
      expect(row.empty).toEqual([]);
      // Atomic: a statement that fails leaves nothing, and the setting does not outlive it.
      await expect(
        db.statementAsTenant(tenant, `WITH a AS (INSERT INTO ${schema}.notes (tenant_id, id, body) VALUES ($1, 'three', 'x') RETURNING 1) SELECT 1 / 0 FROM a`, [tenant]),
      ).rejects.toThrow();
      expect((await db.statementAsTenant<{ n: string }>(tenant, `SELECT count(*) AS n FROM ${schema}.notes WHERE id = 'three'`)).rows).toEqual([{ n: '0' }]);
      expect((await db.query<{ s: string | null }>(`SELECT current_setting('lore.tenant_id', true) AS s`)).rows[0]!.s || null).toBeNull();
      await expect(db.statementAsTenant(tenant, `SELECT $2::text`, ['only one'])).rejects.toThrow();
    });

    it('sets a tenant id with quotes and backslashes exactly as given, never as SQL', async () => {
      const odd = `t-'); SET ROLE lore_owner; --\\'x`;
      await insertNote(odd, 'q', 'quoted');
      const seen = await db.withTenant(odd, async (sql) => ({
        setting: (await sql.query<{ t: string }>(`SELECT current_setting('lore.tenant_id', true) AS t`)).rows[0]?.t,
        role: (await sql.query<{ r: string }>(`SELECT current_user AS r`)).rows[0]?.r,
        rows: (await sql.query<{ tenant_id: string }>(`SELECT tenant_id FROM ${schema}.notes`)).rows,
      }));
      expect(seen.setting).toBe(odd);
      expect(seen.role).not.toBe(fx.ownerRole ?? '(no owner role)');
      expect(seen.rows).toEqual([{ tenant_id: odd }]);
      await expect(db.withTenant('t-\0', async () => 1)).rejects.toThrow();
    });

    it('does not leak the tenant setting to the next transaction on the same connection', async () => {
      await insertNote('t-leak', 'n', 'secret');
      for (let i = 0; i < 5; i++) {
        await db.withTenant('t-leak', (sql) => sql.query(`SELECT 1`));
        expect((await db.query(`SELECT * FROM ${schema}.notes`)).rowCount).toBe(0);
      }
    });

    it('keeps the application role from switching row-level security off', async () => {
      await insertNote('t-rls', 'n', 'hidden');
      // Either refused outright or still filtered: never the other tenant's rows.
      const attempt = db.withTenant('t-intruder', async (sql) => {
        await sql.query(`SET LOCAL row_security = off`);
        return sql.query(`SELECT * FROM ${schema}.notes WHERE tenant_id = 't-rls'`);
      });
      await expect(attempt).rejects.toThrow(/row-level security|row_security/);
    });

    it('keeps the application role from removing the policies or the FORCE flag', async () => {
      await expect(db.tx((sql) => sql.query(`ALTER TABLE ${schema}.notes NO FORCE ROW LEVEL SECURITY`))).rejects.toThrow(/owner/);
      await expect(db.tx((sql) => sql.query(`ALTER TABLE ${schema}.notes DISABLE ROW LEVEL SECURITY`))).rejects.toThrow(/owner/);
      await expect(db.tx((sql) => sql.query(`DROP POLICY notes_tenant ON ${schema}.notes`))).rejects.toThrow(/owner/);
      await expect(db.tx((sql) => sql.query(`CREATE TABLE ${schema}.mine (x int)`))).rejects.toThrow(/permission denied/);
      // The record of migrations is read at start (a newer schema is refused), never written.
      await expect(db.tx((sql) => sql.query(`SELECT * FROM ${schema}.schema_migrations`))).resolves.toBeDefined();
      await expect(db.tx((sql) => sql.query(`DELETE FROM ${schema}.schema_migrations`))).rejects.toThrow(/permission denied/);
      await expect(db.tx((sql) => sql.query(`INSERT INTO ${schema}.schema_migrations (version) VALUES ('9999_forged.sql')`))).rejects.toThrow(/permission denied/);
    });

    it('keeps the application role from assuming the owner role', async () => {
      // PGlite's single session is the superuser, so this holds only on a server: the fixture names the owner there.
      if (!fx.ownerRole) return;
      await expect(db.tx((sql) => sql.query(`SET ROLE ${fx.ownerRole}`))).rejects.toThrow(/permission denied/);
      await expect(db.tx((sql) => sql.query(`SET SESSION AUTHORIZATION ${fx.ownerRole}`))).rejects.toThrow(/permission denied/);
    });

    it('applies each migration once, also when two runners race', async () => {
      await writeFile(join(dir, '0002_more.sql'), `ALTER TABLE notes ADD COLUMN tag text; CREATE INDEX notes_tag ON notes (tag);`);
      const results = await Promise.all([runMigrations(db, { schema, dir }), runMigrations(db, { schema, dir })]);
      expect(results.flat()).toEqual(['0002_more.sql']);
      expect(await runMigrations(db, { schema, dir })).toEqual([]);
      await db.withTenant('t-mig', (sql) =>
        sql.query(`INSERT INTO ${schema}.notes (tenant_id, id, body, tag) VALUES ('t-mig', 'a', 'b', 'c')`),
      );
    });

    it('rolls a failing migration back whole and names it', async () => {
      await writeFile(join(dir, '0003_broken.sql'), `CREATE TABLE half (x int); SELECT no_such_function();`);
      await expect(runMigrations(db, { schema, dir })).rejects.toThrow(`migration ${schema}/0003_broken.sql failed`);
      await expect(db.tx((sql) => sql.query(`SELECT * FROM ${schema}.half`))).rejects.toThrow(/does not exist/);
      await rm(join(dir, '0003_broken.sql'));
      expect(await runMigrations(db, { schema, dir })).toEqual([]);
    });

    it('lets a migration set narrow what the application role may do on a table', async () => {
      await writeFile(join(dir, '0004_log.sql'), `CREATE TABLE log (id bigint GENERATED ALWAYS AS IDENTITY, line text);`);
      await runMigrations(db, { schema, dir, appPrivileges: { log: ['SELECT', 'INSERT'] } });
      await db.tx((sql) => sql.query(`INSERT INTO ${schema}.log (line) VALUES ('a')`));
      await expect(db.tx((sql) => sql.query(`DELETE FROM ${schema}.log`))).rejects.toThrow(/permission denied/);
      await expect(db.tx((sql) => sql.query(`UPDATE ${schema}.log SET line = 'b'`))).rejects.toThrow(/permission denied/);
    });

    it('runs always_ scripts after the numbered files on every run, without recording them', async () => {
      await writeFile(join(dir, '0005_runs.sql'), `CREATE TABLE runs (at timestamptz NOT NULL DEFAULT clock_timestamp());`);
      await writeFile(join(dir, 'always_count.sql'), `INSERT INTO runs DEFAULT VALUES;`);
      expect(await runMigrations(db, { schema, dir })).toEqual(['0005_runs.sql']);
      expect(await runMigrations(db, { schema, dir })).toEqual([]);
      const counted = await db.asOwner((sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.runs`));
      expect(counted.rows[0]?.n).toBe('2');
      const recorded = await db.asOwner((sql) => sql.query<{ version: string }>(`SELECT version FROM ${schema}.schema_migrations WHERE version LIKE 'always%'`));
      expect(recorded.rows).toEqual([]);
      await rm(join(dir, 'always_count.sql'));
    });

    it('answers ping', async () => {
      await expect(db.ping()).resolves.toBeUndefined();
    });
  });
}
