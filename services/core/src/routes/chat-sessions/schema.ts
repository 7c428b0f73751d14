import { z } from 'zod';
import type { SessionDetail } from '../../application/chat-sessions';
import { DEFAULT_PERSONA_ID } from '../../domain/personas';
import { toolCallsOf } from '../../domain/answer-parts';
import type { ChatMessageRow, ChatSessionRow } from '../../store/chat-sessions';
import { int32, iso, queryBool, queryNullableBool, queryNullableInt, sessionDescription, sessionName, tenantIdParam } from '../schema-parts';

const uuid = z.uuid('must be a UUID');
const sharedStatus = z.enum(['private', 'public']);

/** Spec 2's chat session, exactly its fields. */
export const chatSessionView = z.object({
  id: z.string(),
  name: z.string(),
  persona_id: z.number().int(),
  global_persona_id: z.number().int().nullable().describe('0 when the session uses the platform\'s default persona, else null'),
  is_global_persona: z.boolean().describe('the session uses the platform\'s default persona (id 0), the same in every tenant'),
  time_created: z.string(),
  time_updated: z.string(),
  shared_status: z.string().describe('private or public'),
  current_alternate_model: z.string().nullable(),
  current_temperature_override: z.number().nullable(),
});

export function presentSession(s: ChatSessionRow): z.input<typeof chatSessionView> {
  const global = s.persona_id === DEFAULT_PERSONA_ID;
  return {
    id: s.session_id,
    name: s.name,
    persona_id: s.persona_id,
    global_persona_id: global ? DEFAULT_PERSONA_ID : null,
    is_global_persona: global,
    time_created: iso(s.time_created),
    time_updated: iso(s.time_updated),
    shared_status: s.shared_status,
    current_alternate_model: s.current_alternate_model,
    current_temperature_override: s.current_temperature_override,
  };
}

export const sessionListView = z.object({ sessions: z.array(chatSessionView) });

/** One message of a session's latest branch (ChatSessionDetailResponse's `messages`; our design). */
export const chatMessageView = z.object({
  message_id: z.number().int(),
  parent_message: z.number().int().nullable(),
  latest_child_message: z.number().int().nullable(),
  message: z.string(),
  message_type: z.enum(['system', 'user', 'assistant']),
  rephrased_query: z.string().nullable(),
  citations: z.record(z.string(), z.string()).describe('citation number → document_id'),
  documents: z.array(z.unknown()).describe('the search documents the answer drew on'),
  tool_calls: z.array(z.unknown()),
  error: z.string().nullable(),
  time_sent: z.string(),
});

/** ChatSessionDetailResponse (fields not shown in spec 2; our design). */
export const sessionDetailView = z.object({
  chat_session_id: z.string(),
  description: z.string().describe('the session\'s name'),
  persona_id: z.number().int(),
  persona_name: z.string(),
  project_id: z.number().int().nullable(),
  messages: z.array(chatMessageView),
  time_created: z.string(),
  time_updated: z.string(),
  shared_status: z.string(),
  current_alternate_model: z.string().nullable(),
  current_temperature_override: z.number().nullable(),
  deleted: z.boolean(),
});

const num = (v: string | null) => (v === null ? null : Number(v));

function presentMessage(m: ChatMessageRow): z.input<typeof chatMessageView> {
  return {
    message_id: Number(m.message_id),
    parent_message: num(m.parent_message_id),
    latest_child_message: num(m.latest_child_message_id),
    message: m.message,
    message_type: m.message_type,
    rephrased_query: m.rephrased_query,
    citations: m.citations,
    documents: m.documents,
    tool_calls: toolCallsOf(m.tool_calls, m.documents),
    error: m.error,
    time_sent: iso(m.time_sent),
  };
}

export function presentDetail(d: SessionDetail): z.input<typeof sessionDetailView> {
  const s = d.session;
  return {
    chat_session_id: s.session_id,
    description: s.name,
    persona_id: s.persona_id,
    persona_name: d.personaName,
    project_id: s.project_id,
    messages: d.messages.map(presentMessage),
    time_created: iso(s.time_created),
    time_updated: iso(s.time_updated),
    shared_status: s.shared_status,
    current_alternate_model: s.current_alternate_model,
    current_temperature_override: s.current_temperature_override,
    deleted: s.deleted_at !== null,
  };
}

export const tenantQuery = z.object(tenantIdParam);
export const sessionParams = z.object({ session_id: uuid });

export const listSessionsQuery = z.object({
  ...tenantIdParam,
  project_id: queryNullableInt,
  only_non_project_chats: queryBool(true),
  include_failed_chats: queryBool(false),
});

export const getSessionQuery = z.object({ ...tenantIdParam, is_shared: queryBool(false), include_deleted: queryBool(false) });
export const deleteSessionQuery = z.object({ ...tenantIdParam, hard_delete: queryNullableBool });

export const createSessionBody = z.object({
  persona_id: int32,
  /** The session's name, trimmed: empty (or only spaces or invisible characters) leaves it to be named from its first question. */
  description: sessionDescription.nullish(),
  /** One of the caller's chat projects (our addition to spec 2's body). */
  project_id: int32.nullish(),
});
export const createdSessionView = z.object({ chat_session_id: z.string() });

export const renameBody = z.object({ chat_session_id: uuid, name: sessionName });
export const renamedView = z.object({ new_name: z.string() });

/** UpdateChatSessionTemperatureRequest (our design of its fields): null clears the override. */
export const temperatureBody = z.object({ chat_session_id: uuid, temperature_override: z.number().min(0).max(2).nullable() });
/** UpdateChatSessionThreadRequest (our design of its fields): null returns to the persona's model. */
export const modelBody = z.object({ chat_session_id: uuid, new_alternate_model: z.string().trim().min(1).max(200).nullable() });

/** ChatSessionUpdateRequest (our design of its fields): sharing, name, and the chat project (null: none). */
export const updateSessionBody = z
  .object({ sharing_status: sharedStatus.optional(), name: sessionName.optional(), project_id: int32.nullable().optional() })
  .refine((b) => b.sharing_status !== undefined || b.name !== undefined || b.project_id !== undefined, 'name at least one of sharing_status, name, project_id');

export const emptyView = z.object({});
