import type { Sql } from '@lore/runtime';
import type { AttemptOutcome } from '../delivery-client';
import { SUBSCRIPTION_COLS, toSubscription, type SubscriptionRow } from './subscriptions';

/**
 * SQL of deliveries (one per event and subscription) and their attempts. Every function runs on a transaction
 * opened by `db.withTenant(tenantId, ...)` and filters on `tenantId` as well.
 */

export type DeliveryStatus = 'pending' | 'retrying' | 'succeeded' | 'dead';

export interface DeliveryRow {
  id: string;
  tenantId: string;
  subscriptionId: string;
  eventId: string;
  event: string;
  body: string;
  status: DeliveryStatus;
  cycle: number;
  nextStep: number;
  nextAttemptAt: Date | null;
  attempts: number;
  leaseUntil: Date | null;
  lastStatusCode: number | null;
  lastOutcome: string | null;
  deadReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  succeededAt: Date | null;
  deadAt: Date | null;
}

export interface AttemptRow {
  attempt: number;
  cycle: number;
  step: number;
  scheduledFor: Date;
  startedAt: Date;
  latencyMs: number;
  statusCode: number | null;
  outcome: AttemptOutcome;
  error: string | null;
  responseSnippet: string | null;
}

const COLS = `id, tenant_id, subscription_id, event_id, event, body, status, cycle, next_step, next_attempt_at, attempts,
  lease_until, last_status_code, last_outcome, dead_reason, created_at, updated_at, succeeded_at, dead_at`;

function date(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}
function dateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : date(value);
}
function numOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
function textOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

export function toDelivery(r: Record<string, unknown>): DeliveryRow {
  return {
    id: String(r.id),
    tenantId: String(r.tenant_id),
    subscriptionId: String(r.subscription_id),
    eventId: String(r.event_id),
    event: String(r.event),
    body: String(r.body),
    status: String(r.status) as DeliveryStatus,
    cycle: Number(r.cycle),
    nextStep: Number(r.next_step),
    nextAttemptAt: dateOrNull(r.next_attempt_at),
    attempts: Number(r.attempts),
    leaseUntil: dateOrNull(r.lease_until),
    lastStatusCode: numOrNull(r.last_status_code),
    lastOutcome: textOrNull(r.last_outcome),
    deadReason: textOrNull(r.dead_reason),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
    succeededAt: dateOrNull(r.succeeded_at),
    deadAt: dateOrNull(r.dead_at),
  };
}

function toAttempt(r: Record<string, unknown>): AttemptRow {
  return {
    attempt: Number(r.attempt),
    cycle: Number(r.cycle),
    step: Number(r.step),
    scheduledFor: date(r.scheduled_for),
    startedAt: date(r.started_at),
    latencyMs: Number(r.latency_ms),
    statusCode: numOrNull(r.status_code),
    outcome: String(r.outcome) as AttemptOutcome,
    error: textOrNull(r.error),
    responseSnippet: textOrNull(r.response_snippet),
  };
}

export interface EventForFanOut {
  eventId: string;
  event: string;
  workspaceId: string;
  /** The exact bytes receivers get. */
  body: string;
}

export interface PendingFirstAttempt {
  id: string;
  subscriptionId: string;
  eventId: string;
  cycle: number;
}

/**
 * Fan-out of some events of one tenant in one statement (it runs for every domain event, so round trips matter):
 * each event is claimed as `consumer` in `runtime.processed_events` (the marker `claimEvent` writes); for every
 * event claimed now, a delivery is created for every enabled subscription of the tenant that wants the event kind
 * from that workspace (at most `limit` per event, an existing one is kept). Returned: every delivery of these events
 * still waiting for the first attempt of its cycle, the new ones and any left from an earlier, interrupted
 * fan-out (an event claimed before, whose deliveries may not have been announced).
 */
