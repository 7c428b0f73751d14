import { upsertDirectoryRecords } from '@lore/agents';
import { TOPICS } from '@lore/contracts';
import { chargesOfWorkflowIn } from '../../services/gateway/src/store/credit-charges';
import { adminCall, type TenantFixture } from '../gateway/harness';
import { generateAgentsWorld, serveAgentsWorld, worldDirectoryRecords, type ServedAgentsWorld } from '../support/agents-world';
import { startAgentsStack, type AgentsStack, auth, eventually } from './harness';
import { readStream } from './sse-client';

jest.setTimeout(240_000);

type Json = Record<string, any>;
type Usage = { model_tokens: number; fetches: number; rows: number };

/** docs/agents.md, "Credits": the documented price at the default prices (1 a fetch, 1 a row, 1 a started thousand tokens). */
const documentedPrice = (u: Usage) => u.fetches * 1 + u.rows * 1 + Math.ceil(u.model_tokens / 1000) * 1;

const world = generateAgentsWorld(1);
const PROMPT = 'Find fintech companies in Berlin with more than 50 employees';

describe('credits: workflows metered through the gateway (real PostgreSQL, Redis, Kafka)', () => {
  let served: ServedAgentsWorld;
  let s: AgentsStack;

  beforeAll(async () => {
    served = await serveAgentsWorld(world);
    s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
      worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, leaseMs: 3_000, stopPollMs: 100, batchRows: 1, budgets: { fetches: 500, wallMs: 120_000, modelTokens: 50_000 } } },
      credits: true,
    });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await served?.close();
  });

  const tenant = async (balance: number | null): Promise<TenantFixture> => {
    const t = await s.tenant();
    await upsertDirectoryRecords(s.db, t.tenantId, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
    if (balance !== null) expect((await adminCall(s.gateway, 'PUT', `/internal/v1/tenants/${t.tenantId}/billing`, { credit_balance: balance })).status).toBe(200);
    return t;
  };
  const balanceOf = async (t: TenantFixture): Promise<number | null> => {
    const r = await adminCall(s.gateway, 'GET', `/internal/v1/tenants/${t.tenantId}/billing`);
    expect(r.status).toBe(200);
    return r.json.credit_balance as number | null;
  };
  /** What the agents recorded for a workflow: its usage totals and the credits charged. */
  const recorded = async (t: TenantFixture, thread: string) => {
    const r = await s.db.withTenant(t.tenantId, (sql) =>
      sql.query<{ usage_total: Usage; credits_used: string; usage_charges: number }>(`SELECT usage_total, credits_used, usage_charges FROM agents.workflows WHERE thread_id = $1`, [thread]),
    );
    const row = r.rows[0]!;
    const usage: Usage = { model_tokens: row.usage_total.model_tokens ?? 0, fetches: row.usage_total.fetches ?? 0, rows: row.usage_total.rows ?? 0 };
    return { usage, credits: Number(row.credits_used), charges: row.usage_charges };
  };
  const gatewayCharges = (t: TenantFixture, thread: string) => s.db.withTenant(t.tenantId, (sql) => chargesOfWorkflowIn(sql, t.tenantId, thread));
  const duplicates = async () => {
    const m = await s.metrics.getSingleMetric('lore_gateway_credit_charges_total')?.get();
    return m?.values.find((v) => v.labels.outcome === 'duplicate')?.value ?? 0;
  };

  let metered: TenantFixture;
  let thread = '';

  it('takes exactly the documented price of the recorded usage off the balance, attributed to the serviceId', async () => {
    metered = await tenant(10_000);
    const read = await readStream(s, 'POST', '/api/workflow/start', auth(metered), { prompt: PROMPT, serviceId: 'crm-credits' });
    expect(read.status).toBe(200);
    expect(read.ended).toBe(true);
    thread = read.frames[0]!.data.thread_id as string;
    expect(read.frames[read.frames.length - 1]!.data.status).toBe('completed');

    const { usage, credits, charges } = await recorded(metered, thread);
    // Rows from the directory and the web's pages read: both priced.
    expect(usage.rows).toBeGreaterThan(0);
    expect(usage.fetches).toBeGreaterThan(0);
    expect(credits).toBe(documentedPrice(usage));
    expect(charges).toBeGreaterThanOrEqual(1);
    // The gateway applied every charge: the balance is exactly the price lower.
    await eventually('the charges to reach the balance', async () => (await balanceOf(metered)) === 10_000 - credits, 30_000);
    const applied = await gatewayCharges(metered, thread);
    expect(applied).toHaveLength(charges);
    expect(applied.every((c) => c.service_id === 'crm-credits' && c.applied)).toBe(true);
    expect(applied.reduce((n, c) => n + c.credits, 0)).toBe(credits);
    expect(applied[applied.length - 1]!.balance_after).toBe(10_000 - credits);
    // The snapshot shows what the workflow was charged; spec fields stay as they were.
    const snap = await s.call('GET', `/api/workflow/status/${thread}`, auth(metered));
    expect(snap.json).toMatchObject({ status: 'completed', serviceId: 'crm-credits', credits_used: credits });
  });

  it('charges a redelivered usage event once', async () => {
    const before = await balanceOf(metered);
    const first = (await s.db.query<{ event_id: string; key: string; value: unknown }>(`SELECT event_id, key, value FROM runtime.outbox WHERE topic = $1 AND key = $2 ORDER BY id LIMIT 1`, [TOPICS.creditsUsage, metered.tenantId])).rows[0]!;
    const dupes = await duplicates();
    await s.bus!.publish(TOPICS.creditsUsage, [{ key: first.key, value: JSON.stringify(first.value), headers: { 'event-id': first.event_id } }]);
    await eventually('the redelivery to be recognised', async () => (await duplicates()) > dupes, 30_000);
    expect(await balanceOf(metered)).toBe(before);
    expect((await gatewayCharges(metered, thread)).filter((c) => c.event_id === first.event_id)).toHaveLength(1);
  });

  it('meters deep research too, against its required serviceId', async () => {
    const start = await s.call('POST', '/research/start', auth(metered), { query: 'fintech companies in Berlin', serviceId: 'svc-research', max_researcher_iterations: 1 });
    expect(start.status).toBe(200);
    const research = start.json.thread_id as string;
    const done = await eventually('the research to end', async () => {
      const r = await s.call('GET', `/research/status/${research}`, auth(metered));
      return ['completed', 'stopped', 'error'].includes(r.json.status) ? (r.json as Json) : null;
    }, 120_000);
    expect(done.status).toBe('completed');
    const { usage, credits } = await recorded(metered, research);
    expect(usage.fetches).toBeGreaterThan(0);
    expect(usage.rows).toBe(0);
    expect(credits).toBe(documentedPrice(usage));
    expect((await s.call('GET', `/research/status/${research}`, auth(metered))).json.credits_used).toBe(credits);
    await eventually('the research\'s charges to reach the balance', async () => (await gatewayCharges(metered, research)).reduce((n, c) => n + c.credits, 0) === credits, 30_000);
    expect((await gatewayCharges(metered, research)).every((c) => c.service_id === 'svc-research')).toBe(true);
    expect(await balanceOf(metered)).toBe(10_000 - (await recorded(metered, thread)).credits - credits);
  });

  it('answers 402 with the gateway\'s body to a start or continue while the balance is at or below zero', async () => {
    for (const balance of [0, -5]) {
      expect((await adminCall(s.gateway, 'PUT', `/internal/v1/tenants/${metered.tenantId}/billing`, { credit_balance: balance })).status).toBe(200);
      for (const [path, body] of [
        ['/api/workflow/start', { prompt: PROMPT, serviceId: 'crm-credits' }],
        ['/api/workflow/continue', { thread_id: thread, total_target: 50, serviceId: 'crm-credits' }],
        ['/api/workflow/people/start', { prompt: 'Find chief technology officers', serviceId: 'crm-credits' }],
        ['/research/start', { query: 'fintech companies in Berlin', serviceId: 'svc-research' }],
      ] as const) {
        const r = await s.call('POST', path, auth(metered), body);
        expect({ path, status: r.status }).toEqual({ path, status: 402 });
        expect(r.json).toEqual({ error: { code: 'INSUFFICIENT_CREDITS', message: expect.any(String), request_id: expect.any(String), details: { reason: 'credit_balance', balance } } });
      }
    }
    // Nothing was started.
    const started = await s.db.withTenant(metered.tenantId, (sql) => sql.query(`SELECT 1 FROM agents.workflows WHERE tenant_id = $1`, [metered.tenantId]));
    expect(started.rowCount).toBe(2);
  });

  it('never charges a tenant whose balance is null: usage is recorded, the balance stays null', async () => {
    const free = await tenant(null);
    const read = await readStream(s, 'POST', '/api/workflow/start', auth(free), { prompt: PROMPT, serviceId: 'crm-free' });
    const freeThread = read.frames[0]!.data.thread_id as string;
    expect(read.frames[read.frames.length - 1]!.data.status).toBe('completed');
    const { usage, credits } = await recorded(free, freeThread);
    expect(credits).toBe(documentedPrice(usage));
    expect(credits).toBeGreaterThan(0);
    await eventually('the charges to be recorded', async () => (await gatewayCharges(free, freeThread)).reduce((n, c) => n + c.credits, 0) === credits, 30_000);
    expect((await gatewayCharges(free, freeThread)).every((c) => !c.applied && c.balance_after === null)).toBe(true);
    expect(await balanceOf(free)).toBeNull();
  });

  it('ends a running workflow cleanly, like a spent budget, once the balance is used up', async () => {
    const low = await tenant(30);
    // 200 companies in the directory, 50 a page: the first page's rows cost more than the balance.
    const first = await readStream(s, 'POST', '/api/workflow/start', auth(low), { prompt: 'Find companies with more than 10 employees', total_target: 500, serviceId: 'crm-low' }, (frames) => frames.length >= 1);
    expect(first.status).toBe(200);
    const lowThread = first.frames[0]!.data.thread_id as string;
    // Read from the database: while the balance is used up, every agents route answers 402, reads too.
    await eventually('the workflow to end', async () => {
      const r = await s.db.withTenant(low.tenantId, (sql) => sql.query<{ status: string }>(`SELECT status FROM agents.workflows WHERE thread_id = $1`, [lowThread]));
      return ['completed', 'stopped', 'error'].includes(r.rows[0]!.status);
    }, 120_000);
    const events = await s.db.withTenant(low.tenantId, (sql) => sql.query<{ type: string; data: Json }>(`SELECT type, data FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [lowThread]));
    const types = events.rows.map((e) => e.type);
    expect(types).toContain('budget_spent');
    expect(types[types.length - 1]).toBe('budget_spent');
    // Every credit the workflow was charged came off the balance: the overdraft is what its last checkpoints cost.
    const { usage, credits } = await recorded(low, lowThread);
    expect(credits).toBe(documentedPrice(usage));
    expect(credits).toBeGreaterThan(30);
    await eventually('the charges to reach the balance', async () => (await balanceOf(low)) === 30 - credits, 30_000);
    // A continue is refused until the billing system tops the balance up.
    expect((await s.call('POST', '/api/workflow/continue', auth(low), { thread_id: lowThread, total_target: 600 })).status).toBe(402);
    expect((await adminCall(s.gateway, 'PUT', `/internal/v1/tenants/${low.tenantId}/billing`, { credit_balance: 1_000 })).status).toBe(200);
    const done = await s.call('GET', `/api/workflow/status/${lowThread}`, auth(low));
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({ status: 'completed', serviceId: 'crm-low', credits_used: credits });
    expect(done.json.table_structure.notes).toEqual(expect.arrayContaining([expect.stringMatching(/^budget spent: credits \(the tenant's credit balance is used up\); the list has \d+ of 500 rows$/)]));
    expect(done.json.table_structure.current_count).toBeLessThan(500);
    expect(events.rows.find((e) => e.type === 'budget_spent')!.data.message).toBe(done.json.table_structure.notes.find((n: string) => n.startsWith('budget spent')));
    // Right after the top-up, a continue runs: the used-up balance announced before it was admitted is not believed,
    // whether or not the top-up's announcement has reached the worker yet.
    const more = await readStream(s, 'POST', '/api/workflow/continue', auth(low), { thread_id: lowThread, total_target: 600 });
    expect(more.status).toBe(200);
    const after = more.frames.map((f) => f.data);
    expect(after[0]).toMatchObject({ event: 'continued' });
    expect(after.filter((f) => f.event === 'budget_spent' && String(f.message).includes('credits'))).toEqual([]);
    expect(after[after.length - 1]).toMatchObject({ status: 'completed' });
    const total = await recorded(low, lowThread);
    await eventually('the continue\'s charges to reach the balance', async () => (await balanceOf(low)) === 1_000 - (total.credits - credits), 30_000);
  });
});
