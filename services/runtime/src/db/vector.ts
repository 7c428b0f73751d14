import type { Sql } from '../ports/db';

export interface VectorProbe {
  /** The pgvector extension exists in this database. */
  installed: boolean;
  /** The schema it lives in, when installed. */
  schema: string | null;
  /**
   * The application role resolves the type and its cosine operator unqualified, with its own search path, as
   * the stores' SQL does. Installed but not usable means search would fail, not fall back.
   */
  usable: boolean;
  /** Why an installed extension is not usable. */
  problem?: string;
}

/**
 * Whether vectors work for the application role: looks for the extension, then uses the type as queries do
 * (`'[1,0]'::vector <=> …`). Run it over the application connection, after the migrations.
 */
export async function probeVector(db: Sql): Promise<VectorProbe> {
  const ext = await db.query<{ schema: string }>(
    `SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`,
  );
  const schema = ext.rows[0]?.schema ?? null;
  if (schema === null) return { installed: false, schema: null, usable: false };
  try {
    await db.query(`SELECT ('[1,0]'::vector <=> '[0,1]'::vector)::float8 AS d`);
    return { installed: true, schema, usable: true };
  } catch (err) {
    const path = await db.query<{ search_path: string }>('SHOW search_path').catch(() => ({ rows: [] as Array<{ search_path: string }> }));
    const searchPath = path.rows[0]?.search_path ?? 'unknown';
    return {
      installed: true,
      schema,
      usable: false,
      problem:
        `pgvector is installed in schema ${schema}, but the application role cannot use it with its search_path (${searchPath}): ` +
        `${(err as Error).message}. Move it (ALTER EXTENSION vector SET SCHEMA public) or give the role USAGE on ${schema} and put it on its search_path`,
    };
  }
}
