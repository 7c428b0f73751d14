import { randomUUID } from 'node:crypto';
import { AppError, PgliteDb, PostgresBlobStore, createLogger, runMigrations, runRuntimeMigrations, type Db, type Sql } from '@lore/runtime';
import { AGENTS_MIGRATIONS } from '../agents-service';
import { insertImport } from '../store/csv-imports';
import {
  AnalysisGate,
  CsvImporter,
  DEFAULT_CSV_IMPORT,
  MAX_RESTORE_BYTES,
  ReviewColumnError,
  analyzeUpload,
  batchEnd,
  importStatus,
  restoreCsvList,
  reviewImport,
  type CsvImportDeps,
  type CsvUploadEvent,
} from './csv-imports';
import { PostgresDirectory, searchDirectory } from './directory';
import type { Principal } from './principal';

jest.setTimeout(60_000);

const silent = createLogger({ level: 'silent', service: 'agents-unit' });
const principal = (tenantId: string): Principal => ({ tenantId, owner: 'api_key:k', admin: true, workspaceId: 'w', memoryId: 'm', reach: { workspaceId: null, memoryIds: null, readsDocuments: true } });

/** The CSV import and the directory on embedded PostgreSQL (embedded mode runs them there). */
describe('CSV import and directory search (embedded PostgreSQL)', () => {
  let db: PgliteDb;
  let deps: CsvImportDeps;
  let importer: CsvImporter;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await runMigrations(db, AGENTS_MIGRATIONS);
    deps = { db, blobs: new PostgresBlobStore(db), logger: silent, csvImport: { ...DEFAULT_CSV_IMPORT, batchSize: 3, leaseMs: 60_000 } };
    importer = new CsvImporter(deps);
  });
  afterAll(async () => {
    await importer?.stop();
    await db?.close();
  });

  it('analyses, imports in batches, resumes after a crash without duplicates, and searches what it wrote', async () => {
    const p = principal('tenant-1');
    const csv = `Company;Domain;Employees\n${Array.from({ length: 10 }, (_, i) => `Firm ${i};firm${i}.example;${i * 10}`).join('\n')}\n`;
    const events: CsvUploadEvent[] = [];
    const threadId = await analyzeUpload(deps, p, { filename: 'firms.csv', bytes: Buffer.from(csv), tooLarge: false }, (e) => events.push(e));
    expect(events.map((e) => e.status)).toEqual(['analyzing', 'analyzing', 'ready_for_review']);
    expect(events[1]).toMatchObject({ delimiter: ';', row_count: 10 });

    const { listId } = await reviewImport(deps, p, threadId, { listName: 'Firms' });
    await importer.run(p.tenantId, threadId);
    expect(await importStatus(deps, p, threadId)).toMatchObject({ status: 'completed', list_id: listId, imported_rows: 10, total_rows: 10 });

    // A crash after four rows were written and three counted; the sweep finds the import and finishes it.
    await db.withTenant(p.tenantId, async (sql) => {
      await sql.query(`DELETE FROM agents.list_rows WHERE list_id = $1 AND position > 4`, [listId]);
      await sql.query(`UPDATE agents.workflows SET status = 'importing', claimed_by = NULL, claimed_until = NULL, state = jsonb_set(state, '{imported_rows}', '3') WHERE thread_id = $1`, [threadId]);
    });
    expect(await importer.sweep()).toBe(1);
    expect(await importStatus(deps, p, threadId)).toMatchObject({ status: 'completed', imported_rows: 10 });
    const restored = await restoreCsvList(deps, p, listId);
    expect(restored.rows.map((r) => r.position)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(restored.currentCount).toBe(10);

    const page = await searchDirectory(db, p.tenantId, 'company', { employees: { $gte: 50 }, domain: { $regex: 'FIRM', $options: 'i' } }, { limit: 100, offset: 0 });
    expect(page.count).toBe(5);
    expect(page.records.every((r) => r.source === `csv:${listId}`)).toBe(true);
    expect(await new PostgresDirectory(db).search('tenant-2', 'company', {}, { limit: 10 })).toEqual([]);
  });

  it('ends an upload whose analysis was cut short in error, and leaves a fresh one alone', async () => {
    const p = principal('tenant-3');
    const [stale, fresh] = [randomUUID(), randomUUID()];
    await db.withTenant(p.tenantId, async (sql) => {
      for (const threadId of [stale, fresh]) await insertImport(sql, p.tenantId, { threadId, owner: p.owner, status: 'analyzing', state: { filename: 'x.csv', size: 1 } });
      await sql.query(`UPDATE agents.workflows SET updated_at = now() - interval '1 hour' WHERE thread_id = $1`, [stale]);
    });
    await importer.sweep();
    expect(await importStatus(deps, p, stale)).toMatchObject({ status: 'error', errors: [{ row: 0, column: '', message: expect.stringMatching(/cut short/), value: '' }] });
    expect((await importStatus(deps, p, fresh)).status).toBe('analyzing');
  });

  it('answers an id that is no UUID as one that names nothing (404), as the workflow routes do', async () => {
    const p = principal('tenant-4');
    const threadId = await analyzeUpload(deps, p, { filename: 'firms.csv', bytes: Buffer.from('Company\nAcme\n'), tooLarge: false }, () => {});
    const notFound = expect.objectContaining({ code: 'NOT_FOUND', status: 404 });
    for (const id of ['not-a-uuid', `${threadId}x`, 'x'.repeat(512)]) {
      await expect(importStatus(deps, p, id)).rejects.toEqual(notFound);
      await expect(reviewImport(deps, p, id, {})).rejects.toEqual(notFound);
      await expect(restoreCsvList(deps, p, id)).rejects.toEqual(notFound);
    }
    // The same import by its id in capitals.
    expect((await importStatus(deps, p, threadId.toUpperCase())).thread_id).toBe(threadId);
  });

  /** Uploads `csv` and reviews it; answers the thread and the list. */
  async function reviewed(p: Principal, csv: string, filename = 'file.csv', input: Parameters<typeof reviewImport>[3] = {}): Promise<{ threadId: string; listId: string; events: CsvUploadEvent[] }> {
    const events: CsvUploadEvent[] = [];
    const threadId = await analyzeUpload(deps, p, { filename, bytes: Buffer.from(csv), tooLarge: false }, (e) => events.push(e));
    expect(events[events.length - 1]?.status).toBe('ready_for_review');
    const { listId } = await reviewImport(deps, p, threadId, input);
    return { threadId, listId, events };
  }

  const numbered = (n: number) => `Name,Score\n${Array.from({ length: n }, (_, i) => `n${i},${i}`).join('\n')}\n`;

  it('gives the event loop a turn between batches, so timers and requests are answered while an import runs', async () => {
    const p = principal('tenant-turns');
    const { threadId } = await reviewed(p, numbered(30));
    let ticks = 0;
    let running = true;
    const tick = () => {
      ticks += 1;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    await importer.run(p.tenantId, threadId);
    running = false;
    expect(await importStatus(deps, p, threadId)).toMatchObject({ status: 'completed', imported_rows: 30 });
    // Ten batches of three rows: a turn before each.
    expect(ticks).toBeGreaterThanOrEqual(9);
  });

  it('stops after the current batch when the process stops, giving up its claim for the next start', async () => {
    const p = principal('tenant-stop');
    const { threadId } = await reviewed(p, numbered(30));
    const stopping = new CsvImporter(deps);
    const run = stopping.run(p.tenantId, threadId);
    // The stop comes on the event loop's next turns, as a signal would.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    await stopping.stop();
    await run;
    const status = await importStatus(deps, p, threadId);
    expect(status.status).toBe('processing');
    expect(status.imported_rows).toBeGreaterThan(0);
    expect(status.imported_rows).toBeLessThan(30);
    const claim = await db.withTenant(p.tenantId, (sql) => sql.query<{ claimed_by: string | null }>(`SELECT claimed_by FROM agents.workflows WHERE thread_id = $1`, [threadId]));
    expect(claim.rows[0]?.claimed_by).toBeNull();
    await importer.run(p.tenantId, threadId);
    expect(await importStatus(deps, p, threadId)).toMatchObject({ status: 'completed', imported_rows: 30 });
  });

  it('stores each row as its values only, and restores every cell, `__proto__` and `constructor` columns included', async () => {
    const p = principal('tenant-compact');
    const { listId } = await reviewed(p, '__proto__,constructor,name\nevil,ctor,Acme\nmore,ctor2,Beta\n', 'proto.csv');
    await importer.sweep();
    const stored = await db.withTenant(p.tenantId, (sql) => sql.query<{ cells: unknown; metadata: unknown }>(`SELECT cells, metadata FROM agents.list_rows WHERE list_id = $1 ORDER BY position`, [listId]));
    expect(stored.rows).toEqual([
      { cells: ['evil', 'ctor', 'Acme'], metadata: { source: 'csv', csv_row: 2 } },
      { cells: ['more', 'ctor2', 'Beta'], metadata: { source: 'csv', csv_row: 3 } },
    ]);
    const restored = await restoreCsvList(deps, p, listId);
    const json = JSON.parse(JSON.stringify(restored.rows)) as Array<{ row_id: string; cells: Record<string, unknown>; metadata: unknown }>;
    expect(Object.keys(json[0]!.cells)).toEqual(['__proto__', 'constructor', 'name']);
    expect(json[0]!.cells.__proto__).toEqual({ row_id: 'row-2', column_id: '__proto__', value: 'evil', status: 'completed', metadata: { source: 'csv', csv_row: 2, csv_column: '__proto__' }, expandable: false });
    expect(json[1]).toMatchObject({ row_id: 'row-3', metadata: { source: 'csv', csv_row: 3, filename: 'proto.csv' } });
    expect(Object.keys(json[1]!.cells)).toEqual(['__proto__', 'constructor', 'name']);
  });

  it('restores rows stored in the expanded shape of earlier releases as they are', async () => {
    const p = principal('tenant-old-rows');
    const { listId } = await reviewed(p, numbered(2));
    await importer.sweep();
    const old = { row_id: 'row-2', entity_key: 'row:2', position: 1, cells: { Name: { row_id: 'row-2', column_id: 'Name', value: 'old', status: 'completed', metadata: { source: 'csv', csv_row: 2, csv_column: 'Name' }, expandable: false } }, step_source: 'csv_import', metadata: { source: 'csv', csv_row: 2, filename: 'file.csv' } };
    await db.withTenant(p.tenantId, (sql) => sql.query(`UPDATE agents.list_rows SET cells = $2::jsonb, metadata = $3::jsonb WHERE list_id = $1 AND position = 1`, [listId, JSON.stringify(old.cells), JSON.stringify(old.metadata)]));
    const restored = await restoreCsvList(deps, p, listId);
    expect(restored.rows[0]).toEqual(old);
    expect(restored.rows[1]).toMatchObject({ row_id: 'row-3', cells: { Name: { value: 'n1' }, Score: { value: '1' } }, metadata: { filename: 'file.csv' } });
  });

  it('answers at most 16 MiB of restored rows, and the rest after an offset', async () => {
    const p = principal('tenant-restore-bytes');
    // 200 columns named in 200 characters: a row of 400 bytes in the file is about 150 KB restored.
    const header = Array.from({ length: 200 }, (_, i) => `${i}`.padStart(200, 'c')).join(',');
    const line = Array.from({ length: 200 }, () => '1').join(',');
    const { listId } = await reviewed(p, `${header}\n${Array.from({ length: 150 }, () => line).join('\n')}\n`);
    await importer.sweep();
    const first = await restoreCsvList(deps, p, listId);
    expect(first.currentCount).toBe(150);
    expect(first.rows.length).toBeGreaterThan(0);
    expect(first.rows.length).toBeLessThan(150);
    expect(Buffer.byteLength(JSON.stringify(first.rows))).toBeLessThanOrEqual(MAX_RESTORE_BYTES + 1024);
    const rest = await restoreCsvList(deps, p, listId, first.rows.length);
    expect(rest.rows[0]?.position).toBe(first.rows.length + 1);
    expect(rest.currentCount).toBe(150);
    expect(first.rows.length + rest.rows.length).toBe(150);
  });

  it('writes batches bounded by characters as well as rows', () => {
    const rows = Array.from({ length: 10 }, () => ['x'.repeat(1000)]);
    expect(batchEnd(rows, 0, 500, 3_500)).toBe(3);
    expect(batchEnd(rows, 3, 500, 3_500)).toBe(6);
    expect(batchEnd(rows, 0, 2, 1_000_000)).toBe(2);
    // A row longer than the bound is a batch of its own.
    expect(batchEnd(rows, 9, 500, 10)).toBe(10);
  });

  /** The deps with a database whose row inserts fail with `err`. */
  function failingInserts(err: () => Error): CsvImportDeps {
    const wrap = (sql: Sql): Sql => ({
      query: (text, params, options) => (text.includes('INSERT INTO agents.list_rows') ? Promise.reject(err()) : sql.query(text, params, options)),
    });
    const failing = Object.create(db) as Db;
    failing.withTenant = (tenantId, fn) => db.withTenant(tenantId, (sql) => fn(wrap(sql)));
    return { ...deps, db: failing };
  }

  it('ends an import at once when its rows cannot be written, and waits out an outage', async () => {
    const p = principal('tenant-deterministic');
    const { threadId, listId } = await reviewed(p, numbered(5));
    await new CsvImporter(failingInserts(() => new RangeError('Invalid string length'))).run(p.tenantId, threadId);
    const status = await importStatus(deps, p, threadId);
    expect(status).toMatchObject({ status: 'error', imported_rows: 0, errors: [{ row: 0, column: '', message: expect.stringMatching(/^rows 2–4 of the file could not be imported \(RangeError: Invalid string length\)/), value: '' }] });
    const list = await db.withTenant(p.tenantId, (sql) => sql.query<{ status: string }>(`SELECT status FROM agents.lists WHERE list_id = $1`, [listId]));
    expect(list.rows[0]?.status).toBe('error');

    const q = principal('tenant-outage');
    const outage = await reviewed(q, numbered(5));
    const down = Object.assign(new Error('the database is starting up'), { code: '57P03' });
    await new CsvImporter(failingInserts(() => down)).run(q.tenantId, outage.threadId);
    expect((await importStatus(deps, q, outage.threadId)).status).toBe('processing');
  });

  it('refuses a review that gives two columns one display name', async () => {
    const p = principal('tenant-names');
    const events: CsvUploadEvent[] = [];
    const threadId = await analyzeUpload(deps, p, { filename: 'x.csv', bytes: Buffer.from('Name,Website\na,b\n'), tooLarge: false }, (e) => events.push(e));
    const refused = reviewImport(deps, p, threadId, { column_descriptions: [{ column_id: 'Website', column_name: 'Name' }] });
    await expect(refused).rejects.toBeInstanceOf(ReviewColumnError);
    await expect(refused).rejects.toMatchObject({ path: 'column_descriptions.0.column_name' });
    const both = reviewImport(deps, p, threadId, { column_descriptions: [{ column_id: 'Name', column_name: 'Site' }, { column_id: 'Website', column_name: 'Site' }] });
    await expect(both).rejects.toMatchObject({ path: 'column_descriptions.1.column_name' });
    expect((await importStatus(deps, p, threadId)).status).toBe('ready_for_review');
  });

  it('keeps a file name cut to 200 characters, so the default list name is one a review could give', async () => {
    const p = principal('tenant-long-name');
    const { events, listId } = await reviewed(p, numbered(1), `${'n'.repeat(5000)}.csv`);
    expect(events[0]!.filename).toBe('n'.repeat(200));
    const list = await db.withTenant(p.tenantId, (sql) => sql.query<{ name: string }>(`SELECT name FROM agents.lists WHERE list_id = $1`, [listId]));
    expect(list.rows[0]?.name).toBe('n'.repeat(200));
  });
});

describe('AnalysisGate', () => {
  const thrown = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (err) {
      return err;
    }
    return null;
  };

  it('admits max uploads at once, half of them (at least one) a tenant; beyond, 429 or 503 with Retry-After', () => {
    const gate = new AnalysisGate(() => 2);
    const a = gate.enter('a');
    expect(thrown(() => gate.enter('a'))).toMatchObject({ code: 'RATE_LIMITED', status: 429, headers: { 'retry-after': '5' } });
    const b = gate.enter('b');
    expect(thrown(() => gate.enter('c'))).toMatchObject({ code: 'UNAVAILABLE', status: 503, headers: { 'retry-after': '5' } });
    a();
    a();
    const c = gate.enter('c');
    expect(thrown(() => gate.enter('d'))).toBeInstanceOf(AppError);
    b();
    c();
    expect(thrown(() => gate.enter('a'))).toBeNull();
  });
});
