import { TOPICS, isoMillis, type MemoryLifecycleMessage } from '@lore/contracts';
import { AppError, enqueueOutbox, type Sql } from '@lore/runtime';
import { newId } from '../domain/credentials';
import type { GatewayContext, TenantContext } from '../context';
import { insertTenant, lockTenantIn, setWorkspacePointers, getTenant, getTenantIn, type Tenant } from '../store/tenants';
import { clearPrimaryMemoryIn, countWorkspacesIn, insertWorkspace, listWorkspacesIn, promotePrimaryMemoryIn, setPrimaryMemory, getWorkspaceIn, slugTaken, type Workspace } from '../store/workspaces';
import { getMemoryIn, hardDeleteMemoryIn, insertMemory, memoryOwner, softDeleteMemoryIn, upsertMemoryIn, memoryByHostname, type Memory } from '../store/memories';
import { revokeKeysOfMemoryIn } from '../store/api-keys';
import { isUniqueViolation, slugify } from '../store/rows';
import { cachedMemory, invalidateAllCredentials, invalidateHost, invalidateMemory, invalidateTenant, revokeSubjects } from './cache-invalidation';

/** A hostname for a memory the gateway created itself: DNS-safe, derived from the id. */
export function defaultHostname(memoryId: string, baseDomain: string): string {
  return `${memoryId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}.${baseDomain}`;
}

async function createWorkspaceIn(ctx: GatewayContext, sql: Sql, tenantId: string, name: string): Promise<{ workspace: Workspace; memory: Memory }> {
  let slug = slugify(name);
  for (let i = 2; (await slugTaken(sql, tenantId, slug)) && i < 100; i++) slug = `${slugify(name)}-${i}`;
  const workspace = await insertWorkspace(sql, tenantId, { workspace_id: newId('ws'), name, slug });
  const memoryId = newId('mem');
  const memory = await insertMemory(sql, tenantId, {
    memory_id: memoryId,
    workspace_id: workspace.workspace_id,
    name: `${name} memory`,
    hostname: defaultHostname(memoryId, ctx.config.memoryBaseDomain),
  });
  await setPrimaryMemory(sql, tenantId, workspace.workspace_id, memory.memory_id);
  return { workspace: { ...workspace, primary_memory_id: memory.memory_id }, memory };
}

/**
 * Creates a tenant with its default (and active) workspace and that workspace's primary memory, in one
 * transaction. Idempotent on `tenant_id`: a second call returns the existing tenant with `created: false`.
 */
export async function createTenant(ctx: GatewayContext, input: { tenant_id?: string; name: string; plan?: string }): Promise<{ tenant: Tenant; created: boolean }> {
  const tenantId = input.tenant_id ?? newId('ten');
  const plan = input.plan ?? ctx.config.defaultPlan;
  if (!(plan in ctx.config.plans)) throw AppError.badRequest(`unknown plan "${plan}"`);
  const result = await ctx.db.withTenant(tenantId, async (sql) => {
    const { tenant, created } = await insertTenant(sql, tenantId, { name: input.name, plan });
    if (!created) return { tenant, created };
    const { workspace } = await createWorkspaceIn(ctx, sql, tenantId, 'Default');
    await setWorkspacePointers(sql, tenantId, { default: workspace.workspace_id, active: workspace.workspace_id });
    return { tenant: { ...tenant, default_workspace_id: workspace.workspace_id, active_workspace_id: workspace.workspace_id }, created };
  });
  invalidateTenant(ctx, tenantId);
  return result;
}

/**
 * Workspaces a tenant may have, the default one included. Every authenticated request loads the tenant's workspaces
 * (`tenantContext`), and each one has a memory of its own, so they are bounded by this and not by the tenant.
 */
export const MAX_WORKSPACES_PER_TENANT = 100;

/**
 * A new workspace with its primary memory. The workspaces are counted under the tenant's row lock, in the inserting
 * transaction (as plan limits are), so concurrent creates, on any replica, stop at exactly MAX_WORKSPACES_PER_TENANT.
 */
