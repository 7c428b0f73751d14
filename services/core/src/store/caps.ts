import type { Sql } from '@lore/runtime';

/**
 * Takes the transaction-scoped lock every create of one kind of row (`what`, e.g. `core.connectors`) for one scope (a
 * tenant, or one owner in it) takes before it counts and inserts: creates of the same scope then count one after
 * another, on any replica, so concurrent ones stop at exactly the cap. Two scopes whose hashes collide only wait
 * for each other.
 */
export async function lockCount(sql: Sql, what: string, scope: string): Promise<void> {
  await sql.query(`SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, [what, scope]);
}

/**
 * `count(*)` of a query's rows, read no further than `limit`: a scope already past a cap (rows made before it
 * existed) costs a create no more than one at the cap. `from` is the query's `FROM … WHERE …`, `params` its values.
 */
export async function countUpTo(sql: Sql, from: string, params: unknown[], limit: number): Promise<number> {
  const r = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 ${from} LIMIT $${params.length + 1}) counted`, [...params, limit]);
  return r.rows[0]!.n;
}
