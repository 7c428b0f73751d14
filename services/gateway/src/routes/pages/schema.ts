import { z } from 'zod';

export const pingView = z.object({ status: z.string(), service: z.string(), tenant_id: z.string(), role: z.string() });
export type PingView = z.infer<typeof pingView>;
