import type { KeyView } from '@lore/contracts';
import { AppError } from '@lore/runtime';
import { KEY_PREFIX, displayPrefix, mintSecret, newId, sha256Hex, type KeyType } from '../domain/credentials';
import { invalidCidrs } from '../domain/network';
import { validateAppPermissions, type AppPermissions, type KeyScope } from '../domain/scope';
import type { GatewayContext } from '../context';
import { planOf } from '../context';
import {
  countUsableKeysIn,
  getKey,
  getKeyByClientToken,
  getKeyByClientTokenIn,
  getKeyIn,
  insertKeyIn,
  isClientTokenTaken,
  countKeys,
  listKeys,
  lockKeyIn,
  markReplacedIn,
  revokeKeyIn,
  type ApiKeyRecord,
  type RateLimitSetting,
} from '../store/api-keys';
import { getMemoryIn, memoriesIn } from '../store/memories';
import { getWorkspaceIn } from '../store/workspaces';
import { getTenant } from '../store/tenants';
import { projectWorkspaceIn } from '../store/projects';
import { lockTenantIn } from '../store/tenants';
import { planLimitError } from './billing';
import { invalidateCredential, revokeSubjects } from './cache-invalidation';

export interface CreateKeyInput {
  type: KeyType;
  name: string;
  memory_id?: string | null;
  workspace_id?: string | null;
  project_id?: string | null;
  scopes?: KeyScope;
  ip_allowlist?: string[];
  app_permissions?: AppPermissions;
  expires_at?: string | null;
  rate_limit?: RateLimitSetting | null;
}

/**
 * A key as the portal and the admin API show it (the contract's `KeyView`: never the plaintext, never the hash).
 * The old key of a rotation is `revoked` once its overlap has ended (spec 1: "original revoked afterwards"), with
 * `revoked_at` the instant the overlap ended; any other key past its `expires_at` is `expired`.
 */
export function presentKey(k: ApiKeyRecord, now = Date.now()): KeyView {
  const ended = k.expires_at !== null && Date.parse(k.expires_at) <= now;
  const rotatedOut = ended && k.replaced_by !== null && k.revoked_at === null;
  const status = k.revoked_at || rotatedOut ? 'revoked' : ended ? 'expired' : 'active';
  return {
    key_id: k.key_id,
    name: k.name,
    type: k.type,
    prefix: k.prefix,
    status,
    memory_id: k.memory_id,
    workspace_id: k.workspace_id,
    project_id: k.project_id,
    scopes: k.scopes,
    ip_allowlist: k.ip_allowlist,
    app_permissions: k.app_permissions,
    rate_limit: k.rate_limit,
    expires_at: k.expires_at,
    revoked_at: rotatedOut ? k.expires_at : k.revoked_at,
    replaced_by: k.replaced_by,
    rotated_from: k.rotated_from,
    created_by: k.created_by,
    created_at: k.created_at,
  };
}

function checkOptions(ctx: GatewayContext, input: CreateKeyInput, now: number): string | null {
  const problems: string[] = [];
  const bad = invalidCidrs(input.ip_allowlist ?? []);
  if (bad.length > 0) problems.push(`ip_allowlist: invalid CIDR ranges ${bad.join(', ')}`);
  if (input.app_permissions) problems.push(...validateAppPermissions(input.app_permissions));
  if (input.expires_at) {
    const at = Date.parse(input.expires_at);
    if (Number.isNaN(at)) problems.push('expires_at must be an ISO 8601 date-time');
    else if (at <= now) problems.push('expires_at must be in the future');
    else if (input.type === 'ephemeral' && at > now + ctx.config.ephemeralTtlSeconds * 1000) {
      problems.push(`ephemeral keys live at most ${ctx.config.ephemeralTtlSeconds} seconds`);
    }
  }
  if (input.type === 'memory' && !input.memory_id) problems.push('memory_id is required for memory (mk_) keys');
  // Only a memory key is bound by its memory_id: on another key it would read as a binding that nothing holds (and
  // the memory's deletion would revoke the key). Another key is narrowed to memories with scopes.memories.
  if (input.type !== 'memory' && input.memory_id) problems.push('memory_id is only for memory (mk_) keys: narrow another key to some memories with scopes.memories');
  return problems.length > 0 ? problems.join('; ') : null;
}

/** Options of a create or rotate call made through the internal admin API. */
export interface IssueOptions {
  /**
   * The caller's idempotency token: at most one key per tenant is ever made with it. A repeated call answers
   * 409 CONFLICT naming the key (its plaintext is not stored, so it cannot be shown again), and the key can
   * be looked up by the token when the caller never saw the answer.
   */
  clientToken?: string;
}

/** The answer to a call whose client token already made a key. */
function tokenReplayed(existing: ApiKeyRecord): AppError {
  return new AppError('CONFLICT', `client_token was already used: it made key ${existing.key_id}, whose plaintext cannot be shown again`, {
    details: { key_id: existing.key_id },
  });
}

