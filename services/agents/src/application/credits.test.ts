import { randomUUID } from 'node:crypto';
import { CreditUsageEventSchema, TOPICS } from '@lore/contracts';
import { PgliteDb, runMigrations, runRuntimeMigrations } from '@lore/runtime';
import { AGENTS_MIGRATIONS } from '../agents-service';
import { DEFAULT_CREDIT_PRICES, priceOf } from '../domain/credits';
import { getWorkflow, insertWorkflow } from '../store/workflows';
import { creditsAtRunStart, creditsUsedUpIn, keepAnnouncedBalance, meterUsage } from './credits';
import { recordEvent } from './progress';

jest.setTimeout(60_000);

/** Metering on embedded PostgreSQL: usage recorded with the checkpoint, charged once, the announced balance kept. */
describe('credits: metering a workflow', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await runMigrations(db, AGENTS_MIGRATIONS);
  });
  afterAll(async () => {
    await db?.close();
  });

  const workflow = async (tenantId: string): Promise<string> => {
    const id = randomUUID();
    await db.withTenant(tenantId, (sql) => insertWorkflow(sql, tenantId, { thread_id: id, kind: 'company_search', owner: 'api_key:k', status: 'processing', current_step: 'data_collection', prompt: 'p', state: { service_id: 'crm-1' }, total_target: 25, list_id: null }));
    return id;
  };
  /** One checkpoint: the workflow locked, the usage metered; `fail` rolls the transaction back after metering. */
  const checkpoint = (tenantId: string, id: string, usage: { fetches: number; rows: number; model_tokens: number }, fail = false, admittedAt: Date | null = null) =>
    db.withTenant(tenantId, async (sql) => {
      const w = (await getWorkflow(sql, tenantId, id, ['company_search'], true))!;
      const out = await meterUsage(sql, DEFAULT_CREDIT_PRICES, tenantId, w, usage, 'crm-1', admittedAt);
      if (fail) throw new Error('the worker died before the commit');
      return out;
    });
  const charges = (tenantId: string, id: string) =>
    db.withTenant(tenantId, async (sql) => (await sql.query<{ charge: number; credits: string; event_id: string; service_id: string; usage: Record<string, number> }>(`SELECT charge, credits, event_id, service_id, usage FROM agents.usage_charges WHERE thread_id = $1 ORDER BY charge`, [id])).rows);
  const messages = async (tenantId: string) =>
    (await db.query<{ value: unknown; key: string; event_id: string }>(`SELECT value, key, event_id FROM runtime.outbox WHERE topic = $1 AND key = $2 ORDER BY id`, [TOPICS.creditsUsage, tenantId])).rows;

  it('charges the price of the workflow\'s totals, one outbox message per charge, and nothing for a checkpoint that rolled back', async () => {
    const t = 'tenant-meter';
    const id = await workflow(t);
    expect(await checkpoint(t, id, { fetches: 2, rows: 3, model_tokens: 400 })).toEqual({ exhausted: false, charged: 2 + 3 + 1 });
    // Tokens within the thousand already charged, nothing else: recorded, nothing owed yet.
    expect(await checkpoint(t, id, { fetches: 0, rows: 0, model_tokens: 500 })).toEqual({ exhausted: false, charged: 0 });
    // A worker killed before its checkpoint committed: neither its work nor its usage is recorded.
    await expect(checkpoint(t, id, { fetches: 9, rows: 9, model_tokens: 9_000 }, true)).rejects.toThrow('died');
    expect(await checkpoint(t, id, { fetches: 1, rows: 4, model_tokens: 200 })).toEqual({ exhausted: false, charged: 1 + 4 + 1 });

    const w = (await db.withTenant(t, (sql) => getWorkflow(sql, t, id, ['company_search'])))!;
    const total = { fetches: 3, rows: 7, model_tokens: 1_100 };
    expect(w.usage_total).toEqual(total);
    expect(Number(w.credits_used)).toBe(priceOf(total, DEFAULT_CREDIT_PRICES));
    const rows = await charges(t, id);
    expect(rows.map((r) => [r.charge, Number(r.credits), r.service_id])).toEqual([[1, 6, 'crm-1'], [2, 6, 'crm-1']]);
    expect(rows[1]!.usage).toEqual({ fetches: 1, rows: 4, model_tokens: 700 });
    const sent = await messages(t);
    expect(sent.map((m) => m.event_id)).toEqual(rows.map((r) => r.event_id));
    const event = CreditUsageEventSchema.parse(sent[1]!.value);
    expect(event).toMatchObject({ tenant_id: t, source: 'agents', service_id: 'crm-1', workflow_id: id, workflow_kind: 'company_search', charge: 2, credits: 6, usage: { fetches: 1, rows: 4, model_tokens: 700 } });
  });

  const creditsUsedUp = (tenantId: string) => db.withTenant(tenantId, (sql) => creditsUsedUpIn(sql, tenantId, null));

  it('keeps the newest balance the gateway announced, whatever order they arrive in', async () => {
    const t = 'tenant-balance';
    expect(await creditsUsedUp(t)).toBe(false);
    expect(await keepAnnouncedBalance(db, t, 0, 3)).toBe(true);
    expect(await creditsUsedUp(t)).toBe(true);
    // An older announcement (a top-up before the charge that used the balance up) changes nothing.
    expect(await keepAnnouncedBalance(db, t, 50, 2)).toBe(false);
    expect(await keepAnnouncedBalance(db, t, 0, 3)).toBe(false);
    expect(await creditsUsedUp(t)).toBe(true);
    expect(await keepAnnouncedBalance(db, t, 40, 4)).toBe(true);
    expect(await creditsUsedUp(t)).toBe(false);
    expect(await keepAnnouncedBalance(db, t, null, 5)).toBe(true);
    expect(await creditsUsedUp(t)).toBe(false);
    const id = await workflow(t);
    await keepAnnouncedBalance(db, t, -2, 6);
    expect(await checkpoint(t, id, { fetches: 1, rows: 0, model_tokens: 0 })).toEqual({ exhausted: true, charged: 1 });
  });

  it('does not believe a used-up balance announced before the request that set the workflow running', async () => {
    const t = 'tenant-admitted';
    await keepAnnouncedBalance(db, t, 0, 1);
    await new Promise((r) => setTimeout(r, 20));
    // The gateway admitted the start after that announcement: a top-up was made, its announcement still on its way.
    const id = await workflow(t);
    await db.withTenant(t, (sql) => recordEvent(sql, t, id, 'started', {}));
    const start = await creditsAtRunStart(db, t, id);
    expect(start.admittedAt).toBeInstanceOf(Date);
    expect(start.exhausted).toBe(false);
    expect(await checkpoint(t, id, { fetches: 1, rows: 0, model_tokens: 0 }, false, start.admittedAt)).toEqual({ exhausted: false, charged: 1 });
    // A used-up balance announced after it counts (the top-up was not enough, or the gateway's cache was stale).
    await keepAnnouncedBalance(db, t, -1, 2);
    expect(await checkpoint(t, id, { fetches: 1, rows: 0, model_tokens: 0 }, false, start.admittedAt)).toEqual({ exhausted: true, charged: 1 });
  });
});
