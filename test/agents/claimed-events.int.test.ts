import { randomUUID } from 'node:crypto';
import { PgliteDb, runMigrations, runRuntimeMigrations, type Db } from '@lore/runtime';
import { AGENTS_MIGRATIONS } from '../../services/agents/src/agents-service';
import { insertClaimedListRows, insertList, listRowsOf } from '../../services/agents/src/store/lists';
import { appendClaimedEvents, insertWorkflow, listWorkflowEvents, updateWorkflow } from '../../services/agents/src/store/workflows';
import { startAgentsStack, type AgentsStack } from './harness';

jest.setTimeout(120_000);

/**
 * A running session's progress message and its rows are one statement each (`appendClaimedEvents`,
 * `insertClaimedListRows`): the claim's check, the row lock, the sequence numbers and the events (and the rows). On
 * both run modes' databases: real PostgreSQL under row-level security, and PGlite.
 */
function describeClaimedEvents(name: string, open: () => Promise<{ db: Db; tenants: [string, string]; close(): Promise<void> }>): void {
  describe(`appendClaimedEvents on ${name}`, () => {
    let db: Db;
    let tenant: string;
    let other: string;
    let close: () => Promise<void>;

    beforeAll(async () => {
      const opened = await open();
      db = opened.db;
      [tenant, other] = opened.tenants;
      close = opened.close;
    });
    afterAll(async () => close());

    const session = async (claimedBy: string | null, kind = 'agentic_crawler') => {
      const threadId = randomUUID();
      await db.withTenant(tenant, async (sql) => {
        await insertWorkflow(sql, tenant, { thread_id: threadId, kind, owner: 'k', status: 'running', current_step: 'running', prompt: 'p', state: {}, total_target: 0, list_id: null });
        if (claimedBy) await updateWorkflow(sql, tenant, threadId, { claimed_by: claimedBy });
      });
      return threadId;
    };
    const events = (threadId: string, t = tenant) => db.withTenant(t, (sql) => listWorkflowEvents(sql, t, threadId, 0, 100));
    const SESSIONS = ['deep_search', 'web_research', 'agentic_crawler'];

    it('writes the events of a session its worker holds, numbered in order after the earlier ones', async () => {
      const threadId = await session('worker-a');
      const first = await appendClaimedEvents(db, tenant, threadId, SESSIONS, 'worker-a', [{ type: 'progress', data: { n: 1 } }]);
      expect(first?.map((e) => e.seq)).toEqual([1]);
      const next = await appendClaimedEvents(db, tenant, threadId, SESSIONS, 'worker-a', [
        { type: 'row', data: { n: 2, text: "it's \\ \"quoted\" é" } },
        { type: 'progress', data: { n: 3 } },
      ]);
      expect(next?.map((e) => e.seq)).toEqual([2, 3]);
      expect(next![0]!.created_at).toBeInstanceOf(Date);
      const stored = await events(threadId);
      expect(stored.map((e) => [Number(e.seq), e.type, e.data])).toEqual([
        [1, 'progress', { n: 1 }],
        [2, 'row', { n: 2, text: "it's \\ \"quoted\" é" }],
        [3, 'progress', { n: 3 }],
      ]);
    });

    it('writes nothing for a session another worker holds, nobody holds, of another kind, or of another tenant', async () => {
      const held = await session('worker-b');
      expect(await appendClaimedEvents(db, tenant, held, SESSIONS, 'worker-a', [{ type: 'progress', data: {} }])).toBeNull();
      const free = await session(null);
      expect(await appendClaimedEvents(db, tenant, free, SESSIONS, 'worker-a', [{ type: 'progress', data: {} }])).toBeNull();
      const list = await session('worker-a', 'list_building');
      expect(await appendClaimedEvents(db, tenant, list, SESSIONS, 'worker-a', [{ type: 'progress', data: {} }])).toBeNull();
      // Another tenant's statement finds no row of this one, even naming its thread.
      const mine = await session('worker-a');
      expect(await appendClaimedEvents(db, other, mine, SESSIONS, 'worker-a', [{ type: 'progress', data: {} }])).toBeNull();
      for (const id of [held, free, list, mine]) expect(await events(id)).toEqual([]);
      // The sequence did not move: the holder's next event is the first.
      expect((await appendClaimedEvents(db, tenant, mine, SESSIONS, 'worker-a', [{ type: 'progress', data: {} }]))?.map((e) => e.seq)).toEqual([1]);
    });

    const newRow = (key: string, extra = '') => ({
      row_id: `row_${key}`,
      entity_key: key,
      position: 0,
      cells: { name: { value: `${key}${extra}` } },
      step_source: 'agentic_crawler',
      metadata: { source: { source_url: `https://${key}/` } },
      event: { row_id: `row_${key}`, entity_key: key, name: `${key}${extra}` },
    });
    const sessionWithList = async (claimedBy: string) => {
      const threadId = await session(claimedBy);
      const listId = randomUUID();
      await db.withTenant(tenant, async (sql) => {
        await insertList(sql, tenant, { list_id: listId, thread_id: threadId, owner: 'k', name: 'l', description: '', list_type: 'company', status: 'running', columns: [] });
        await updateWorkflow(sql, tenant, threadId, { list_id: listId });
      });
      return { threadId, listId };
    };
    const claim = (threadId: string, workerId = 'worker-a') => ({ tenantId: tenant, threadId, kinds: SESSIONS, workerId });

    it("writes a session's rows after the list's others, with a row event for each row written, in order", async () => {
      const { threadId, listId } = await sessionWithList('worker-a');
      await appendClaimedEvents(db, tenant, threadId, SESSIONS, 'worker-a', [{ type: 'progress', data: {} }]);
      const first = await insertClaimedListRows(db, claim(threadId), listId, [newRow('a.example'), newRow('b.example')]);
      expect(first?.map((e) => [e.seq, e.data.entity_key])).toEqual([
        [2, 'a.example'],
        [3, 'b.example'],
      ]);
      expect(new Date(first![0]!.at).toISOString()).toBe(first![0]!.at);
      // A key the list holds is left as it is, and has no event; the new one goes after the others.
      const second = await insertClaimedListRows(db, claim(threadId), listId, [newRow('b.example', ' again'), newRow('c.example')]);
      expect(second?.map((e) => [e.seq, e.data.entity_key])).toEqual([[4, 'c.example']]);
      // Nothing new: no event, and the sequence does not move.
      expect(await insertClaimedListRows(db, claim(threadId), listId, [newRow('a.example', ' again')])).toEqual([]);
      const rows = await db.withTenant(tenant, (sql) => listRowsOf(sql, tenant, listId, 100));
      expect(rows.map((r) => [r.entity_key, r.position, (r.cells.name as { value: string }).value])).toEqual([
        ['a.example', 1, 'a.example'],
        ['b.example', 2, 'b.example'],
        // Placed as the second of its batch after the list's two rows: positions order the rows, and may skip.
        ['c.example', 4, 'c.example'],
      ]);
      const stored = await events(threadId);
      expect(stored.map((e) => [Number(e.seq), e.type, e.data.entity_key ?? null])).toEqual([
        [1, 'progress', null],
        [2, 'row', 'a.example'],
        [3, 'row', 'b.example'],
        [4, 'row', 'c.example'],
      ]);
      expect(stored[1]!.data).toEqual({ row_id: 'row_a.example', entity_key: 'a.example', name: 'a.example' });
    });

    it("writes no row of a session another worker holds", async () => {
      const { threadId, listId } = await sessionWithList('worker-b');
      expect(await insertClaimedListRows(db, claim(threadId), listId, [newRow('a.example')])).toBeNull();
      expect(await db.withTenant(tenant, (sql) => listRowsOf(sql, tenant, listId, 100))).toEqual([]);
      expect(await events(threadId)).toEqual([]);
      expect((await insertClaimedListRows(db, claim(threadId, 'worker-b'), listId, [newRow('a.example')]))?.map((e) => e.seq)).toEqual([1]);
    });

    it('refuses an empty batch', async () => {
      const threadId = await session('worker-a');
      await expect(appendClaimedEvents(db, tenant, threadId, SESSIONS, 'worker-a', [])).rejects.toThrow('at least one event');
    });
  });
}

describeClaimedEvents('PostgreSQL', async () => {
  const stack: AgentsStack = await startAgentsStack({ worker: { start: false } });
  const a = await stack.tenant();
  const b = await stack.tenant();
  return { db: stack.db, tenants: [a.tenantId, b.tenantId], close: () => stack.close() };
});

describeClaimedEvents('PGlite', async () => {
  const db = await PgliteDb.open();
  await runRuntimeMigrations(db);
  await runMigrations(db, AGENTS_MIGRATIONS);
  return { db, tenants: [`t-${randomUUID()}`, `t-${randomUUID()}`], close: () => db.close() };
});
