import { detailValidationView } from '@lore/runtime';
import { z } from 'zod';
import { MAX_USERS_PER_REQUEST } from '../../application/user-groups';
import type { UserGroupRecord } from '../../store/user-groups';

/** Spec 2 accepts `tenant_id` on every route and ignores it: the tenant is always the credential's. */
export const manageQuery = z.object({ tenant_id: z.string().max(256).optional().describe('accepted and ignored: the tenant is the credential\'s') });

export const groupParams = z.object({
  group_id: z
    .string()
    .regex(/^\d{1,10}$/, 'must be an integer')
    .transform(Number)
    .refine((n) => n <= 2_147_483_647, 'must be a 32-bit integer'),
});

const groupName = z.string().trim().min(1, 'must not be empty').max(200);
const userIds = z
  .array(z.string().min(1).max(128))
  .max(MAX_USERS_PER_REQUEST)
  .describe('the members, exactly: user ids of the tenant (a repeated id counts once)');

export const createGroupBody = z.object({ name: groupName, user_ids: userIds.optional() }).strict();

export const updateGroupBody = z
  .object({ name: groupName.optional(), user_ids: userIds.optional().describe('replaces the members: exactly these users of the tenant') })
  .strict();

export const groupMemberView = z.object({ user_id: z.string(), email: z.string(), role: z.enum(['admin', 'member']) });

export const userGroupView = z.object({
  id: z.number().int().describe('the id connectors, credentials and cc pairs name in `groups`'),
  name: z.string(),
  user_ids: z.array(z.string()).describe('the members\' ids, ascending'),
  users: z.array(groupMemberView).describe('the members, in the order of user_ids'),
  time_created: z.string(),
  time_updated: z.string(),
});
export const userGroupListView = z.array(userGroupView);

/** Spec 2's error bodies: `detail` (string) and the 422 HTTPValidationError. */
export const detailView = z.object({ detail: z.string() });
export const validationErrorView = detailValidationView;

export function presentGroup(g: UserGroupRecord): z.input<typeof userGroupView> {
  return {
    id: g.id,
    name: g.name,
    user_ids: g.members.map((m) => m.user_id),
    users: g.members.map((m) => ({ user_id: m.user_id, email: m.email, role: m.role })),
    time_created: g.time_created,
    time_updated: g.time_updated,
  };
}
