import { z } from 'zod';
import { PASSWORD_MAX, PASSWORD_MIN } from '../../application/identity';

/** Spec 2 names these ChangePasswordRequest, UserResetRequest and UserResetResponse without fields; ours: */
export const changePasswordBody = z.object({
  old_password: z.string().min(1).max(1024),
  new_password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX),
});

export const userResetBody = z.object({ user_email: z.string().trim().min(3).max(320) });

export const userResetResponse = z.object({ user_id: z.string(), user_email: z.string(), new_password: z.string() });
export type UserResetResponse = z.infer<typeof userResetResponse>;

/** Spec 2's error bodies: `detail` (string) and the 422 HTTPValidationError. */
export const detailView = z.object({ detail: z.string() });
export const validationErrorView = z.object({ detail: z.array(z.object({ loc: z.array(z.string()), msg: z.string(), type: z.string() })) });
