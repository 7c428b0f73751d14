import { randomUUID } from 'node:crypto';
import { PgliteDb, createLogger, createMetricsRegistry, runRuntimeMigrations, type BusMessage, type OutgoingMessage } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { migrateGateway } from '../gateway';
import { FanOut, FANOUT_CONSUMER } from './fan-out';
import { decodeDeliveryMessage } from './messages';
import { webhookMetrics } from './metrics';

/** The fan-out on embedded PostgreSQL: a batch of events of several tenants, redelivery, and the repair of announcements. */
describe('webhook fan-out', () => {
  let db: PgliteDb;
  let registry: Registry;
  let fanOut: FanOut;
  const published: Array<{ topic: string; messages: OutgoingMessage[] }> = [];
  let offset = 0;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await migrateGateway(db);
    registry = createMetricsRegistry('fan-out-test', { defaultMetrics: false });
    fanOut = new FanOut({
      db,
      publish: async (topic, messages) => void published.push({ topic, messages }),
      logger: createLogger({ level: 'silent', service: 'fan-out-test' }),
      metrics: webhookMetrics(registry),
      maxSubscriptionsPerEvent: 100,
    });
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  const subscription = async (tenant: string, id: string, opts: { events?: string[]; workspace?: string | null; enabled?: boolean } = {}) => {
    await db.withTenant(tenant, (sql) =>
      sql.query(
        `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, workspace_id, url, events, enabled, secret)
         VALUES ($1, $2, $3, 'https://hooks.example.com/x', $4::text[], $5, 'enc:v1:test:x')`,
        [id, tenant, opts.workspace ?? null, opts.events ?? ['memory.ingest.completed'], opts.enabled ?? true],
      ),
    );
  };
  const event = (tenant: string, workspace: string, kind = 'memory.ingest.completed'): BusMessage => {
    const e = {
      event_id: `evt_${randomUUID()}`,
      event: kind,
      occurred_at: new Date().toISOString(),
      scope: { tenant_id: tenant, workspace_id: workspace, memory_id: 'mem_1' },
      payload: { doc_id: 'doc_1', vault_id: 'v_1' },
    };
    return { topic: 'lore.events', partition: 0, offset: String(offset++), key: tenant, value: Buffer.from(JSON.stringify(e)), headers: { 'event-id': e.event_id } };
  };
  const eventIdOf = (m: BusMessage) => (JSON.parse(m.value.toString('utf8')) as { event_id: string }).event_id;
  const announced = () => published.flatMap((p) => p.messages.map((m) => decodeDeliveryMessage(Buffer.from(String(m.value)))!));
  const deliveries = (tenant: string) =>
    db.withTenant(tenant, async (sql) => (await sql.query<{ id: string; subscription_id: string; event_id: string }>(`SELECT id, subscription_id, event_id FROM gateway.webhook_deliveries ORDER BY subscription_id, event_id`)).rows);
  const fanoutCount = async (result: string) =>
    ((await registry.getSingleMetric('lore_webhooks_fanout_events_total')!.get()).values.find((v) => v.labels.result === result)?.value ?? 0);

  it('creates one delivery per matching subscription for a batch of several tenants, and announces each once in one publish', async () => {
    await subscription('t-a', 'wh_a_all');
    await subscription('t-a', 'wh_a_ws2', { workspace: 'ws-2' });
    await subscription('t-a', 'wh_a_off', { enabled: false });
    await subscription('t-a', 'wh_a_other', { events: ['memory.entity.created'] });
    await subscription('t-b', 'wh_b_other', { events: ['memory.entity.created'] });
    const a1 = event('t-a', 'ws-1');
    const a2 = event('t-a', 'ws-2');
    const b1 = event('t-b', 'ws-1');
    const invalid: BusMessage = { ...a1, offset: String(offset++), value: Buffer.from('{"not":"an envelope"}') };
    published.length = 0;
    await fanOut.handleBatch([a1, b1, invalid, a2, { ...a1, offset: String(offset++) }]);

    const rows = await deliveries('t-a');
    expect(rows.map((r) => [r.subscription_id, r.event_id])).toEqual(
      [
        ['wh_a_all', eventIdOf(a1)],
        ['wh_a_all', eventIdOf(a2)],
        ['wh_a_ws2', eventIdOf(a2)],
      ].sort((x, y) => (x[0]! + x[1]! < y[0]! + y[1]! ? -1 : 1)),
    );
    expect(await deliveries('t-b')).toEqual([]);
    expect(published).toHaveLength(1);
    expect(published[0]!.topic).toBe('lore.webhook.deliveries');
    const sent = announced();
    expect(sent.map((m) => m.delivery_id).sort()).toEqual(rows.map((r) => r.id).sort());
    for (const m of sent) expect(m).toMatchObject({ tenant_id: 't-a', step: 0, cycle: 1 });
    expect(await fanoutCount('delivered')).toBe(2);
    expect(await fanoutCount('no_subscribers')).toBe(1);
    expect(await fanoutCount('invalid')).toBe(1);
    const claims = await db.query<{ n: string }>(`SELECT count(*) AS n FROM runtime.processed_events WHERE consumer = $1 AND event_id = ANY($2::text[])`, [
      FANOUT_CONSUMER,
      [a1, a2, b1].map(eventIdOf),
    ]);
    expect(Number(claims.rows[0]!.n)).toBe(3);
  });

  it('creates nothing again for a redelivered batch, re-announces the deliveries still waiting, and ignores subscriptions created since', async () => {
    const a1 = event('t-r', 'ws-1');
    const a2 = event('t-r', 'ws-1');
    await subscription('t-r', 'wh_r_1');
    published.length = 0;
    await fanOut.handleBatch([a1, a2]);
    const first = await deliveries('t-r');
    expect(first).toHaveLength(2);
    // One delivery had its first attempt meanwhile; a subscription is created after the event.
    await db.withTenant('t-r', (sql) => sql.query(`UPDATE gateway.webhook_deliveries SET status = 'succeeded' WHERE event_id = $1`, [eventIdOf(a1)]));
    await subscription('t-r', 'wh_r_later');
    published.length = 0;
    await fanOut.handleBatch([a1, a2]);
    expect(await deliveries('t-r')).toEqual(first);
    expect(announced().map((m) => m.delivery_id)).toEqual(first.filter((r) => r.event_id === eventIdOf(a2)).map((r) => r.id));
  });

  it('gives each delivery message the trace headers of its own event, so its attempts continue the trace that emitted the event', async () => {
    await subscription('t-tr', 'wh_tr_1');
    await subscription('t-tr', 'wh_tr_2');
    const traced = (n: string): BusMessage => {
      const m = event('t-tr', 'ws-1');
      return { ...m, headers: { ...m.headers, traceparent: `00-${n.repeat(32)}-${n.repeat(16)}-01`, tracestate: `lore=${n}` } };
    };
    const [e1, e2] = [traced('a'), traced('b')];
    const untraced = event('t-tr', 'ws-1');
    published.length = 0;
    await fanOut.handleBatch([e1, e2, untraced]);
    const byEvent = new Map<string, Array<Record<string, string> | undefined>>();
    for (const m of published.flatMap((p) => p.messages)) {
      const eventId = decodeDeliveryMessage(Buffer.from(String(m.value)))!.event_id;
      byEvent.set(eventId, [...(byEvent.get(eventId) ?? []), m.headers]);
    }
    for (const e of [e1, e2]) {
      const headers = byEvent.get(eventIdOf(e))!;
      expect(headers).toHaveLength(2);
      for (const h of headers) expect(h).toMatchObject({ traceparent: e.headers.traceparent, tracestate: e.headers.tracestate });
    }
    // An event without a trace gives none: the bus then carries the batch's own.
    for (const h of byEvent.get(eventIdOf(untraced))!) expect(h!.traceparent).toBeUndefined();
  });

  it('publishes nothing when no subscription matches', async () => {
    published.length = 0;
    await fanOut.handleBatch([event('t-none', 'ws-1')]);
    expect(published).toEqual([]);
  });
});