/**
 * Runs an insert that carries a client token. Two calls with one token can both pass the early lookup; the
 * unique index lets exactly one insert through, and the other learns which key won.
 */
async function withTokenGuard<T>(ctx: GatewayContext, tenantId: string, clientToken: string | undefined, insert: () => Promise<T>): Promise<T> {
  try {
    return await insert();
  } catch (err) {
    if (!clientToken || !isClientTokenTaken(err)) throw err;
    const existing = await getKeyByClientToken(ctx.db, tenantId, clientToken);
    // The winner committed before the index refused this insert, so it is visible now.
    if (!existing) throw err;
    throw tokenReplayed(existing);
  }
}

/** Creates a key and returns its plaintext, which is never shown again. */
export async function createKey(
  ctx: GatewayContext,
  tenantId: string,
  input: CreateKeyInput,
  createdBy: string,
  opts: IssueOptions = {},
): Promise<{ record: ApiKeyRecord; plaintext: string }> {
  const now = Date.now();
  const problem = checkOptions(ctx, input, now);
  if (problem) throw new AppError('VALIDATION_FAILED', problem);
  const clientToken = opts.clientToken;
  const expiresAt =
    input.expires_at ?? (input.type === 'ephemeral' ? new Date(now + ctx.config.ephemeralTtlSeconds * 1000).toISOString() : null);
  const prefix = KEY_PREFIX[input.type];
  const plaintext = mintSecret(prefix);
  const record = await withTokenGuard(ctx, tenantId, clientToken, () => ctx.db.withTenant(tenantId, async (sql) => {
    // The tenant row stays locked until this transaction ends: the count below and the insert are one step for
    // every other create of this tenant, on any replica.
    const tenant = await lockTenantIn(sql, tenantId);
    if (!tenant) throw AppError.notFound('tenant');
    if (clientToken) {
      // A replay is answered as such before anything else (a plan limit reached by that very key included). Read
      // under the lock, so a concurrent call with the same token that won has committed and is seen here.
      const existing = await getKeyByClientTokenIn(sql, tenantId, clientToken);
      if (existing) throw tokenReplayed(existing);
    }
    const plan = planOf(ctx, tenant);
    if (plan.max_keys !== undefined && (await countUsableKeysIn(sql, tenantId)) >= plan.max_keys) {
      throw planLimitError(`the ${tenant.plan} plan allows ${plan.max_keys} active keys`, { limit: 'max_keys', value: plan.max_keys });
    }
    let workspaceId = input.workspace_id ?? null;
    if (workspaceId && !(await getWorkspaceIn(sql, tenantId, workspaceId))) throw AppError.notFound('workspace');
    if (input.memory_id) {
      const memory = await getMemoryIn(sql, tenantId, input.memory_id);
      if (!memory || memory.deleted_at) throw AppError.notFound('memory');
      if (workspaceId && memory.workspace_id !== workspaceId) throw AppError.notFound('memory');
      // A memory key lives in its memory's workspace.
      if (input.type === 'memory') workspaceId = memory.workspace_id;
    }
    // The memories a key is scoped to are memories of the tenant (of its workspace, for a pinned key): another
    // tenant's, or none, is 404 like any other id named here.
    const scoped = [...new Set(input.scopes?.memories ?? [])];
    const usable = (await memoriesIn(sql, tenantId, scoped)).filter((m) => !m.deleted_at && (!workspaceId || m.workspace_id === workspaceId));
    if (usable.length < scoped.length) throw AppError.notFound('memory');
    if (input.project_id) {
      const projectWorkspace = await projectWorkspaceIn(sql, tenantId, input.project_id);
      if (!projectWorkspace) throw AppError.notFound('project');
      if (workspaceId && projectWorkspace !== workspaceId) throw AppError.notFound('project');
      workspaceId = projectWorkspace;
    }
    return insertKeyIn(sql, {
      tenant_id: tenantId,
      key_id: newId('key'),
      type: input.type,
      name: input.name,
      key_hash: sha256Hex(plaintext),
      prefix: displayPrefix(plaintext, prefix),
      memory_id: input.memory_id ?? null,
      workspace_id: workspaceId,
      project_id: input.project_id ?? null,
      scopes: input.scopes ?? {},
      ip_allowlist: input.ip_allowlist ?? [],
      app_permissions: input.app_permissions ?? {},
      rate_limit: input.rate_limit ?? null,
      expires_at: expiresAt,
      rotated_from: null,
      created_by: createdBy,
      client_token: clientToken ?? null,
    });
  }));
  return { record, plaintext };
}

/**
 * Rotation: a replacement with the same options, its plaintext returned once; the old key keeps working for
 * the overlap and then stops. The stop time is written to the shared revocation record as well as the
 * database, so no replica's cached copy of the old key outlives the overlap.
 */
