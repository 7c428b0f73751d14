import { z } from 'zod';

export const loginBody = z.object({ email: z.string().trim().min(3).max(320), password: z.string().min(1).max(1024) }).strict();
