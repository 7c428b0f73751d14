import { randomUUID } from 'node:crypto';
import { AGENTS_MIGRATIONS } from '@lore/agents';
import { runMigrations, runRuntimeMigrations, type Db } from '@lore/runtime';
import { appendEvents, checkpointImport, insertImport, insertList as insertCsvList, insertRows, listRowsAfter, type ImportedRow } from '../../services/agents/src/store/csv-imports';
import { upsertRecords } from '../../services/agents/src/store/directory';
import { insertClaimedListRows, insertList, listRowsOf } from '../../services/agents/src/store/lists';
import { appendClaimedEvents, insertWorkflow, listWorkflowEvents, updateWorkflow } from '../../services/agents/src/store/workflows';
import { freshPostgresDb, rowsRead } from '../runtime/support';

jest.setTimeout(180_000);

/**
 * The agents' bulk writes on tables no ANALYZE has seen (a fresh install's first import, a new tenant's first
 * session), measured in rows read by the transaction's own counters, not in time: each input must cost a few reads,
 * whatever the list already holds. Before 2026-12-01 a session's row (written one at a time, `insertClaimedListRows`)
 * counted the whole list to place itself after the others: 2,000 rows read about 2 million (N²/2).
 */
describe("the agents' bulk writes on tables without statistics", () => {
  const T = 'tenant-plans';

  let stack: Awaited<ReturnType<typeof freshPostgresDb>>;
  beforeAll(async () => {
    stack = await freshPostgresDb();
    await runRuntimeMigrations(stack.db);
    await runMigrations(stack.db, AGENTS_MIGRATIONS);
    // Autovacuum stays away: the tables keep no statistics, as on a fresh install's first operation.
    await stack.db.asOwner(async (sql) => {
      for (const t of ['workflows', 'workflow_events', 'lists', 'list_rows', 'directory']) await sql.query(`ALTER TABLE agents.${t} SET (autovacuum_enabled = false)`);
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("a session's rows, written one at a time, each read a few rows, not the list", async () => {
    const N = 2_000;
    await stack.db.withTenant(T, async (sql) => {
      const threadId = randomUUID();
      const listId = randomUUID();
      await insertWorkflow(sql, T, { thread_id: threadId, kind: 'agentic_crawler', owner: 'k', status: 'processing', current_step: 'running', prompt: 'p', state: {}, total_target: 0, list_id: listId });
      await updateWorkflow(sql, T, threadId, { claimed_by: 'worker-a' });
      await insertList(sql, T, { list_id: listId, thread_id: threadId, owner: 'k', name: 'crawl', description: '', list_type: 'agentic_crawler', status: 'processing', columns: [] });
      // The session's statements run in this transaction, so its counters see their reads (in the service each is a
      // transaction of its own: `statementAsTenant`).
      const db = { statementAsTenant: (_tenant: string, text: string, params: unknown[]) => sql.query(text, params) } as unknown as Db;
      const claim = { tenantId: T, threadId, kinds: ['agentic_crawler'], workerId: 'worker-a' };
      const row = (i: number) => ({ row_id: `row_${i}`, entity_key: `p${i}.example`, position: 0, cells: {}, step_source: 'agentic_crawler', metadata: {}, event: { entity_key: `p${i}.example` } });

      const before = await rowsRead(sql, ['agents']);
      for (let i = 1; i <= N; i++) {
        const written = await insertClaimedListRows(db, claim, listId, [row(i)]);
        expect(written).toHaveLength(1);
        await appendClaimedEvents(db, T, threadId, ['agentic_crawler'], 'worker-a', [{ type: 'progress', data: { pages: i } }]);
      }
      // A resumed run writes its first rows again: left as they are, and the next new row still goes last.
      expect(await insertClaimedListRows(db, claim, listId, [row(1)])).toEqual([]);
      expect(await insertClaimedListRows(db, claim, listId, [row(N + 1)])).toHaveLength(1);
      const read = (await rowsRead(sql, ['agents'])) - before;

      const rows = await listRowsOf(sql, T, listId, N + 10);
      expect(rows.map((r) => r.position)).toEqual(Array.from({ length: N + 1 }, (_, i) => i + 1));
      const events = await listWorkflowEvents(sql, T, threadId, 0, 3 * N);
      expect(events.map((e) => Number(e.seq))).toEqual(Array.from({ length: 2 * N + 1 }, (_, i) => i + 1));
      // A few rows per call (the workflow's row, the list's key check, the last position); counting the list read
      // N²/2 (2 million).
      expect(read).toBeLessThan(10 * N);
    });
  });

  it("a CSV import's batches read each row once, first run and resumed", async () => {
    const N = 5_000;
    const BATCH = 500;
    await stack.db.withTenant(T, async (sql) => {
      const threadId = randomUUID();
      const listId = randomUUID();
      await insertImport(sql, T, { threadId, owner: 'k', status: 'processing', state: {} });
      await insertCsvList(sql, T, { listId, threadId, owner: 'k', name: 'people.csv', description: '', columns: [] });
      await updateWorkflow(sql, T, threadId, { claimed_by: 'worker-a' });
      const batch = (start: number): ImportedRow[] =>
        Array.from({ length: BATCH }, (_, k) => ({ row_id: `row-${start + k + 1}`, entity_key: `row:${start + k + 1}`, position: start + k + 1, values: [`Company ${start + k}`, `c${start + k}.example`], step_source: 'csv_import', metadata: {} }));
      const importAll = async () => {
        for (let start = 0; start < N; start += BATCH) {
          expect(await checkpointImport(sql, T, threadId, 'worker-a', 60_000, start + BATCH)).toBe(true);
          const rows = batch(start);
          await insertRows(sql, T, listId, rows);
          await upsertRecords(sql, T, rows.map((r) => ({ kind: 'company', recordId: `c${r.position}.example`, data: { name: `Company ${r.position}` }, source: `csv:${listId}` })));
          await appendEvents(sql, T, threadId, [{ type: 'progress', data: { imported_rows: start + BATCH } }]);
        }
      };

      const before = await rowsRead(sql, ['agents']);
      await importAll();
      await importAll();
      for (let after = 0; after < N; after += 200) expect(await listRowsAfter(sql, T, listId, after, 200)).toHaveLength(200);
      const read = (await rowsRead(sql, ['agents'])) - before;
      // Measured 2026-12-01: 20,000 (a row's list check, then a key and a record found per row when resumed, and the
      // restore's pages).
      expect(read).toBeLessThan(10 * N);
    });
  });
});

