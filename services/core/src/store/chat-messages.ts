import type { Db, Sql } from '@lore/runtime';

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
  /** A user message a turn is answering: until when it counts as being answered (the answer's store clears it). */
  answering_until_ms?: number | null;
}

/**
 * Inserts a message and makes it its parent's latest child (the new branch becomes the latest), in one statement:
 * a chat turn writes two messages, and each round trip is on the answer's path.
 */
/** A message and its parent's latest-child pointer: one statement. */
const INSERT_MESSAGE = `WITH m AS (
       INSERT INTO core.chat_messages (tenant_id, session_id, parent_message_id, message_type, message, token_count, citations, documents, tool_calls, error, answering_until)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, to_timestamp($11::float8 / 1000)) RETURNING message_id
     ), parent AS (
       UPDATE core.chat_messages p SET latest_child_message_id = m.message_id, answering_until = NULL FROM m
        WHERE p.tenant_id = $1 AND p.message_id = $3
     )
     SELECT message_id::text FROM m`;

function insertMessageParams(tenantId: string, m: NewMessage): unknown[] {
  return [
    tenantId, m.session_id, m.parent_message_id, m.message_type, m.message, m.token_count,
    JSON.stringify(m.citations ?? {}), JSON.stringify(m.documents ?? []), JSON.stringify(m.tool_calls ?? []), m.error ?? null,
    m.answering_until_ms ?? null,
  ];
}

export async function insertMessage(sql: Sql, tenantId: string, m: NewMessage): Promise<string> {
  // Run in every chat turn: kept prepared, parsed and planned once per connection.
  const r = await sql.query<{ message_id: string }>(INSERT_MESSAGE, insertMessageParams(tenantId, m), { prepare: true });
  return r.rows[0]!.message_id;
}

/**
 * The same insert as its own transaction in one round trip (`statementAsTenant`): how a turn's answer is stored,
 * the last thing a chat answer waits for.
 */
export async function insertMessageAlone(db: Db, tenantId: string, m: NewMessage): Promise<string> {
  const r = await db.statementAsTenant<{ message_id: string }>(tenantId, INSERT_MESSAGE, insertMessageParams(tenantId, m));
  return r.rows[0]!.message_id;
}

/**
 * Every session's tree starts at one empty system message, so the first user message has a parent too and can be
 * edited (a sibling under the root) like any other.
 */
export function insertRootMessage(sql: Sql, tenantId: string, sessionId: string): Promise<string> {
  return insertMessage(sql, tenantId, { session_id: sessionId, parent_message_id: null, message_type: 'system', message: '', token_count: 0 });
}

/** Marks a user message as being answered until `untilMs` (a turn answering a seeded question). */
export async function markAnswering(sql: Sql, tenantId: string, messageId: string, untilMs: number): Promise<void> {
  await sql.query(`UPDATE core.chat_messages SET answering_until = to_timestamp($3::float8 / 1000) WHERE tenant_id = $1 AND message_id = $2`, [tenantId, messageId, untilMs]);
}

/** Ends a question's answering mark without an answer (its answer could not be stored), in its own transaction. */
export async function clearAnswering(db: Db, tenantId: string, messageId: string): Promise<void> {
  await db.statementAsTenant(tenantId, `UPDATE core.chat_messages SET answering_until = NULL WHERE tenant_id = $1 AND message_id = $2`, [tenantId, messageId]);
}

/** Ends every tenant's answering marks (at the start of the one process that answers; migration 0009); returns how many. */
export async function endAnsweringMarks(db: Db): Promise<number> {
  const { rows } = await db.query<{ ended: number }>(`SELECT core.end_answering_marks() AS ended`);
  return rows[0]?.ended ?? 0;
}

/**
 * Makes the message's branch the one shown: from the message up to the root, every ancestor's latest child becomes
 * the next message of that path (one statement). Moving only the direct parent's pointer left a message below a branch
 * point higher up on no branch `get-chat-session` shows. Each step up is a primary-key look-up (as in
 * `lockSessionForTurn`), and a parent's id is always below its child's (a parent exists before its children), which
 * the walk checks, so it ends at the root whatever the stored pointers say. Pointers already right are not written.
 */
