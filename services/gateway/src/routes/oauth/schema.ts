import { z } from 'zod';

export const createClientBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    scopes: z.array(z.string().max(64)).min(1).max(64),
    workspace_id: z.string().min(1).max(128).nullish(),
    project_id: z.string().min(1).max(128).nullish(),
    ip_allowlist: z.array(z.string().max(64)).max(100).optional(),
  })
  .strict();
