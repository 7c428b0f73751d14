import { migrateGateway } from '@lore/gateway';
import type { Sql } from '@lore/runtime';
import { acquireLease, fanOutEvents, pruneSettledDeliveries, recordAttempt, releaseLeasesIf, type EventForFanOut } from '../../services/gateway/src/webhooks/store/deliveries';
import { insertSubscription } from '../../services/gateway/src/webhooks/store/subscriptions';
import { lockUsersIn, usersAtGroupLimitIn } from '../../services/gateway/src/store/user-groups';
import { freshPostgresDb, rowsRead } from '../runtime/support';

jest.setTimeout(300_000);

/**
 * A burst of webhook deliveries on tables whose statistics do not know the tenant: a fresh install that no ANALYZE
 * has seen, then a second tenant after an ANALYZE that saw only the first (a value missing from the statistics is
 * estimated at about no rows). Each step must read a few rows per delivery, whatever the tenant holds. Before, an
 * attempt handed back (its endpoint's queue full, once per message in a burst) read every delivery of the second
 * tenant: 1,000 hand-backs over 8,000 deliveries read 8,000,000 rows. Measured in rows read (the transaction's own
 * counters), not in time. Last, the retention sweep removes every delivery, the statistics now stale.
 */
describe('webhook deliveries on tables without statistics of the tenant', () => {
  const SUBSCRIPTIONS = 4;
  const EVENTS = 2_000;
  const DELIVERIES = SUBSCRIPTIONS * EVENTS;
  const HAND_BACKS = 1_000;

  it('reads a few rows per delivery in a burst, for a first tenant and for the next', async () => {
    const stack = await freshPostgresDb();
    try {
      await migrateGateway(stack.db);
      // Autovacuum stays away: the only ANALYZE here is the one the test runs between the two tenants.
      await stack.db.asOwner(async (sql) => {
        for (const t of ['gateway.webhook_subscriptions', 'gateway.webhook_deliveries', 'gateway.webhook_attempts', 'runtime.processed_events'])
          await sql.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
      });

      const burst = async (tenant: string): Promise<Record<string, number>> => {
        const read: Record<string, number> = {};
        const step = <R>(name: string, fn: (sql: Sql) => Promise<R>): Promise<R> =>
          stack.db.withTenant(tenant, async (sql) => {
            const before = await rowsRead(sql, ['gateway', 'runtime']);
            const result = await fn(sql);
            read[name] = (read[name] ?? 0) + (await rowsRead(sql, ['gateway', 'runtime'])) - before;
            return result;
          });
        await step('subscriptions', async (sql) => {
          for (let i = 0; i < SUBSCRIPTIONS; i++)
            await insertSubscription(sql, tenant, { id: `wh_${tenant}_${i}`, workspaceId: null, url: `https://receiver.example/${i}`, events: ['memory.updated'], description: null, enabled: true, storedSecret: 'secret' });
        });
        const events: EventForFanOut[] = Array.from({ length: EVENTS }, (_, i) => ({ eventId: `evt_${tenant}_${i}`, event: 'memory.updated', workspaceId: 'ws', body: `{"n":${i}}` }));
        const pending: Array<{ id: string; subscriptionId: string; eventId: string; cycle: number }> = [];
        for (let b = 0; b < EVENTS; b += 500) pending.push(...(await step('fanOut', (sql) => fanOutEvents(sql, tenant, 'webhooks.fanout', events.slice(b, b + 500), 16))));
        expect(pending).toHaveLength(DELIVERIES);
        // The same bus batches again: every event claimed before, its deliveries looked up.
        for (let b = 0; b < EVENTS; b += 500) await step('fanOutAgain', (sql) => fanOutEvents(sql, tenant, 'webhooks.fanout', events.slice(b, b + 500), 16));

        const leases: Array<{ deliveryId: string; token: string }> = [];
        await step('acquireLease', async (sql) => {
          for (const p of pending) leases.push({ deliveryId: p.id, token: (await acquireLease(sql, tenant, p.id, p.cycle, 0, 60_000))!.leaseToken });
        });
        // Attempts handed back one by one (an endpoint's queue full), then a stopping worker's batch.
        for (const lease of leases.slice(0, HAND_BACKS)) await step('handBackOne', (sql) => releaseLeasesIf(sql, tenant, [lease]));
        await step('handBackBatch', (sql) => releaseLeasesIf(sql, tenant, leases.slice(HAND_BACKS, 2 * HAND_BACKS)));
        const held = await stack.db.withTenant(tenant, (sql) =>
          sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND lease_until IS NOT NULL`, [tenant]),
        );
        expect(held.rows[0]?.n).toBe(DELIVERIES - 2 * HAND_BACKS);

        await step('recordAttempt', async (sql) => {
          for (const [i, p] of pending.entries()) {
            const at = new Date();
            const outcome = await recordAttempt(
              sql,
              tenant,
              { consumer: 'webhooks.attempts', key: `${p.id}:1` },
              { deliveryId: p.id, subscriptionId: p.subscriptionId, eventId: p.eventId, attempt: 1, cycle: 1, step: 0, scheduledFor: at, startedAt: at, latencyMs: 1, statusCode: 500, outcome: 'http_error', error: null, responseSnippet: null },
              i % 2 === 0 ? { status: 'dead', at, reason: 'retries_exhausted' } : { status: 'succeeded', at },
            );
            expect(outcome).toBe('recorded');
          }
        });
        // The retention sweep: every delivery settled, removed in sweeps of 1,000 (retention 0).
        let pruned = 0;
        for (let i = 0; i < DELIVERIES / 1_000; i++) pruned += await step('prune', (sql) => pruneSettledDeliveries(sql, 0, 1_000));
        expect(pruned).toBe(DELIVERIES);
        return read;
      };

      const first = await burst('tenant-first');
      await stack.db.asOwner(async (sql) => {
        await sql.query('ANALYZE gateway.webhook_subscriptions, gateway.webhook_deliveries, gateway.webhook_attempts, runtime.processed_events');
      });
      const next = await burst('tenant-next');

      for (const read of [first, next]) {
        // A few rows per delivery and statement; a plan that reads the tenant's deliveries per input reads
        // 8,000 per hand-back (8,000,000 for the 1,000) and as much per delivery elsewhere.
        expect(read.fanOut).toBeLessThan(20 * DELIVERIES);
        expect(read.fanOutAgain).toBeLessThan(20 * DELIVERIES);
        expect(read.acquireLease).toBeLessThan(20 * DELIVERIES);
        expect(read.handBackOne).toBeLessThan(20 * HAND_BACKS);
        expect(read.handBackBatch).toBeLessThan(2 * DELIVERIES);
        expect(read.recordAttempt).toBeLessThan(20 * DELIVERIES);
        // Each sweep deletes what it picked by id; joined to the picked rows, the second tenant's sweeps read
        // 36 million rows (stale statistics: the picked rows the inner side of a loop over every settled delivery).
        expect(read.prune).toBeLessThan(20 * DELIVERIES);
      }
    } finally {
      await stack.close();
    }
  });
});

/**
 * Changing a group's members locks the named users and counts their other groups. On tables no ANALYZE has seen,
 * both were planned as reads of all the tenant's users and memberships (2,000 and 10,000 rows per change of 200
 * members), so creating groups one after the other read users × groups.
 */
describe('user groups on tables without statistics', () => {
  it('reads the named users and their memberships only', async () => {
    const stack = await freshPostgresDb();
    try {
      await migrateGateway(stack.db);
      await stack.db.asOwner(async (sql) => {
        for (const t of ['users', 'user_groups', 'user_group_members']) await sql.query(`ALTER TABLE gateway.${t} SET (autovacuum_enabled = false)`);
      });
      const T = 'tenant-groups';
      const USERS = 2_000;
      const GROUPS = 50;
      const users = Array.from({ length: USERS }, (_, i) => `usr_${i}`);
      const groups = await stack.db.withTenant(T, async (sql) => {
        await sql.query(`INSERT INTO gateway.tenants (tenant_id, name, plan) VALUES ($1, 'Groups', 'free')`, [T]);
        await sql.query(
          `INSERT INTO gateway.users (tenant_id, user_id, email, password_hash, role) SELECT $1, u, u || '@groups.example', 'x', 'member' FROM unnest($2::text[]) AS u`,
          [T, users],
        );
        const ids: number[] = [];
        for (let g = 0; g < GROUPS; g++) {
          const r = await sql.query<{ group_id: number }>(`INSERT INTO gateway.user_groups (tenant_id, name) VALUES ($1, $2) RETURNING group_id`, [T, `group ${g}`]);
          ids.push(Number(r.rows[0]!.group_id));
          await sql.query(`INSERT INTO gateway.user_group_members (tenant_id, group_id, user_id) SELECT $1, $2, u FROM unnest($3::text[]) AS u`, [
            T,
            ids[g],
            users.filter((_, i) => i % 10 === g % 10),
          ]);
        }
        return ids;
      });
      const named = [...users.slice(0, 200), 'usr_missing'];
      const read = await stack.db.withTenant(T, async (sql) => {
        const before = await rowsRead(sql, ['gateway', 'runtime']);
        for (let g = 0; g < GROUPS; g++) {
          expect(await lockUsersIn(sql, T, named)).toEqual([...users.slice(0, 200)].sort());
          // Users 0..199 are in 5 groups each (every tenth group); without group 0, those of group 0 are in 4.
          expect(await usersAtGroupLimitIn(sql, T, named, null, 5)).toHaveLength(200);
          expect(await usersAtGroupLimitIn(sql, T, named, groups[0]!, 5)).toHaveLength(180);
        }
        return (await rowsRead(sql, ['gateway', 'runtime'])) - before;
      });
      // About 200 users and 2 × 1,000 memberships per change; before, 2,000 users and 2 × 10,000 memberships.
      expect(read).toBeLessThan(GROUPS * 4_000);
    } finally {
      await stack.close();
    }
  });
});

