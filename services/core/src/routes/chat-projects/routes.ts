import type { z } from 'zod';
import type { Principal } from '../../application/principal';
import type { ChatProjectRow } from '../../store/chat-projects';
import { CORE_PREFIX, CORE_SECURITY, SPEC_INPUT, detail, route, type CoreGuard } from '../route';
import { createProjectBody, presentProject, projectListView, projectParams, projectView, tenantQuery, updateProjectBody } from './schema';

export interface ChatProjectRouteDeps {
  guard: CoreGuard;
  projects: {
    create(p: Principal, input: z.output<typeof createProjectBody>): Promise<ChatProjectRow>;
    list(p: Principal): Promise<ChatProjectRow[]>;
    get(p: Principal, id: number): Promise<ChatProjectRow>;
    change(p: Principal, id: number, patch: z.output<typeof updateProjectBody>): Promise<ChatProjectRow>;
    remove(p: Principal, id: number): Promise<void>;
  };
}

const NOT_FOUND = { 404: detail('no such project of the caller') };
const READ_ONLY = { 403: detail('the key is read-only') };

/** Chat projects: a caller's own folders of sessions (`project_id` in the sessions listing, create and PATCH). */
export function chatProjectRoutes(deps: ChatProjectRouteDeps) {
  const tags = ['chat projects'];
  const base = `${CORE_PREFIX}/chat/projects`;
  const one = `${base}/:project_id`;
  const write = [deps.guard('write')];
  return [
    route({
      method: 'get', path: base, operationId: 'listChatProjects', summary: 'List the caller\'s chat projects', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the projects, oldest first (at most 500, the most one may have)', schema: projectListView },
      handler: async (ctx) => ({ projects: (await deps.projects.list(ctx.state.principal)).map(presentProject) }),
    }),
    route({
      method: 'post', path: base, operationId: 'createChatProject', summary: 'Create a chat project', tags,
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: createProjectBody, ...SPEC_INPUT,
      ok: { status: 201, description: 'the project', schema: projectView },
      responses: { ...READ_ONLY, 409: detail('the caller has 500 chat projects, the most one may have') },
      handler: async (ctx, { body }) => presentProject(await deps.projects.create(ctx.state.principal, body)),
    }),
    route({
      method: 'get', path: one, operationId: 'getChatProject', summary: 'Get a chat project', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], params: projectParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the project', schema: projectView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => presentProject(await deps.projects.get(ctx.state.principal, params.project_id)),
    }),
    route({
      method: 'patch', path: one, operationId: 'updateChatProject', summary: 'Rename or describe a chat project', tags,
      security: CORE_SECURITY, guards: write, params: projectParams, query: tenantQuery, body: updateProjectBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the project as changed', schema: projectView },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { params, body }) => presentProject(await deps.projects.change(ctx.state.principal, params.project_id, body)),
    }),
    route({
      method: 'delete', path: one, operationId: 'deleteChatProject', summary: 'Delete a chat project (its sessions stay, outside any project)', tags,
      security: CORE_SECURITY, guards: write, params: projectParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 204, description: 'deleted' },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { params }) => {
        await deps.projects.remove(ctx.state.principal, params.project_id);
        ctx.status = 204;
      },
    }),
  ];
}
