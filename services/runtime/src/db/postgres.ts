import { Pool, type PoolClient, type PoolConfig } from 'pg';
import type { Db, Sql, SqlResult } from '../ports/db';
import { TENANT_SETTING } from '../ports/db';

export interface PostgresDbOptions {
  /** Connection string of the application role (NOBYPASSRLS, owns nothing). */
  url: string;
  /** Connection string of the schema owner, used only for migrations and setup. */
  ownerUrl?: string;
  maxConnections?: number;
  statementTimeoutMs?: number;
}

function wrap(client: { query: PoolClient['query'] }): Sql {
  return {
    async query<T>(text: string, params?: unknown[]): Promise<SqlResult<T>> {
      const r = await client.query(text, params as unknown[]);
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
  };
}

export class PostgresDb implements Db {
  readonly kind = 'postgres' as const;
  hasVector = false;
  private readonly pool: Pool;
  private ownerPool?: Pool;

  constructor(private readonly options: PostgresDbOptions) {
    const config: PoolConfig = {
      connectionString: options.url,
      max: options.maxConnections ?? 10,
      statement_timeout: options.statementTimeoutMs ?? 30_000,
      application_name: 'lore',
    };
    this.pool = new Pool(config);
    // An idle client that errors (server restart) must not crash the process; the pool replaces it.
    this.pool.on('error', () => undefined);
  }

  /** Detects pgvector once at start; without it search runs lexical-only. */
  async init(): Promise<this> {
    const r = await this.pool.query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`);
    this.hasVector = (r.rowCount ?? 0) > 0;
    return this;
  }

  async query<T>(text: string, params?: unknown[]): Promise<SqlResult<T>> {
    const r = await this.pool.query(text, params as unknown[]);
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  }

  async tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.inTransaction(this.pool, fn);
  }

  async withTenant<T>(tenantId: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (!tenantId) throw new Error('withTenant requires a tenant id');
    return this.inTransaction(this.pool, async (sql) => {
      await sql.query(`SELECT set_config($1, $2, true)`, [TENANT_SETTING, tenantId]);
      return fn(sql);
    });
  }

  async asOwner<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (!this.options.ownerUrl) throw new Error('no owner connection configured (LORE_DATABASE_OWNER_URL)');
    if (!this.ownerPool) {
      this.ownerPool = new Pool({ connectionString: this.options.ownerUrl, max: 2, application_name: 'lore-owner' });
      this.ownerPool.on('error', () => undefined);
    }
    const client = await this.ownerPool.connect();
    try {
      return await fn(wrap(client));
    } finally {
      client.release();
    }
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pool.end();
    await this.ownerPool?.end();
  }

  private async inTransaction<T>(pool: Pool, fn: (sql: Sql) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(wrap(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw err;
    } finally {
      client.release(broken);
    }
  }
}