export async function setLatestBranch(sql: Sql, tenantId: string, sessionId: string, messageId: string): Promise<void> {
  await sql.query(
    `WITH RECURSIVE up AS (
       SELECT m.message_id, m.parent_message_id FROM core.chat_messages m WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.message_id = $3
       UNION ALL
       SELECT p.message_id, p.parent_message_id
         FROM up u CROSS JOIN LATERAL (
           SELECT m.message_id, m.parent_message_id FROM core.chat_messages m
            WHERE m.tenant_id = $1 AND m.message_id = u.parent_message_id AND m.session_id IS NOT DISTINCT FROM $2::uuid
            LIMIT 1
         ) p
        WHERE p.message_id < u.message_id
     )
     UPDATE core.chat_messages c SET latest_child_message_id = u.message_id
       FROM up u
      WHERE c.tenant_id = $1 AND c.session_id = $2 AND c.message_id = u.parent_message_id AND c.latest_child_message_id IS DISTINCT FROM u.message_id`,
    [tenantId, sessionId, messageId],
  );
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

/** The fields of a session's messages that a turn needs (its tree and texts; not the stored documents). */
export interface TurnMessage {
  message_id: string;
  parent_message_id: string | null;
  latest_child_message_id: string | null;
  message_type: 'system' | 'user' | 'assistant';
  message: string;
  error: string | null;
  /** A user message a turn is answering now (its mark has not expired). */
  answering: boolean;
}

/** What a turn takes from the session's persona. */
export interface TurnPersona {
  instructions: string;
  tool_ids: number[];
  /** The source types its searches are limited to; null: every source. */
  source_types: string[] | null;
  model: string | null;
  temperature: number | null;
}

export interface TurnSession {
  session_id: string;
  current_alternate_model: string | null;
  current_temperature_override: number | null;
  /** The chat project the session is filed in, if any. */
  project_id: number | null;
  /** The session's persona (deleted ones too: a session keeps the persona it started with); null if it is gone. */
  persona: TurnPersona | null;
  /**
   * The turn's starting message (the one asked for, else the leaf) and then its ancestors, nearest first: at most
   * `pathMessages` messages. Empty when the starting message is not in this session.
   */
  path: TurnMessage[];
}

/**
 * Locks the owner's live session for a turn (an UPDATE takes the row lock), marks it updated, names it from the
 * question when it has no name yet (`name` empty: leave it), and reads its persona, the leaf of its latest branch and
 * the path up from `start` (a message id; null: the leaf of the latest branch, from the root each message's latest
 * child; at most `pathMessages` messages), in one statement (each round trip is on the answer's
 * path); null when the session is not the owner's or is deleted.
 *
 * Only the ids of the latest branch are walked and only the path's texts are read, so a turn costs the same in a
 * session of ten messages and of a thousand (the texts of the whole session were read on every turn before).
 * The walk down is bounded by the session's message count, so a damaged pointer that made a cycle cannot loop.
 */
export async function lockSessionForTurn(sql: Sql, tenantId: string, sessionId: string, owner: string, name: string, start: string | null, pathMessages: number): Promise<TurnSession | null> {
  // The lock first, in a statement of its own: a statement reads the tree as it was when the statement began, so
  // one that waited here for another turn of the session would not see that turn's question. The next one does.
  await sql.query(`SELECT 1 FROM core.chat_sessions WHERE tenant_id = $1 AND session_id = $2 FOR UPDATE`, [tenantId, sessionId], { prepare: true });
  const r = await sql.query<{
    session_id: string;
    current_alternate_model: string | null;
    current_temperature_override: number | null;
    project_id: number | null;
    instructions: string | null;
    tool_ids: number[] | null;
    source_types: string[] | null;
    model: string | null;
    temperature: number | null;
    path: TurnMessage[] | null;
  }>(
    // Each step of both walks is a primary-key look-up (tenant_id, message_id): a LATERAL subquery kept apart by its
    // LIMIT (one row at most), so the step's id is a parameter of the look-up, and the session checked with IS NOT
    // DISTINCT FROM, which no index serves. A planner without statistics (embedded mode before its first ANALYZE)
    // otherwise took the session's index, or the tenant's rows in key order, and filtered them at every step: 2.4 s
    // for a branch of 1,227 messages, the process waiting.
    `WITH RECURSIVE s AS (
       UPDATE core.chat_sessions SET time_updated = now(), name = CASE WHEN name = '' THEN $4 ELSE name END
        WHERE tenant_id = $1 AND session_id = $2 AND owner = $3 AND deleted_at IS NULL
        RETURNING tenant_id, session_id, persona_id, project_id, current_alternate_model, current_temperature_override
     ),
     n AS (SELECT count(*) AS messages FROM core.chat_messages WHERE tenant_id = $1 AND session_id = $2),
     branch AS (
       (SELECT m.message_id, m.latest_child_message_id, 1 AS depth
          FROM core.chat_messages m WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.parent_message_id IS NULL
         ORDER BY m.message_id LIMIT 1)
       UNION ALL
       SELECT c.message_id, c.latest_child_message_id, b.depth + 1
         FROM branch b CROSS JOIN LATERAL (
           SELECT m.message_id, m.latest_child_message_id FROM core.chat_messages m
            WHERE m.tenant_id = $1 AND m.message_id = b.latest_child_message_id AND m.session_id IS NOT DISTINCT FROM $2::uuid
            LIMIT 1
         ) c
        WHERE b.depth < (SELECT messages FROM n)
     ),
     leaf AS (SELECT message_id FROM branch ORDER BY depth DESC LIMIT 1),
     up AS (
       SELECT m.message_id, m.parent_message_id, m.latest_child_message_id, m.message_type, m.message, m.error, COALESCE(m.answering_until > now(), false) AS answering, 1 AS depth
         FROM core.chat_messages m
        WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.message_id = COALESCE($5::bigint, (SELECT message_id FROM leaf))
       UNION ALL
       SELECT p.message_id, p.parent_message_id, p.latest_child_message_id, p.message_type, p.message, p.error, COALESCE(p.answering_until > now(), false), u.depth + 1
         FROM up u CROSS JOIN LATERAL (
           SELECT m.message_id, m.parent_message_id, m.latest_child_message_id, m.message_type, m.message, m.error, m.answering_until FROM core.chat_messages m
            WHERE m.tenant_id = $1 AND m.message_id = u.parent_message_id AND m.session_id IS NOT DISTINCT FROM $2::uuid
            LIMIT 1
         ) p
        WHERE u.depth < $6
     )
     SELECT s.session_id, s.current_alternate_model, s.current_temperature_override, s.project_id, p.instructions, p.tool_ids, p.source_types, p.model, p.temperature,
            (SELECT json_agg(json_build_object(
                      'message_id', u.message_id::text, 'parent_message_id', u.parent_message_id::text,
                      'latest_child_message_id', u.latest_child_message_id::text, 'message_type', u.message_type,
                      'message', u.message, 'error', u.error, 'answering', u.answering) ORDER BY u.depth)
               FROM up u) AS path
       FROM s LEFT JOIN core.personas p ON p.tenant_id = s.tenant_id AND p.persona_id = s.persona_id`,
    [tenantId, sessionId, owner, name, start, pathMessages],
    { prepare: true },
  );
  const row = r.rows[0];
  if (!row) return null;
  return {
    session_id: row.session_id,
    current_alternate_model: row.current_alternate_model,
    current_temperature_override: row.current_temperature_override,
    project_id: row.project_id,
    persona: row.tool_ids === null ? null : { instructions: row.instructions ?? '', tool_ids: row.tool_ids, source_types: row.source_types, model: row.model, temperature: row.temperature },
    path: row.path ?? [],
  };
}