export async function fanOutEvents(sql: Sql, tenantId: string, consumer: string, events: EventForFanOut[], limit: number): Promise<PendingFirstAttempt[]> {
  if (events.length === 0) return [];
  const r = await sql.query<{ id: string; subscription_id: string; event_id: string; cycle: number }>(
    `WITH ev AS (
        SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS e(event_id, event, workspace_id, body)
      ), claimed AS (
        INSERT INTO runtime.processed_events (consumer, event_id) SELECT $6, event_id FROM ev
        ON CONFLICT (consumer, event_id) DO NOTHING
        RETURNING event_id
      ), created AS (
        INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, next_attempt_at)
        SELECT 'dlv_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24), $1, subs.id, ev.event_id, ev.event, ev.body, 'pending', now()
          FROM ev JOIN claimed ON claimed.event_id = ev.event_id
          CROSS JOIN LATERAL (
            SELECT s.id FROM gateway.webhook_subscriptions s
             WHERE s.tenant_id = $1 AND s.enabled AND s.events @> ARRAY[ev.event] AND (s.workspace_id IS NULL OR s.workspace_id = ev.workspace_id)
             ORDER BY s.created_at, s.id LIMIT $7
          ) subs
        ON CONFLICT (subscription_id, event_id) DO NOTHING
        RETURNING id, subscription_id, event_id, cycle
      )
      SELECT id, subscription_id, event_id, cycle FROM created
      UNION
      -- Events claimed earlier: deliveries left waiting by an interrupted fan-out. Looked up through the unique
      -- (subscription_id, event_id) index, so the cost does not grow with the tenant's delivery history.
      SELECT d.id, d.subscription_id, d.event_id, d.cycle
        FROM ev
        JOIN gateway.webhook_subscriptions s ON s.tenant_id = $1
        JOIN gateway.webhook_deliveries d ON d.subscription_id = s.id AND d.event_id = ev.event_id
       WHERE ev.event_id NOT IN (SELECT event_id FROM claimed)
         AND d.tenant_id = $1 AND d.status = 'pending' AND d.next_step = 0`,
    [tenantId, events.map((e) => e.eventId), events.map((e) => e.event), events.map((e) => e.workspaceId), events.map((e) => e.body), consumer, limit],
    { prepare: true },
  );
  return r.rows.map((row) => ({ id: String(row.id), subscriptionId: String(row.subscription_id), eventId: String(row.event_id), cycle: Number(row.cycle) }));
}

export async function getDelivery(sql: Sql, tenantId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<DeliveryRow | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND id = $2${opts.forUpdate ? ' FOR UPDATE' : ''}`, [
    tenantId,
    id,
  ]);
  return r.rows[0] ? toDelivery(r.rows[0]) : null;
}

export async function getDeliveryOfSubscription(sql: Sql, tenantId: string, subscriptionId: string, id: string): Promise<DeliveryRow | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND subscription_id = $2 AND id = $3`, [
    tenantId,
    subscriptionId,
    id,
  ]);
  return r.rows[0] ? toDelivery(r.rows[0]) : null;
}

export async function listAttempts(sql: Sql, tenantId: string, deliveryId: string, limit: number): Promise<AttemptRow[]> {
  const r = await sql.query(
    `SELECT attempt, cycle, step, scheduled_for, started_at, latency_ms, status_code, outcome, error, response_snippet
       FROM gateway.webhook_attempts WHERE tenant_id = $1 AND delivery_id = $2 ORDER BY attempt LIMIT $3`,
    [tenantId, deliveryId, limit],
  );
  return r.rows.map(toAttempt);
}

/** Newest first; `before` is the last id of the previous page. */
export async function listDeliveries(
  sql: Sql,
  tenantId: string,
  subscriptionId: string,
  opts: { status?: DeliveryStatus | null; limit: number; before?: string | null },
): Promise<DeliveryRow[]> {
  const r = await sql.query(
    `SELECT ${COLS} FROM gateway.webhook_deliveries
      WHERE tenant_id = $1 AND subscription_id = $2 AND ($3::text IS NULL OR status = $3)
        AND ($4::text IS NULL OR (created_at, id) < (SELECT created_at, id FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND id = $4))
      ORDER BY created_at DESC, id DESC LIMIT $5`,
    [tenantId, subscriptionId, opts.status ?? null, opts.before ?? null, opts.limit],
  );
  return r.rows.map(toDelivery);
}

export interface TimeRange {
  from?: Date | null;
  to?: Date | null;
}

