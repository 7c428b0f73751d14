import { z } from 'zod';
import { str } from './define';
import { additive, checkFile, defineRoute, serverTools, destructive, fileArgs, filePart, id, open, read, seg, text, uuid, type FileArgs, type StreamReader } from './route-tools';

/**
 * Spec 3's enterprise-search tools, over spec 2's chat, connector and chat-project routes at AGENT_CORE_URL
 * (docs/mcp.md, "Enterprise search"). Connector tools reach administrators' routes: the gateway refuses others.
 */

/** The largest file an upload tool takes (decoded), and the most files one call sends. */
export const MAX_PROJECT_FILE_BYTES = 5 * 1024 * 1024;
export const MAX_PROJECT_FILES = 10;
/** The most search documents a collected chat answer keeps. */
export const MAX_ANSWER_DOCUMENTS = 50;

const searchDocument = open({ document_id: z.string(), semantic_identifier: z.string(), link: z.string().nullable(), blurb: z.string(), source_type: z.string(), score: z.number() });
const connector = open({ id: z.number(), name: z.string(), source: z.string(), input_type: z.string() });
const statusEntry = open({ cc_pair_id: z.number(), name: z.string(), connector, credential: open({ id: z.number(), source: z.string() }), access_type: z.string(), groups: z.array(z.number()) });
const ccPair = open({ id: z.number(), name: z.string(), status: z.string(), num_docs_indexed: z.number(), connector, credential: open({ id: z.number() }) });
const projectFile = open({ id: z.string(), project_id: z.number(), name: z.string(), status: z.string(), error: z.string().nullable() });
const fileList = open({ files: z.array(projectFile) });
const accessType = z.enum(['public', 'private']);
const groups = z.array(id()).max(100).describe('user group ids');

/** What enterprise_send_chat_message answers: the streamed answer, collected. */
export const collectedAnswer = z.object({
  answer: z.string().describe('the answer, with [n] citation markers when citations are included'),
  citations: z.array(z.object({ citation_num: z.number(), document_id: z.string() })),
  documents: z.array(searchDocument).describe(`the documents searched, each once (at most ${MAX_ANSWER_DOCUMENTS})`),
  message_id: z.number().nullable(),
  chat_session_id: z.string().nullable(),
  error: z.string().nullable().describe('why the answer failed; null on success'),
});

const decoder = () => new TextDecoder('utf-8');

/**
 * Reads spec 2's answer stream (one AnswerStreamPart JSON object per line, docs/core.md) into one answer: the
 * deltas joined, the citations, the documents (deduplicated, capped), the message id. More than `maxBytes`, or an
 * abort, ends the read with an error; a line that is not JSON is skipped.
 */
