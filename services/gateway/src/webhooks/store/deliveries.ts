import type { Sql } from '@lore/runtime';
import type { AttemptOutcome } from '../http-client';
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
  cycle: number;
}

/**
 * Fan-out in one statement (it runs once per domain event, so round trips matter): when `create` is true, a
 * delivery is created for every enabled subscription of the tenant that wants the event kind from that workspace
 * (an existing one is kept); then every delivery of the event still waiting for the first attempt of its cycle is
 * returned, the new ones and any left from an earlier, interrupted fan-out. At most `limit` subscriptions.
 */
export async function fanOutEvent(sql: Sql, tenantId: string, e: EventForFanOut, create: boolean, limit: number): Promise<PendingFirstAttempt[]> {
  const r = await sql.query<{ id: string; subscription_id: string; cycle: number }>(
    `WITH subs AS (
        SELECT id FROM gateway.webhook_subscriptions
         WHERE $6::boolean AND tenant_id = $1 AND enabled AND events @> ARRAY[$3::text] AND (workspace_id IS NULL OR workspace_id = $4)
         ORDER BY created_at, id LIMIT $7
      ), created AS (
        INSERT INTO gateway.webhook_deliveries (id, tenant_id, subscription_id, event_id, event, body, status, next_attempt_at)
        SELECT 'dlv_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24), $1, subs.id, $2, $3, $5, 'pending', now() FROM subs
        ON CONFLICT (subscription_id, event_id) DO NOTHING
        RETURNING id, subscription_id, cycle
      )
      SELECT id, subscription_id, cycle FROM created
      UNION
      SELECT id, subscription_id, cycle FROM gateway.webhook_deliveries
       WHERE tenant_id = $1 AND event_id = $2 AND status = 'pending' AND next_step = 0
      LIMIT $7`,
    [tenantId, e.eventId, e.event, e.workspaceId, e.body, create, limit],
  );
  return r.rows.map((row) => ({ id: String(row.id), subscriptionId: String(row.subscription_id), cycle: Number(row.cycle) }));
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

/**
 * Takes the attempt lease for (cycle, step) when the delivery is waiting for exactly that attempt and nobody else
 * holds it, and reads the subscription in the same statement. Returns both when taken; otherwise null (the caller
 * reads the row to find out why).
 */
export async function acquireLease(
  sql: Sql,
  tenantId: string,
  deliveryId: string,
  cycle: number,
  step: number,
  leaseMs: number,
): Promise<{ delivery: DeliveryRow; subscription: SubscriptionRow } | null> {
  const r = await sql.query(
    `WITH leased AS (
        UPDATE gateway.webhook_deliveries SET lease_until = now() + make_interval(secs => $5::double precision / 1000)
         WHERE tenant_id = $1 AND id = $2 AND cycle = $3 AND next_step = $4 AND status IN ('pending', 'retrying')
           AND (lease_until IS NULL OR lease_until < now())
        RETURNING ${COLS}
      )
      SELECT leased.*, ${SUBSCRIPTION_COLS.map((c) => `s.${c} AS s_${c}`).join(', ')}
        FROM leased JOIN gateway.webhook_subscriptions s ON s.id = leased.subscription_id AND s.tenant_id = leased.tenant_id`,
    [tenantId, deliveryId, cycle, step, leaseMs],
  );
  const row = r.rows[0];
  if (!row) return null;
  const sub = Object.fromEntries(SUBSCRIPTION_COLS.map((c) => [c, row[`s_${c}`]]));
  return { delivery: toDelivery(row), subscription: toSubscription(sub) };
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

export interface RecordedAttempt {
  deliveryId: string;
  subscriptionId: string;
  eventId: string;
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

/** The state after an attempt: acknowledged, waiting for a retry, or dead. */
export type DeliveryTransition =
  | { status: 'succeeded'; at: Date }
  | { status: 'retrying'; nextStep: number; nextAttemptAt: Date }
  | { status: 'dead'; at: Date; reason: string };

/**
 * Records an attempt and moves the delivery to its next state in one statement, provided the delivery is still
 * waiting for exactly this attempt (cycle and step); a success also ends the endpoint's dead-letter streak. Returns
 * false when the delivery moved on meanwhile (nothing is written then).
 */
export async function recordAttempt(sql: Sql, tenantId: string, a: RecordedAttempt, t: DeliveryTransition): Promise<boolean> {
  const r = await sql.query<{ updated: string }>(
    `WITH moved AS (
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
         WHERE tenant_id = $1 AND id = $2 AND cycle = $6 AND next_step = $7
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
      SELECT (SELECT count(*) FROM attempt) AS updated`,
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
    ],
  );
  return Number(r.rows[0]?.updated ?? 0) === 1;
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