/** Dead letters in dead-letter order (oldest first), optionally inside [from, to); `after` pages on. */
export async function listDeadLetters(
  sql: Sql,
  tenantId: string,
  subscriptionId: string,
  opts: TimeRange & { limit: number; after?: string | null },
): Promise<DeliveryRow[]> {
  const r = await sql.query(
    `SELECT ${COLS} FROM gateway.webhook_deliveries
      WHERE tenant_id = $1 AND subscription_id = $2 AND status = 'dead'
        AND ($3::timestamptz IS NULL OR dead_at >= $3) AND ($4::timestamptz IS NULL OR dead_at < $4)
        AND ($5::text IS NULL OR (dead_at, id) > (SELECT dead_at, id FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND id = $5))
      ORDER BY dead_at, id LIMIT $6`,
    [tenantId, subscriptionId, opts.from ?? null, opts.to ?? null, opts.after ?? null, opts.limit],
  );
  return r.rows.map(toDelivery);
}

/**
 * Moves dead letters back to `pending` in a new cycle. Selection by ids or by dead-letter time range; at most
 * `limit` rows; rows locked so two replays of the same dead letter cannot both restart it.
 */
export async function reviveDeadLetters(
  sql: Sql,
  tenantId: string,
  subscriptionId: string,
  select: { ids: string[] } | (TimeRange & { ids?: undefined }),
  limit: number,
): Promise<DeliveryRow[]> {
  const byIds = select.ids !== undefined;
  const r = await sql.query(
    `WITH chosen AS (
        SELECT id, dead_at FROM gateway.webhook_deliveries
         WHERE tenant_id = $1 AND subscription_id = $2 AND status = 'dead'
           AND (NOT $3::boolean OR id = ANY($4::text[]))
           AND ($3::boolean OR (($5::timestamptz IS NULL OR dead_at >= $5) AND ($6::timestamptz IS NULL OR dead_at < $6)))
         ORDER BY dead_at, id LIMIT $7
         FOR UPDATE
      ), revived AS (
        UPDATE gateway.webhook_deliveries d SET
          status = 'pending', cycle = d.cycle + 1, next_step = 0, next_attempt_at = now(),
          dead_reason = NULL, dead_at = NULL, updated_at = now()
          FROM chosen WHERE d.id = chosen.id AND d.tenant_id = $1
        RETURNING ${COLS.split(',')
          .map((c) => `d.${c.trim()}`)
          .join(', ')}
      )
      -- UPDATE ... RETURNING has no order of its own: answer in dead-letter order.
      SELECT revived.* FROM revived JOIN chosen USING (id) ORDER BY chosen.dead_at, chosen.id`,
    [tenantId, subscriptionId, byIds, byIds ? select.ids : [], byIds ? null : (select.from ?? null), byIds ? null : (select.to ?? null), limit],
  );
  return r.rows.map(toDelivery);
}

/** A delivery leased for an attempt, its subscription, and the lease's end as a token (`renewLease`, `releaseLeaseIf`). */
export interface LeasedDelivery {
  delivery: DeliveryRow;
  subscription: SubscriptionRow;
  /** `lease_until` as PostgreSQL prints it: exact to the microsecond, unlike a Date. */
  leaseToken: string;
}

function leasedRow(row: Record<string, unknown> | undefined): LeasedDelivery | null {
  if (!row) return null;
  const sub = Object.fromEntries(SUBSCRIPTION_COLS.map((c) => [c, row[`s_${c}`]]));
  return { delivery: toDelivery(row), subscription: toSubscription(sub), leaseToken: String(row.lease_token) };
}

/**
 * Takes the attempt lease for (cycle, step) when the delivery is waiting for exactly that attempt and nobody else
 * holds it, and reads the subscription in the same statement. Returns both when taken; otherwise null (the caller
 * reads the row to find out why).
 */
