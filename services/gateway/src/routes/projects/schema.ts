import { z } from 'zod';
import type { Project } from '../../store/projects';

/** Spec 1 requires `name`; the optional fields are ours (spec: "optional project-creation fields: not shown"). */
export const createProjectBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    slug: z.string().regex(/^[a-z0-9][a-z0-9-]{0,59}$/).optional(),
    description: z.string().max(2000).optional(),
    icon: z.string().max(64).optional(),
  })
  .strict();

/** The credential pipeline reads it (docs/gateway.md: which workspace a request acts in); declared to be documented. */
export const workspaceQuery = z.object({ workspace_id: z.string().optional().describe('act in this workspace of the tenant') });

export const projectParams = z.object({ project_id: z.string() });

export const projectView = z.object({
  project_id: z.string(),
  name: z.string(),
  slug: z.string(),
  description: z.string(),
  icon: z.string(),
  workspace_id: z.string(),
  created_at: z.string(),
});
export type ProjectView = z.input<typeof projectView>;

export const projectListView = z.object({ projects: z.array(projectView), count: z.number().int() });
export type ProjectListView = z.input<typeof projectListView>;

export function presentProject(p: Project): ProjectView {
  return { project_id: p.project_id, name: p.name, slug: p.slug, description: p.description, icon: p.icon, workspace_id: p.workspace_id, created_at: p.created_at };
}

export function presentProjectList(projects: Project[]): ProjectListView {
  return { projects: projects.map(presentProject), count: projects.length };
}
