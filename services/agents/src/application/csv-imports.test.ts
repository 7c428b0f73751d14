import { randomUUID } from 'node:crypto';
import { PgliteDb, PostgresBlobStore, createLogger, runMigrations, runRuntimeMigrations } from '@lore/runtime';
import { AGENTS_MIGRATIONS } from '../agents-service';
import { insertImport } from '../store/csv-imports';
import { CsvImporter, DEFAULT_CSV_IMPORT, analyzeUpload, importStatus, restoreCsvList, reviewImport, type CsvImportDeps, type CsvUploadEvent } from './csv-imports';
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
});