export const readAnswerStream: StreamReader = async (body, { maxBytes, signal }) => {
  const out: z.infer<typeof collectedAnswer> = { answer: '', citations: [], documents: [], message_id: null, chat_session_id: null, error: null };
  /** Document ids already listed: a document's chunks (`chunk_ind`) are one document to the answer. */
  const seen = new Set<string>();
  const d = decoder();
  let size = 0;
  let rest = '';
  const take = (line: string) => {
    if (line.trim() === '') return;
    let part: Record<string, unknown>;
    try {
      part = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    switch (part.type) {
      case 'message_start':
        if (typeof part.chat_session_id === 'string') out.chat_session_id = part.chat_session_id;
        break;
      case 'answer_delta':
        if (typeof part.text === 'string') out.answer += part.text;
        break;
      case 'citation_info':
        if (typeof part.citation_num === 'number' && typeof part.document_id === 'string') out.citations.push({ citation_num: part.citation_num, document_id: part.document_id });
        break;
      case 'search_documents':
        for (const doc of Array.isArray(part.top_documents) ? (part.top_documents as Array<Record<string, unknown>>) : []) {
          const key = String(doc.document_id);
          if (seen.has(key) || out.documents.length >= MAX_ANSWER_DOCUMENTS) continue;
          seen.add(key);
          out.documents.push({
            document_id: String(doc.document_id), semantic_identifier: String(doc.semantic_identifier ?? ''), link: typeof doc.link === 'string' ? doc.link : null,
            blurb: String(doc.blurb ?? ''), source_type: String(doc.source_type ?? ''), score: typeof doc.score === 'number' ? doc.score : 0,
          });
        }
        break;
      case 'error':
        out.error = typeof part.error === 'string' ? part.error : 'the answer failed';
        break;
      case 'stop':
        if (typeof part.message_id === 'number') out.message_id = part.message_id;
        if (typeof part.chat_session_id === 'string') out.chat_session_id = part.chat_session_id;
        if (part.stop_reason === 'error' && out.error === null) out.error = 'the answer failed';
        break;
      default:
    }
  };
  for await (const chunk of body) {
    if (signal.aborted) throw new Error('the answer took too long');
    size += chunk.byteLength;
    if (size > maxBytes) throw new Error(`the answer stream was larger than ${maxBytes} bytes`);
    const lines = (rest + d.decode(chunk, { stream: true })).split('\n');
    rest = lines.pop() ?? '';
    lines.forEach(take);
  }
  take(rest + d.decode());
  return out;
};

export const enterpriseRoutes = [
  defineRoute({
    name: 'enterprise_send_chat_message',
    description: 'Ask in a chat session (enterprise_create_chat_session makes one): the answer with its citations and the documents searched.',
    module: 'chat',
    write: true,
    input: {
      chat_session_id: uuid(),
      message: text(20_000),
      include_citations: z.boolean().optional().describe('default true'),
      source_types: z.array(text(64)).min(1).max(20).optional().describe('search only documents of these sources'),
      allowed_tool_ids: z.array(id()).max(50).optional(),
      forced_tool_id: id().optional(),
    },
    data: collectedAnswer,
    annotations: additive('Send a chat message'),
    stream: readAnswerStream,
    request: (a) => ({
      base: 'core', method: 'POST', path: '/api/chat/send-chat-message',
      json: {
        message: a.message, chat_session_id: a.chat_session_id, stream: true, include_citations: a.include_citations ?? true,
        allowed_tool_ids: a.allowed_tool_ids, forced_tool_id: a.forced_tool_id,
        internal_search_filters: a.source_types ? { source_type: a.source_types } : undefined,
      },
    }),
  }),
  defineRoute({
    name: 'enterprise_get_chat_sessions',
    description: 'List the caller\'s chat sessions, newest first.',
    module: 'chat',
    write: false,
    input: {
      project_id: id().optional().describe('only the sessions of this chat project'),
      only_non_project_chats: z.boolean().optional().describe('default true: leave out sessions of chat projects'),
      include_failed_chats: z.boolean().optional().describe('default false'),
    },
    data: open({ sessions: z.array(open({ id: z.string(), name: z.string(), persona_id: z.number(), time_created: z.string(), time_updated: z.string() })) }),
    annotations: read('List chat sessions'),
    request: (a) => ({
      base: 'core', method: 'GET', path: '/api/chat/get-user-chat-sessions',
      query: { project_id: a.project_id, only_non_project_chats: a.only_non_project_chats, include_failed_chats: a.include_failed_chats },
    }),
  }),
  defineRoute({
    name: 'enterprise_create_chat_session',
    description: 'Start a chat session with a persona (0 is the default persona).',
    module: 'chat',
    write: true,
    input: {
      persona_id: z.number().int('must be an integer').min(0).max(2_147_483_647),
      description: text(500).optional(),
      project_id: id().optional().describe('a chat project of the caller to hold the session'),
    },
    data: open({ chat_session_id: z.string() }),
    annotations: additive('Create a chat session'),
    request: (a) => ({ base: 'core', method: 'POST', path: '/api/chat/create-chat-session', json: { persona_id: a.persona_id, description: a.description, project_id: a.project_id } }),
  }),
  defineRoute({
    name: 'enterprise_rename_chat_session',
    description: 'Rename a chat session.',
    module: 'chat',
    write: true,
    input: { chat_session_id: uuid(), name: text(500) },
    data: open({ new_name: z.string() }),
    annotations: destructive('Rename a chat session', true),
    request: (a) => ({ base: 'core', method: 'PUT', path: '/api/chat/rename-chat-session', json: { chat_session_id: a.chat_session_id, name: a.name } }),
  }),
  defineRoute({
    name: 'enterprise_get_connector_status',
    description: 'List the connector-credential pairs (cc pairs) with their connectors and credentials. Administrators only.',
    module: 'connectors',
    write: false,
    input: {},
    data: z.array(statusEntry),
    annotations: read('Connector status'),
    request: () => ({ base: 'core', method: 'GET', path: '/api/manage/admin/connector/status' }),
  }),
  defineRoute({
    name: 'enterprise_get_connectors',
    description: 'List the cc pairs, only those reading with one credential when it is given. Administrators only.',
    module: 'connectors',
    write: false,
    input: { credential: id().optional().describe('a credential id') },
    data: z.array(statusEntry),
    annotations: read('List connectors'),
    request: (a) => ({ base: 'core', method: 'GET', path: '/api/manage/admin/connector', query: { credential: a.credential } }),
  }),
  defineRoute({
    name: 'enterprise_create_connector',
    description: 'Create a connector (web, file or google_drive); it reads nothing until a credential is associated (enterprise_associate_credential). Administrators only.',
    module: 'connectors',
    write: true,
    input: {
      name: text(200),
      source: text(64).describe('web, file or google_drive'),
      input_type: text(64).describe('load_state, poll or event, as the source allows'),
      connector_specific_config: z.record(str('a configuration field', 200), z.unknown()).describe('web: {base_url, web_connector_type}; file: {file_locations}'),
      refresh_freq: z.number().int().min(60).max(31_536_000).optional().describe('seconds between runs (default a day)'),
      prune_freq: z.number().int().min(60).max(31_536_000).nullable().optional(),
      indexing_start: z.iso.datetime({ offset: true }).nullable().optional(),
      access_type: accessType,
      groups: groups.optional(),
    },
    data: open({ id: z.number(), credential_id: z.number().nullable() }),
    annotations: additive('Create a connector'),
    request: (a) => ({ base: 'core', method: 'POST', path: '/api/manage/admin/connector', json: a }),
  }),
  defineRoute({
    name: 'enterprise_get_cc_pair',
    description: 'One connector-credential pair: status, documents indexed, the last index attempt. Administrators only.',
    module: 'connectors',
    write: false,
    input: { cc_pair_id: id() },
    data: ccPair,
    annotations: read('Get a cc pair'),
    request: (a) => ({ base: 'core', method: 'GET', path: `/api/manage/admin/cc-pair/${seg(a.cc_pair_id)}` }),
  }),
  defineRoute({
    name: 'enterprise_update_cc_pair_status',
    description: 'Pause (PAUSED) or resume (ACTIVE) a connector-credential pair. Administrators only.',
    module: 'connectors',
    write: true,
    input: { cc_pair_id: id(), status: z.enum(['ACTIVE', 'PAUSED']) },
    data: ccPair,
    annotations: destructive('Pause or resume a cc pair', true),
    request: (a) => ({ base: 'core', method: 'PUT', path: `/api/manage/admin/cc-pair/${seg(a.cc_pair_id)}/status`, json: { status: a.status } }),
  }),
  defineRoute({
    name: 'enterprise_connector_run_once',
    description: 'Index a connector now: one attempt per pair (or the named credentials\' pairs), from the beginning when asked. Administrators only.',
    module: 'connectors',
    write: true,
    input: { connector_id: id(), credential_ids: z.array(id()).min(1).max(100).optional(), from_beginning: z.boolean().optional() },
    data: open({ attempts: z.array(open({ id: z.number(), cc_pair_id: z.number(), status: z.string() })) }),
    annotations: additive('Run a connector once'),
    request: (a) => ({ base: 'core', method: 'POST', path: '/api/manage/admin/connector/run-once', json: { connector_id: a.connector_id, credential_ids: a.credential_ids, from_beginning: a.from_beginning ?? false } }),
  }),
  defineRoute({
    name: 'enterprise_create_deletion_attempt',
    description: 'Delete a connector-credential pair and its documents from the memory (the credential stays). Administrators only.',
    module: 'connectors',
    write: true,
    input: { connector_id: id(), credential_id: id() },
    data: open({ cc_pair_id: z.number(), status: z.string(), attempt_id: z.number().nullable() }),
    annotations: destructive('Delete a cc pair', true),
    request: (a) => ({ base: 'core', method: 'POST', path: '/api/manage/admin/deletion-attempt', json: { connector_id: a.connector_id, credential_id: a.credential_id } }),
  }),
  defineRoute({
    name: 'enterprise_associate_credential',
    description: 'Pair a credential with a connector of its source, making the cc pair that indexes. Administrators only.',
    module: 'connectors',
    write: true,
    input: { connector_id: id(), credential_id: id(), name: text(200).optional(), access_type: accessType.optional(), groups: groups.optional() },
    data: ccPair,
    annotations: additive('Associate a credential'),
    request: (a) => ({
      base: 'core', method: 'PUT', path: `/api/manage/connector/${seg(a.connector_id)}/credential/${seg(a.credential_id)}`,
      json: { name: a.name, access_type: a.access_type, groups: a.groups },
    }),
  }),
  defineRoute({
    name: 'enterprise_upload_project_file',
    description: `Upload one file (text, or base64 for a binary file; at most ${MAX_PROJECT_FILE_BYTES} bytes) to a chat project. It answers \`processing\`; poll enterprise_get_project_file_statuses.`,
    module: 'chat',
    write: true,
    input: { project_id: id(), ...fileArgs(MAX_PROJECT_FILE_BYTES) },
    refine: (a, ctx) => checkFile(a as FileArgs, MAX_PROJECT_FILE_BYTES, ctx),
    data: fileList,
    annotations: additive('Upload a project file'),
    request: (a) => ({ base: 'core', method: 'POST', path: `/api/chat/projects/${seg(a.project_id)}/files`, multipart: { fields: {}, files: [filePart('files', a as FileArgs)] } }),
  }),
  defineRoute({
    name: 'enterprise_upload_project_files',
    description: `Upload up to ${MAX_PROJECT_FILES} files to a chat project in one request; each answers \`processing\`.`,
    module: 'chat',
    write: true,
    input: { project_id: id(), files: z.array(z.strictObject(fileArgs(MAX_PROJECT_FILE_BYTES))).min(1).max(MAX_PROJECT_FILES) },
    refine: (a, ctx) => a.files.forEach((f, i) => checkFile(f as FileArgs, MAX_PROJECT_FILE_BYTES, ctx, ['files', i])),
    data: fileList,
    annotations: additive('Upload project files'),
    request: (a) => ({ base: 'core', method: 'POST', path: `/api/chat/projects/${seg(a.project_id)}/files`, multipart: { fields: {}, files: a.files.map((f) => filePart('files', f as FileArgs)) } }),
  }),
  defineRoute({
    name: 'enterprise_get_project_file_statuses',
    description: 'The files of a chat project (or only the named ones) and their statuses: processing, completed or failed.',
    module: 'chat',
    write: false,
    input: { project_id: id(), file_ids: z.array(uuid()).min(1).max(100).optional() },
    data: fileList,
    annotations: read('Project file statuses'),
    request: (a) => ({ base: 'core', method: 'GET', path: `/api/chat/projects/${seg(a.project_id)}/files`, query: { file_ids: a.file_ids?.join(',') } }),
  }),
];

/** The tools as the server registers them. */
export const enterpriseTools = serverTools(enterpriseRoutes);
