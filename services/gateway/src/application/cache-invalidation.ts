import type { GatewayContext } from '../context';
import { revocationRecordTtlMs } from '../context';
import type { ParsedCredential } from '../domain/credentials';

/**
 * Every way the gateway forgets what it cached, by name, in one place (docs/gateway.md, "Revocation, rotation,
 * caches"). The process-local caches (`ctx.caches`) are dropped here and nowhere else; what must stop on every
 * replica at once goes through the shared revocation record (`revokeSubjects`), never through these caches, whose
 * copies on other replicas live on until their lifetime ends.
 */

/** The credential cache's key of a secret's SHA-256 (keys and OAuth access tokens apart). */
export function credentialCacheKey(kind: ParsedCredential['kind'], hash: string): string {
  return `${kind === 'key' ? 'k' : 'o'}:${hash}`;
}

function memoryCacheKey(tenantId: string, memoryId: string): string {
  return `${tenantId}\u0000${memoryId}`;
}

/** This replica forgets one credential (a key revoked or rotated here; an unknown secret never stays cached). */
export function invalidateCredential(ctx: GatewayContext, kind: ParsedCredential['kind'], hash: string): void {
  ctx.caches.credentials.delete(credentialCacheKey(kind, hash));
}

/** This replica forgets every credential (changes that reach many at once: a client's tokens, a memory's keys). */
export function invalidateAllCredentials(ctx: GatewayContext): void {
  ctx.caches.credentials.clear();
}

/** A tenant's plan, credits, workspaces or active workspace changed: its context is read again. */
export function invalidateTenant(ctx: GatewayContext, tenantId: string): void {
  ctx.caches.tenants.delete(tenantId);
}

/** A hostname now names another memory, or none. */
export function invalidateHost(ctx: GatewayContext, hostname: string): void {
  ctx.caches.hosts.delete(hostname.toLowerCase());
}

/** A memory was created, moved or deleted. */
export function invalidateMemory(ctx: GatewayContext, tenantId: string, memoryId: string): void {
  ctx.caches.memories.delete(memoryCacheKey(tenantId, memoryId));
}

type CachedMemory = { memory_id: string; workspace_id: string } | null;

/** The cached lookup of one memory, under the key `invalidateMemory` drops. */
export function cachedMemory(ctx: GatewayContext, tenantId: string, memoryId: string, load: () => Promise<CachedMemory>): Promise<CachedMemory> {
  return ctx.caches.memories.getOrLoad(memoryCacheKey(tenantId, memoryId), load);
}

/**
 * Stops subjects (key ids, OAuth client ids) on every replica from `notAfterMs` (0: at once), through the shared
 * revocation record every request reads; the record outlives any replica's cached copy (plus `extraTtlMs`).
 */
export async function revokeSubjects(ctx: GatewayContext, subjects: readonly string[], notAfterMs: number, extraTtlMs = 0): Promise<void> {
  await ctx.state.revoke(subjects, notAfterMs, revocationRecordTtlMs(ctx, extraTtlMs));
}

/**
 * Records the shared state's epoch from an admission. True when it changed after a first sighting: the shared
 * state lost its records (a Redis restart without persistence), so every credential and tenant this replica
 * cached is dropped and the caller must re-read the credential from the database.
 */
export function observeSharedEpoch(ctx: GatewayContext, epoch: string): boolean {
  if (ctx.epoch.value === epoch) return false;
  const first = ctx.epoch.value === null;
  ctx.epoch.value = epoch;
  if (first) return false;
  ctx.caches.credentials.clear();
  ctx.caches.tenants.clear();
  return true;
}
