import { ConfigError } from '../config/config';
import type { Sql } from '../ports/db';
import type { MigrationSet } from './migrate';
import { assertSchemaNotNewer } from './schema-version';

/** What the application role may do on a table when its migration set does not narrow it. */
export const DEFAULT_TABLE_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const;

export interface AppRoleReport {
  /** The role the application connection logs in as (`current_user` of LORE_DATABASE_URL's connection). */
  role: string;
  /** Everything the role lacks or has too much of; empty when the process can run. */
  problems: string[];
}

/** A PostgreSQL identifier, quoted: role names may hold capitals, dashes or quotes. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * The role the application connection runs as. Migrations grant to this role, so whatever role
 * `LORE_DATABASE_URL` names is the one that gets the rights (the server says who it is, not the URL's text).
 */
export async function appRoleOf(db: Sql): Promise<string> {
  const r = await db.query<{ role: string }>('SELECT current_user AS role');
  const role = r.rows[0]?.role;
  if (!role) throw new Error('the database did not report the application role');
  return role;
}

/**
 * Checks, over the application connection, that its role can do what a process using `sets` needs and nothing
 * that would let it escape row-level security: not superuser, not BYPASSRLS, not the owner (nor a member of the
 * owner) of a schema; USAGE on each schema; on every table the privileges its migration set grants; USAGE on the
 * sequences and EXECUTE on the functions. Every problem is reported, not only the first.
 */
export async function checkAppRole(db: Sql, sets: readonly MigrationSet[]): Promise<AppRoleReport> {
  const who = await db.query<{ role: string; rolsuper: boolean; rolbypassrls: boolean }>(
    `SELECT current_user AS role, r.rolsuper, r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const me = who.rows[0];
  if (!me) throw new Error('the database did not report the application role');
  const problems: string[] = [];
  const role = quoteIdent(me.role);
  if (me.rolsuper) problems.push(`the application role ${role} is a superuser: row-level security does not bind it`);
  if (me.rolbypassrls) problems.push(`the application role ${role} has BYPASSRLS: row-level security does not bind it`);

  const schemas = sets.map((s) => s.schema);
  const ns = await db.query<{ schema: string; usage: boolean; in_owner: boolean; owner: string }>(
    `SELECT n.nspname AS schema, has_schema_privilege(n.oid, 'USAGE') AS usage,
            pg_has_role(n.nspowner, 'MEMBER') AS in_owner, pg_get_userbyid(n.nspowner) AS owner
       FROM pg_namespace n WHERE n.nspname = ANY($1::text[])`,
    [schemas],
  );
  const found = new Map(ns.rows.map((r) => [r.schema, r]));
  for (const schema of schemas) {
    const s = found.get(schema);
    if (!s) {
      problems.push(`schema ${schema} does not exist: the migrations have not run on this database`);
      continue;
    }
    if (!s.usage) problems.push(`the application role ${role} lacks USAGE on schema ${schema}`);
    if (s.in_owner) {
      problems.push(
        `the application role ${role} owns schema ${schema} or is a member of its owner ${quoteIdent(s.owner)}: it could turn row-level security off`,
      );
    }
  }

  const tables = await db.query<{ schema: string; name: string; s: boolean; i: boolean; u: boolean; d: boolean }>(
    `SELECT n.nspname AS schema, c.relname AS name,
            has_table_privilege(c.oid, 'SELECT') AS s, has_table_privilege(c.oid, 'INSERT') AS i,
            has_table_privilege(c.oid, 'UPDATE') AS u, has_table_privilege(c.oid, 'DELETE') AS d
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND c.relname <> 'schema_migrations'
      ORDER BY 1, 2`,
    [schemas],
  );
  const bySchema = new Map(sets.map((s) => [s.schema, s]));
  for (const t of tables.rows) {
    const expected = bySchema.get(t.schema)?.appPrivileges?.[t.name] ?? DEFAULT_TABLE_PRIVILEGES;
    const has = { SELECT: t.s, INSERT: t.i, UPDATE: t.u, DELETE: t.d };
    const missing = expected.filter((p) => !has[p]);
    if (missing.length > 0) problems.push(`the application role ${role} lacks ${missing.join(', ')} on ${t.schema}.${t.name}`);
  }

  const others = await db.query<{ schema: string; name: string; kind: string }>(
    `SELECT n.nspname AS schema, c.relname AS name, 'sequence' AS kind
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ANY($1::text[]) AND c.relkind = 'S'
        -- CASE: the planner may test the privilege before the kind, and it fails on anything but a sequence.
        AND CASE WHEN c.relkind = 'S' THEN NOT has_sequence_privilege(c.oid, 'USAGE') ELSE false END
     UNION ALL
     SELECT n.nspname, p.proname, 'function'
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = ANY($1::text[]) AND p.prokind = 'f' AND NOT has_function_privilege(p.oid, 'EXECUTE')
        AND NOT EXISTS (SELECT 1 FROM pg_depend dep WHERE dep.objid = p.oid AND dep.deptype = 'e')
     ORDER BY 1, 2`,
    [schemas],
  );
  for (const o of others.rows) {
    problems.push(`the application role ${role} lacks ${o.kind === 'sequence' ? 'USAGE' : 'EXECUTE'} on ${o.kind} ${o.schema}.${o.name}`);
  }
  return { role: me.role, problems };
}

/**
 * Every process's start-up check of its database. Refuses to start a process whose application role cannot do its
 * work (or could escape row-level security): a `ConfigError` naming `LORE_DATABASE_URL` and every problem, which the
 * entry points print and exit 1 on. Then refuses, read-only, a schema a newer Lore migrated (`NewerSchemaError`,
 * `fatal:` at exit): in cluster mode no service migrates, and after `helm rollback` to an older release this is what
 * keeps its pods from writing on the newer schema. The readiness checks use `checkAppRole` alone: a pod already
 * serving while the next release's migrations run must stay ready until the rolling update replaces it.
 */
export async function assertAppRole(db: Sql, sets: readonly MigrationSet[]): Promise<AppRoleReport> {
  const report = await checkAppRole(db, sets);
  if (report.problems.length > 0) {
    throw new ConfigError([
      ...report.problems.map((p) => `LORE_DATABASE_URL: ${p}`),
      'LORE_DATABASE_URL: run the migrations with this application role in LORE_DATABASE_URL (they grant it what it needs), or fix the role as docs/install.md describes',
    ]);
  }
  await assertSchemaNotNewer(db, sets);
  return report;
}
