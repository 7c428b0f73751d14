import type { SessionDetail } from '../../application/chat-sessions';
import type { Principal } from '../../application/principal';
import type { ChatSessionRow, SessionFilter, SessionPatch } from '../../store/chat-sessions';
import { CORE_PREFIX, CORE_SECURITY, SPEC_INPUT, detail, route, type CoreGuard } from '../route';
import {
  createSessionBody,
  createdSessionView,
  deleteSessionQuery,
  emptyView,
  getSessionQuery,
  listSessionsQuery,
  modelBody,
  presentDetail,
  presentSession,
  renameBody,
  renamedView,
  sessionDetailView,
  sessionListView,
  sessionParams,
  temperatureBody,
  tenantQuery,
  updateSessionBody,
} from './schema';

export interface ChatSessionRouteDeps {
  guard: CoreGuard;
  sessions: {
    create(p: Principal, input: { persona_id: number; description?: string | null; project_id?: number | null }): Promise<ChatSessionRow>;
    list(p: Principal, filter: Omit<SessionFilter, 'owner'>): Promise<ChatSessionRow[]>;
    detail(p: Principal, id: string, opts: { isShared: boolean; includeDeleted: boolean }): Promise<SessionDetail>;
    change(p: Principal, id: string, patch: SessionPatch): Promise<ChatSessionRow>;
    remove(p: Principal, id: string, hard: boolean): Promise<void>;
    removeAll(p: Principal): Promise<number>;
  };
}

const NOT_FOUND = { 404: detail('no such session of the caller (or not shared, or deleted)') };
const READ_ONLY = { 403: detail('the key is read-only') };
/** What a route that creates a session answers once its caller has the most live sessions one may have. */
const TOO_MANY_SESSIONS = { 409: detail('the caller has 10,000 live chat sessions, the most one may have') };

/** Spec 2's chat session routes. Sessions belong to the principal that created them. */
export function chatSessionRoutes(deps: ChatSessionRouteDeps) {
  const tags = ['chat sessions'];
  const chat = `${CORE_PREFIX}/chat`;
  const write = [deps.guard('write')];
  return [
    route({
      method: 'get', path: `${chat}/get-user-chat-sessions`, operationId: 'getUserChatSessions', summary: 'List the caller\'s chat sessions', tags,
      description: 'Newest first. `project_id` lists a chat project\'s sessions (a project that is not the caller\'s: 404); otherwise `only_non_project_chats` (default true) leaves project sessions out. A failed chat (no answered message) is listed only with `include_failed_chats`.',
      security: CORE_SECURITY, guards: [deps.guard('read')], query: listSessionsQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the sessions', schema: sessionListView },
      responses: { 404: detail('project_id names no project of the caller') },
      handler: async (ctx, { query }) => {
        const rows = await deps.sessions.list(ctx.state.principal, { projectId: query.project_id, onlyNonProject: query.only_non_project_chats, includeFailed: query.include_failed_chats });
        return { sessions: rows.map(presentSession) };
      },
    }),
    route({
      method: 'post', path: `${chat}/create-chat-session`, operationId: 'createChatSession', summary: 'Create a chat session', tags,
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: createSessionBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the new session\'s id', schema: createdSessionView },
      responses: { ...READ_ONLY, 400: detail('persona_id names no persona of the tenant'), 404: detail('project_id names no chat project of the caller'), ...TOO_MANY_SESSIONS },
      handler: async (ctx, { body }) => ({ chat_session_id: (await deps.sessions.create(ctx.state.principal, body)).session_id }),
    }),
    route({
      method: 'get', path: `${chat}/get-chat-session/:session_id`, operationId: 'getChatSession', summary: 'Get a chat session with its messages', tags,
      description: '`is_shared` reads a session another user of the tenant shared publicly; `include_deleted` reads one\'s own deleted session. Messages are the latest branch of the tree, root first.',
      security: CORE_SECURITY, guards: [deps.guard('read')], params: sessionParams, query: getSessionQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the session', schema: sessionDetailView },
      responses: NOT_FOUND,
      handler: async (ctx, { params, query }) =>
        presentDetail(await deps.sessions.detail(ctx.state.principal, params.session_id, { isShared: query.is_shared, includeDeleted: query.include_deleted })),
    }),
    route({
      method: 'put', path: `${chat}/rename-chat-session`, operationId: 'renameChatSession', summary: 'Rename a chat session', tags,
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: renameBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the new name', schema: renamedView },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { body }) => ({ new_name: (await deps.sessions.change(ctx.state.principal, body.chat_session_id, { name: body.name })).name }),
    }),
    route({
      method: 'patch', path: `${chat}/chat-session/:session_id`, operationId: 'updateChatSession', summary: 'Change a chat session (sharing, name, chat project)', tags,
      security: CORE_SECURITY, guards: write, params: sessionParams, query: tenantQuery, body: updateSessionBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'changed', schema: emptyView },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { params, body }) => {
        await deps.sessions.change(ctx.state.principal, params.session_id, { shared_status: body.sharing_status, name: body.name, project_id: body.project_id });
        return {};
      },
    }),
    route({
      method: 'put', path: `${chat}/update-chat-session-temperature`, operationId: 'updateChatSessionTemperature', summary: 'Set or clear the session\'s temperature override', tags,
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: temperatureBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'changed', schema: emptyView },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { body }) => {
        await deps.sessions.change(ctx.state.principal, body.chat_session_id, { current_temperature_override: body.temperature_override });
        return {};
      },
    }),
    route({
      method: 'put', path: `${chat}/update-chat-session-model`, operationId: 'updateChatSessionModel', summary: 'Set or clear the session\'s model override', tags,
      security: CORE_SECURITY, guards: write, query: tenantQuery, body: modelBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'changed', schema: emptyView },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { body }) => {
        await deps.sessions.change(ctx.state.principal, body.chat_session_id, { current_alternate_model: body.new_alternate_model });
        return {};
      },
    }),
    route({
      method: 'delete', path: `${chat}/delete-chat-session/:session_id`, operationId: 'deleteChatSession', summary: 'Delete a chat session', tags,
      description: 'Without `hard_delete` the session stays retrievable with `include_deleted=true`; with `hard_delete=true` it is removed with its messages.',
      security: CORE_SECURITY, guards: write, params: sessionParams, query: deleteSessionQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'deleted', schema: emptyView },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { params, query }) => {
        await deps.sessions.remove(ctx.state.principal, params.session_id, query.hard_delete === true);
        return {};
      },
    }),
    route({
      method: 'delete', path: `${chat}/delete-all-chat-sessions`, operationId: 'deleteAllChatSessions', summary: 'Delete all of the caller\'s chat sessions', tags,
      description: 'A plain delete of each: they stay retrievable with `include_deleted=true`.',
      security: CORE_SECURITY, guards: write, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'deleted', schema: emptyView },
      responses: READ_ONLY,
      handler: async (ctx) => {
        await deps.sessions.removeAll(ctx.state.principal);
        return {};
      },
    }),
  ];
}
