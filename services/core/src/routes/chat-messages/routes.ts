import { clientGone, isAppError, openStream } from '@lore/runtime';
import type { RouterContext } from '@koa/router';
import type { CompleteAnswer, PreparedTurn, TurnInput } from '../../application/chat-messages';
import type { Principal } from '../../application/principal';
import type { AnswerStreamPart } from '../../domain/answer-parts';
import { CORE_PREFIX, CORE_SECURITY, SPEC_INPUT, detail, route, type CoreGuard, type CoreState } from '../route';
import {
  answerStreamContent,
  availableTokensView,
  completeAnswerView,
  emptyView,
  feedbackBody,
  maxTokensView,
  messageIdentifierBody,
  personaQuery,
  removeFeedbackQuery,
  seedBody,
  seedView,
  sendChatMessageBody,
  sendMessageBody,
  sessionParams,
  tenantQuery,
} from './schema';

export interface ChatMessageRouteDeps {
  guard: CoreGuard;
  messages: {
    prepare(p: Principal, identityToken: string, input: TurnInput): Promise<PreparedTurn>;
    stream(turn: PreparedTurn, signal: AbortSignal): AsyncIterable<AnswerStreamPart>;
    complete(turn: PreparedTurn, signal: AbortSignal): Promise<CompleteAnswer>;
    setLatest(p: Principal, messageId: number): Promise<void>;
    feedback(p: Principal, f: { chat_message_id: number; is_positive: boolean | null; feedback_text: string | null; predefined_feedback: string | null }): Promise<void>;
    removeFeedback(p: Principal, messageId: number): Promise<void>;
    maxDocumentTokens(p: Principal, personaId: number): Promise<number>;
    availableTokens(p: Principal, sessionId: string): Promise<number>;
    seed(p: Principal, input: { persona_id: number; description?: string | null; message?: string | null }): Promise<{ chat_session_id: string; message_id: number | null }>;
  };
}

const NOT_FOUND = { 404: detail('no such session, message or persona of the caller') };
const TURN_ERRORS = {
  ...NOT_FOUND,
  400: detail('a forced tool the persona does not allow, no user message to answer, or a parent_message_id that is a question'),
  403: detail('the key is read-only'),
  409: detail('the question the new message would follow is still being answered (another turn of this session is under way)'),
};

/**
 * Streams the parts as newline-delimited JSON; a client that leaves cancels the answer (and it is stored as cancelled).
 * A failure after the stream began (the answer could not be stored: the session was deleted meanwhile, the database
 * refused it) still ends the stream as every answer ends: an `error` part, then `stop` with no message id. `gone` is
 * the request's `clientGone`, heard since the turn began.
 */
function streamParts(ctx: RouterContext<CoreState>, sessionId: string, parts: (signal: AbortSignal) => AsyncIterable<AnswerStreamPart>): void {
  const { out, gone } = openStream(ctx);
  const log = ctx.state.log;
  void (async () => {
    try {
      for await (const part of parts(gone)) out.write(`${JSON.stringify(part)}\n`);
    } catch (err) {
      log.warn({ err }, 'chat stream failed');
      const error = isAppError(err) && err.status < 500 ? err.message : 'the answer could not be stored';
      const ending: AnswerStreamPart[] = [{ type: 'error', error }, { type: 'stop', message_id: null, chat_session_id: sessionId, stop_reason: 'error' }];
      for (const part of ending) out.write(`${JSON.stringify(part)}\n`);
    } finally {
      out.end();
    }
  })();
}

function turnInput(b: {
  chat_session_id: string;
  message: string;
  parent_message_id?: number | null;
  use_existing_user_message?: boolean;
  include_citations: boolean;
  allowed_tool_ids?: number[] | null;
  forced_tool_id?: number | null;
  internal_search_filters?: { source_type?: string[] | null } | null;
}): TurnInput {
  return {
    sessionId: b.chat_session_id,
    message: b.message.trim(),
    parentMessageId: b.parent_message_id,
    useExistingUserMessage: b.use_existing_user_message ?? false,
    includeCitations: b.include_citations,
    allowedToolIds: b.allowed_tool_ids ?? undefined,
    forcedToolId: b.forced_tool_id ?? undefined,
    sourceTypes: b.internal_search_filters?.source_type ?? undefined,
  };
}

