import { z } from 'zod';
import { PASSWORD_MAX, PASSWORD_MIN } from '../../operations/identity';

/** Spec 2 names these ChangePasswordRequest, UserResetRequest and UserResetResponse without fields; ours: */
export const changePasswordBody = z.object({
  old_password: z.string().min(1).max(1024),
  new_password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX),
});

export const userResetBody = z.object({ user_email: z.string().trim().min(3).max(320) });

export interface UserResetResponse {
  user_id: string;
  user_email: string;
  new_password: string;
}
