import type Koa from 'koa';
import type { z } from 'zod';
import { AppError } from '@lore/runtime';
import type { GatewayContext } from '../../context';
import { parseJsonText, readRawBody } from '../../http/body';
import { admitSession } from '../../http/guards';
import type { GatewayKoaContext, GatewayRouter } from '../../http/state';
import { resolveSession, changePassword, resetPassword } from '../../application/identity';
import type { User } from '../../store/users';
import { changePasswordBody, userResetBody, type UserResetResponse } from './schema';

/** Spec 2's validation failure: 422 `{ detail: [{ loc, msg, type }] }`. */
function validate422<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const detail = r.error.issues.map((i) => ({ loc: ['body', ...i.path.map(String)], msg: i.message, type: i.code }));
  throw new AppError('UNPROCESSABLE', 'request body is invalid', { body: { detail } });
}

async function body422(ctx: GatewayKoaContext, limit: number): Promise<unknown> {
  const text = await readRawBody(ctx.req, limit);
  try {
    return text.trim() === '' ? {} : parseJsonText(text);
  } catch {
    throw new AppError('UNPROCESSABLE', 'request body is not JSON', { body: { detail: [{ loc: ['body'], msg: 'invalid JSON', type: 'json_invalid' }] } });
  }
}

const notSignedIn = () => new AppError('UNAUTHORIZED', 'not signed in', { body: { detail: 'a valid session token is required' } });

/** Spec 2's routes take a session bearer token, rate-limited per user like every portal route; errors use its `detail` shape. */
function session(context: GatewayContext) {
  return async (ctx: GatewayKoaContext, next: Koa.Next) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
    const user = m ? await resolveSession(context, m[1]!) : null;
    if (!user) throw notSignedIn();
    const headers = await admitSession(context, user, (h) => new AppError('RATE_LIMITED', 'too many requests', { headers: h, body: { detail: 'too many requests; retry later' } }));
    if (!headers) throw notSignedIn();
    ctx.set(headers);
    ctx.state.user = user;
    await next();
  };
}

export function registerPasswordRoutes(router: GatewayRouter, context: GatewayContext): void {
  // `tenant_id` in the query is accepted and ignored: the tenant always comes from the session.
  router.post('/api/password/change-password', session(context), async (ctx) => {
    const body = validate422(changePasswordBody, await body422(ctx, 16 * 1024));
    const outcome = await changePassword(context, ctx.state.user!, body.old_password, body.new_password);
    if (outcome === 'wrong_password') throw new AppError('BAD_REQUEST', 'wrong password', { body: { detail: 'the current password is wrong' } });
    ctx.body = {};
  });

  router.post('/api/password/reset_password', session(context), async (ctx) => {
    const user: User = ctx.state.user!;
    if (user.role !== 'admin') throw new AppError('FORBIDDEN', 'administrators only', { body: { detail: 'administrators only' } });
    const body = validate422(userResetBody, await body422(ctx, 16 * 1024));
    const r = await resetPassword(context, user.tenant_id, body.user_email);
    if (!r) throw new AppError('NOT_FOUND', 'no such user', { body: { detail: 'user not found' } });
    ctx.set('cache-control', 'no-store');
    const response: UserResetResponse = { user_id: r.user.user_id, user_email: r.user.email, new_password: r.password };
    ctx.body = response;
  });
}
