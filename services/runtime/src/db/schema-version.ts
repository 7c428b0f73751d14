import { readdir } from 'node:fs/promises';
import { ConfigError } from '../config/config';
import type { Sql } from '../ports/db';
import type { MigrationSet } from './migrate';

/** A schema's name as it may appear in SQL text unquoted (the migration sets' are constants). */
export const SCHEMA_IDENT = /^[a-z_][a-z0-9_]*$/;

/** The database holds migrations this version does not have: a newer Lore migrated it. */
export class NewerSchemaError extends Error {
  constructor(
    readonly schema: string,
    readonly versions: readonly string[],
  ) {
    super(
      `the ${schema} schema was migrated by a newer version of Lore (${versions.join(', ')} ${versions.length === 1 ? 'is not a migration' : 'are not migrations'} of this version): ` +
        'run that version or a later one, or restore the backup made before the upgrade; an older version would write rows the newer one reads wrongly',
    );
    this.name = 'NewerSchemaError';
  }
}

/**
 * A set's folder as `runMigrations` reads it: the numbered `NNNN_name.sql` files in the order they apply, and the
 * `always_<name>.sql` scripts run after them on every run (never recorded).
 */
export async function migrationFiles(dir: string): Promise<{ numbered: string[]; always: string[] }> {
  const listing = await readdir(dir);
  return {
    numbered: listing.filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort(),
    always: listing.filter((f) => /^always_[\w-]+\.sql$/.test(f)).sort(),
  };
}

/** The recorded migrations that are not files of this version (a newer Lore applied them), sorted. */
export function unknownVersions(applied: Iterable<string>, files: readonly string[]): string[] {
  const known = new Set(files);
  return [...applied].filter((v) => !known.has(v)).sort();
}

/**
 * Refuses, without writing anything, a schema a newer Lore migrated: `NewerSchemaError` when a set's
 * `schema_migrations` names a file this version does not have. The migrations refuse such a schema before they apply
 * anything, but in cluster mode the services never migrate (only the chart's Job does) and `helm rollback` runs no Job
 * of the older release, so each process asks at start over its application connection (the migrations grant that role
 * SELECT on `schema_migrations`, nothing more). A role that may not read it gets a `ConfigError`: this version's
 * migrations have not run on the database.
 */
export async function assertSchemaNotNewer(db: Sql, sets: readonly MigrationSet[]): Promise<void> {
  for (const set of sets) {
    if (!SCHEMA_IDENT.test(set.schema)) throw new Error(`invalid schema name ${set.schema}`);
    const { numbered } = await migrationFiles(set.dir);
    const applied = await appliedVersions(db, set.schema);
    const unknown = unknownVersions(applied, numbered);
    if (unknown.length > 0) throw new NewerSchemaError(set.schema, unknown);
  }
}

/** The versions recorded in a schema's `schema_migrations`, read as the application role. */
async function appliedVersions(db: Sql, schema: string): Promise<string[]> {
  try {
    return (await db.query<{ version: string }>(`SELECT version FROM ${schema}.schema_migrations`)).rows.map((r) => r.version);
  } catch (err) {
    if ((err as { code?: unknown }).code !== '42501') throw err;
    throw new ConfigError([
      `LORE_DATABASE_URL: the application role may not read ${schema}.schema_migrations, so the schema's version cannot be checked: run this version's migrations (they grant it SELECT there), see docs/install.md`,
    ]);
  }
}
