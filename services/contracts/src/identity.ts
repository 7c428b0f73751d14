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
}

export function callerOf(identity: Identity): Caller {
  return {
    tenantId: identity.tenant_id,
    owner: `${identity.credential}:${identity.subject}`,
    admin: ADMIN_ROLES.has(identity.role),
    workspaceId: identity.workspace_id,
    memoryId: identity.memory_id,
  };
}
