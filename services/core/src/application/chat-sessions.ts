import { randomUUID } from 'node:crypto';
import type { Sql } from '@lore/runtime';
import { latestBranch } from '../domain/message-tree';
import { getPersona, personaName } from '../store/personas';
import {
  countLiveSessionsLocked,
  getSession,
  hardDeleteSession,
  insertSession,
  listSessions,
  sessionMessages,
  softDeleteAllSessions,
  softDeleteSession,
  updateSession,
  type ChatMessageRow,
  type ChatSessionRow,
  type SessionFilter,
  type SessionPatch,
} from '../store/chat-sessions';
import { insertRootMessage } from '../store/chat-messages';
import type { CoreDeps } from './context';
import { assertOwnProject } from './chat-projects';
import { coreError } from './errors';
import { seedTenant } from './personas';
import type { Principal } from './principal';

export interface SessionDetail {
  session: ChatSessionRow;
  personaName: string;
  /** The latest branch of the message tree, root first. */
  messages: ChatMessageRow[];
}

const notFound = () => coreError('NOT_FOUND', 'chat session not found');

/**
 * Live sessions one owner may have (a deleted one frees its place). The listing shows the newest 1,000; this bounds
 * what an owner keeps behind them, each with its messages.
 */
export const MAX_SESSIONS_PER_OWNER = 10_000;

/**
 * Inside a transaction that creates a session, before any row is locked: 409 once the owner has the most live
 * sessions it may have. The count is taken under a lock held to the commit, so concurrent creates stop at exactly the
 * cap; taking it first keeps every creating transaction's locks in one order.
 */
export async function assertRoomForSession(sql: Sql, p: Principal): Promise<void> {
  if ((await countLiveSessionsLocked(sql, p.tenantId, p.owner, MAX_SESSIONS_PER_OWNER)) >= MAX_SESSIONS_PER_OWNER) {
    throw coreError('CONFLICT', `you have ${MAX_SESSIONS_PER_OWNER.toLocaleString('en-US')} chat sessions, the most one may have: delete ones you no longer need first`);
  }
}

/** Spec 2: an unknown (or deleted) persona is 400 with `detail`; an owner with the most sessions it may have, 409. */
export async function createSession(deps: CoreDeps, p: Principal, input: { persona_id: number; description?: string | null; project_id?: number | null }): Promise<ChatSessionRow> {
  await seedTenant(deps, p.tenantId);
  return deps.db.withTenant(p.tenantId, async (sql) => {
    await assertRoomForSession(sql, p);
    // Locked for share: the persona cannot be deleted between this check and the insert.
    const persona = await getPersona(sql, p.tenantId, input.persona_id, true);
    if (!persona) throw coreError('BAD_REQUEST', `persona ${input.persona_id} does not exist`);
    const projectId = input.project_id ?? null;
    if (projectId !== null) await assertOwnProject(sql, p, projectId);
    const session = await insertSession(sql, p.tenantId, {
      session_id: randomUUID(),
      owner: p.owner,
      name: input.description ?? '',
      persona_id: persona.persona_id,
      project_id: projectId,
    });
    await insertRootMessage(sql, p.tenantId, session.session_id);
    return session;
  });
}

/** The caller's sessions; a `projectId` that is not one of the caller's projects is 404, as on every project route. */
export function sessionsOf(deps: CoreDeps, p: Principal, filter: Omit<SessionFilter, 'owner'>): Promise<ChatSessionRow[]> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    // Read, not locked: a listing changes nothing a delete could race.
    if (filter.projectId !== null) await assertOwnProject(sql, p, filter.projectId, false);
    return listSessions(sql, p.tenantId, { ...filter, owner: p.owner });
  });
}

/**
 * A session the principal may read: its own, or (with `is_shared`) one its owner shared publicly in the same
 * tenant. A deleted session only with `include_deleted`, and only its owner's. Anything else is 404.
 */
export async function sessionDetail(deps: CoreDeps, p: Principal, sessionId: string, opts: { isShared: boolean; includeDeleted: boolean }): Promise<SessionDetail> {
  const detail = await deps.db.withTenant(p.tenantId, async (sql) => {
    const session = await getSession(sql, p.tenantId, sessionId);
    if (!session) return null;
    const own = session.owner === p.owner;
    if (!own && !(opts.isShared && session.shared_status === 'public')) return null;
    if (session.deleted_at && !(own && opts.includeDeleted)) return null;
    const [messages, name] = [await sessionMessages(sql, p.tenantId, sessionId), await personaName(sql, p.tenantId, session.persona_id)];
    return { session, personaName: name ?? '', messages: latestBranch(messages) };
  });
  if (!detail) throw notFound();
  return detail;
}

/** Changes the principal's own live session; 404 for anyone else's. */
export async function changeSession(deps: CoreDeps, p: Principal, sessionId: string, patch: SessionPatch): Promise<ChatSessionRow> {
  const row = await deps.db.withTenant(p.tenantId, async (sql) => {
    const session = await getSession(sql, p.tenantId, sessionId, true);
    if (!session || session.owner !== p.owner || session.deleted_at) return null;
    if (patch.project_id !== undefined && patch.project_id !== null) await assertOwnProject(sql, p, patch.project_id);
    return updateSession(sql, p.tenantId, sessionId, patch);
  });
  if (!row) throw notFound();
  return row;
}

/** A plain delete keeps the session (retrievable with `include_deleted`); `hard` removes it with its messages. */
export async function deleteSession(deps: CoreDeps, p: Principal, sessionId: string, hard: boolean): Promise<void> {
  const found = await deps.db.withTenant(p.tenantId, async (sql) => {
    const session = await getSession(sql, p.tenantId, sessionId, true);
    if (!session || session.owner !== p.owner) return false;
    // Deleting an already soft-deleted session again is 404; hard-deleting it is how it is removed for good.
    if (session.deleted_at && !hard) return false;
    if (hard) await hardDeleteSession(sql, p.tenantId, sessionId);
    else await softDeleteSession(sql, p.tenantId, sessionId);
    return true;
  });
  if (!found) throw notFound();
}

export function deleteAllSessions(deps: CoreDeps, p: Principal): Promise<number> {
  return deps.db.withTenant(p.tenantId, (sql) => softDeleteAllSessions(sql, p.tenantId, p.owner));
}
