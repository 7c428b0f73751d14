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

export const projectView = z.object({
  project_id: z.string(),
  name: z.string(),
  slug: z.string(),
  description: z.string(),
  icon: z.string(),
  workspace_id: z.string(),
  created_at: z.string(),
});
export type ProjectView = z.infer<typeof projectView>;

export const projectListView = z.object({ projects: z.array(projectView), count: z.number().int() });
