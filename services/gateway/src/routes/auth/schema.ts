import { z } from 'zod';
import type { User } from '../../store/users';

export const loginBody = z.object({ email: z.string().trim().min(3).max(320), password: z.string().min(1).max(1024) }).strict();

export const loginView = z.object({
  token: z.string(),
  expiresIn: z.number().int(),
  user: z.object({ user_id: z.string(), tenant_id: z.string(), email: z.string(), role: z.enum(['admin', 'member']) }),
});
/** Spec 2: `token` and `expiresIn` (1296000 for the 15-day session). */
export const refreshView = z.object({ token: z.string(), expiresIn: z.number().int() });
/** Spec 2's refresh error object (400 MISSING_REFRESH_TOKEN is ours, in the same shape). */
export const refreshErrorView = z.object({ error: z.object({ code: z.enum(['MISSING_REFRESH_TOKEN', 'INVALID_REFRESH_TOKEN', 'INTERNAL']), message: z.string(), status: z.number().int() }) });

export function presentLogin(r: { token: string; expiresIn: number; user: User }): z.input<typeof loginView> {
  return { token: r.token, expiresIn: r.expiresIn, user: { user_id: r.user.user_id, tenant_id: r.user.tenant_id, email: r.user.email, role: r.user.role } };
}

export function presentRefresh(r: { token: string; expiresIn: number }): z.input<typeof refreshView> {
  return { token: r.token, expiresIn: r.expiresIn };
}
