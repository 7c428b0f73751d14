import { z } from 'zod';
import type { ChatProjectRow } from '../../store/chat-projects';
import { intParam, iso, tenantIdParam } from '../schema-parts';

/** A chat project (our design; spec 2 names `project_id` as an integer and the sessions listing's filter). */
export const projectView = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string(),
  session_count: z.number().int().describe('live sessions in the project'),
  time_created: z.string(),
  time_updated: z.string(),
});
export const projectListView = z.object({ projects: z.array(projectView) });

export function presentProject(p: ChatProjectRow): z.input<typeof projectView> {
  return { id: p.project_id, name: p.name, description: p.description, session_count: p.session_count, time_created: iso(p.time_created), time_updated: iso(p.time_updated) };
}

export const createProjectBody = z.strictObject({ name: z.string().trim().min(1).max(200), description: z.string().max(2_000).optional() });
export const updateProjectBody = createProjectBody.partial().refine((b) => b.name !== undefined || b.description !== undefined, 'name at least one of name, description');
export const projectParams = z.object({ project_id: intParam });
export const tenantQuery = z.object(tenantIdParam);
