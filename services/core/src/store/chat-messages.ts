import type { Sql } from '@lore/runtime';

export interface NewMessage {
  session_id: string;
  parent_message_id: string | null;
  message_type: 'system' | 'user' | 'assistant';
  message: string;
  token_count: number;
  citations?: Record<string, string>;
  documents?: unknown[];
  tool_calls?: unknown[];
  error?: string | null;
}

/** Inserts a message and makes it its parent's latest child (the new branch becomes the latest). */
export async function insertMessage(sql: Sql, tenantId: string, m: NewMessage): Promise<string> {
  const r = await sql.query<{ message_id: string }>(
    `INSERT INTO core.chat_messages (tenant_id, session_id, parent_message_id, message_type, message, token_count, citations, documents, tool_calls, error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING message_id::text`,
    [
      tenantId, m.session_id, m.parent_message_id, m.message_type, m.message, m.token_count,
      JSON.stringify(m.citations ?? {}), JSON.stringify(m.documents ?? []), JSON.stringify(m.tool_calls ?? []), m.error ?? null,
    ],
  );
  const id = r.rows[0]!.message_id;
  if (m.parent_message_id !== null) await setLatestChild(sql, tenantId, m.parent_message_id, id);
  return id;
}

/**
 * Every session's tree starts at one empty system message, so the first user message has a parent too and can be
 * edited (a sibling under the root) like any other.
 */
export function insertRootMessage(sql: Sql, tenantId: string, sessionId: string): Promise<string> {
  return insertMessage(sql, tenantId, { session_id: sessionId, parent_message_id: null, message_type: 'system', message: '', token_count: 0 });
}

export async function setLatestChild(sql: Sql, tenantId: string, parentId: string, childId: string): Promise<void> {
  await sql.query(`UPDATE core.chat_messages SET latest_child_message_id = $3 WHERE tenant_id = $1 AND message_id = $2`, [tenantId, parentId, childId]);
}

export interface MessageRef {
  message_id: string;
  session_id: string;
  parent_message_id: string | null;
  message_type: 'system' | 'user' | 'assistant';
  owner: string;
  session_deleted: boolean;
}

/** A message with its session's owner (who may act on it). */
export async function messageRef(sql: Sql, tenantId: string, messageId: number): Promise<MessageRef | null> {
  const r = await sql.query<MessageRef>(
    `SELECT m.message_id::text, m.session_id, m.parent_message_id::text, m.message_type, s.owner, s.deleted_at IS NOT NULL AS session_deleted
       FROM core.chat_messages m JOIN core.chat_sessions s ON s.tenant_id = m.tenant_id AND s.session_id = m.session_id
      WHERE m.tenant_id = $1 AND m.message_id = $2`,
    [tenantId, messageId],
  );
  return r.rows[0] ?? null;
}

export async function upsertFeedback(
  sql: Sql,
  tenantId: string,
  f: { message_id: string; owner: string; is_positive: boolean | null; feedback_text: string | null; predefined_feedback: string | null },
): Promise<void> {
  await sql.query(
    `INSERT INTO core.chat_feedback (tenant_id, message_id, owner, is_positive, feedback_text, predefined_feedback) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, message_id, owner) DO UPDATE SET is_positive = EXCLUDED.is_positive, feedback_text = EXCLUDED.feedback_text,
       predefined_feedback = EXCLUDED.predefined_feedback, time_created = now()`,
    [tenantId, f.message_id, f.owner, f.is_positive, f.feedback_text, f.predefined_feedback],
  );
}

export async function deleteFeedback(sql: Sql, tenantId: string, messageId: string, owner: string): Promise<boolean> {
  const r = await sql.query(`DELETE FROM core.chat_feedback WHERE tenant_id = $1 AND message_id = $2 AND owner = $3`, [tenantId, messageId, owner]);
  return r.rowCount > 0;
}

export async function feedbackOf(sql: Sql, tenantId: string, messageId: string, owner: string): Promise<{ is_positive: boolean | null; feedback_text: string | null } | null> {
  const r = await sql.query<{ is_positive: boolean | null; feedback_text: string | null }>(
    `SELECT is_positive, feedback_text FROM core.chat_feedback WHERE tenant_id = $1 AND message_id = $2 AND owner = $3`,
    [tenantId, messageId, owner],
  );
  return r.rows[0] ?? null;
}

/** Names a session from its first question when it has no name yet. */
export async function nameSessionIfUnnamed(sql: Sql, tenantId: string, sessionId: string, name: string): Promise<void> {
  await sql.query(`UPDATE core.chat_sessions SET name = CASE WHEN name = '' THEN $3 ELSE name END, time_updated = now() WHERE tenant_id = $1 AND session_id = $2`, [
    tenantId, sessionId, name,
  ]);
}