export async function acquireLease(sql: Sql, tenantId: string, deliveryId: string, cycle: number, step: number, leaseMs: number): Promise<LeasedDelivery | null> {
  const r = await sql.query(
    `WITH leased AS (
        UPDATE gateway.webhook_deliveries SET lease_until = now() + make_interval(secs => $5::double precision / 1000)
         WHERE tenant_id = $1 AND id = $2 AND cycle = $3 AND next_step = $4 AND status IN ('pending', 'retrying')
           AND (lease_until IS NULL OR lease_until < now())
        RETURNING ${COLS}
      )
      SELECT leased.*, leased.lease_until::text AS lease_token, ${SUBSCRIPTION_COLS.map((c) => `s.${c} AS s_${c}`).join(', ')}
        FROM leased JOIN gateway.webhook_subscriptions s ON s.id = leased.subscription_id AND s.tenant_id = leased.tenant_id`,
    [tenantId, deliveryId, cycle, step, leaseMs],
    { prepare: true },
  );
  return leasedRow(r.rows[0]);
}

/**
 * Extends a lease this worker holds (`token`, whether or not it has run out meanwhile) to `leaseMs` from now, while
 * the delivery still waits for (cycle, step), and reads the delivery and its subscription again. Null when the lease
 * is no longer this worker's (another worker took it after it ran out), the delivery moved on, or it was deleted.
 */
export async function renewLease(
  sql: Sql,
  tenantId: string,
  deliveryId: string,
  cycle: number,
  step: number,
  token: string,
  leaseMs: number,
): Promise<LeasedDelivery | null> {
  const r = await sql.query(
    `WITH leased AS (
        UPDATE gateway.webhook_deliveries SET lease_until = now() + make_interval(secs => $6::double precision / 1000)
         WHERE tenant_id = $1 AND id = $2 AND cycle = $3 AND next_step = $4 AND status IN ('pending', 'retrying')
           AND lease_until = $5::timestamptz
        RETURNING ${COLS}
      )
      SELECT leased.*, leased.lease_until::text AS lease_token, ${SUBSCRIPTION_COLS.map((c) => `s.${c} AS s_${c}`).join(', ')}
        FROM leased JOIN gateway.webhook_subscriptions s ON s.id = leased.subscription_id AND s.tenant_id = leased.tenant_id`,
    [tenantId, deliveryId, cycle, step, token, leaseMs],
    { prepare: true },
  );
  return leasedRow(r.rows[0]);
}

/**
 * Gives back leases this worker holds (`token` each), unless they changed hands meanwhile.
 *
 * One lease (an attempt handed back because its endpoint's queue is full: once per message during a burst) is given
 * back by a statement that names its row by primary key. Joined to an input list instead, the row can be planned as
 * a scan of the tenant's deliveries: when the statistics know only other tenants, the planner believes this tenant
 * has no deliveries and reads all of them on every call (1,000 hand-backs over 8,000 deliveries read 8,000,000 rows;
 * docs/webhooks.md, "Planner statistics"). Several leases (a stopping worker, the lease sweep) go in one statement,
 * which reads the tenant's deliveries at most once.
 */
export async function releaseLeasesIf(sql: Sql, tenantId: string, leases: Array<{ deliveryId: string; token: string }>): Promise<void> {
  if (leases.length === 0) return;
  if (leases.length === 1) {
    await sql.query(`UPDATE gateway.webhook_deliveries SET lease_until = NULL WHERE tenant_id = $1 AND id = $2 AND lease_until = $3::timestamptz`, [
      tenantId,
      leases[0]!.deliveryId,
      leases[0]!.token,
    ]);
    return;
  }
  await sql.query(
    `UPDATE gateway.webhook_deliveries d SET lease_until = NULL
       FROM unnest($2::text[], $3::timestamptz[]) AS l(id, token)
      WHERE d.tenant_id = $1 AND d.id = l.id AND d.lease_until = l.token`,
    [tenantId, leases.map((l) => l.deliveryId), leases.map((l) => l.token)],
  );
}

/** Milliseconds until another worker's lease on the delivery ends (0 when none is held). */
export async function leaseRemainingMs(sql: Sql, tenantId: string, deliveryId: string): Promise<number> {
  const r = await sql.query<{ ms: string | number | null }>(
    `SELECT GREATEST(0, EXTRACT(EPOCH FROM (lease_until - now())) * 1000) AS ms FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND id = $2`,
    [tenantId, deliveryId],
  );
  const ms = r.rows[0]?.ms;
  return ms === null || ms === undefined ? 0 : Math.ceil(Number(ms));
}

