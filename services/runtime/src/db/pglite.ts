import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { PGlite, types, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { Db, Sql, SqlResult } from '../ports/db';
import { APP_ROLE, TENANT_SETTING } from '../ports/db';
import { outboxCommitted } from '../outbox/commit-signal';
import { ensureAppRole } from './migrate';

/**
 * Values come back as node-postgres returns them, so code written against one adapter behaves the same on the
 * other: `bigint` as a string (PGlite would give a lossy number), `bytea` as a Buffer (PGlite gives a Uint8Array).
 */
const PARSERS = {
  [types.INT8]: (x: string) => x,
  [types.BYTEA]: (x: string) => Buffer.from(x.slice(2), 'hex'),
};

/**
 * Embedded PostgreSQL (PGlite, with pgvector). One backend: the superuser owns the schemas and every
 * application query runs under `SET LOCAL ROLE lore_app`, so row-level security applies exactly as on a server.
 *
 * The session user stays the superuser, so a deliberate `RESET ROLE` inside a callback would escape the policies:
 * embedded mode guards against forgotten tenant filters, not against hostile SQL (see docs/runtime.md).
 */
export class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  readonly hasVector = true;
  /**
   * Every unit of work (transaction or owner script) runs alone. PGlite serialises statements, but an owner script
   * issuing its own BEGIN/COMMIT would otherwise interleave with another caller's transaction.
   */
  private tail: Promise<unknown> = Promise.resolve();

  private constructor(private readonly pg: PGlite) {}

  /**
   * `dataDir` undefined keeps the database in memory (unit tests). A new database (in memory, or a data directory
   * that is missing or empty) starts from the dump `LORE_PGLITE_TEMPLATE` names when it is set (`writeTemplate`),
   * instead of being created from nothing (about 0.6 s instead of 3–4 s on the project's machine); the unit suites
   * set it (test/support/jest/pglite-template.ts).
   */
  static async open(dataDir?: string): Promise<PgliteDb> {
    const template = templateFor(dataDir);
    const options = { extensions: { vector }, parsers: PARSERS, ...(template ? { loadDataDir: template } : {}) };
    const pg = dataDir ? new PGlite(dataDir, options) : new PGlite(options);
    await pg.waitReady;
    await pg.exec('CREATE EXTENSION IF NOT EXISTS vector');
    await ensureAppRole(wrap(pg));
    return new PgliteDb(pg);
  }

  /**
   * Writes the dump a new database can start from (`LORE_PGLITE_TEMPLATE`): a database created from nothing, as
   * `open` leaves it (pgvector, the application role), and nothing else. Made by this PGlite, for this PGlite: a dump
   * of another version may not load.
   */
  static async writeTemplate(path: string): Promise<void> {
    const pg = new PGlite({ extensions: { vector }, parsers: PARSERS });
    try {
      await pg.waitReady;
      await pg.exec('CREATE EXTENSION IF NOT EXISTS vector');
      await ensureAppRole(wrap(pg));
      writeFileSync(path, Buffer.from(await (await pg.dumpDataDir('none')).arrayBuffer()));
    } finally {
      await pg.close();
    }
  }

  query<T>(text: string, params?: unknown[]): Promise<SqlResult<T>> {
    return this.tx((sql) => sql.query<T>(text, params));
  }

  tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      let sql: Sql | undefined;
      const result = await this.pg.transaction(async (t) => {
        await t.query(`SET LOCAL ROLE ${APP_ROLE}`);
        sql = wrap(t);
        return fn(sql);
      });
      if (sql) outboxCommitted(sql);
      return result;
    });
  }

  withTenant<T>(tenantId: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (!tenantId) return Promise.reject(new Error('withTenant requires a tenant id'));
    return this.tx(async (sql) => {
      await sql.query(`SELECT set_config($1, $2, true)`, [TENANT_SETTING, tenantId]);
      return fn(sql);
    });
  }

  /** In process a round trip costs nothing: the statement in its own tenant transaction. */
  statementAsTenant<T>(tenantId: string, text: string, params?: unknown[]): Promise<SqlResult<T>> {
    return this.withTenant(tenantId, (sql) => sql.query<T>(text, params));
  }

  asOwner<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.exclusive(() => fn(wrap(this.pg)));
  }

  async ping(): Promise<void> {
    await this.pg.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.tail.catch(() => undefined);
    await this.pg.close();
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

/** The dump a new database starts from (`LORE_PGLITE_TEMPLATE`), or none: not set, or the data directory holds a database. */
function templateFor(dataDir: string | undefined): Blob | undefined {
  const path = process.env.LORE_PGLITE_TEMPLATE;
  if (!path) return undefined;
  if (dataDir !== undefined && existsSync(dataDir) && readdirSync(dataDir).length > 0) return undefined;
  try {
    return new Blob([readFileSync(path)]);
  } catch (err) {
    throw new Error(`LORE_PGLITE_TEMPLATE names a dump that cannot be read (${path}): ${(err as Error).message}`, { cause: err });
  }
}

function wrap(target: PGlite | Transaction): Sql {
  return {
    async query<T>(text: string, params?: unknown[]): Promise<SqlResult<T>> {
      if (!params || params.length === 0) {
        // Multi-statement scripts need the simple protocol.
        const results = await target.exec(text);
        const last = results[results.length - 1];
        return { rows: (last?.rows ?? []) as T[], rowCount: last ? countOf(last) : 0 };
      }
      const r = await target.query<T>(text, params);
      return { rows: r.rows, rowCount: countOf(r) };
    },
  };
}

/** node-postgres semantics: rows returned for SELECT, rows touched for INSERT/UPDATE/DELETE. */
function countOf(r: { rows: unknown[]; rowCount?: number; affectedRows?: number }): number {
  return r.rowCount ?? r.affectedRows ?? r.rows.length;
}
