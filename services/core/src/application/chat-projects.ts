import type { Sql } from '@lore/runtime';
import { countProjectsLocked, deleteProject, getProject, insertProject, listProjects, updateProject, type ChatProjectRow } from '../store/chat-projects';
import type { CoreDeps } from './context';
import { coreError } from './errors';
import type { Principal } from './principal';

const notFound = () => coreError('NOT_FOUND', 'chat project not found');

/**
 * Projects one owner may have. The listing answers them all, each with a count of its sessions, so it is bounded by
 * this and not by the owner; the listing also stops here (oldest first).
 */
export const MAX_PROJECTS_PER_OWNER = 500;

/** Counted under a lock in the inserting transaction, so concurrent creates stop at exactly the cap. */
export function createProject(deps: CoreDeps, p: Principal, input: { name: string; description?: string }): Promise<ChatProjectRow> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    if ((await countProjectsLocked(sql, p.tenantId, p.owner, MAX_PROJECTS_PER_OWNER)) >= MAX_PROJECTS_PER_OWNER) {
      throw coreError('CONFLICT', `you have ${MAX_PROJECTS_PER_OWNER} chat projects, the most one may have: delete one you no longer use first`);
    }
    return insertProject(sql, p.tenantId, p.owner, input.name, input.description ?? '');
  });
}

export function projectsOf(deps: CoreDeps, p: Principal): Promise<ChatProjectRow[]> {
  return deps.db.withTenant(p.tenantId, (sql) => listProjects(sql, p.tenantId, p.owner, MAX_PROJECTS_PER_OWNER));
}

export async function projectOf(deps: CoreDeps, p: Principal, id: number): Promise<ChatProjectRow> {
  const row = await deps.db.withTenant(p.tenantId, (sql) => getProject(sql, p.tenantId, p.owner, id));
  if (!row) throw notFound();
  return row;
}

export async function changeProject(deps: CoreDeps, p: Principal, id: number, patch: { name?: string; description?: string }): Promise<ChatProjectRow> {
  const row = await deps.db.withTenant(p.tenantId, (sql) => updateProject(sql, p.tenantId, p.owner, id, patch));
  if (!row) throw notFound();
  return row;
}

export async function removeProject(deps: CoreDeps, p: Principal, id: number): Promise<void> {
  const removed = await deps.db.withTenant(p.tenantId, (sql) => deleteProject(sql, p.tenantId, p.owner, id));
  if (!removed) throw notFound();
}

/**
 * Inside a session transaction: the project a session may be put in must be the caller's own (share-locked so it
 * cannot be deleted before the session row is written; `lock` false for a read that writes nothing). Another's, or
 * none, is 404 like any unknown id.
 */
export async function assertOwnProject(sql: Sql, p: Principal, id: number, lock = true): Promise<void> {
  if (!(await getProject(sql, p.tenantId, p.owner, id, lock))) throw notFound();
}
