import { createHash } from 'node:crypto';
import { Pool, escapeLiteral, type PoolClient, type PoolConfig, type QueryResult } from 'pg';
import { prepareValue } from 'pg/lib/utils';
import type { Db, QueryOptions, Sql, SqlResult } from '../ports/db';
import { TENANT_SETTING } from '../ports/db';
import { outboxCommitted } from '../outbox/commit-signal';
import { probeVector } from './vector';

export interface PostgresDbOptions {
  /** Connection string of the application role (NOBYPASSRLS, owns nothing). */
  url: string;
  /** Connection string of the schema owner, used only for migrations and setup. */
  ownerUrl?: string;
  maxConnections?: number;
  statementTimeoutMs?: number;
}

const statementNames = new Map<string, string>();

/** A stable name per statement text: node-postgres parses a named statement once per connection, then only binds it. */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `lore_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}

function wrap(client: { query: PoolClient['query'] }): Sql {
  return {
    async query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<SqlResult<T>> {
      const r = options?.prepare
        ? await client.query({ name: statementName(text), text, values: params as unknown[] })
        : await client.query(text, params as unknown[]);
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

  /**
   * Connects as the application role and detects whether it can use pgvector; without it search runs
   * lexical-only. Services that migrate at start probe again afterwards (`probeVector`): the migrations may
   * have just created the extension.
   */
  async init(): Promise<this> {
    try {
      await this.pool.query('SELECT 1');
    } catch (err) {
      throw new Error(`cannot connect to PostgreSQL as the application role (LORE_DATABASE_URL): ${(err as Error).message}`, { cause: err });
    }
    this.hasVector = (await probeVector(this)).usable;
    return this;
  }

  async query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<SqlResult<T>> {
    const r = options?.prepare
      ? await this.pool.query({ name: statementName(text), text, values: params as unknown[] })
      : await this.pool.query(text, params as unknown[]);
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  }

  async tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.inTransaction(this.pool, fn);
  }

  async withTenant<T>(tenantId: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (!tenantId) throw new Error('withTenant requires a tenant id');
    if (tenantId.includes('\0')) throw new Error('a tenant id cannot contain NUL');
    // BEGIN and the tenant setting travel in one round trip (a simple query of two statements): every tenant
    // transaction of every service pays for this, so one network and parse cycle fewer matters. A simple query
    // carries no parameters, so the value is written as an escaped literal.
    const begin = `BEGIN; SELECT set_config('${TENANT_SETTING}', ${escapeLiteral(tenantId)}, true)`;
    return this.inTransaction(this.pool, fn, begin);
  }

  /**
   * The tenant setting and the statement as one simple query: PostgreSQL runs the statements of one simple query as
   * one implicit transaction, so the setting (transaction-local) covers the statement, and a failure leaves nothing.
   * A simple query carries no parameters: each value is sent as the text node-postgres would have bound
   * (`prepareValue`), escaped as a literal, untyped like a bound parameter.
   */
  async statementAsTenant<T>(tenantId: string, text: string, params: unknown[] = []): Promise<SqlResult<T>> {
    if (!tenantId) throw new Error('statementAsTenant requires a tenant id');
    if (tenantId.includes('\0')) throw new Error('a tenant id cannot contain NUL');
    const inlined = text.replace(/\$(\d+)/g, (_, n: string) => {
      const i = Number(n) - 1;
      if (i < 0 || i >= params.length) throw new Error(`statementAsTenant: no value for $${n}`);
      return inlineLiteral(params[i]);
    });
    const results = (await this.pool.query(`SELECT set_config('${TENANT_SETTING}', ${escapeLiteral(tenantId)}, true); ${inlined}`)) as unknown as QueryResult[];
    const last = results[results.length - 1]!;
    return { rows: last.rows as T[], rowCount: last.rowCount ?? 0 };
  }

  async asOwner<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (!this.options.ownerUrl) throw new Error('no owner connection configured (LORE_DATABASE_OWNER_URL)');
    if (!this.ownerPool) {
      this.ownerPool = new Pool({ connectionString: this.options.ownerUrl, max: 2, application_name: 'lore-owner' });
      this.ownerPool.on('error', () => undefined);
    }
    const client = await this.ownerPool.connect();
    const lost = watchConnection(client);
    try {
      return await fn(wrap(client));
    } finally {
      lost.stop();
      client.release(lost.broken());
    }
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pool.end();
    await this.ownerPool?.end();
  }

  private async inTransaction<T>(pool: Pool, fn: (sql: Sql) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    const client = await pool.connect();
    const lost = watchConnection(client);
    let broken = false;
    try {
      await client.query(begin);
      const sql = wrap(client);
      const result = await fn(sql);
      await client.query('COMMIT');
      outboxCommitted(sql);
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw err;
    } finally {
      lost.stop();
      client.release(broken || lost.broken());
    }
  }
}

/**
 * A checked-out client whose connection ends while no query of it runs (the server restarted during a transaction's
 * other work) emits 'error' with nobody listening, which would end the process. The error is kept instead: the
 * transaction's next query fails, and the client is discarded on release.
 */
function watchConnection(client: PoolClient): { broken: () => boolean; stop: () => void } {
  let lost = false;
  const onError = () => {
    lost = true;
  };
  client.on('error', onError);
  return { broken: () => lost, stop: () => client.off('error', onError) };
}

/** A value as the literal of its bound text: NULL, or the escaped text node-postgres would have sent for it. */
function inlineLiteral(value: unknown): string {
  const prepared = prepareValue(value) as string | Buffer | null;
  if (prepared === null || prepared === undefined) return 'NULL';
  const text = Buffer.isBuffer(prepared) ? `\\x${prepared.toString('hex')}` : String(prepared);
  if (text.includes('\0')) throw new Error('a value cannot contain NUL');
  return escapeLiteral(text);
}
