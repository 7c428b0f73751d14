import { AppError } from '@lore/runtime';
import { z } from 'zod';
import type { Principal } from '../../auth/authenticate';
import type { TenantContext } from '../../context';
import type { Workspace } from '../../store/workspaces';
import { KEY, err, route, type KeyGuard } from '../../http/route';
import { createWorkspaceBody, presentWorkspace, presentWorkspaceList, workspaceListView, workspaceView } from './schema';

export interface WorkspaceRouteDeps {
  guard: KeyGuard;
  workspaces: {
    create(tenantId: string, name: string): Promise<Workspace>;
    /** False when the tenant has no such workspace. */
    activate(tenantId: string, workspaceId: string): Promise<boolean>;
    /** The tenant with its workspaces, freshly read. */
    tenant(tenantId: string): Promise<TenantContext | null>;
    /** The workspace a live memory of the tenant is in, or null. */
    memoryWorkspace(tenantId: string, memoryId: string): Promise<string | null>;
  };
}

/**
 * A key narrowed to some memories acts on those memories only: creating a workspace (a new memory) or switching the
 * tenant's active one (the memory every unscoped credential then uses by default) reaches beyond them.
 */
function refuseMemoryScoped(p: Principal, what: string): void {
  if (p.keyScope?.memories && p.keyScope.memories.length > 0) throw AppError.forbidden(`a key scoped to some memories cannot ${what}`);
}

export function workspaceRoutes(deps: WorkspaceRouteDeps) {
  return [
    route({
      method: 'get', path: '/api/v1/workspaces', operationId: 'listWorkspaces', summary: 'The tenant\'s workspaces, active and default',
      security: KEY, guards: [deps.guard({ module: 'workspaces', access: 'read', operation: 'list' })],
      ok: { status: 200, description: 'workspace list wrapper', schema: workspaceListView },
      handler: async (ctx) => {
        const p = ctx.state.principal!;
        if (p.pinnedWorkspaceId !== null) return presentWorkspaceList(p.tenant, new Set([p.pinnedWorkspaceId]), p.pinnedWorkspaceId);
        // A key scoped to some memories sees the workspaces those memories are in, and no other's name or memory.
        const scoped = p.keyScope?.memories ?? [];
        if (scoped.length === 0) return presentWorkspaceList(p.tenant, null, null);
        const within = new Set((await Promise.all(scoped.map((m) => deps.workspaces.memoryWorkspace(p.tenantId, m)))).filter((w): w is string => w !== null));
        return presentWorkspaceList(p.tenant, within, within.has(p.tenant.tenant.active_workspace_id ?? '') ? null : p.workspaceId);
      },
    }),
    route({
      method: 'post', path: '/api/v1/workspaces', operationId: 'createWorkspace', summary: 'Create a workspace with its own primary memory',
      security: KEY, guards: [deps.guard({ module: 'workspaces', access: 'write', operation: 'create' })],
      body: createWorkspaceBody,
      ok: { status: 201, description: 'the new workspace', schema: workspaceView },
      responses: { 409: err('the tenant has 100 workspaces, the most it may have') },
      handler: async (ctx, { body }) => {
        const p = ctx.state.principal!;
        if (p.pinnedWorkspaceId !== null) throw AppError.forbidden('a credential bound to one workspace cannot create workspaces');
        refuseMemoryScoped(p, 'create workspaces');
        const ws = await deps.workspaces.create(p.tenantId, body.name);
        return presentWorkspace(ws, (await deps.workspaces.tenant(p.tenantId)) ?? p.tenant);
      },
    }),
    route({
      method: 'post', path: '/api/v1/workspaces/:workspace_id/activate', operationId: 'activateWorkspace', summary: 'Make a workspace the tenant\'s active one',
      security: KEY, guards: [deps.guard({ module: 'workspaces', access: 'write', operation: 'activate' })],
      params: z.object({ workspace_id: z.string() }),
      ok: { status: 200, description: 'workspace list wrapper', schema: workspaceListView },
      handler: async (ctx, { params }) => {
        const p = ctx.state.principal!;
        const id = params.workspace_id;
        if (p.pinnedWorkspaceId !== null) {
          if (p.pinnedWorkspaceId !== id) throw AppError.notFound('workspace');
          throw AppError.forbidden('a credential bound to one workspace cannot change the active workspace');
        }
        refuseMemoryScoped(p, 'change the active workspace');
        if (!(await deps.workspaces.activate(p.tenantId, id))) throw AppError.notFound('workspace');
        return presentWorkspaceList((await deps.workspaces.tenant(p.tenantId)) ?? p.tenant, null, null);
      },
    }),
  ];
}
