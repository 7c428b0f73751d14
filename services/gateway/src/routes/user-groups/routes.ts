import { AppError, detailError, detailValidationError, type ResponseSpec } from '@lore/runtime';
import type { GroupInput } from '../../application/user-groups';
import { MANAGE, RATE_LIMITED_HEADERS, err, route, type ManageGuard } from '../../http/route';
import type { UserGroupRecord } from '../../store/user-groups';
import { createGroupBody, detailView, groupParams, manageQuery, presentGroup, updateGroupBody, userGroupListView, userGroupView, validationErrorView } from './schema';

export interface UserGroupRouteDeps {
  /** An administrator's credential, as `/api/manage` takes it; refusals as `{ detail }`. */
  manage: ManageGuard;
  groups: {
    list(tenantId: string): Promise<UserGroupRecord[]>;
    get(tenantId: string, groupId: number): Promise<UserGroupRecord | null>;
    create(tenantId: string, input: { name: string; user_ids?: string[] }): Promise<UserGroupRecord>;
    /** Null when the tenant has no such group. */
    update(tenantId: string, groupId: number, input: GroupInput): Promise<UserGroupRecord | null>;
    /** False when the tenant has no such group. */
    remove(tenantId: string, groupId: number): Promise<boolean>;
  };
}

const notFound = () => new AppError('NOT_FOUND', 'user group not found', { body: { detail: 'user group not found' } });

/** The application's refusals (a taken name, users of another tenant, a limit) in spec 2's `{ detail }`. */
async function detailed<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof AppError && e.body === undefined) throw detailError(e);
    throw e;
  }
}

const detail = (description: string): ResponseSpec => ({ description, schema: detailView });

/** What every user-group route may answer besides its success: spec 2's shapes, but for the 402 (the gateway's envelope, as on all of `/api/manage`). */
const ANSWERS: Record<number, ResponseSpec> = {
  401: detail('no valid credential'),
  402: err('the plan\'s monthly request quota is used up: the gateway\'s error envelope, as on every `/api/manage` path (`error.details.reason` is `plan_limit`)'),
  403: detail('not an administrator (a member\'s session, an OAuth token), or the key\'s scope or IP allowlist does not allow it'),
  404: detail('no such user group in the tenant (another tenant\'s is absent), or a workspace or memory of another tenant named in the query'),
  422: { description: 'invalid path, query or body (every issue listed)', schema: validationErrorView },
  429: { description: 'the credential\'s rate limit; see Retry-After and RateLimit-*', schema: detailView, headers: RATE_LIMITED_HEADERS },
};

const BODY_ANSWERS: Record<number, ResponseSpec> = {
  400: detail('a body that is not clean JSON; a user id that is not a user of the tenant; a user already in the most groups one may belong to; the tenant\'s most groups'),
  409: detail('the name is taken in the tenant (names compare without case)'),
  413: detail('body larger than the limit'),
  415: detail('body is not JSON'),
};

/**
 * User groups for tenant administrators (docs/gateway.md, "User groups"), at spec 2's `/api/manage/admin/...` like
 * the connector routes whose `groups` they fill. The gateway serves them itself, because it owns users: these paths
 * never reach core. Errors are spec 2's (`detail`, and 422 with every issue).
 */
export function userGroupRoutes(deps: UserGroupRouteDeps) {
  const read = deps.manage('read');
  const write = deps.manage('write');
  const tenantOf = (principal: { tenantId: string } | undefined) => principal!.tenantId;
  return [
    route({
      method: 'get', path: '/api/manage/admin/user-group', operationId: 'listUserGroups', summary: 'The tenant\'s user groups, oldest first, with their members',
      security: MANAGE, guards: [read], query: manageQuery, invalid: detailValidationError,
      ok: { status: 200, description: 'every user group of the tenant', schema: userGroupListView },
      responses: ANSWERS,
      handler: async (ctx) => (await deps.groups.list(tenantOf(ctx.state.principal))).map(presentGroup),
    }),
    route({
      method: 'post', path: '/api/manage/admin/user-group', operationId: 'createUserGroup', summary: 'Create a user group with its members',
      security: MANAGE, guards: [write], query: manageQuery, body: createGroupBody, invalid: detailValidationError, unreadable: (e) => detailError(e),
      ok: { status: 201, description: 'the group; its `id` is what a connector\'s, credential\'s or cc pair\'s `groups` names', schema: userGroupView },
      responses: { ...ANSWERS, ...BODY_ANSWERS },
      handler: async (ctx, { body }) => presentGroup(await detailed(() => deps.groups.create(tenantOf(ctx.state.principal), body))),
    }),
    route({
      method: 'get', path: '/api/manage/admin/user-group/:group_id', operationId: 'getUserGroup', summary: 'One user group with its members',
      security: MANAGE, guards: [read], params: groupParams, query: manageQuery, invalid: detailValidationError,
      ok: { status: 200, description: 'the group', schema: userGroupView },
      responses: ANSWERS,
      handler: async (ctx, { params }) => {
        const group = await deps.groups.get(tenantOf(ctx.state.principal), params.group_id);
        if (!group) throw notFound();
        return presentGroup(group);
      },
    }),
    route({
      method: 'patch', path: '/api/manage/admin/user-group/:group_id', operationId: 'updateUserGroup', summary: 'Rename a user group or replace its members',
      security: MANAGE, guards: [write], params: groupParams, query: manageQuery, body: updateGroupBody, invalid: detailValidationError, unreadable: (e) => detailError(e),
      ok: { status: 200, description: 'the group as changed; a member removed loses its documents from their next request', schema: userGroupView },
      responses: { ...ANSWERS, ...BODY_ANSWERS },
      handler: async (ctx, { params, body }) => {
        const group = await detailed(() => deps.groups.update(tenantOf(ctx.state.principal), params.group_id, body));
        if (!group) throw notFound();
        return presentGroup(group);
      },
    }),
    route({
      method: 'delete', path: '/api/manage/admin/user-group/:group_id', operationId: 'deleteUserGroup', summary: 'Delete a user group and its memberships',
      security: MANAGE, guards: [write], params: groupParams, query: manageQuery, invalid: detailValidationError,
      ok: { status: 204, description: 'deleted; pairs naming its id keep it, and it grants nobody anything' },
      responses: ANSWERS,
      handler: async (ctx, { params }) => {
        if (!(await deps.groups.remove(tenantOf(ctx.state.principal), params.group_id))) throw notFound();
        ctx.status = 204;
      },
    }),
  ];
}
