import type { Sql } from '@lore/runtime';

/**
 * SQL of webhook subscriptions. Every function runs on a transaction opened by `db.withTenant(tenantId, ...)` and
 * also filters on `tenantId`, so a missing policy would still not leak another tenant's rows.
 */

export interface SubscriptionRow {
  id: string;
  tenantId: string;
  workspaceId: string | null;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabledReason: 'manual' | 'dead_letters' | null;
  disabledAt: Date | null;
  /** The signing secret as stored: sealed (`enc:v1:...`), or plaintext in a row written before encryption. */
  storedSecret: string;
  /** The secret replaced by the last rotation, stored the same way; signs beside `storedSecret` during an overlap. */
  storedPreviousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  consecutiveDeadLetters: number;
  createdAt: Date;
  updatedAt: Date;
}

export const SUBSCRIPTION_COLS = [
  'id',
  'tenant_id',
  'workspace_id',
  'url',
  'events',
  'description',
  'enabled',
  'disabled_reason',
  'disabled_at',
  'secret',
  'previous_secret',
  'previous_secret_expires_at',
  'consecutive_dead_letters',
  'created_at',
  'updated_at',
] as const;
const COLS = SUBSCRIPTION_COLS.join(', ');

function date(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}

function dateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : date(value);
}

function textArray(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value === 'string' && value.startsWith('{')) {
    const inner = value.slice(1, -1);
    return inner === '' ? [] : inner.split(',').map((s) => s.replace(/^"|"$/g, ''));
  }
  return [];
}

