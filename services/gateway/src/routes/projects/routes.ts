import { AppError } from '@lore/runtime';
import type { ProjectService } from '../../application/projects';
import { KEY, err, route, type KeyGuard } from '../../http/route';
import { createProjectBody, presentProject, presentProjectList, projectListView, projectParams, projectView, workspaceQuery } from './schema';

export interface ProjectRouteDeps {
  guard: KeyGuard;
  projects: ProjectService;
}

export function projectRoutes(deps: ProjectRouteDeps) {
  return [
    route({
      method: 'get', path: '/api/v1/projects', operationId: 'listProjects', summary: 'Projects of the request\'s workspace',
      security: KEY, guards: [deps.guard({ module: 'projects', access: 'read', operation: 'list' })],
      query: workspaceQuery,
      ok: { status: 200, description: 'project list wrapper', schema: projectListView },
      handler: async (ctx) => presentProjectList(await deps.projects.list(ctx.state.principal!)),
    }),
    route({
      method: 'post', path: '/api/v1/projects', operationId: 'createProject', summary: 'Create a project',
      security: KEY, guards: [deps.guard({ module: 'projects', access: 'write', operation: 'create' })],
      query: workspaceQuery,
      body: createProjectBody,
      ok: { status: 201, description: 'the project', schema: projectView },
      responses: { 409: err('the slug named is taken in the workspace (a slug derived from the name gets a numeric suffix instead, up to five)') },
      handler: async (ctx, { body }) => presentProject(await deps.projects.create(ctx.state.principal!, body)),
    }),
    route({
      method: 'get', path: '/api/v1/projects/:project_id', operationId: 'getProject', summary: 'One project',
      security: KEY, guards: [deps.guard({ module: 'projects', access: 'read', operation: 'get' })],
      params: projectParams,
      query: workspaceQuery,
      ok: { status: 200, description: 'the project', schema: projectView },
      handler: async (ctx, { params }) => {
        // Another tenant's, another workspace's, or (for a project-scoped key) another project: all simply absent.
        const project = await deps.projects.get(ctx.state.principal!, params.project_id);
        if (!project) throw AppError.notFound('project');
        return presentProject(project);
      },
    }),
  ];
}
