import { z } from 'zod';
import type { TenantContext } from '../../context';
import type { Workspace } from '../../store/workspaces';

export const createWorkspaceBody = z.object({ name: z.string().trim().min(1).max(200) }).strict();

export const workspaceView = z.object({
  workspace_id: z.string(),
  name: z.string(),
  slug: z.string(),
  is_default: z.boolean(),
  primary_memory_id: z.string(),
});
export type WorkspaceView = z.input<typeof workspaceView>;

export const workspaceListView = z.object({
  workspaces: z.array(workspaceView),
  active_workspace_id: z.string(),
  default_workspace_id: z.string(),
});
export type WorkspaceListView = z.input<typeof workspaceListView>;

export function presentWorkspace(w: Workspace, tenant: TenantContext): WorkspaceView {
  return {
    workspace_id: w.workspace_id,
    name: w.name,
    slug: w.slug,
    is_default: tenant.tenant.default_workspace_id === w.workspace_id,
    primary_memory_id: w.primary_memory_id ?? '',
  };
}

/** A credential pinned to a workspace sees only that one; the others are invisible, not forbidden. */
/**
 * The tenant's workspaces, or only those of `within`; `active` stands for the tenant's active workspace when the
 * caller is bound elsewhere (its pin, or the workspace its request acts in).
 */
export function presentWorkspaceList(tenant: TenantContext, within: ReadonlySet<string> | null, active: string | null): WorkspaceListView {
  const all = [...tenant.workspaces.values()].filter((w) => within === null || within.has(w.workspace_id));
  return {
    workspaces: all.map((w) => presentWorkspace(w, tenant)),
    active_workspace_id: active ?? tenant.tenant.active_workspace_id ?? '',
    default_workspace_id: tenant.tenant.default_workspace_id ?? '',
  };
}