export function toSubscription(r: Record<string, unknown>): SubscriptionRow {
  return {
    id: String(r.id),
    tenantId: String(r.tenant_id),
    workspaceId: r.workspace_id === null || r.workspace_id === undefined ? null : String(r.workspace_id),
    url: String(r.url),
    events: textArray(r.events),
    description: r.description === null || r.description === undefined ? null : String(r.description),
    enabled: r.enabled === true,
    disabledReason: (r.disabled_reason as SubscriptionRow['disabledReason']) ?? null,
    disabledAt: dateOrNull(r.disabled_at),
    storedSecret: String(r.secret),
    storedPreviousSecret: r.previous_secret === null || r.previous_secret === undefined ? null : String(r.previous_secret),
    previousSecretExpiresAt: dateOrNull(r.previous_secret_expires_at),
    consecutiveDeadLetters: Number(r.consecutive_dead_letters ?? 0),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export async function insertSubscription(
  sql: Sql,
  tenantId: string,
  s: { id: string; workspaceId: string | null; url: string; events: string[]; description: string | null; enabled: boolean; storedSecret: string },
): Promise<SubscriptionRow> {
  const r = await sql.query(
    `INSERT INTO gateway.webhook_subscriptions (id, tenant_id, workspace_id, url, events, description, enabled, disabled_reason, disabled_at, secret)
     VALUES ($1, $2, $8, $3, $4::text[], $5, $6, CASE WHEN $6 THEN NULL ELSE 'manual' END, CASE WHEN $6 THEN NULL ELSE now() END, $7)
     RETURNING ${COLS}`,
    [s.id, tenantId, s.url, s.events, s.description, s.enabled, s.storedSecret, s.workspaceId],
  );
  return toSubscription(r.rows[0]!);
}

export async function countSubscriptions(sql: Sql, tenantId: string): Promise<number> {
  const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM gateway.webhook_subscriptions WHERE tenant_id = $1`, [tenantId]);
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * Keyset page in creation order; `after` is the last id of the previous page. `workspaceId` narrows the list to the
 * subscriptions of one workspace (what a workspace-pinned key may see).
 */
export async function listSubscriptions(
  sql: Sql,
  tenantId: string,
  opts: { limit: number; after?: string | null; workspaceId?: string | null },
): Promise<SubscriptionRow[]> {
  const r = await sql.query(
    `SELECT ${COLS} FROM gateway.webhook_subscriptions s
      WHERE tenant_id = $1 AND ($4::text IS NULL OR workspace_id = $4)
        AND ($2::text IS NULL OR (created_at, id) > (SELECT created_at, id FROM gateway.webhook_subscriptions WHERE tenant_id = $1 AND id = $2))
      ORDER BY created_at, id LIMIT $3`,
    [tenantId, opts.after ?? null, opts.limit, opts.workspaceId ?? null],
  );
  return r.rows.map(toSubscription);
}

export async function getSubscription(sql: Sql, tenantId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<SubscriptionRow | null> {
  const r = await sql.query(
    `SELECT ${COLS} FROM gateway.webhook_subscriptions WHERE tenant_id = $1 AND id = $2${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
  );
  return r.rows[0] ? toSubscription(r.rows[0]) : null;
}

export interface SubscriptionPatch {
  url?: string;
  events?: string[];
  description?: string | null;
  enabled?: boolean;
}

/**
 * Applies a patch. Enabling clears the disabled state and the dead-letter streak (a re-enabled endpoint starts
 * afresh); disabling by hand records reason `manual`.
 */
export async function updateSubscription(sql: Sql, tenantId: string, id: string, patch: SubscriptionPatch): Promise<SubscriptionRow | null> {
  const r = await sql.query(
    `UPDATE gateway.webhook_subscriptions SET
        url = COALESCE($3, url),
        events = COALESCE($4::text[], events),
        description = CASE WHEN $5::boolean THEN $6 ELSE description END,
        enabled = COALESCE($7, enabled),
        disabled_reason = CASE WHEN $7 IS TRUE THEN NULL WHEN $7 IS FALSE AND enabled THEN 'manual' ELSE disabled_reason END,
        disabled_at = CASE WHEN $7 IS TRUE THEN NULL WHEN $7 IS FALSE AND enabled THEN now() ELSE disabled_at END,
        consecutive_dead_letters = CASE WHEN $7 IS TRUE THEN 0 ELSE consecutive_dead_letters END,
        updated_at = now()
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${COLS}`,
    [
      tenantId,
      id,
      patch.url ?? null,
      patch.events ?? null,
      patch.description !== undefined,
      patch.description ?? null,
      patch.enabled ?? null,
    ],
  );
  return r.rows[0] ? toSubscription(r.rows[0]) : null;
}

export async function deleteSubscription(sql: Sql, tenantId: string, id: string): Promise<boolean> {
  const r = await sql.query(`DELETE FROM gateway.webhook_subscriptions WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return r.rowCount > 0;
}

/**
 * Installs a new secret (both values as stored, i.e. sealed). With an overlap the replaced secret (`storedPrevious`,
 * the caller's copy of the current one) keeps signing beside the new one until `previousExpiresAt`; without one it
 * stops at once. Rotating during an overlap drops the oldest secret.
 */
export async function rotateSecret(
  sql: Sql,
  tenantId: string,
  id: string,
  rotation: { storedSecret: string; storedPrevious: string | null; previousExpiresAt: Date | null },
): Promise<SubscriptionRow | null> {
  const keepPrevious = rotation.previousExpiresAt !== null && rotation.storedPrevious !== null;
  const r = await sql.query(
    `UPDATE gateway.webhook_subscriptions SET
        previous_secret = $4,
        previous_secret_expires_at = $5::timestamptz,
        secret = $3,
        updated_at = now()
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${COLS}`,
    [tenantId, id, rotation.storedSecret, keepPrevious ? rotation.storedPrevious : null, keepPrevious ? rotation.previousExpiresAt : null],
  );
  return r.rows[0] ? toSubscription(r.rows[0]) : null;
}

/** Rewrites the stored secrets of one row (sealing plaintext, re-sealing under a new key); nothing else changes. */
export async function replaceStoredSecrets(sql: Sql, tenantId: string, id: string, stored: { secret: string; previous: string | null }): Promise<boolean> {
  const r = await sql.query(`UPDATE gateway.webhook_subscriptions SET secret = $3, previous_secret = $4 WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
    stored.secret,
    stored.previous,
  ]);
  return r.rowCount > 0;
}

/**
 * Across tenants, in id order: subscriptions with a secret not sealed by the key whose sealed values start with
 * `sealedPrefix` (security-definer function; ids only, never a secret).
 */
export async function subscriptionsToSeal(db: Sql, sealedPrefix: string, after: string | null, limit: number): Promise<Array<{ tenantId: string; id: string }>> {
  const r = await db.query<{ tenant_id: string; id: string }>(`SELECT tenant_id, id FROM gateway.webhook_secrets_to_seal($1, $2, $3)`, [sealedPrefix, after, limit]);
  return r.rows.map((row) => ({ tenantId: String(row.tenant_id), id: String(row.id) }));
}

/**
 * Counts one more dead letter; at `threshold` the endpoint is disabled with reason `dead_letters`. Returns whether
 * this call disabled it. The row lock makes concurrent dead letters of one endpoint count one after the other.
 */
export async function recordDeadLetter(sql: Sql, tenantId: string, id: string, threshold: number): Promise<boolean> {
  const current = await sql.query<{ enabled: boolean; consecutive_dead_letters: number }>(
    `SELECT enabled, consecutive_dead_letters FROM gateway.webhook_subscriptions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
    [tenantId, id],
  );
  const row = current.rows[0];
  if (!row) return false;
  const streak = Number(row.consecutive_dead_letters) + 1;
  const disable = row.enabled && streak >= threshold;
  await sql.query(
    `UPDATE gateway.webhook_subscriptions SET
        consecutive_dead_letters = $3,
        enabled = CASE WHEN $4 THEN false ELSE enabled END,
        disabled_reason = CASE WHEN $4 THEN 'dead_letters' ELSE disabled_reason END,
        disabled_at = CASE WHEN $4 THEN now() ELSE disabled_at END,
        updated_at = CASE WHEN $4 THEN now() ELSE updated_at END
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, streak, disable],
  );
  return disable;
}
