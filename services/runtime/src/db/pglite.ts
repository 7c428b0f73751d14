import { PGlite, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { Db, Sql, SqlResult } from '../ports/db';
import { APP_ROLE, TENANT_SETTING } from '../ports/db';
import { ensureAppRole } from './migrate';

/**
 * Embedded PostgreSQL (PGlite, with pgvector). One backend: the superuser owns the schemas and every
 * application query runs under `SET LOCAL ROLE lore_app`, so row-level security applies exactly as on a server.
 */
export class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  readonly hasVector = true;

  private constructor(private readonly pg: PGlite) {}

  /** `dataDir` undefined keeps the database in memory (unit tests). */
  static async open(dataDir?: string): Promise<PgliteDb> {
    const pg = dataDir ? new PGlite(dataDir, { extensions: { vector } }) : new PGlite({ extensions: { vector } });
    await pg.waitReady;
    await pg.exec('CREATE EXTENSION IF NOT EXISTS vector');
    await ensureAppRole(wrapRaw(pg));
    return new PgliteDb(pg);
  }

  query<T>(text: string, params?: unknown[]): Promise<SqlResult<T>> {
    return this.tx((sql) => sql.query<T>(text, params));
  }

  tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.pg.transaction(async (t) => {
      await t.query(`SET LOCAL ROLE ${APP_ROLE}`);
      return fn(wrapTx(t));
    });
  }

  withTenant<T>(tenantId: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (!tenantId) throw new Error('withTenant requires a tenant id');
    return this.tx(async (sql) => {
      await sql.query(`SELECT set_config($1, $2, true)`, [TENANT_SETTING, tenantId]);
      return fn(sql);
    });
  }

  asOwner<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return fn(wrapRaw(this.pg));
  }

  async ping(): Promise<void> {
    await this.pg.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pg.close();
  }
}

function wrapTx(t: Transaction): Sql {
  return {
    async query<T>(text: string, params?: unknown[]): Promise<SqlResult<T>> {
      if (!params || params.length === 0) {
        // Multi-statement scripts need the simple protocol.
        const results = await t.exec(text);
        const last = results[results.length - 1];
        return { rows: (last?.rows ?? []) as T[], rowCount: last?.affectedRows ?? last?.rows.length ?? 0 };
      }
      const r = await t.query<T>(text, params);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    },
  };
}

function wrapRaw(pg: PGlite): Sql {
  return {
    async query<T>(text: string, params?: unknown[]): Promise<SqlResult<T>> {
      if (!params || params.length === 0) {
        const results = await pg.exec(text);
        const last = results[results.length - 1];
        return { rows: (last?.rows ?? []) as T[], rowCount: last?.affectedRows ?? last?.rows.length ?? 0 };
      }
      const r = await pg.query<T>(text, params);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    },
  };
}
