import { z } from 'zod';

export const createWorkspaceBody = z.object({ name: z.string().trim().min(1).max(200) }).strict();

export interface WorkspaceView {
  workspace_id: string;
  name: string;
  slug: string;
  is_default: boolean;
  primary_memory_id: string;
}

export interface WorkspaceListView {
  workspaces: WorkspaceView[];
  active_workspace_id: string;
  default_workspace_id: string;
}
