import type { Sql } from '@lore/runtime';
import { isoRequired } from './rows';
import type { User } from './users';

/** A group's member as listed with it. */
export interface GroupMember {
  user_id: string;
  email: string;
  role: User['role'];
}

export interface UserGroupRecord {
  id: number;
  tenant_id: string;
  name: string;
  /** Ordered by user id. */
  members: GroupMember[];
  time_created: string;
  time_updated: string;
}

/** Integer arrays arrive as arrays from pg and PGlite, as `{1,2}` text through a record. */
export function intArray(value: unknown): number[] {
  if (Array.isArray(value)) return value.map(Number);
  if (typeof value === 'string' && value.startsWith('{')) {
    const inner = value.slice(1, -1);
    return inner === '' ? [] : inner.split(',').map(Number);
  }
  return [];
}

const SELECT_GROUPS = `
  SELECT g.group_id, g.tenant_id, g.name, g.time_created, g.time_updated,
         coalesce((SELECT jsonb_agg(jsonb_build_object('user_id', u.user_id, 'email', u.email, 'role', u.role) ORDER BY u.user_id)
                     FROM gateway.user_group_members m JOIN gateway.users u ON u.tenant_id = m.tenant_id AND u.user_id = m.user_id
                    WHERE m.tenant_id = g.tenant_id AND m.group_id = g.group_id), '[]'::jsonb) AS members
    FROM gateway.user_groups g`;

function toGroup(r: Record<string, unknown>): UserGroupRecord {
  const members = (typeof r.members === 'string' ? JSON.parse(r.members) : r.members) as GroupMember[];
  return {
    id: Number(r.group_id),
    tenant_id: String(r.tenant_id),
    name: String(r.name),
    members,
    time_created: isoRequired(r.time_created),
    time_updated: isoRequired(r.time_updated),
  };
}

/** The tenant's groups, oldest first, with their members. */
export async function listGroupsIn(sql: Sql, tenantId: string, limit: number): Promise<UserGroupRecord[]> {
  const r = await sql.query(`${SELECT_GROUPS} WHERE g.tenant_id = $1 ORDER BY g.group_id LIMIT $2`, [tenantId, limit]);
  return r.rows.map(toGroup);
}

export async function getGroupIn(sql: Sql, tenantId: string, groupId: number): Promise<UserGroupRecord | null> {
  const r = await sql.query(`${SELECT_GROUPS} WHERE g.tenant_id = $1 AND g.group_id = $2`, [tenantId, groupId]);
  return r.rows[0] ? toGroup(r.rows[0]) : null;
}

/** Locks one group's row for a change of its name or members; false when the tenant has no such group. */
export async function lockGroupIn(sql: Sql, tenantId: string, groupId: number): Promise<boolean> {
  const r = await sql.query(`SELECT 1 FROM gateway.user_groups WHERE tenant_id = $1 AND group_id = $2 FOR UPDATE`, [tenantId, groupId]);
  return r.rowCount > 0;
}

export async function countGroupsIn(sql: Sql, tenantId: string): Promise<number> {
  const r = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM gateway.user_groups WHERE tenant_id = $1`, [tenantId]);
  return Number(r.rows[0]?.n ?? 0);
}

/** Throws the unique violation of `user_groups_name` when the name is taken (any case). */
export async function insertGroupIn(sql: Sql, tenantId: string, name: string): Promise<number> {
  const r = await sql.query<{ group_id: number }>(`INSERT INTO gateway.user_groups (tenant_id, name) VALUES ($1, $2) RETURNING group_id`, [tenantId, name]);
  return Number(r.rows[0]!.group_id);
}

export async function renameGroupIn(sql: Sql, tenantId: string, groupId: number, name: string): Promise<void> {
  await sql.query(`UPDATE gateway.user_groups SET name = $3, time_updated = now() WHERE tenant_id = $1 AND group_id = $2`, [tenantId, groupId, name]);
}

export async function touchGroupIn(sql: Sql, tenantId: string, groupId: number): Promise<void> {
  await sql.query(`UPDATE gateway.user_groups SET time_updated = now() WHERE tenant_id = $1 AND group_id = $2`, [tenantId, groupId]);
}

/** Deletes a group; its memberships go with it (foreign key). False when the tenant has no such group. */
export async function deleteGroupIn(sql: Sql, tenantId: string, groupId: number): Promise<boolean> {
  const r = await sql.query(`DELETE FROM gateway.user_groups WHERE tenant_id = $1 AND group_id = $2`, [tenantId, groupId]);
  return r.rowCount > 0;
}

/**
 * Locks the named users of the tenant (in user id order, so two changes naming the same users never deadlock) for
 * a change of their memberships, and answers those that exist.
 */
export async function lockUsersIn(sql: Sql, tenantId: string, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  // One primary-key look-up per named user, taken in id order (the sorted list drives the loop). `user_id =
  // ANY(...)` beside `tenant_id = $1` was planned as a read of all the tenant's users when the statistics did not
  // know the tenant (docs/gateway.md, "Planner statistics").
  const r = await sql.query<{ user_id: string }>(
    `SELECT u.user_id FROM (SELECT DISTINCT id FROM unnest($2::text[]) AS n(id) ORDER BY id) n
       CROSS JOIN LATERAL (SELECT user_id FROM gateway.users WHERE tenant_id = $1 AND user_id = n.id LIMIT 1) u
      ORDER BY u.user_id FOR NO KEY UPDATE OF u`,
    [tenantId, userIds],
  );
  return r.rows.map((x) => String(x.user_id));
}

/** Of the named users, those already in at least `limit` groups other than `exceptGroupId`. */
export async function usersAtGroupLimitIn(sql: Sql, tenantId: string, userIds: readonly string[], exceptGroupId: number | null, limit: number): Promise<string[]> {
  if (userIds.length === 0) return [];
  // Each named user's memberships counted through the (tenant_id, user_id, ...) index: `user_id = ANY(...)` was
  // planned as a read of all the tenant's memberships when the statistics did not know the tenant.
  const r = await sql.query<{ user_id: string }>(
    `SELECT n.id AS user_id FROM (SELECT DISTINCT id FROM unnest($2::text[]) AS n(id)) n
      WHERE (SELECT count(*) FROM gateway.user_group_members m
              WHERE m.tenant_id = $1 AND m.user_id = n.id AND ($3::integer IS NULL OR m.group_id <> $3)) >= greatest($4::integer, 1)
      ORDER BY n.id`,
    [tenantId, userIds, exceptGroupId, limit],
  );
  return r.rows.map((x) => String(x.user_id));
}

/** Makes the group's members exactly `userIds` (users of the tenant, checked by the caller). */
export async function setMembersIn(sql: Sql, tenantId: string, groupId: number, userIds: readonly string[]): Promise<void> {
  await sql.query(`DELETE FROM gateway.user_group_members WHERE tenant_id = $1 AND group_id = $2 AND NOT (user_id = ANY($3::text[]))`, [tenantId, groupId, userIds]);
  if (userIds.length === 0) return;
  await sql.query(
    `INSERT INTO gateway.user_group_members (tenant_id, group_id, user_id)
     SELECT $1, $2, u FROM unnest($3::text[]) AS u
     ON CONFLICT (tenant_id, group_id, user_id) DO NOTHING`,
    [tenantId, groupId, userIds],
  );
}