export async function releaseLease(sql: Sql, tenantId: string, deliveryId: string): Promise<void> {
  await sql.query(`UPDATE gateway.webhook_deliveries SET lease_until = NULL WHERE tenant_id = $1 AND id = $2`, [tenantId, deliveryId]);
}

/** An attempt to record: the row as listed, and the delivery it belongs to. */
export interface RecordedAttempt extends AttemptRow {
  deliveryId: string;
  subscriptionId: string;
  eventId: string;
}

/** The state after an attempt: acknowledged, waiting for a retry, or dead. */
export type DeliveryTransition =
  | { status: 'succeeded'; at: Date }
  | { status: 'retrying'; nextStep: number; nextAttemptAt: Date }
  | { status: 'dead'; at: Date; reason: string };

/**
 * Records an attempt and moves the delivery to its next state in one statement, provided `claim` is claimed now in
 * `runtime.processed_events` (the marker `claimEvent` writes: exactly one record per attempt, even if two workers
 * got this far) and the delivery is still waiting for exactly this attempt (cycle and step); a success also ends the
 * endpoint's dead-letter streak. Returns `duplicate` when the attempt was claimed before or the delivery moved on
 * meanwhile, and `gone` when the delivery no longer exists (its subscription was deleted during the attempt);
 * nothing but the claim is written then.
 */
export async function recordAttempt(
  sql: Sql,
  tenantId: string,
  claim: { consumer: string; key: string },
  a: RecordedAttempt,
  t: DeliveryTransition,
): Promise<'recorded' | 'duplicate' | 'gone'> {
  const r = await sql.query<{ updated: string; present: string }>(
    `WITH claimed AS (
        INSERT INTO runtime.processed_events (consumer, event_id) VALUES ($20, $21)
        ON CONFLICT (consumer, event_id) DO NOTHING
        RETURNING 1
      ), moved AS (
        UPDATE gateway.webhook_deliveries SET
           status = $15,
           next_step = COALESCE($16, next_step),
           next_attempt_at = $17,
           attempts = $5,
           last_status_code = $11,
           last_outcome = $12,
           succeeded_at = CASE WHEN $15 = 'succeeded' THEN $18::timestamptz ELSE succeeded_at END,
           dead_at = CASE WHEN $15 = 'dead' THEN $18::timestamptz ELSE NULL END,
           dead_reason = CASE WHEN $15 = 'dead' THEN $19 ELSE NULL END,
           lease_until = NULL,
           updated_at = now()
         WHERE tenant_id = $1 AND id = $2 AND cycle = $6 AND next_step = $7 AND EXISTS (SELECT 1 FROM claimed)
        RETURNING id
      ), attempt AS (
        INSERT INTO gateway.webhook_attempts
          (tenant_id, delivery_id, subscription_id, event_id, attempt, cycle, step, scheduled_for, started_at, latency_ms,
           status_code, outcome, error, response_snippet)
        SELECT $1, moved.id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 FROM moved
        RETURNING 1
      ), streak AS (
        UPDATE gateway.webhook_subscriptions SET consecutive_dead_letters = 0
         WHERE $15 = 'succeeded' AND tenant_id = $1 AND id = $3 AND consecutive_dead_letters <> 0 AND EXISTS (SELECT 1 FROM moved)
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM attempt) AS updated,
             (SELECT count(*) FROM gateway.webhook_deliveries WHERE tenant_id = $1 AND id = $2) AS present`,
    [
      tenantId,
      a.deliveryId,
      a.subscriptionId,
      a.eventId,
      a.attempt,
      a.cycle,
      a.step,
      a.scheduledFor,
      a.startedAt,
      a.latencyMs,
      a.statusCode,
      a.outcome,
      a.error,
      a.responseSnippet,
      t.status,
      t.status === 'retrying' ? t.nextStep : null,
      t.status === 'retrying' ? t.nextAttemptAt : null,
      t.status === 'retrying' ? null : t.at,
      t.status === 'dead' ? t.reason : null,
      claim.consumer,
      claim.key,
    ],
    { prepare: true },
  );
  if (Number(r.rows[0]?.updated ?? 0) === 1) return 'recorded';
  return Number(r.rows[0]?.present ?? 0) === 0 ? 'gone' : 'duplicate';
}

