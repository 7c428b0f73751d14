import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Db, Sql } from '../ports/db';
import { APP_ROLE } from '../ports/db';
import { appRoleOf, quoteIdent } from './app-role';
import { migrationFiles, NewerSchemaError, SCHEMA_IDENT, unknownVersions } from './schema-version';

export { appRoleOf, assertAppRole, checkAppRole, DEFAULT_TABLE_PRIVILEGES, quoteIdent, type AppRoleReport } from './app-role';
export { assertSchemaNotNewer, NewerSchemaError } from './schema-version';
export { probeVector, type VectorProbe } from './vector';

export interface MigrationSet {
  /** PostgreSQL schema the service owns, e.g. `gateway`. */
  schema: string;
  /**
   * Folder of `NNNN_name.sql` files, applied in name order, each once, each in its own transaction with
   * `search_path` set to the schema (unqualified names land there).
   */
  dir: string;
  /**
   * Tables the application role gets fewer rights on than the default SELECT, INSERT, UPDATE, DELETE
   * (e.g. an append-only table). Re-applied after the default grants on every run.
   */
  appPrivileges?: Record<string, Array<'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE'>>;
}

const IDENT = SCHEMA_IDENT;

/**
 * Applies a service's pending migrations as the schema owner, then grants the application role what it needs.
 * The application role is the one the application connection logs in as (LORE_DATABASE_URL's role, asked of the
 * server), so an install may name it as it likes. Safe to run from several processes at once: an advisory lock
 * serialises them.
 */
export async function runMigrations(db: Db, set: MigrationSet): Promise<string[]> {
  if (!IDENT.test(set.schema)) throw new Error(`invalid schema name ${set.schema}`);
  // `always_<name>.sql`: idempotent scripts run after the numbered files on every run, never recorded (e.g. the
  // graph's embedding column, added whenever pgvector has appeared since).
  const { numbered: files, always } = await migrationFiles(set.dir);
  const applied: string[] = [];
  const appRole = await appRoleOf(db).catch((err: unknown) => {
    throw new Error(`cannot connect as the application role (LORE_DATABASE_URL) to grant it its rights: ${(err as Error).message}`, { cause: err });
  });
  await db.asOwner(async (sql) => {
    const owner = (await sql.query<{ role: string }>('SELECT current_user AS role')).rows[0]?.role;
    if (owner === appRole) {
      throw new Error(`LORE_DATABASE_URL and LORE_DATABASE_OWNER_URL both log in as ${quoteIdent(appRole)}: the application needs its own role, which owns nothing`);
    }
    await sql.query(`SELECT pg_advisory_lock(hashtext($1))`, [`lore.migrate.${set.schema}`]);
    try {
      await sql.query(`CREATE SCHEMA IF NOT EXISTS ${set.schema}`);
      await sql.query(
        `CREATE TABLE IF NOT EXISTS ${set.schema}.schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const done = new Set(
        (await sql.query<{ version: string }>(`SELECT version FROM ${set.schema}.schema_migrations`)).rows.map((r) => r.version),
      );
      // A database a newer Lore migrated: this version's code would write rows without what those migrations added
      // (a graph's places, a connector's workspace), which the newer version then reads as open to everyone.
      const unknown = unknownVersions(done, files);
      if (unknown.length > 0) throw new NewerSchemaError(set.schema, unknown);
      for (const file of [...files.filter((f) => !done.has(f)), ...always]) {
        const text = await readFile(join(set.dir, file), 'utf8');
        const record = !file.startsWith('always_');
        await sql.query('BEGIN');
        try {
          await sql.query(`SET LOCAL search_path TO ${set.schema}, public`);
          await execScript(sql, text);
          if (record) await sql.query(`INSERT INTO ${set.schema}.schema_migrations (version) VALUES ($1)`, [file]);
          await sql.query('COMMIT');
        } catch (err) {
          await sql.query('ROLLBACK');
          throw new Error(`migration ${set.schema}/${file} failed: ${(err as Error).message}`, { cause: err });
        }
        if (record) applied.push(file);
      }
      await grantAppRole(sql, set, quoteIdent(appRole));
    } finally {
      await sql.query(`SELECT pg_advisory_unlock(hashtext($1))`, [`lore.migrate.${set.schema}`]);
    }
  });
  return applied;
}

/** The application role may use the schema's tables, sequences and functions; it never owns them. */
async function grantAppRole(sql: Sql, set: MigrationSet, role: string): Promise<void> {
  const schema = set.schema;
  await sql.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
  await sql.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
  await sql.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role}`);
  await sql.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${schema} TO ${role}`);
  // The record of applied migrations is the owner's to write. The application role may read it: each process checks
  // at start that no newer Lore migrated the schema (assertSchemaNotNewer), also where only the chart's Job migrates.
  await sql.query(`REVOKE ALL ON ${schema}.schema_migrations FROM ${role}`);
  await sql.query(`GRANT SELECT ON ${schema}.schema_migrations TO ${role}`);
  for (const [table, privileges] of Object.entries(set.appPrivileges ?? {})) {
    if (!IDENT.test(table)) throw new Error(`invalid table name ${table}`);
    await sql.query(`REVOKE ALL ON ${schema}.${table} FROM ${role}`);
    if (privileges.length > 0) await sql.query(`GRANT ${privileges.join(', ')} ON ${schema}.${table} TO ${role}`);
  }
}

/** Multi-statement scripts: pg's simple protocol accepts them when no parameters are passed. */
async function execScript(sql: Sql, text: string): Promise<void> {
  await sql.query(text);
}

/** Creates embedded mode's application role (`lore_app`) if the database does not have it yet. */
export async function ensureAppRole(sql: Sql, password?: string): Promise<void> {
  const exists = await sql.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [APP_ROLE]);
  if (exists.rowCount === 0) {
    const login = password ? `LOGIN PASSWORD '${password.replace(/'/g, "''")}'` : 'NOLOGIN';
    await sql.query(`CREATE ROLE ${APP_ROLE} ${login} NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE`);
  }
}