export async function rotateKey(
  ctx: GatewayContext,
  tenantId: string,
  keyId: string,
  overlapSeconds: number | undefined,
  createdBy: string,
  opts: IssueOptions = {},
): Promise<{ record: ApiKeyRecord; plaintext: string; replaced: ApiKeyRecord }> {
  const overlap = overlapSeconds ?? ctx.config.rotation.defaultOverlapSeconds;
  if (!Number.isInteger(overlap) || overlap < 0 || overlap > ctx.config.rotation.maxOverlapSeconds) {
    throw new AppError('VALIDATION_FAILED', `overlap_seconds must be an integer between 0 and ${ctx.config.rotation.maxOverlapSeconds}`);
  }
  const now = Date.now();
  const notAfter = now + overlap * 1000;
  const clientToken = opts.clientToken;
  const result = await withTokenGuard(ctx, tenantId, clientToken, () => ctx.db.withTenant(tenantId, async (sql) => {
    // Row lock: two concurrent rotations of one key must not both succeed.
    if (!(await lockKeyIn(sql, tenantId, keyId))) return null;
    if (clientToken) {
      // Read after the lock: a concurrent rotation with the same token has committed by now, and a replay is
      // answered with the replacement it made rather than with "already rotated".
      const existing = await getKeyByClientTokenIn(sql, tenantId, clientToken);
      if (existing) throw tokenReplayed(existing);
    }
    const old = (await getKeyIn(sql, tenantId, keyId))!;
    if (old.revoked_at) throw new AppError('CONFLICT', 'the key is revoked');
    if (old.replaced_by) throw new AppError('CONFLICT', `the key was already rotated (replacement ${old.replaced_by})`);
    if (old.expires_at && Date.parse(old.expires_at) <= now) throw new AppError('CONFLICT', 'the key has expired');
    const prefix = KEY_PREFIX[old.type];
    const plaintext = mintSecret(prefix);
    let expiresAt = old.expires_at;
    if (old.type === 'ephemeral') expiresAt = new Date(now + ctx.config.ephemeralTtlSeconds * 1000).toISOString();
    const record = await insertKeyIn(sql, {
      tenant_id: tenantId,
      key_id: newId('key'),
      type: old.type,
      name: old.name,
      key_hash: sha256Hex(plaintext),
      prefix: displayPrefix(plaintext, prefix),
      memory_id: old.memory_id,
      workspace_id: old.workspace_id,
      project_id: old.project_id,
      scopes: old.scopes,
      ip_allowlist: old.ip_allowlist,
      app_permissions: old.app_permissions,
      rate_limit: old.rate_limit,
      expires_at: expiresAt,
      rotated_from: old.key_id,
      created_by: createdBy,
      client_token: clientToken ?? null,
    });
    await markReplacedIn(sql, tenantId, keyId, record.key_id, new Date(notAfter).toISOString());
    const replaced = (await getKeyIn(sql, tenantId, keyId))!;
    // Rotating a replacement ends the overlap of the key it replaced, now: at most two keys of one rotation chain
    // work at once. Before 2026-11-30 rotating the replacement again and again kept every key of the chain working
    // for its overlap (up to 30 days each), past the plan's max_keys and with a rate limit of its own each.
    const predecessor = old.rotated_from ? await getKeyIn(sql, tenantId, old.rotated_from) : null;
    const ended = predecessor && predecessor.replaced_by === old.key_id && !predecessor.revoked_at && (!predecessor.expires_at || Date.parse(predecessor.expires_at) > now) ? predecessor : null;
    if (ended) await markReplacedIn(sql, tenantId, ended.key_id, old.key_id, new Date(now).toISOString());
    return { record, plaintext, replaced, ended };
  }));
  if (!result) throw AppError.notFound('key');
  await revokeSubjects(ctx, [keyId], notAfter, overlap * 1000);
  invalidateCredential(ctx, 'key', result.replaced.key_hash);
  if (result.ended) {
    await revokeSubjects(ctx, [result.ended.key_id], now);
    invalidateCredential(ctx, 'key', result.ended.key_hash);
  }
  return { record: result.record, plaintext: result.plaintext, replaced: result.replaced };
}

/** Revokes at once: database first, then the shared record every replica checks on every request. */
export async function revokeKey(ctx: GatewayContext, tenantId: string, keyId: string): Promise<ApiKeyRecord | null> {
  const record = await ctx.db.withTenant(tenantId, (sql) => revokeKeyIn(sql, tenantId, keyId));
  if (!record) return null;
  await revokeSubjects(ctx, [keyId], 0);
  invalidateCredential(ctx, 'key', record.key_hash);
  return record;
}

export { countKeys, getKey, getKeyByClientToken, listKeys };

/**
 * The key a create or rotate call of the admin API made with `clientToken`, or null when none did; a tenant that
 * does not exist is NOT_FOUND (an empty answer would read as "not created yet" and invite a duplicate).
 */
export async function findKeyByClientToken(ctx: GatewayContext, tenantId: string, clientToken: string) {
  if (!(await getTenant(ctx.db, tenantId))) throw AppError.notFound('tenant');
  return getKeyByClientToken(ctx.db, tenantId, clientToken);
}
