import { z } from 'zod';

export const createWorkspaceBody = z.object({ name: z.string().trim().min(1).max(200) }).strict();

export const workspaceView = z.object({
  workspace_id: z.string(),
  name: z.string(),
  slug: z.string(),
  is_default: z.boolean(),
  primary_memory_id: z.string(),
});
export type WorkspaceView = z.infer<typeof workspaceView>;

export const workspaceListView = z.object({
  workspaces: z.array(workspaceView),
  active_workspace_id: z.string(),
  default_workspace_id: z.string(),
});
export type WorkspaceListView = z.infer<typeof workspaceListView>;
