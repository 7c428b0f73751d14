import { AppError } from '@lore/runtime';
import { OAUTH_SECRET_PREFIX, OAUTH_TOKEN_PREFIX, digestsEqual, hasValidChecksum, mintSecret, newId, sha256Hex } from '../domain/credentials';
import { invalidCidrs } from '../domain/network';
import { invalidOauthScopes, scopesCovered } from '../domain/scope';
import type { GatewayContext } from '../context';
import { clientForToken, countLiveClientsIn, insertClientIn, insertToken, listClients, purgeExpiredTokens, revokeClient, type OauthClient } from '../store/oauth';
import { getWorkspaceIn } from '../store/workspaces';
import { invalidateAllCredentials, revokeSubjects } from './cache-invalidation';
import { projectWorkspaceIn } from '../store/projects';
import { lockTenantIn } from '../store/tenants';

/**
 * Clients a tenant may have that are not revoked (a revoked one frees its place). Each is a standing secret that
 * mints tokens for the tenant, and the listing answers the newest 1,000, so they are bounded by this and not by the
 * tenant.
 */
export const MAX_OAUTH_CLIENTS_PER_TENANT = 100;

export async function createOauthClient(
  ctx: GatewayContext,
  tenantId: string,
  input: { name: string; scopes: string[]; workspace_id?: string | null; project_id?: string | null; ip_allowlist?: string[] },
  createdBy: string,
): Promise<{ client: OauthClient; secret: string }> {
  const problems = [
    ...invalidOauthScopes(input.scopes).map((s) => `unknown scope "${s}"`),
    ...invalidCidrs(input.ip_allowlist ?? []).map((c) => `invalid CIDR range "${c}"`),
  ];
  if (problems.length > 0) throw new AppError('VALIDATION_FAILED', problems.join('; '));
  if (input.workspace_id) {
    const ws = await ctx.db.withTenant(tenantId, (sql) => getWorkspaceIn(sql, tenantId, input.workspace_id!));
    if (!ws) throw AppError.notFound('workspace');
  }
  // A client of one project lives in that project's workspace, as a key of one project does: it is pinned there, and
  // a workspace given beside it must be the project's.
  let workspaceId = input.workspace_id ?? null;
  if (input.project_id) {
    const projectId = input.project_id;
    const projectWorkspace = await ctx.db.withTenant(tenantId, (sql) => projectWorkspaceIn(sql, tenantId, projectId));
    if (projectWorkspace === null) throw AppError.notFound('project');
    if (workspaceId && projectWorkspace !== workspaceId) throw AppError.notFound('project');
    workspaceId = projectWorkspace;
  }
  const secret = mintSecret(OAUTH_SECRET_PREFIX);
  // Counted under the tenant's row lock, in the inserting transaction (as plan limits are): concurrent creates, on any
  // replica, stop at exactly MAX_OAUTH_CLIENTS_PER_TENANT.
  const client = await ctx.db.withTenant(tenantId, async (sql) => {
    if (!(await lockTenantIn(sql, tenantId))) throw AppError.notFound('tenant');
    if ((await countLiveClientsIn(sql, tenantId, MAX_OAUTH_CLIENTS_PER_TENANT)) >= MAX_OAUTH_CLIENTS_PER_TENANT) {
      throw new AppError('CONFLICT', `the tenant has ${MAX_OAUTH_CLIENTS_PER_TENANT} OAuth clients, the most it may have: revoke one it no longer uses first`, {
        details: { limit: 'max_oauth_clients', value: MAX_OAUTH_CLIENTS_PER_TENANT },
      });
    }
    return insertClientIn(sql, tenantId, {
      client_id: newId('oc'),
      name: input.name,
      secret_hash: sha256Hex(secret),
      scopes: [...new Set(input.scopes)],
      workspace_id: workspaceId,
      project_id: input.project_id ?? null,
      ip_allowlist: input.ip_allowlist ?? [],
      created_by: createdBy,
    });
  });
  return { client, secret };
}

/** Revoking a client ends every token it was issued, on every replica, at once (one record keyed on the client). */
export async function revokeOauthClient(ctx: GatewayContext, tenantId: string, clientId: string): Promise<OauthClient | null> {
  const client = await revokeClient(ctx.db, tenantId, clientId);
  if (!client) return null;
  await revokeSubjects(ctx, [clientId], 0, ctx.config.oauth.tokenTtlSeconds * 1000);
  // The client's tokens are cached under their own hashes, which this replica does not know: forget them all.
  invalidateAllCredentials(ctx);
  return client;
}

export { listClients };

/** RFC 6749 §5.2 error codes; the token endpoint answers in that shape, not the gateway's own. */
export class OauthError extends Error {
  constructor(
    readonly status: 400 | 401 | 429,
    readonly error: string,
    readonly description: string,
    /** With 429: when the client may ask again. */
    readonly retryAfterSeconds?: number,
  ) {
    super(description);
  }
}

/** Client-credentials grant: a bearer access token (`oat_…`, opaque) for at most the client's scopes. */
export async function issueClientToken(
  ctx: GatewayContext,
  clientId: string,
  clientSecret: string,
  requestedScope: string | undefined,
): Promise<{ access_token: string; token_type: 'Bearer'; expires_in: number; scope: string }> {
  if (!clientId || !clientSecret) throw new OauthError(401, 'invalid_client', 'client authentication failed');
  // Token requests are throttled per client (the login rate limit), before the secret is looked at.
  const limited = await ctx.state.hit(`oauth:${clientId.slice(0, 64)}`, ctx.config.loginRateLimit);
  if (!limited.allowed) throw new OauthError(429, 'slow_down', 'too many token requests for this client', Math.max(1, Math.ceil(limited.retryAfterMs / 1000)));
  if (!hasValidChecksum(clientSecret, OAUTH_SECRET_PREFIX) || clientId.length > 64) throw new OauthError(401, 'invalid_client', 'client authentication failed');
  const client = await clientForToken(ctx.db, clientId);
  if (!client || !digestsEqual(client.secret_hash, sha256Hex(clientSecret)) || client.revoked) {
    throw new OauthError(401, 'invalid_client', 'client authentication failed');
  }
  const requested = requestedScope ? [...new Set(requestedScope.split(' ').filter(Boolean))] : client.scopes;
  if (requested.length > 64 || invalidOauthScopes(requested).length > 0 || !scopesCovered(requested, client.scopes)) {
    throw new OauthError(400, 'invalid_scope', 'the requested scope is unknown or exceeds what the client was granted');
  }
  const token = mintSecret(OAUTH_TOKEN_PREFIX);
  const ttl = ctx.config.oauth.tokenTtlSeconds;
  await insertToken(ctx.db, client.tenant_id, {
    token_id: newId('oat'),
    client_id: client.client_id,
    token_hash: sha256Hex(token),
    scopes: requested,
    expires_at: new Date(Date.now() + ttl * 1000).toISOString(),
  });
  // Opportunistic clean-up keeps the token table bounded without a separate job.
  if (Math.random() < 0.01) await purgeExpiredTokens(ctx.db, client.tenant_id).catch(() => 0);
  return { access_token: token, token_type: 'Bearer', expires_in: ttl, scope: requested.join(' ') };
}
