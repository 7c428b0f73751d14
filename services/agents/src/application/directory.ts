import type { Db, Sql } from '@lore/runtime';
import { compileFilter, FilterError } from '../domain/filter';
import { identityKey, recordIdOf } from '../domain/directory-records';
import type { Directory, DirectoryFilter, DirectoryKind, DirectoryRecord } from '../sources/directory';
import { countRecords, limitStatementTime, searchRecords, SEARCH_TIMEOUT_MS, upsertRecords, type DirectoryRow, type DirectoryWrite } from '../store/directory';

/**
 * The directory's use cases (docs/agents.md, "Directory and database search"): Atlas-style searches for the
 * database-search routes, the MCP tools and list building (through `PostgresDirectory`), and the writes of CSV
 * imports and finished lists.
 */

export const MAX_SEARCH_LIMIT = 100;

export interface DirectoryPage {
  records: DirectoryRecord[];
  /** Every record of the tenant and kind the filter matches (not only this page). */
  count: number;
}

/** A search refused as a whole (not one part of its filter): the filter's run took too long. */
export class DirectorySearchRefused extends Error {}

const toRecord = (r: DirectoryRow): DirectoryRecord => ({ id: r.record_id, kind: r.kind, data: r.data, source: r.source, updatedAt: r.updated_at.toISOString() });

const INVALID_REGEX = '2201B';
const QUERY_CANCELED = '57014';

function pgCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

async function run<T>(db: Db, tenantId: string, filter: DirectoryFilter, fn: (sql: Sql, condition: { sql: string; params: unknown[] }) => Promise<T>): Promise<T> {
  // Throws FilterError before any SQL runs.
  const condition = compileFilter(filter, { column: 'd.data', first: 3 });
  try {
    return await db.withTenant(tenantId, async (sql) => {
      await limitStatementTime(sql, SEARCH_TIMEOUT_MS);
      return fn(sql, condition);
    });
  } catch (err) {
    if (pgCode(err) === INVALID_REGEX) throw new FilterError('', `a $regex is not a valid regular expression (${err instanceof Error ? err.message : 'invalid'})`);
    if (pgCode(err) === QUERY_CANCELED) throw new DirectorySearchRefused(`the filter ran longer than ${SEARCH_TIMEOUT_MS / 1000} s; narrow it`);
    throw err;
  }
}

/** One page of the tenant's records of `kind` matching `filter`, and how many match in all. */
export async function searchDirectory(db: Db, tenantId: string, kind: DirectoryKind, filter: DirectoryFilter, page: { limit: number; offset: number }): Promise<DirectoryPage> {
  const limit = Math.min(Math.max(Math.trunc(page.limit), 1), MAX_SEARCH_LIMIT);
  const offset = Math.max(Math.trunc(page.offset), 0);
  return run(db, tenantId, filter, async (sql, condition) => {
    const rows = await searchRecords(sql, tenantId, kind, condition, { limit, offset });
    // A short first page is the whole result: no second statement.
    const count = offset === 0 && rows.length < limit ? rows.length : await countRecords(sql, tenantId, kind, condition);
    return { records: rows.map(toRecord), count };
  });
}

/** The `Directory` port on PostgreSQL, for list building (wired into AgentsDeps as `directory`). */
export class PostgresDirectory implements Directory {
  constructor(private readonly db: Db) {}

  async search(tenantId: string, kind: DirectoryKind, filter: DirectoryFilter, options: { limit: number; offset?: number }): Promise<DirectoryRecord[]> {
    const limit = Math.min(Math.max(Math.trunc(options.limit), 1), MAX_SEARCH_LIMIT);
    const offset = Math.max(Math.trunc(options.offset ?? 0), 0);
    return run(this.db, tenantId, filter, async (sql, condition) => (await searchRecords(sql, tenantId, kind, condition, { limit, offset })).map(toRecord));
  }
}

/** A record to write: who it is is derived from its data (records that do not say who they are are skipped). */
export interface DirectoryInput {
  kind: DirectoryKind;
  data: Record<string, unknown>;
  /** `csv:<list_id>`, `list:<list_id>`, or a URL. */
  source: string;
}

/** The writes of `inputs`: one per identity (later inputs' fields merged over earlier ones'), unidentified ones left out. */
export function directoryWrites(inputs: readonly DirectoryInput[]): DirectoryWrite[] {
  const byId = new Map<string, DirectoryWrite>();
  for (const input of inputs) {
    const key = identityKey(input.kind, input.data);
    if (key === null) continue;
    const recordId = recordIdOf(input.kind, key);
    const id = `${input.kind}:${recordId}`;
    const seen = byId.get(id);
    byId.set(id, seen ? { ...seen, data: { ...seen.data, ...input.data }, source: input.source } : { kind: input.kind, recordId, data: input.data, source: input.source });
  }
  return [...byId.values()];
}

/** Writes records inside the caller's transaction of `tenantId` (a CSV import's batch). Returns how many were written. */
export async function writeDirectoryRecords(sql: Sql, tenantId: string, inputs: readonly DirectoryInput[]): Promise<number> {
  return upsertRecords(sql, tenantId, directoryWrites(inputs));
}

/** Writes records in a transaction of their own (finished lists, imports of other kinds). Returns how many were written. */
export async function upsertDirectoryRecords(db: Db, tenantId: string, inputs: readonly DirectoryInput[]): Promise<number> {
  const writes = directoryWrites(inputs);
  if (writes.length === 0) return 0;
  return db.withTenant(tenantId, (sql) => upsertRecords(sql, tenantId, writes));
}
