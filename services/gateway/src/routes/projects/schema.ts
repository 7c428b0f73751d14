import { z } from 'zod';

/** Spec 1 requires `name`; the optional fields are ours (spec: "optional project-creation fields: not shown"). */
export const createProjectBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    slug: z.string().regex(/^[a-z0-9][a-z0-9-]{0,59}$/).optional(),
    description: z.string().max(2000).optional(),
    icon: z.string().max(64).optional(),
  })
  .strict();

export interface ProjectView {
  project_id: string;
  name: string;
  slug: string;
  description: string;
  icon: string;
  workspace_id: string;
  created_at: string;
}