export async function createWorkspace(ctx: GatewayContext, tenantId: string, name: string): Promise<Workspace> {
  const { workspace } = await ctx.db.withTenant(tenantId, async (sql) => {
    if (!(await lockTenantIn(sql, tenantId))) throw AppError.notFound('tenant');
    if ((await countWorkspacesIn(sql, tenantId, MAX_WORKSPACES_PER_TENANT)) >= MAX_WORKSPACES_PER_TENANT) {
      throw new AppError('CONFLICT', `the tenant has ${MAX_WORKSPACES_PER_TENANT} workspaces, the most it may have`, { details: { limit: 'max_workspaces', value: MAX_WORKSPACES_PER_TENANT } });
    }
    return createWorkspaceIn(ctx, sql, tenantId, name);
  });
  invalidateTenant(ctx, tenantId);
  return workspace;
}

export async function activateWorkspace(ctx: GatewayContext, tenantId: string, workspaceId: string): Promise<boolean> {
  const ok = await ctx.db.withTenant(tenantId, async (sql) => {
    if (!(await getWorkspaceIn(sql, tenantId, workspaceId))) return false;
    await setWorkspacePointers(sql, tenantId, { active: workspaceId });
    return true;
  });
  invalidateTenant(ctx, tenantId);
  return ok;
}

/** The tenant and its workspaces, cached briefly: every authenticated request needs them. */
export async function tenantContext(ctx: GatewayContext, tenantId: string): Promise<TenantContext | null> {
  const value = await ctx.caches.tenants.getOrLoad(tenantId, () => loadTenantContext(ctx, tenantId));
  // An unknown tenant is not remembered.
  if (value === null) invalidateTenant(ctx, tenantId);
  return value;
}

async function loadTenantContext(ctx: GatewayContext, tenantId: string): Promise<TenantContext | null> {
  return ctx.db.withTenant(tenantId, async (sql) => {
    const tenant = await getTenantIn(sql, tenantId);
    if (!tenant) return null;
    const workspaces = await listWorkspacesIn(sql, tenantId);
    return { tenant, workspaces: new Map(workspaces.map((w) => [w.workspace_id, w])) };
  });
}

/** A memory of this tenant (live only), cached briefly. */
export async function tenantMemory(ctx: GatewayContext, tenantId: string, memoryId: string): Promise<{ memory_id: string; workspace_id: string } | null> {
  return cachedMemory(ctx, tenantId, memoryId, async () => {
    const m = await ctx.db.withTenant(tenantId, (sql) => getMemoryIn(sql, tenantId, memoryId));
    return m && !m.deleted_at ? { memory_id: m.memory_id, workspace_id: m.workspace_id } : null;
  });
}

/** Which memory (if any) a Host header names; unknown hosts are cached too, so floods of junk hosts stay cheap. */
export async function memoryForHost(ctx: GatewayContext, host: string): Promise<{ tenant_id: string; memory_id: string; workspace_id: string } | null> {
  const hostname = host.toLowerCase().replace(/:\d+$/, '');
  if (!hostname || hostname.length > 253) return null;
  return ctx.caches.hosts.getOrLoad(hostname, () => memoryByHostname(ctx.db, hostname));
}

/**
 * Tells the data plane about a memory's life, in the caller's transaction (the outbox): the message exists if and
 * only if the change committed, and it is keyed by memory id so one memory's messages are consumed in order.
 */
async function announceMemory(sql: Sql, tenantId: string, memoryId: string, type: MemoryLifecycleMessage['type']): Promise<void> {
  const base = { event_id: newId('mle'), tenant_id: tenantId, memory_id: memoryId, occurred_at: isoMillis() };
  const message: MemoryLifecycleMessage = type === 'memory.deleted' ? { ...base, type, retain_data: false } : { ...base, type };
  await enqueueOutbox(sql, { topic: TOPICS.memoryLifecycle, key: memoryId, eventId: message.event_id, value: message });
}

/**
 * Creates or updates a memory (the operator's `Memory` resource). The id is global: one owned by another tenant
 * is a CONFLICT, as is a hostname held by another live memory.
 */
