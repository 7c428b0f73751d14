import { AppError, validate } from '@lore/runtime';
import { newId } from '../../domain/credentials';
import type { GatewayContext } from '../../context';
import { planOf } from '../../context';
import { requireApiKey } from '../../http/guards';
import { readJson } from '../../http/body';
import type { GatewayRouter } from '../../http/state';
import { planLimitError } from '../../application/billing';
import { countProjects, getProject, insertProject, listProjects, type Project } from '../../store/projects';
import { slugify } from '../../store/rows';
import { createProjectBody, type ProjectView } from './schema';

const LIST_LIMIT = 1000;

function view(p: Project): ProjectView {
  return { project_id: p.project_id, name: p.name, slug: p.slug, description: p.description, icon: p.icon, workspace_id: p.workspace_id, created_at: p.created_at };
}

export function registerProjectRoutes(router: GatewayRouter, context: GatewayContext): void {
  router.get('/api/v1/projects', requireApiKey(context, { module: 'projects', access: 'read', operation: 'list' }), async (ctx) => {
    const p = ctx.state.principal!;
    const projects = await listProjects(context.db, p.tenantId, p.workspaceId, { onlyProjectId: p.projectId, limit: LIST_LIMIT });
    ctx.body = { projects: projects.map(view), count: projects.length };
  });

  router.post('/api/v1/projects', requireApiKey(context, { module: 'projects', access: 'write', operation: 'create' }), async (ctx) => {
    const p = ctx.state.principal!;
    if (p.projectId) throw AppError.forbidden('a key scoped to one project cannot create projects');
    const body = validate(createProjectBody, await readJson(ctx.req, context.config.bodyLimitBytes));
    const plan = planOf(context, p.tenant.tenant);
    if (plan.max_projects !== undefined && (await countProjects(context.db, p.tenantId)) >= plan.max_projects) {
      throw planLimitError(`the ${p.tenant.tenant.plan} plan allows ${plan.max_projects} projects`, { limit: 'max_projects', value: plan.max_projects });
    }
    const created = await insertProject(context.db, p.tenantId, {
      project_id: newId('prj'),
      workspace_id: p.workspaceId,
      name: body.name,
      slug: body.slug ?? slugify(body.name),
      description: body.description ?? '',
      icon: body.icon ?? '',
    });
    if (created === 'slug_taken') throw new AppError('CONFLICT', 'a project with this slug exists in the workspace');
    ctx.status = 201;
    ctx.body = view(created);
  });

  router.get('/api/v1/projects/:project_id', requireApiKey(context, { module: 'projects', access: 'read', operation: 'get' }), async (ctx) => {
    const p = ctx.state.principal!;
    const id = ctx.params.project_id!;
    // Another tenant's, another workspace's, or (for a project-scoped key) another project: all simply absent.
    if (p.projectId && p.projectId !== id) throw AppError.notFound('project');
    const project = id.length <= 128 ? await getProject(context.db, p.tenantId, id) : null;
    if (!project || project.workspace_id !== p.workspaceId) throw AppError.notFound('project');
    ctx.body = view(project);
  });
}
