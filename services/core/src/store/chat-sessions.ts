import type { Sql } from '@lore/runtime';
import { countUpTo, lockCount } from './caps';
import { asReal } from './personas';

export interface ChatSessionRow {
  tenant_id: string;
  session_id: string;
  owner: string;
  name: string;
  persona_id: number;
  project_id: number | null;
  shared_status: 'private' | 'public';
  current_alternate_model: string | null;
  current_temperature_override: number | null;
  time_created: Date;
  time_updated: Date;
  deleted_at: Date | null;
}

export interface ChatMessageRow {
  message_id: string;
  session_id: string;
  parent_message_id: string | null;
  latest_child_message_id: string | null;
  message_type: 'system' | 'user' | 'assistant';
  message: string;
  token_count: number;
  rephrased_query: string | null;
  citations: Record<string, string>;
  documents: unknown[];
  tool_calls: unknown[];
  error: string | null;
  time_sent: Date;
}

const COLS =
  'tenant_id, session_id, owner, name, persona_id, project_id, shared_status, current_alternate_model, current_temperature_override, time_created, time_updated, deleted_at';

export async function insertSession(
  sql: Sql,
  tenantId: string,
  s: { session_id: string; owner: string; name: string; persona_id: number; project_id: number | null },
): Promise<ChatSessionRow> {
  const r = await sql.query<ChatSessionRow>(
    `INSERT INTO core.chat_sessions (tenant_id, session_id, owner, name, persona_id, project_id) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLS}`,
    [tenantId, s.session_id, s.owner, s.name, s.persona_id, s.project_id],
  );
  return r.rows[0]!;
}

/**
 * The owner's live sessions (counted up to `limit`), after taking the lock every session create of that owner takes:
 * a deleted one (hidden or removed) is not counted.
 */
export async function countLiveSessionsLocked(sql: Sql, tenantId: string, owner: string, limit: number): Promise<number> {
  await lockCount(sql, 'core.chat_sessions', `${tenantId}/${owner}`);
  return countUpTo(sql, 'FROM core.chat_sessions WHERE tenant_id = $1 AND owner = $2 AND deleted_at IS NULL', [tenantId, owner], limit);
}

export interface SessionFilter {
  owner: string;
  /** A project's sessions only; null: see `onlyNonProject`. */
  projectId: number | null;
  onlyNonProject: boolean;
  includeFailed: boolean;
}

/**
 * The owner's live sessions, newest first. A failed chat is one whose answers all failed: it has answers, none
 * without an error, and no question of it is being answered now. A session without questions, one whose question is
 * still being answered (its answer is on its way), and one whose questions were never answered (a seeded session,
 * answered when asked to) are not failed.
 */
export async function listSessions(sql: Sql, tenantId: string, f: SessionFilter): Promise<ChatSessionRow[]> {
  const where = ['s.tenant_id = $1', 's.owner = $2', 's.deleted_at IS NULL'];
  const params: unknown[] = [tenantId, f.owner];
  if (f.projectId !== null) {
    params.push(f.projectId);
    where.push(`s.project_id = $${params.length}`);
  } else if (f.onlyNonProject) {
    where.push('s.project_id IS NULL');
  }
  if (!f.includeFailed) {
    where.push(`(NOT EXISTS (SELECT 1 FROM core.chat_messages m WHERE m.tenant_id = s.tenant_id AND m.session_id = s.session_id AND m.message_type = 'assistant')
      OR EXISTS (SELECT 1 FROM core.chat_messages m WHERE m.tenant_id = s.tenant_id AND m.session_id = s.session_id AND m.message_type = 'assistant' AND m.error IS NULL)
      OR EXISTS (SELECT 1 FROM core.chat_messages m WHERE m.tenant_id = s.tenant_id AND m.session_id = s.session_id AND m.message_type = 'user' AND m.answering_until > now()))`);
  }
  const r = await sql.query<ChatSessionRow>(
    `SELECT ${COLS.split(', ').map((c) => `s.${c}`).join(', ')} FROM core.chat_sessions s WHERE ${where.join(' AND ')} ORDER BY s.time_updated DESC, s.session_id LIMIT 1000`,
    params,
  );
  return r.rows;
}

/** One session of the tenant, deleted ones too (the caller decides who may see it). `lock`: FOR UPDATE. */
export async function getSession(sql: Sql, tenantId: string, sessionId: string, lock = false): Promise<ChatSessionRow | null> {
  const r = await sql.query<ChatSessionRow>(`SELECT ${COLS} FROM core.chat_sessions WHERE tenant_id = $1 AND session_id = $2${lock ? ' FOR UPDATE' : ''}`, [tenantId, sessionId]);
  return r.rows[0] ?? null;
}

export interface SessionPatch {
  name?: string;
  shared_status?: 'private' | 'public';
  project_id?: number | null;
  current_alternate_model?: string | null;
  current_temperature_override?: number | null;
}

const PATCHABLE = ['name', 'shared_status', 'project_id', 'current_alternate_model', 'current_temperature_override'] as const;

export async function updateSession(sql: Sql, tenantId: string, sessionId: string, patch: SessionPatch): Promise<ChatSessionRow | null> {
  const sets: string[] = [];
  const params: unknown[] = [tenantId, sessionId];
  for (const field of PATCHABLE) {
    if (patch[field] === undefined) continue;
    const value = patch[field];
    params.push(field === 'current_temperature_override' && typeof value === 'number' ? asReal(value) : value);
    sets.push(`${field} = $${params.length}`);
  }
  sets.push('time_updated = now()');
  const r = await sql.query<ChatSessionRow>(
    `UPDATE core.chat_sessions SET ${sets.join(', ')} WHERE tenant_id = $1 AND session_id = $2 AND deleted_at IS NULL RETURNING ${COLS}`,
    params,
  );
  return r.rows[0] ?? null;
}

export async function softDeleteSession(sql: Sql, tenantId: string, sessionId: string): Promise<void> {
  await sql.query(`UPDATE core.chat_sessions SET deleted_at = now() WHERE tenant_id = $1 AND session_id = $2 AND deleted_at IS NULL`, [tenantId, sessionId]);
}

/** Removes the session with its messages and their feedback (cascade). */
export async function hardDeleteSession(sql: Sql, tenantId: string, sessionId: string): Promise<void> {
  await sql.query(`DELETE FROM core.chat_sessions WHERE tenant_id = $1 AND session_id = $2`, [tenantId, sessionId]);
}

/** Soft-deletes every live session of the owner; returns how many. */
export async function softDeleteAllSessions(sql: Sql, tenantId: string, owner: string): Promise<number> {
  const r = await sql.query(`UPDATE core.chat_sessions SET deleted_at = now() WHERE tenant_id = $1 AND owner = $2 AND deleted_at IS NULL`, [tenantId, owner]);
  return r.rowCount;
}

export async function sessionMessages(sql: Sql, tenantId: string, sessionId: string): Promise<ChatMessageRow[]> {
  const r = await sql.query<ChatMessageRow>(
    `SELECT message_id::text, session_id, parent_message_id::text, latest_child_message_id::text, message_type, message, token_count, rephrased_query,
            citations, documents, tool_calls, error, time_sent
       FROM core.chat_messages WHERE tenant_id = $1 AND session_id = $2 ORDER BY message_id`,
    [tenantId, sessionId],
  );
  return r.rows;
}