export async function upsertMemory(
  ctx: GatewayContext,
  tenantId: string,
  memoryId: string,
  input: { name: string; hostname: string; workspace_id?: string },
): Promise<Memory> {
  const tenant = await getTenant(ctx.db, tenantId);
  if (!tenant) throw AppError.notFound('tenant');
  const owner = await memoryOwner(ctx.db, memoryId);
  if (owner !== null && owner !== tenantId) throw new AppError('CONFLICT', 'the memory id is already in use');
  const hostname = input.hostname.toLowerCase();
  const holder = await memoryByHostname(ctx.db, hostname);
  if (holder && holder.memory_id !== memoryId) throw new AppError('CONFLICT', `hostname ${hostname} is already used by another memory`);
  const workspaceId = input.workspace_id ?? tenant.default_workspace_id;
  if (!workspaceId) throw AppError.notFound('workspace');
  try {
    const memory = await ctx.db.withTenant(tenantId, async (sql) => {
      await lockTenantIn(sql, tenantId);
      if (!(await getWorkspaceIn(sql, tenantId, workspaceId))) throw AppError.notFound('workspace');
      const previous = await getMemoryIn(sql, tenantId, memoryId);
      const saved = await upsertMemoryIn(sql, tenantId, { memory_id: memoryId, workspace_id: workspaceId, name: input.name, hostname });
      // A new row (ids chosen by the caller may be reused after an erasing delete): the data plane lifts the
      // erasure of the earlier memory with this id, after finishing it.
      if (!previous) await announceMemory(sql, tenantId, memoryId, 'memory.created');
      // A workspace left without a primary memory gets this one; the one it left (moved away) its oldest other.
      const promoted = await promotePrimaryMemoryIn(sql, tenantId, previous ? [workspaceId, previous.workspace_id] : [workspaceId]);
      return { saved, previousHost: previous?.hostname ?? null, promoted };
    });
    if (memory.previousHost) invalidateHost(ctx, memory.previousHost);
    invalidateHost(ctx, hostname);
    invalidateMemory(ctx, tenantId, memoryId);
    if (memory.promoted > 0) invalidateTenant(ctx, tenantId);
    return memory.saved;
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('CONFLICT', `hostname ${hostname} is already used by another memory`);
    throw err;
  }
}

/**
 * Deletes a memory: every key bound to it is revoked first (database, then the shared revocation record, so no
 * replica accepts them on the next request). A workspace whose primary memory it was takes its oldest remaining
 * memory as primary, in the same transaction. With `retainData` the row stays (soft delete) so the data plane
 * can keep the memory's content; otherwise the row is removed and, in the same transaction, `memory.deleted` is
 * enqueued on `lore.memory.lifecycle`: the graph worker erases the memory's data when it consumes it. Idempotent
 * (a memory already gone enqueues nothing: its erasure was enqueued by the call that removed it).
 */
export async function deleteMemory(ctx: GatewayContext, tenantId: string, memoryId: string, retainData: boolean): Promise<void> {
  const result = await ctx.db.withTenant(tenantId, async (sql) => {
    // Memory changes of a tenant take turns on its row, so two deletes in one workspace cannot each promote the other.
    await lockTenantIn(sql, tenantId);
    const existing = await getMemoryIn(sql, tenantId, memoryId);
    if (!existing) return null;
    const keyIds = await revokeKeysOfMemoryIn(sql, tenantId, memoryId);
    const primaryOf = await clearPrimaryMemoryIn(sql, tenantId, memoryId);
    if (retainData) {
      await softDeleteMemoryIn(sql, tenantId, memoryId);
    } else {
      await hardDeleteMemoryIn(sql, tenantId, memoryId);
      await announceMemory(sql, tenantId, memoryId, 'memory.deleted');
    }
    // The workspace's oldest remaining memory becomes its primary, in the same transaction (none left: none).
    await promotePrimaryMemoryIn(sql, tenantId, [...new Set([existing.workspace_id, ...primaryOf])]);
    return { keyIds, hostname: existing.hostname };
  });
  if (!result) return;
  await revokeSubjects(ctx, result.keyIds, 0);
  invalidateAllCredentials(ctx);
  invalidateHost(ctx, result.hostname);
  invalidateMemory(ctx, tenantId, memoryId);
  invalidateTenant(ctx, tenantId);
}

export type { Workspace, Memory, Tenant };
