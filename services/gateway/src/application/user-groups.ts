import { AppError, type Sql } from '@lore/runtime';
import { MAX_GROUPS_PER_USER } from '@lore/contracts';
import type { GatewayContext } from '../context';
import { isUniqueViolation } from '../store/rows';
import { lockTenantIn } from '../store/tenants';
import {
  countGroupsIn, deleteGroupIn, getGroupIn, insertGroupIn, listGroupsIn, lockGroupIn, lockUsersIn, renameGroupIn, setMembersIn, touchGroupIn,
  usersAtGroupLimitIn, type UserGroupRecord,
} from '../store/user-groups';

/**
 * User groups (docs/gateway.md, "User groups"): named sets of a tenant's users, with the integer ids that connectors,
 * credentials and cc pairs name in `groups`. A signed-in user's groups travel in the identity the gateway signs for
 * each request (read with the account, never cached), so a private pair's documents reach its groups' users from
 * their next request on, and stop reaching a removed member just as soon.
 */

/** Groups one tenant may have: the listing answers them all, with their members. */
export const MAX_GROUPS_PER_TENANT = 1000;
/** Users named in one request. */
export const MAX_USERS_PER_REQUEST = 1000;

export { MAX_GROUPS_PER_USER };

export interface GroupInput {
  name?: string;
  /** The members, exactly (a change replaces the whole set); users of the tenant. */
  user_ids?: string[];
}

const nameTaken = () => new AppError('CONFLICT', 'a user group with this name exists');

/**
 * Checks and locks the users a change makes members, in the changing transaction: each must be a user of the
 * tenant, and none may end up in more than MAX_GROUPS_PER_USER groups. The users' rows stay locked until the
 * transaction ends, so concurrent changes adding the same user to different groups are counted one after the
 * other and the limit holds exactly.
 */
async function checkMembers(sql: Sql, tenantId: string, groupId: number | null, userIds: readonly string[]): Promise<void> {
  const found = new Set(await lockUsersIn(sql, tenantId, userIds));
  const unknown = userIds.filter((u) => !found.has(u));
  if (unknown.length > 0) throw new AppError('BAD_REQUEST', `not users of this tenant: ${unknown.slice(0, 10).join(', ')}${unknown.length > 10 ? ', …' : ''}`);
  const full = await usersAtGroupLimitIn(sql, tenantId, userIds, groupId, MAX_GROUPS_PER_USER);
  if (full.length > 0) throw new AppError('BAD_REQUEST', `a user may belong to at most ${MAX_GROUPS_PER_USER} groups; already there: ${full.slice(0, 10).join(', ')}`);
}

const unique = (ids: readonly string[] | undefined) => (ids ? [...new Set(ids)] : undefined);

export async function listGroups(ctx: GatewayContext, tenantId: string): Promise<UserGroupRecord[]> {
  return ctx.db.withTenant(tenantId, (sql) => listGroupsIn(sql, tenantId, MAX_GROUPS_PER_TENANT));
}

export async function getGroup(ctx: GatewayContext, tenantId: string, groupId: number): Promise<UserGroupRecord | null> {
  return ctx.db.withTenant(tenantId, (sql) => getGroupIn(sql, tenantId, groupId));
}

/**
 * A new group with its members. The number of groups is counted under the tenant's row lock, in the inserting
 * transaction (as plan limits are), so concurrent creates never pass MAX_GROUPS_PER_TENANT.
 */
export async function createGroup(ctx: GatewayContext, tenantId: string, input: { name: string; user_ids?: string[] }): Promise<UserGroupRecord> {
  const members = unique(input.user_ids) ?? [];
  try {
    return await ctx.db.withTenant(tenantId, async (sql) => {
      if (!(await lockTenantIn(sql, tenantId))) throw AppError.notFound('tenant');
      if ((await countGroupsIn(sql, tenantId)) >= MAX_GROUPS_PER_TENANT) throw new AppError('BAD_REQUEST', `a tenant may have at most ${MAX_GROUPS_PER_TENANT} user groups`);
      const id = await insertGroupIn(sql, tenantId, input.name);
      await checkMembers(sql, tenantId, id, members);
      await setMembersIn(sql, tenantId, id, members);
      return (await getGroupIn(sql, tenantId, id))!;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

/** Renames a group and/or replaces its members; null when the tenant has no such group. */
export async function updateGroup(ctx: GatewayContext, tenantId: string, groupId: number, input: GroupInput): Promise<UserGroupRecord | null> {
  const members = unique(input.user_ids);
  try {
    return await ctx.db.withTenant(tenantId, async (sql) => {
      if (!(await lockGroupIn(sql, tenantId, groupId))) return null;
      if (input.name !== undefined) await renameGroupIn(sql, tenantId, groupId, input.name);
      if (members !== undefined) {
        await checkMembers(sql, tenantId, groupId, members);
        await setMembersIn(sql, tenantId, groupId, members);
        await touchGroupIn(sql, tenantId, groupId);
      }
      return getGroupIn(sql, tenantId, groupId);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

/**
 * Deletes a group and its memberships. Pairs that name its id keep the id: ids are never reused, so it grants
 * nobody anything any more. False when the tenant has no such group.
 */
export async function deleteGroup(ctx: GatewayContext, tenantId: string, groupId: number): Promise<boolean> {
  return ctx.db.withTenant(tenantId, (sql) => deleteGroupIn(sql, tenantId, groupId));
}
