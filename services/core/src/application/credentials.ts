import { placeWithinReach } from '@lore/contracts';
import type { Source } from '../domain/sources';
import { ccPairIdsOfCredential } from '../store/cc-pairs';
import { countCredentialsLocked, deleteCredential, getCredential, insertCredential, listCredentials, setCredentialJson, type CredentialRow } from '../store/credentials';
import type { CoreDeps } from './context';
import { sealCredentialJson } from './credential-secrets';
import { coreError } from './errors';
import type { Principal } from './principal';

export interface CredentialInput {
  name: string;
  source: Source;
  /** Checked for its source already (domain/sources.ts). */
  credential_json: Record<string, unknown>;
  admin_public: boolean;
  curator_public: boolean;
  groups: number[];
}

const notFound = () => coreError('NOT_FOUND', 'credential not found');

/**
 * Credentials a tenant may have, in all its workspaces. Every listing answers them all (and the status listings
 * one per pair), so they are bounded by this and not by the tenant; `GET /api/manage/credential` also stops here.
 */
export const MAX_CREDENTIALS_PER_TENANT = 500;

/**
 * Stores a credential with its secret sealed: the row is written first (its id binds every sealed value), then
 * the sealed values, in one transaction. The plaintext never reaches the database. The tenant's credentials are
 * counted under a lock in that transaction, so concurrent creates stop at exactly the cap.
 */
export function createCredential(deps: CoreDeps, p: Principal, input: CredentialInput): Promise<CredentialRow> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    if ((await countCredentialsLocked(sql, p.tenantId, MAX_CREDENTIALS_PER_TENANT)) >= MAX_CREDENTIALS_PER_TENANT) {
      throw coreError('CONFLICT', `the tenant has ${MAX_CREDENTIALS_PER_TENANT} credentials, the most it may have: delete one it no longer uses first`);
    }
    const row = await insertCredential(sql, p.tenantId, {
      owner: p.owner,
      // A signed-in user's address, from the gateway's identity; a key or an OAuth client has none ('').
      user_email: p.email,
      source: input.source,
      name: input.name,
      admin_public: input.admin_public,
      curator_public: input.curator_public,
      groups: input.groups,
    }, { workspace_id: p.workspaceId, memory_id: p.memoryId });
    return setCredentialJson(sql, p.tenantId, row.id, sealCredentialJson(deps.secrets, p.tenantId, row.id, input.credential_json));
  });
}

/**
 * A stored credential belongs where it was made: a credential bound to a workspace, or scoped to some memories, sees
 * and uses only those made within its reach (docs/core.md, "A cc pair lives in a workspace").
 */
export const credentialWithinReach = (p: Principal, row: CredentialRow | null): row is CredentialRow => row !== null && placeWithinReach(p.reach, row);

export async function credentialList(deps: CoreDeps, p: Principal): Promise<CredentialRow[]> {
  return (await deps.db.withTenant(p.tenantId, (sql) => listCredentials(sql, p.tenantId, MAX_CREDENTIALS_PER_TENANT))).filter((row) => credentialWithinReach(p, row));
}

export async function credentialOf(deps: CoreDeps, p: Principal, id: number): Promise<CredentialRow> {
  const row = await deps.db.withTenant(p.tenantId, (sql) => getCredential(sql, p.tenantId, id));
  if (!credentialWithinReach(p, row)) throw notFound();
  return row;
}

/** A credential a pair still reads with cannot be deleted (400 naming the pairs): delete the pairs first. */
export async function removeCredential(deps: CoreDeps, p: Principal, id: number): Promise<void> {
  await deps.db.withTenant(p.tenantId, async (sql) => {
    // Locked: no pair can be made with it between the check and the delete.
    if (!credentialWithinReach(p, await getCredential(sql, p.tenantId, id, 'update'))) throw notFound();
    const pairs = await ccPairIdsOfCredential(sql, p.tenantId, id);
    if (pairs.length > 0) throw coreError('BAD_REQUEST', `credential ${id} is used by cc pair(s) ${pairs.join(', ')}: delete them first`);
    await deleteCredential(sql, p.tenantId, id);
  });
}