export async function applyTransition(
  sql: Sql,
  tenantId: string,
  deliveryId: string,
  t: DeliveryTransition,
  last: { attempts: number; statusCode: number | null; outcome: string | null },
): Promise<void> {
  await sql.query(
    `UPDATE gateway.webhook_deliveries SET
        status = $3,
        next_step = COALESCE($4, next_step),
        next_attempt_at = $5,
        attempts = $6,
        last_status_code = $7,
        last_outcome = COALESCE($8, last_outcome),
        succeeded_at = CASE WHEN $3 = 'succeeded' THEN $9::timestamptz ELSE succeeded_at END,
        dead_at = CASE WHEN $3 = 'dead' THEN $9::timestamptz ELSE NULL END,
        dead_reason = CASE WHEN $3 = 'dead' THEN $10 ELSE NULL END,
        lease_until = NULL,
        updated_at = now()
      WHERE tenant_id = $1 AND id = $2`,
    [
      tenantId,
      deliveryId,
      t.status,
      t.status === 'retrying' ? t.nextStep : null,
      t.status === 'retrying' ? t.nextAttemptAt : null,
      last.attempts,
      last.statusCode,
      last.outcome,
      t.status === 'retrying' ? null : t.at,
      t.status === 'dead' ? t.reason : null,
    ],
  );
}

/** A delivery waiting for an attempt, as its message names it (no body, no secret). */
export interface WaitingDelivery {
  tenantId: string;
  id: string;
  subscriptionId: string;
  eventId: string;
  cycle: number;
  nextStep: number;
  nextAttemptAt: Date | null;
}

/** A delivery waiting for an attempt with the end of its lease (`webhook_deliveries_waiting_leases`, migration 0104). */
export interface WaitingLeasedDelivery extends WaitingDelivery {
  /** Null when no lease was ever taken or the last one was given back or ended by a record. */
  leaseUntil: Date | null;
  /** `lease_until` exact to the microsecond (`releaseLeasesIf`). */
  leaseToken: string | null;
}

/**
 * Across tenants, in id order after `after`: deliveries waiting for an attempt (pending or retrying) with their
 * lease's end, leased or not; with `expiredOnly`, only those whose lease was taken and ran out without a record
 * (security-definer function of migration 0104; never a body or a secret).
 */
export async function waitingDeliveriesWithLeases(db: Sql, after: string | null, limit: number, expiredOnly: boolean): Promise<WaitingLeasedDelivery[]> {
  const r = await db.query<{
    tenant_id: string; id: string; subscription_id: string; event_id: string; cycle: number; next_step: number;
    next_attempt_at: Date | string | null; lease_until: Date | string | null; lease_token: string | null;
  }>(
    `SELECT tenant_id, id, subscription_id, event_id, cycle, next_step, next_attempt_at, lease_until, lease_token
       FROM gateway.webhook_deliveries_waiting_leases($1, $2, $3)`,
    [after, limit, expiredOnly],
  );
  return r.rows.map((row) => ({
    tenantId: String(row.tenant_id),
    id: String(row.id),
    subscriptionId: String(row.subscription_id),
    eventId: String(row.event_id),
    cycle: Number(row.cycle),
    nextStep: Number(row.next_step),
    nextAttemptAt: row.next_attempt_at === null ? null : new Date(row.next_attempt_at),
    leaseUntil: row.lease_until === null ? null : new Date(row.lease_until),
    leaseToken: row.lease_token === null ? null : String(row.lease_token),
  }));
}

/**
 * Across tenants: deletes at most `limit` settled deliveries (succeeded or dead) last changed more than
 * `retentionMs` ago, with their attempts (security-definer function of migration 0103; a delivery waiting for an
 * attempt is never deleted). Returns how many went.
 */
export async function pruneSettledDeliveries(db: Sql, retentionMs: number, limit: number): Promise<number> {
  const r = await db.query<{ pruned: string | number }>(
    `SELECT gateway.prune_webhook_deliveries(make_interval(secs => $1), $2) AS pruned`,
    [retentionMs / 1000, limit],
  );
  return Number(r.rows[0]?.pruned ?? 0);
}
