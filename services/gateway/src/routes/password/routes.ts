import { z } from 'zod';
import { AppError, detailError, detailValidationError } from '@lore/runtime';
import { SESSION, route, RATE_LIMITED_HEADERS, type Guard } from '../../http/route';
import type { User } from '../../store/users';
import { changedView, changePasswordBody, detailView, presentReset, userResetBody, userResetResponse, validationErrorView } from './schema';

/** Two passwords or an e-mail address: the limit is small. */
const PASSWORD_BODY_LIMIT = 16 * 1024;

export interface PasswordRouteDeps {
  /** Spec 2's session check: a session bearer token, per-user rate limit, errors as `{ detail }`. */
  session: Guard;
  passwords: {
    change(user: User, oldPassword: string, newPassword: string): Promise<'ok' | 'wrong_password' | 'same_password'>;
    /** Null when the tenant has no user with that address. */
    reset(tenantId: string, email: string): Promise<{ user: User; password: string } | null>;
  };
}

/** Spec 2's validation failure: 422 `{ detail: [{ loc, msg, type }] }`. */
const invalid422 = detailValidationError;

/** The body reader's refusals (400 for bytes that are not clean JSON, 413, 415) keep their status, in spec 2's `detail`. */
const unreadable = (e: AppError) => detailError(e);

const detailErrors = {
  400: { description: 'wrong current password, or a body that is not clean JSON', schema: detailView },
  401: { description: 'not signed in', schema: detailView },
  413: { description: 'body larger than the limit', schema: detailView },
  415: { description: 'body is not JSON', schema: detailView },
  422: { description: 'invalid body', schema: validationErrorView },
  429: { description: 'per-user rate limit; see Retry-After and RateLimit-* headers', schema: detailView, headers: RATE_LIMITED_HEADERS },
};

/** `tenant_id` in the query (spec 2) is accepted and ignored: the tenant always comes from the session. */
const tenantQuery = z.object({ tenant_id: z.string().max(256).optional().describe('accepted and ignored: the tenant is the session\'s') });

export function passwordRoutes(deps: PasswordRouteDeps) {
  return [
    route({
      method: 'post', path: '/api/password/change-password', operationId: 'changePassword', summary: 'Change one\'s own password (spec 2)',
      security: SESSION, guards: [deps.session],
      query: tenantQuery, body: changePasswordBody, bodyLimitBytes: PASSWORD_BODY_LIMIT, invalid: invalid422, unreadable,
      ok: { status: 200, description: 'changed; every session of the account ends', schema: changedView },
      responses: detailErrors,
      handler: async (ctx, { body }) => {
        const outcome = await deps.passwords.change(ctx.state.user!, body.old_password, body.new_password);
        if (outcome === 'wrong_password') throw new AppError('BAD_REQUEST', 'wrong password', { body: { detail: 'the current password is wrong' } });
        // The right current password given again as the new one: refused like any invalid field, sessions kept.
        if (outcome === 'same_password') throw detailValidationError([{ path: 'new_password', message: 'the new password must differ from the current one' }], 'body');
        return {};
      },
    }),
    route({
      method: 'post', path: '/api/password/reset_password', operationId: 'resetPassword', summary: 'Reset a user\'s password (administrators, spec 2)',
      security: SESSION, guards: [deps.session],
      query: tenantQuery, body: userResetBody, bodyLimitBytes: PASSWORD_BODY_LIMIT, invalid: invalid422, unreadable,
      ok: { status: 200, description: 'a temporary password, shown once', schema: userResetResponse },
      responses: { ...detailErrors, 403: { description: 'administrators only', schema: detailView }, 404: { description: 'no such user in the tenant', schema: detailView } },
      handler: async (ctx, { body }) => {
        const user = ctx.state.user!;
        if (user.role !== 'admin') throw new AppError('FORBIDDEN', 'administrators only', { body: { detail: 'administrators only' } });
        const r = await deps.passwords.reset(user.tenant_id, body.user_email);
        if (!r) throw new AppError('NOT_FOUND', 'no such user', { body: { detail: 'user not found' } });
        ctx.set('cache-control', 'no-store');
        return presentReset(r);
      },
    }),
  ];
}
