export interface SqlResult<T> {
  rows: T[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * A hot statement with fixed text (it runs for every event or request): the adapter may keep it prepared per
   * connection, so the server parses and plans it once instead of on every run. Only for text without inlined
   * values: each distinct text becomes one prepared statement on every connection that runs it.
   */
  prepare?: boolean;
}

/** Anything that runs SQL: a pool, a transaction, an embedded database. */
export interface Sql {
  query<T = Record<string, unknown>>(text: string, params?: unknown[], options?: QueryOptions): Promise<SqlResult<T>>;
}

/**
 * The database port. Queries run as the application role, which cannot bypass row-level security.
 * `withTenant` opens a transaction and sets `lore.tenant_id` for the policies; every tenant-owned read or
 * write goes through it. Never await another `Db` call while inside a transaction callback: embedded
 * PostgreSQL has a single backend and would deadlock.
 */
export interface Db extends Sql {
  readonly kind: 'postgres' | 'pglite';
  /** True when the pgvector extension is installed and the application role can use its type (as of `init`). */
  readonly hasVector: boolean;
  tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  withTenant<T>(tenantId: string, fn: (sql: Sql) => Promise<T>): Promise<T>;
  /**
   * One statement as the tenant, atomically, in one round trip: what `withTenant` with a single query does in three
   * (BEGIN and the setting, the statement, COMMIT). For a hot write that needs no other statement in its
   * transaction. The adapter may send the values inlined as escaped literals (typed by their context, as untyped
   * parameters are), so `text` must not hold `$n` inside its own string literals or comments.
   */
  statementAsTenant<T = Record<string, unknown>>(tenantId: string, text: string, params?: unknown[]): Promise<SqlResult<T>>;
  /** Runs `fn` as the schema owner (migrations, security-definer setup). Not for request paths. */
  asOwner<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The setting row-level security policies read: `current_setting('lore.tenant_id', true)`. */
export const TENANT_SETTING = 'lore.tenant_id';
/**
 * Embedded mode's application role (PGlite creates it). On a server the application role is whichever role
 * LORE_DATABASE_URL logs in as; migrations grant to that role (`runMigrations`), whatever its name.
 */
export const APP_ROLE = 'lore_app';
