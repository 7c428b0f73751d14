import { detailValidationView } from '@lore/runtime';
import { z } from 'zod';
import { PASSWORD_MAX, PASSWORD_MIN } from '../../application/identity';
import type { User } from '../../store/users';

/** Spec 2 names these ChangePasswordRequest, UserResetRequest and UserResetResponse without fields; ours: */
export const changePasswordBody = z.object({
  old_password: z.string().min(1).max(1024),
  new_password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX),
});

export const userResetBody = z.object({ user_email: z.string().trim().min(3).max(320) });

export const userResetResponse = z.object({ user_id: z.string(), user_email: z.string(), new_password: z.string() });
export type UserResetResponse = z.input<typeof userResetResponse>;

/** Spec 2: 200 with an empty schema. */
export const changedView = z.object({});

/** Spec 2's error bodies: `detail` (string) and the 422 HTTPValidationError. */
export const detailView = z.object({ detail: z.string() });
export const validationErrorView = detailValidationView;

export function presentReset(r: { user: User; password: string }): UserResetResponse {
  return { user_id: r.user.user_id, user_email: r.user.email, new_password: r.password };
}
