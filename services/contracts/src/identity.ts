import { z } from 'zod';
import { KeyScopesSchema } from './keys';

/** The credential a request came with, as the gateway verified it. */
export const CredentialKindSchema = z.enum(['ck_live', 'ck_test', 'ck_eph', 'mk', 'oauth', 'session']);
export type CredentialKind = z.infer<typeof CredentialKindSchema>;

/**
 * The most user groups one user may belong to: the gateway refuses a membership beyond it, so an identity's `groups`
 * (carried in a request header) stays small.
 */
export const MAX_GROUPS_PER_USER = 100;

/**
 * The claims of the internal identity token (`idn` in the gateway-signed JWT): who is calling. Internal services
 * read nothing else about the caller, and refuse a token whose claims do not parse.
 */
export const IdentityClaimsSchema = z.object({
  tenant_id: z.string().min(1),
  /** The workspace the request runs in (the active one unless the credential pins another). */
  workspace_id: z.string(),
  /** The memory the request targets: the key's memory for mk_ keys, else the workspace's primary memory. */
  memory_id: z.string(),
  credential: CredentialKindSchema,
  /** API key id, OAuth client id, or user id for sessions. */
  subject: z.string(),
  role: z.string(),
  project_id: z.string().nullish(),
  /** Key scope; absent or empty means unrestricted. */
  scopes: KeyScopesSchema.optional(),
  request_id: z.string().optional(),
  /**
   * The user groups of a signed-in user (integer ids, the ids connectors, credentials and cc pairs name in
   * `groups`), read with the account on every request. Present for sessions only; absent (tokens of older gateways,
   * API keys, OAuth tokens) means no group.
   */
  groups: z.array(z.number().int().min(0).max(2_147_483_647)).max(MAX_GROUPS_PER_USER).optional(),
  /** A signed-in user's e-mail address (sessions only; what a credential's `user_email` shows). */
  email: z.string().max(320).optional(),
  /**
   * The credential is bound to `workspace_id` (a key pinned to a workspace, a project key, an mk_ key): other
   * workspaces and what lives in them are invisible to it. Absent: the whole tenant.
   */
  workspace_pinned: z.boolean().optional(),
  /**
   * false: the credential may not read memory documents (its key scope, app permissions or OAuth scopes leave the
   * memory module out), so no service hands it their content, through chat, lists or graphs either. Absent: it may.
   */
  memory_read: z.boolean().optional(),
});
export type Identity = z.infer<typeof IdentityClaimsSchema>;

/**
 * The roles that administer a tenant: an administrator user's session (`admin`) and a tenant API key
 * (`tenant_admin`). Administrators manage core's personas and connectors, push connector documents into a memory,
 * and see every document of it, those a connector marked not public included.
 */
export const ADMIN_ROLES: ReadonlySet<string> = new Set(['admin', 'tenant_admin']);

export function isAdminRole(role: string): boolean {
  return ADMIN_ROLES.has(role);
}

/**
 * Who is asking, as every internal service's application layer knows it, derived only from the gateway's signed
 * identity (a `tenant_id` in a body or a query is never read). Each service's principal extends it.
 */
export interface Caller {
  tenantId: string;
  /** `<credential kind>:<subject>`: the owner of what the caller creates (sessions, workflows, lists, uploads). */
  owner: string;
  /** A tenant key or an administrator. */
  admin: boolean;
  /** The workspace and memory the request runs in ('' when the credential's workspace has none). */
  workspaceId: string;
  memoryId: string;
  /** Which workspaces and memories the credential may act on, and whether it may read memory documents at all. */
  reach: MemoryReach;
}

/**
 * Where a credential may act inside its tenant (docs/gateway.md, "Key scopes"): every service applies it to what
 * lives in a workspace or a memory (cc pairs, connector documents, graphs built from them), beside the gateway's own
 * checks on the routes it forwards.
 */
export interface MemoryReach {
  /** The one workspace it may act in, or null: every workspace of the tenant. */
  workspaceId: string | null;
  /** The memories it may act on (a key's `scopes.memories`, an mk_ key's own), or null: any of those workspaces'. */
  memoryIds: readonly string[] | null;
  /**
   * It may read memory documents (their content, titles, ids) within its reach: false for a credential denied the
   * memory module (its key scope, app permissions or OAuth scopes).
   */
  readsDocuments: boolean;
}

export function memoryReach(identity: Identity): MemoryReach {
  const modules = identity.scopes?.modules;
  const memories = identity.scopes?.memories;
  const mk = identity.credential === 'mk';
  return {
    workspaceId: identity.workspace_pinned === true || mk ? identity.workspace_id : null,
    memoryIds: mk ? [identity.memory_id] : memories && memories.length > 0 ? [...memories] : null,
    readsDocuments: identity.memory_read !== false && (!modules || modules.length === 0 || modules.includes('memory')),
  };
}

/** Whether something placed in a workspace and a memory (a cc pair, a document) is within the credential's reach. */
export function withinReach(reach: MemoryReach, place: { workspace_id: string; memory_id: string }): boolean {
  if (reach.workspaceId !== null && place.workspace_id !== reach.workspaceId) return false;
  if (reach.memoryIds !== null && !reach.memoryIds.includes(place.memory_id)) return false;
  return true;
}

/**
 * Whether a tenant-level thing placed where its maker worked (a connector, a stored credential: its workspace and
 * memory, '' when not known) is within the reach of a caller: every one for a tenant-wide credential, else only those
 * placed within its workspace and memories.
 */
export function placeWithinReach(reach: MemoryReach, place: { workspace_id: string; memory_id: string }): boolean {
  if (reach.workspaceId === null && reach.memoryIds === null) return true;
  return place.workspace_id !== '' && withinReach(reach, place);
}

/** Whether the caller may read the documents of the memory its request runs in (chat's search, lists' knowledge). */
export function readsOwnMemory(caller: Pick<Caller, 'reach' | 'workspaceId' | 'memoryId'>): boolean {
  return caller.reach.readsDocuments && withinReach(caller.reach, { workspace_id: caller.workspaceId, memory_id: caller.memoryId });
}

export function callerOf(identity: Identity): Caller {
  return {
    tenantId: identity.tenant_id,
    owner: `${identity.credential}:${identity.subject}`,
    admin: ADMIN_ROLES.has(identity.role),
    workspaceId: identity.workspace_id,
    memoryId: identity.memory_id,
    reach: memoryReach(identity),
  };
}
