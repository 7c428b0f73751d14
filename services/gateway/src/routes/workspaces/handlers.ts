import { AppError, validate } from '@lore/runtime';
import type { GatewayContext, TenantContext } from '../../context';
import { requireApiKey } from '../../http/guards';
import { readJson } from '../../http/body';
import type { GatewayRouter } from '../../http/state';
import { activateWorkspace, createWorkspace, tenantContext } from '../../application/tenancy';
import type { Workspace } from '../../store/workspaces';
import { createWorkspaceBody, type WorkspaceListView, type WorkspaceView } from './schema';

function view(w: Workspace, tenant: TenantContext): WorkspaceView {
  return {
    workspace_id: w.workspace_id,
    name: w.name,
    slug: w.slug,
    is_default: tenant.tenant.default_workspace_id === w.workspace_id,
    primary_memory_id: w.primary_memory_id ?? '',
  };
}

/** A credential pinned to a workspace sees only that one; the others are invisible, not forbidden. */
function listView(tenant: TenantContext, pinned: string | null): WorkspaceListView {
  const all = [...tenant.workspaces.values()].filter((w) => pinned === null || w.workspace_id === pinned);
  return {
    workspaces: all.map((w) => view(w, tenant)),
    active_workspace_id: pinned ?? tenant.tenant.active_workspace_id ?? '',
    default_workspace_id: tenant.tenant.default_workspace_id ?? '',
  };
}

export function registerWorkspaceRoutes(router: GatewayRouter, context: GatewayContext): void {
  router.get('/api/v1/workspaces', requireApiKey(context, { module: 'workspaces', access: 'read', operation: 'list' }), async (ctx) => {
    const p = ctx.state.principal!;
    ctx.body = listView(p.tenant, p.pinnedWorkspaceId);
  });

  router.post('/api/v1/workspaces', requireApiKey(context, { module: 'workspaces', access: 'write', operation: 'create' }), async (ctx) => {
    const p = ctx.state.principal!;
    if (p.pinnedWorkspaceId !== null) throw AppError.forbidden('a credential bound to one workspace cannot create workspaces');
    const body = validate(createWorkspaceBody, await readJson(ctx.req, context.config.bodyLimitBytes));
    const ws = await createWorkspace(context, p.tenantId, body.name);
    const tenant = (await tenantContext(context, p.tenantId)) ?? p.tenant;
    ctx.status = 201;
    ctx.body = view(ws, tenant);
  });

  router.post('/api/v1/workspaces/:workspace_id/activate', requireApiKey(context, { module: 'workspaces', access: 'write', operation: 'activate' }), async (ctx) => {
    const p = ctx.state.principal!;
    const id = ctx.params.workspace_id!;
    if (p.pinnedWorkspaceId !== null) {
      if (p.pinnedWorkspaceId !== id) throw AppError.notFound('workspace');
      throw AppError.forbidden('a credential bound to one workspace cannot change the active workspace');
    }
    if (!(await activateWorkspace(context, p.tenantId, id))) throw AppError.notFound('workspace');
    ctx.body = listView((await tenantContext(context, p.tenantId)) ?? p.tenant, null);
  });
}
