import type { Sql } from '../ports/db';

/**
 * An `Sql` that, for the statements `when` picks, runs `EXPLAIN` instead and keeps the plan in `plans` (answering no
 * rows); the others run as they are. For tests of a store function's plan: the statement under test is the one the
 * function builds, not a copy of it.
 */
export function explainingSql(sql: Sql, plans: string[], when: (text: string) => boolean = () => true): Sql {
  return {
    async query<T>(text: string, params?: unknown[]) {
      if (!when(text)) return sql.query<T>(text, params);
      const r = await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, params);
      plans.push(r.rows.map((row) => row['QUERY PLAN']).join('\n'));
      return { rows: [] as T[], rowCount: 0 };
    },
  };
}
