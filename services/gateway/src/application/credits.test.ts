import { TOPICS, type CreditBalanceEvent, type CreditUsageEvent } from '@lore/contracts';
import { IdentitySigner, MemoryBus, PgliteDb, createLogger, createMetricsRegistry, generateEncryptionKey, parseEncryptionKeys } from '@lore/runtime';
import { createGateway, type Gateway } from '../gateway';
import { gatewayConfig } from '../config';
import type { GatewayContext } from '../context';
import { MemoryGatewayState } from '../state/memory-state';
import { createCreditUsageConsumer } from '../consumers/credit-usage';
import { chargesOfWorkflowIn } from '../store/credit-charges';
import { createTenant } from './tenancy';
import { getBilling, setBilling } from './billing';
import { applyCharge } from './credits';

jest.setTimeout(60_000);

const silent = createLogger({ level: 'silent', service: 'credits-unit' });

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Credits on embedded PostgreSQL (the same SQL the cluster runs): charges applied once, announcements. */
describe('credits: charges and balance announcements', () => {
  let db: PgliteDb;
  let gateway: Gateway;
  let ctx: GatewayContext;
  let n = 0;

  beforeAll(async () => {
    db = await PgliteDb.open();
    gateway = await createGateway({
      db,
      state: new MemoryGatewayState(),
      logger: silent,
      metrics: createMetricsRegistry('credits-unit', { defaultMetrics: false }),
      signer: new IdentitySigner('unit-identity-secret-0123456789abcdef'),
      config: gatewayConfig({ sessions: { secret: 'unit-session-secret-0123456789abcdef' }, encryptionKeys: parseEncryptionKeys(generateEncryptionKey('unit')) }),
    });
    ctx = gateway.context;
  });
  afterAll(async () => {
    await gateway?.close();
    await db?.close();
  });

  const tenant = async (balance?: number | null): Promise<string> => {
    const { tenant: t } = await createTenant(ctx, { tenant_id: `t-credits-${++n}`, name: 'Credits' });
    if (balance !== undefined) await setBilling(ctx, t.tenant_id, { credit_balance: balance });
    return t.tenant_id;
  };
  let seq = 0;
  const charge = (tenantId: string, credits: number, over: Partial<CreditUsageEvent> = {}): CreditUsageEvent => ({
    event_id: `cu_unit_${++seq}`,
    type: 'credits.usage',
    tenant_id: tenantId,
    source: 'agents',
    service_id: 'crm-1',
    workflow_id: 'wf-1',
    workflow_kind: 'company_search',
    charge: seq,
    credits,
    usage: { model_tokens: 0, fetches: 0, rows: credits },
    occurred_at: new Date().toISOString(),
    ...over,
  });
  const announcements = async (tenantId: string): Promise<CreditBalanceEvent[]> =>
    (await db.query<{ value: CreditBalanceEvent }>(`SELECT value FROM runtime.outbox WHERE topic = $1 AND key = $2 ORDER BY id`, [TOPICS.creditsBalance, tenantId])).rows.map((r) => r.value);

  it('takes a charge off the balance once: a redelivered charge changes nothing', async () => {
    const t = await tenant(100);
    const c = charge(t, 30);
    expect(await applyCharge(db, c)).toEqual({ outcome: 'charged', balance: 70 });
    expect(await applyCharge(db, c)).toEqual({ outcome: 'duplicate', balance: 70 });
    expect((await getBilling(ctx, t)).credit_balance).toBe(70);
    const rows = await db.withTenant(t, (sql) => chargesOfWorkflowIn(sql, t, 'wf-1'));
    expect(rows).toEqual([{ event_id: c.event_id, service_id: 'crm-1', workflow_id: 'wf-1', credits: 30, applied: true, balance_after: 70 }]);
  });

  it('records but never charges a tenant that is not metered', async () => {
    const t = await tenant();
    expect((await getBilling(ctx, t)).credit_balance).toBeNull();
    expect(await applyCharge(db, charge(t, 5))).toEqual({ outcome: 'not_metered', balance: null });
    expect((await getBilling(ctx, t)).credit_balance).toBeNull();
    const rows = await db.withTenant(t, (sql) => chargesOfWorkflowIn(sql, t, 'wf-1'));
    expect(rows).toMatchObject([{ credits: 5, applied: false, balance_after: null }]);
  });

  it('drops a charge for a tenant that does not exist', async () => {
    expect(await applyCharge(db, charge('t-credits-nobody', 5))).toEqual({ outcome: 'unknown_tenant', balance: null });
  });

  it('announces every balance the admin API sets, and every charge that leaves it used up, with growing versions', async () => {
    const t = await tenant(10);
    await applyCharge(db, charge(t, 4));
    expect((await announcements(t)).map((a) => a.credit_balance)).toEqual([10]);
    expect(await applyCharge(db, charge(t, 6))).toEqual({ outcome: 'charged', balance: 0 });
    expect(await applyCharge(db, charge(t, 3))).toEqual({ outcome: 'charged', balance: -3 });
    await setBilling(ctx, t, { credit_balance: 50 });
    await setBilling(ctx, t, { credit_balance: null });
    await setBilling(ctx, t, { plan: 'unlimited' });
    const seen = await announcements(t);
    expect(seen.map((a) => a.credit_balance)).toEqual([10, 0, -3, 50, null]);
    const versions = seen.map((a) => a.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
    expect(seen.every((a) => a.type === 'credits.balance' && a.tenant_id === t)).toBe(true);
  });

  it('consumes charges from the bus, and tells its process which tenant changed', async () => {
    const bus = new MemoryBus({ logger: silent });
    const changed: string[] = [];
    const consumer = createCreditUsageConsumer({ db, bus, logger: silent, consumerGroup: 'credits-unit', onBalanceChanged: (id) => changed.push(id) });
    await consumer.start();
    try {
      const t = await tenant(20);
      const c = charge(t, 7);
      const send = () => bus.publish(TOPICS.creditsUsage, [{ key: t, value: Buffer.from(JSON.stringify(c)), headers: { 'event-id': c.event_id } }]);
      await send();
      await send();
      await until('the charge', async () => (await getBilling(ctx, t)).credit_balance === 13, 10_000);
      await new Promise((r) => setTimeout(r, 200));
      expect((await getBilling(ctx, t)).credit_balance).toBe(13);
      expect(changed).toEqual([t]);
      expect(consumer.running).toBe(true);
    } finally {
      await consumer.stop();
      await bus.close();
    }
  });
});
