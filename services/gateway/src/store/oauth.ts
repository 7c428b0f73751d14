import type { Db, Sql } from '@lore/runtime';
import { iso, isoRequired, millisOrNull, textArray } from './rows';

export interface OauthClient {
  client_id: string;
  tenant_id: string;
  name: string;
  scopes: string[];
  workspace_id: string | null;
  project_id: string | null;
  ip_allowlist: string[];
  revoked_at: string | null;
  created_at: string;
}

const COLS = 'client_id, tenant_id, name, scopes, workspace_id, project_id, ip_allowlist, revoked_at, created_at';

function toClient(r: Record<string, unknown>): OauthClient {
  return {
    client_id: String(r.client_id),
    tenant_id: String(r.tenant_id),
    name: String(r.name),
    scopes: textArray(r.scopes),
    workspace_id: (r.workspace_id as string | null) ?? null,
    project_id: (r.project_id as string | null) ?? null,
    ip_allowlist: textArray(r.ip_allowlist),
    revoked_at: iso(r.revoked_at),
    created_at: isoRequired(r.created_at),
  };
}

/** The tenant's clients not revoked (counted up to `limit`); the caller holds the tenant's row (lockTenantIn). */
export async function countLiveClientsIn(sql: Sql, tenantId: string, limit: number): Promise<number> {
  const r = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM gateway.oauth_clients WHERE tenant_id = $1 AND revoked_at IS NULL LIMIT $2) counted`,
    [tenantId, limit],
  );
  return r.rows[0]!.n;
}

export async function insertClientIn(
  sql: Sql,
  tenantId: string,
  c: { client_id: string; name: string; secret_hash: string; scopes: string[]; workspace_id: string | null; project_id: string | null; ip_allowlist: string[]; created_by: string },
): Promise<OauthClient> {
  const r = await sql.query(
    `INSERT INTO gateway.oauth_clients (tenant_id, client_id, name, secret_hash, scopes, workspace_id, project_id, ip_allowlist, created_by)
     VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $8::text[], $9) RETURNING ${COLS}`,
    [tenantId, c.client_id, c.name, c.secret_hash, c.scopes, c.workspace_id, c.project_id, c.ip_allowlist, c.created_by],
  );
  return toClient(r.rows[0]!);
}

export async function listClients(db: Db, tenantId: string, limit: number): Promise<OauthClient[]> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(`SELECT ${COLS} FROM gateway.oauth_clients WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT $2`, [tenantId, limit]);
    return r.rows.map(toClient);
  });
}

export async function revokeClient(db: Db, tenantId: string, clientId: string): Promise<OauthClient | null> {
  return db.withTenant(tenantId, async (sql) => {
    await sql.query(`UPDATE gateway.oauth_clients SET revoked_at = now() WHERE tenant_id = $1 AND client_id = $2 AND revoked_at IS NULL`, [tenantId, clientId]);
    const r = await sql.query(`SELECT ${COLS} FROM gateway.oauth_clients WHERE tenant_id = $1 AND client_id = $2`, [tenantId, clientId]);
    return r.rows[0] ? toClient(r.rows[0]) : null;
  });
}

/** For the token endpoint: client by id across tenants (SECURITY DEFINER); the secret hash is compared by the caller. */
export async function clientForToken(db: Db, clientId: string): Promise<{ tenant_id: string; client_id: string; secret_hash: string; scopes: string[]; revoked: boolean } | null> {
  const r = await db.query(`SELECT * FROM gateway.oauth_client_for_token($1)`, [clientId]);
  const row = r.rows[0];
  if (!row) return null;
  return {
    tenant_id: String(row.tenant_id),
    client_id: String(row.client_id),
    secret_hash: String(row.secret_hash),
    scopes: textArray(row.scopes),
    revoked: row.revoked_at !== null && row.revoked_at !== undefined,
  };
}

export async function insertToken(db: Db, tenantId: string, t: { token_id: string; client_id: string; token_hash: string; scopes: string[]; expires_at: string }): Promise<void> {
  await db.withTenant(tenantId, (sql) =>
    sql.query(`INSERT INTO gateway.oauth_tokens (tenant_id, token_id, client_id, token_hash, scopes, expires_at) VALUES ($1, $2, $3, $4, $5::text[], $6)`, [
      tenantId, t.token_id, t.client_id, t.token_hash, t.scopes, t.expires_at,
    ]),
  );
}

/** Expired tokens are useless; delete them in bounded batches so the table stays small. */
export async function purgeExpiredTokens(db: Db, tenantId: string): Promise<number> {
  return db.withTenant(tenantId, async (sql) => {
    const r = await sql.query(
      `DELETE FROM gateway.oauth_tokens WHERE token_id IN (SELECT token_id FROM gateway.oauth_tokens WHERE tenant_id = $1 AND expires_at < now() - interval '1 day' LIMIT 1000)`,
      [tenantId],
    );
    return r.rowCount;
  });
}

export interface OauthTokenAuthRow {
  tenant_id: string;
  token_id: string;
  client_id: string;
  token_hash: string;
  scopes: string[];
  expires_at_ms: number;
  workspace_id: string | null;
  project_id: string | null;
  ip_allowlist: string[];
  client_revoked: boolean;
}

export async function tokenByHash(db: Db, hash: string): Promise<OauthTokenAuthRow | null> {
  const r = await db.query(`SELECT * FROM gateway.auth_oauth_token($1)`, [hash]);
  const row = r.rows[0];
  if (!row) return null;
  return {
    tenant_id: String(row.tenant_id),
    token_id: String(row.token_id),
    client_id: String(row.client_id),
    token_hash: String(row.token_hash),
    scopes: textArray(row.scopes),
    expires_at_ms: millisOrNull(row.expires_at) ?? 0,
    workspace_id: (row.workspace_id as string | null) ?? null,
    project_id: (row.project_id as string | null) ?? null,
    ip_allowlist: textArray(row.ip_allowlist),
    client_revoked: row.client_revoked_at !== null && row.client_revoked_at !== undefined,
  };
}