/** Spec 2's message routes: answers (streamed or complete), branches, feedback, token budgets, seeded sessions. */
export function chatMessageRoutes(deps: ChatMessageRouteDeps) {
  const tags = ['chat messages'];
  const chat = `${CORE_PREFIX}/chat`;
  const write = [deps.guard('write')];
  const m = deps.messages;
  return [
    route({
      method: 'post', path: `${chat}/send-chat-message`, operationId: 'sendChatMessage', summary: 'Ask in a chat session: a streamed or complete answer', tags,
      description: '`stream` (default true) answers newline-delimited AnswerStreamPart objects; `stream: false` answers the complete response. The new message goes under the latest message of the session.',
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: sendChatMessageBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the answer', schema: completeAnswerView, content: answerStreamContent },
      responses: TURN_ERRORS,
      handler: async (ctx, { body }) => {
        // Heard from the start: a client gone while the turn is prepared cancels it too (stored as cancelled).
        const gone = clientGone(ctx);
        const turn = await m.prepare(ctx.state.principal, ctx.state.identityToken, turnInput(body));
        if (body.stream) {
          streamParts(ctx, turn.sessionId, (signal) => m.stream(turn, signal));
          return undefined;
        }
        return m.complete(turn, gone);
      },
    }),
    route({
      method: 'post', path: `${chat}/send-message`, operationId: 'sendMessage', summary: 'New message, regeneration, edit, or answering a seeded message (streamed)', tags,
      description: 'Under `parent_message_id` (default: the latest message): a new message, a regeneration (the same text again) or an edit (another text) of the message that was there, which becomes the latest branch. `use_existing_user_message` answers the user message at `parent_message_id` (or the latest) instead.',
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: sendMessageBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'newline-delimited AnswerStreamPart objects', content: answerStreamContent },
      responses: TURN_ERRORS,
      handler: async (ctx, { body }) => {
        // Heard from the start (streamParts answers the same signal): a client gone while the turn is prepared cancels it.
        clientGone(ctx);
        const turn = await m.prepare(ctx.state.principal, ctx.state.identityToken, turnInput(body));
        streamParts(ctx, turn.sessionId, (signal) => m.stream(turn, signal));
        return undefined;
      },
    }),
    route({
      method: 'put', path: `${chat}/set-message-as-latest`, operationId: 'setMessageAsLatest', summary: 'Make a message\'s branch the latest', tags,
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: messageIdentifierBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'switched', schema: emptyView },
      responses: NOT_FOUND,
      handler: async (ctx, { body }) => {
        await m.setLatest(ctx.state.principal, body.message_id);
        return {};
      },
    }),
    route({
      method: 'post', path: `${chat}/create-chat-message-feedback`, operationId: 'createChatMessageFeedback', summary: 'Give feedback on an answer', tags,
      description: 'One feedback per answer and caller; giving it again replaces it.',
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: feedbackBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'stored', schema: emptyView },
      responses: { ...NOT_FOUND, 400: detail('the message is not an answer') },
      handler: async (ctx, { body }) => {
        await m.feedback(ctx.state.principal, { chat_message_id: body.chat_message_id, is_positive: body.is_positive ?? null, feedback_text: body.feedback_text ?? null, predefined_feedback: body.predefined_feedback ?? null });
        return {};
      },
    }),
    route({
      method: 'delete', path: `${chat}/remove-chat-message-feedback`, operationId: 'removeChatMessageFeedback', summary: 'Remove one\'s feedback on an answer', tags,
      security: CORE_SECURITY, guards: write, query: removeFeedbackQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'removed', schema: emptyView },
      responses: NOT_FOUND,
      handler: async (ctx, { query }) => {
        await m.removeFeedback(ctx.state.principal, query.chat_message_id);
        return {};
      },
    }),
    route({
      method: 'get', path: `${chat}/max-selected-document-tokens`, operationId: 'maxSelectedDocumentTokens', summary: 'How many tokens selected documents may take for a persona', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], query: personaQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'MaxSelectedDocumentTokens', schema: maxTokensView },
      responses: NOT_FOUND,
      handler: async (ctx, { query }) => ({ max_tokens: await m.maxDocumentTokens(ctx.state.principal, query.persona_id) }),
    }),
    route({
      method: 'get', path: `${chat}/available-context-tokens/:session_id`, operationId: 'availableContextTokens', summary: 'How many context tokens a session has left', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], params: sessionParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'AvailableContextTokensResponse', schema: availableTokensView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => ({ available_tokens: await m.availableTokens(ctx.state.principal, params.session_id) }),
    }),
    route({
      method: 'post', path: `${chat}/seed-chat-session`, operationId: 'seedChatSession', summary: 'Start a session with a first message, unanswered', tags,
      description: 'Answer the seeded message with send-message and `use_existing_user_message: true`.',
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: seedBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the session (and its first message\'s id)', schema: seedView },
      responses: { 400: detail('persona_id names no persona of the tenant'), 403: detail('the key is read-only'), 409: detail('the caller has 10,000 live chat sessions, the most one may have') },
      handler: async (ctx, { body }) => m.seed(ctx.state.principal, body),
    }),
  ];
}
