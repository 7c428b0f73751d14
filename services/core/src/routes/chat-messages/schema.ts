import { z } from 'zod';
import { int32, messageIdBody, messageIdParam, queryInt, sessionDescription, tenantIdParam, toolIdList, VISIBLE } from '../schema-parts';

const uuid = z.uuid('must be a UUID');
/** The longest chat message (characters); longer is 422. */
export const MESSAGE_MAX_CHARS = 20_000;
const message = z
  .string()
  .trim()
  .max(MESSAGE_MAX_CHARS, `at most ${MESSAGE_MAX_CHARS} characters`)
  .refine((m) => VISIBLE.test(m), 'message is required');
const toolIds = toolIdList;
/** A tool to force: an id below 1 is invalid (422), as in `allowed_tool_ids` and a persona's `tool_ids`. */
const forcedToolId = int32.min(1, 'a tool id is at least 1');
const filters = z.object({ source_type: z.array(z.string().min(1).max(64)).max(32).nullish() }).passthrough();

/** `send-chat-message`: spec 2's body (stream defaults to true). */
export const sendChatMessageBody = z.object({
  message,
  chat_session_id: uuid,
  stream: z.boolean().default(true),
  include_citations: z.boolean().default(true),
  allowed_tool_ids: toolIds.nullish(),
  forced_tool_id: forcedToolId.nullish(),
  internal_search_filters: filters.nullish(),
});

/**
 * CreateChatMessageRequest (its fields are our design, docs/core.md): a new message, a regeneration or an edit
 * (a message under an earlier `parent_message_id`), or answering a seeded session's existing message
 * (`use_existing_user_message`). Always streamed.
 */
export const sendMessageBody = z
  .object({
    chat_session_id: uuid,
    parent_message_id: messageIdBody.nullish(),
    // Trimmed before its length is checked, as send-chat-message's and a seeded one are: until 2026-11-30 the same
    // text with trailing spaces was 422 here and 200 there.
    message: z.string().trim().max(MESSAGE_MAX_CHARS, `at most ${MESSAGE_MAX_CHARS} characters`).default(''),
    use_existing_user_message: z.boolean().default(false),
    include_citations: z.boolean().default(true),
    allowed_tool_ids: toolIds.nullish(),
    forced_tool_id: forcedToolId.nullish(),
    internal_search_filters: filters.nullish(),
  })
  .refine((b) => b.use_existing_user_message || VISIBLE.test(b.message), { message: 'message is required unless use_existing_user_message is true', path: ['message'] });

const searchDoc = z.object({
  document_id: z.string(),
  chunk_ind: z.number().int(),
  semantic_identifier: z.string(),
  link: z.string(),
  blurb: z.string(),
  source_type: z.string(),
  boost: z.number().int(),
  hidden: z.boolean(),
  metadata: z.record(z.string(), z.string()),
  score: z.number(),
  is_relevant: z.boolean().nullable(),
  relevance_explanation: z.string().nullable(),
  match_highlights: z.array(z.string()),
  updated_at: z.string(),
  primary_owners: z.array(z.string()).nullable(),
  secondary_owners: z.array(z.string()).nullable(),
  is_internet: z.boolean(),
});

const toolCall = z.object({
  tool_name: z.string(),
  tool_arguments: z.record(z.string(), z.unknown()),
  tool_result: z.string(),
  search_docs: z.array(searchDoc),
  generated_images: z.null(),
  pre_reasoning: z.string().nullable(),
});

/** The complete response (stream=false): exactly spec 2's fields. */
export const completeAnswerView = z.object({
  answer: z.string(),
  answer_citationless: z.string(),
  pre_answer_reasoning: z.string().nullable(),
  tool_calls: z.array(toolCall),
  top_documents: z.array(searchDoc),
  citation_info: z.array(z.object({ citation_num: z.number().int(), document_id: z.string() })),
  message_id: z.number().int(),
  chat_session_id: z.string().nullable(),
  error_msg: z.string().nullable(),
});

/** The stream's media type: one AnswerStreamPart JSON object per line (docs/core.md). */
export const answerStreamContent = {
  'text/event-stream': {
    schema: {
      type: 'string',
      description:
        'Newline-delimited AnswerStreamPart objects, in order: message_start; per tool call tool_call and search_documents; answer_delta*; citation_info*; then stop (error before stop when the answer failed).',
    },
  },
};

export const messageIdentifierBody = z.object({ message_id: messageIdBody });
export const feedbackBody = z
  .object({
    chat_message_id: messageIdBody,
    is_positive: z.boolean().nullish(),
    feedback_text: z.string().max(5_000).nullish(),
    predefined_feedback: z.string().max(200).nullish(),
  })
  .refine((b) => b.is_positive != null || (b.feedback_text ?? '') !== '' || (b.predefined_feedback ?? '') !== '', 'give is_positive, feedback_text or predefined_feedback');
export const removeFeedbackQuery = z.object({ ...tenantIdParam, chat_message_id: messageIdParam });
export const personaQuery = z.object({ ...tenantIdParam, persona_id: queryInt });
export const maxTokensView = z.object({ max_tokens: z.number().int() });
export const availableTokensView = z.object({ available_tokens: z.number().int() });
/**
 * ChatSeedRequest: `message`, when given, is checked as send-message's is (trimmed; only spaces or invisible
 * characters: 422), since `use_existing_user_message` answers it as it was stored. `description` is trimmed like
 * create-chat-session's: empty, the session is named from the message.
 */
const seedMessage = z
  .string()
  .trim()
  .max(MESSAGE_MAX_CHARS, `at most ${MESSAGE_MAX_CHARS} characters`)
  .refine((m) => VISIBLE.test(m), 'message has nothing to answer (only spaces or invisible characters): leave it out to seed a session without one');
export const seedBody = z.object({ persona_id: int32, description: sessionDescription.nullish(), message: seedMessage.nullish() });
export const seedView = z.object({ chat_session_id: z.string(), message_id: z.number().int().nullable() });
export const tenantQuery = z.object(tenantIdParam);
export const sessionParams = z.object({ session_id: uuid });
export const emptyView = z.object({});
