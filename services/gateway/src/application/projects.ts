import { AppError } from '@lore/runtime';
import { newId } from '../domain/credentials';
import type { GatewayContext } from '../context';
import { planOf } from '../context';
import { getProject, insertProjectIn, listProjects, countProjectsIn, type Project } from '../store/projects';
import { lockTenantIn } from '../store/tenants';
import { slugify } from '../store/rows';
import { planLimitError } from './billing';

/** Who acts on projects: the tenant, the request's workspace and, for a key scoped to one project, that project. */
export interface ProjectActor {
  tenantId: string;
  workspaceId: string;
  projectId: string | null;
}

export interface CreateProjectInput {
  name: string;
  slug?: string;
  description?: string;
  icon?: string;
}

/** A listing is one page: spec 1 has no pagination for projects, and a workspace holds far fewer. */
const LIST_LIMIT = 1000;
/** A taken slug gets `-2`, `-3`... this many tries, then CONFLICT. */
const SLUG_ATTEMPTS = 5;
/** Longer ids are never issued: answered as absent without a lookup. */
const MAX_ID_LENGTH = 128;

export interface ProjectService {
  list(actor: ProjectActor): Promise<Project[]>;
  /** Null when the actor cannot see it (another tenant's, another workspace's, or outside a project-scoped key). */
  get(actor: ProjectActor, projectId: string): Promise<Project | null>;
  create(actor: ProjectActor, input: CreateProjectInput): Promise<Project>;
}

/** The projects of the actor's workspace; a project-scoped key sees only its own. */
export function listWorkspaceProjects(ctx: GatewayContext, actor: ProjectActor): Promise<Project[]> {
  return listProjects(ctx.db, actor.tenantId, actor.workspaceId, { onlyProjectId: actor.projectId, limit: LIST_LIMIT });
}

export async function getWorkspaceProject(ctx: GatewayContext, actor: ProjectActor, projectId: string): Promise<Project | null> {
  if (actor.projectId && actor.projectId !== projectId) return null;
  if (projectId.length > MAX_ID_LENGTH) return null;
  const project = await getProject(ctx.db, actor.tenantId, projectId);
  return project && project.workspace_id === actor.workspaceId ? project : null;
}

/**
 * Creates a project in the actor's workspace. The plan's `max_projects` is counted in the inserting transaction
 * after the tenant row is locked, so concurrent creates (on any replica) cannot both take the last place. The slug
 * defaults to the name's; a taken one gets a numeric suffix, under the same lock. A slug the caller names is theirs
 * as named: taken, it is a CONFLICT rather than another slug they did not ask for.
 */
export async function createProject(ctx: GatewayContext, actor: ProjectActor, input: CreateProjectInput): Promise<Project> {
  if (actor.projectId) throw AppError.forbidden('a key scoped to one project cannot create projects');
  const base = input.slug ?? slugify(input.name);
  const created = await ctx.db.withTenant(actor.tenantId, async (sql) => {
    const tenant = await lockTenantIn(sql, actor.tenantId);
    if (!tenant) throw AppError.notFound('tenant');
    const plan = planOf(ctx, tenant);
    if (plan.max_projects !== undefined && (await countProjectsIn(sql, actor.tenantId)) >= plan.max_projects) {
      throw planLimitError(`the ${tenant.plan} plan allows ${plan.max_projects} projects`, { limit: 'max_projects', value: plan.max_projects });
    }
    const projectId = newId('prj');
    const attempts = input.slug === undefined ? SLUG_ATTEMPTS : 1;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const project = await insertProjectIn(sql, actor.tenantId, {
        project_id: projectId,
        workspace_id: actor.workspaceId,
        name: input.name,
        slug: attempt === 0 ? base : `${base}-${attempt + 1}`,
        description: input.description ?? '',
        icon: input.icon ?? '',
      });
      if (project) return project;
    }
    return null;
  });
  if (!created) throw new AppError('CONFLICT', input.slug === undefined ? 'a project with this slug exists in the workspace' : `a project with the slug ${base} exists in the workspace`);
  return created;
}

/** The application module bound to one gateway, as the route module takes it. */
export function projectService(ctx: GatewayContext): ProjectService {
  return {
    list: (actor) => listWorkspaceProjects(ctx, actor),
    get: (actor, id) => getWorkspaceProject(ctx, actor, id),
    create: (actor, input) => createProject(ctx, actor, input),
  };
}
