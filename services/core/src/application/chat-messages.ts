import { cutUnits, groundedAnswerStream, type ChatMessage, type ConversationMessage, type ModelOverrides, type SourceChunk, type ToolDefinition } from '@lore/ai';
import type { RetrievedChunk, Sql } from '@lore/runtime';
import { readsOwnMemory } from '@lore/contracts';
import { citationStripper, searchToolCall, withoutCitations, type AnswerStreamPart, type CitationInfo, type SearchDoc, type StoredSearchCall, type ToolCallRecord } from '../domain/answer-parts';
import { latestBranch } from '../domain/message-tree';
import { FILE_CONTEXT, indexFile, rankPassages, type FilePassage, type IndexedFile } from '../domain/project-files';
import { availableContextTokens, countTokens, maxDocumentTokens } from '../domain/tokens';
import { toolById, unknownToolIds } from '../domain/tools';
import { getSession, insertSession, sessionMessages } from '../store/chat-sessions';
import { clearAnswering, deleteFeedback, insertMessage, insertMessageAlone, insertRootMessage, lockSessionForTurn, markAnswering, messageRef, setLatestBranch, upsertFeedback, type MessageRef, type TurnMessage } from '../store/chat-messages';
import { getPersona, personaOfSession } from '../store/personas';
import { projectFileHeads, projectFileTextsOf } from '../store/project-files';
import { automaticName, turnSourceTypes } from './chat-rules';
import { assertRoomForSession } from './chat-sessions';
import { PassageCache } from './passage-cache';
import type { CoreDeps } from './context';
import { coreError } from './errors';
import { seedTenant } from './personas';
import type { Principal } from './principal';
import { randomUUID } from 'node:crypto';

export interface TurnInput {
  sessionId: string;
  message: string;
  /** The message to add the user's message under (an edit or regeneration names an earlier one); none: the leaf of the latest branch. */
  parentMessageId?: number | null;
  /** Answer the existing user message at `parentMessageId` (or the latest leaf) instead of adding one. */
  useExistingUserMessage: boolean;
  allowedToolIds?: number[];
  forcedToolId?: number;
  /** The request's filter: only documents of these source types (e.g. `memory`, `web`); undefined: every source. */
  sourceTypes?: string[];
  includeCitations: boolean;
}

/** A turn whose user message is stored and whose tools are decided: answering it cannot fail with a 4xx any more. */
export interface PreparedTurn {
  principal: Principal;
  identityToken: string;
  sessionId: string;
  persona: { instructions: string; tool_ids: number[] };
  userMessageId: string;
  parentMessageId: string | null;
  question: string;
  /** Earlier messages of the branch, oldest first (for the model's context). */
  history: TurnMessage[];
  tools: Array<'internal_search'>;
  forced: 'internal_search' | null;
  /** What the search keeps to: the persona's source types narrowed by the request's (`turnSourceTypes`); undefined: every source. */
  sourceTypes?: string[];
  includeCitations: boolean;
  /** The model and temperature this turn asks for: the session's overrides, else the persona's, else the configured. */
  overrides: ModelOverrides;
  /** The session's project, and the passages of its completed files this turn gives the answer (none outside a project). */
  projectId: number | null;
  files: FilePassage[];
  /** The retrieval of the question itself, started beside the turn's transaction (`startEarlyRetrieval`). */
  early: EarlyRetrieval | null;
}

/**
 * The question's own retrieval, started as the turn arrives, before its transaction (session lock, persona, the
 * message stored) and the model's tool decision: the answer's search is usually the question itself (always with
 * the embedded model, and when a model keeps the user's words), so its wait overlaps theirs. Used only when the
 * search asks exactly that query with the same source filter; otherwise, or when the turn is refused, it is
 * cancelled and its chunks never seen (docs/core.md, "The question's retrieval starts early").
 */
export interface EarlyRetrieval {
  query: string;
  /** The source filter the memory API was asked with (`retrievalFilter` of the request's types). */
  filter: string[] | undefined;
  chunks: Promise<RetrievedChunk[]>;
  cancel(): void;
}

function startEarlyRetrieval(deps: CoreDeps, identityToken: string, input: TurnInput): EarlyRetrieval | null {
  if (input.useExistingUserMessage || input.message.trim() === '') return null;
  // A request that leaves the search out (its allowed tools, or a forced other tool) will not search.
  const isSearch = (id: number) => toolById(id)?.name === 'internal_search';
  if (input.allowedToolIds && !input.allowedToolIds.some(isSearch)) return null;
  if (input.forcedToolId !== undefined && !isSearch(input.forcedToolId)) return null;
  // A filter that keeps no source type finds nothing: there is nothing to retrieve.
  if (input.sourceTypes?.length === 0) return null;
  const abort = new AbortController();
  const filter = retrievalFilter(input.sourceTypes);
  const chunks = deps.chat.knowledge.retrieve(identityToken, input.message, undefined, abort.signal, filter);
  // Unused, or cancelled, its failure is nobody's: awaited, it fails the search as any retrieval would.
  chunks.catch(() => undefined);
  return { query: input.message, filter, chunks, cancel: () => abort.abort() };
}

const INTERNAL_SEARCH: ToolDefinition = {
  type: 'function',
  function: {
    name: 'internal_search',
    description: 'Search the organisation\'s indexed documents. Call it for any question the documents may answer.',
    parameters: {
      type: 'object',
      properties: { queries: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3, description: 'one to three search queries' } },
      required: ['queries'],
      additionalProperties: false,
    },
  },
};

/** Most earlier messages given to the model as context. */
const HISTORY_MESSAGES = 10;

/** The session's model and temperature overrides win over the persona's; neither set: the configured ones. */
function turnOverrides(
  session: { current_alternate_model: string | null; current_temperature_override: number | null },
  persona: { model: string | null; temperature: number | null },
): ModelOverrides {
  const model = session.current_alternate_model ?? persona.model;
  const temperature = session.current_temperature_override ?? persona.temperature;
  return { ...(model !== null ? { model } : {}), ...(temperature !== null ? { temperature } : {}) };
}

/**
 * Stores the user's message (or finds the existing one) and decides the tools, in one transaction, so every
 * refusal (unknown session or parent, a tool the persona does not allow) is an HTTP error before any answer part.
 */
export async function prepareTurn(deps: CoreDeps, p: Principal, identityToken: string, input: TurnInput): Promise<PreparedTurn> {
  // An unknown tool is refused here as in a persona's `tool_ids`, rather than silently allowing nothing.
  const unknown = unknownToolIds(input.allowedToolIds ?? []);
  if (unknown.length > 0) throw coreError('BAD_REQUEST', `unknown tool id(s) in allowed_tool_ids: ${unknown.join(', ')}`);
  const early = readsOwnMemory(p) ? startEarlyRetrieval(deps, identityToken, input) : null;
  try {
    return await storeTurn(deps, p, identityToken, input, early);
  } catch (err) {
    early?.cancel();
    throw err;
  }
}

function storeTurn(deps: CoreDeps, p: Principal, identityToken: string, input: TurnInput, early: EarlyRetrieval | null): Promise<PreparedTurn> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    const named = input.parentMessageId === undefined || input.parentMessageId === null ? null : String(input.parentMessageId);
    // A new question names an unnamed session; a seeded one was named when it was seeded. The path starts at the
    // message asked for, else at the latest branch's leaf, and goes up from there.
    const session = await lockSessionForTurn(sql, p.tenantId, input.sessionId, p.owner, input.useExistingUserMessage ? '' : automaticName(input.message), named, HISTORY_MESSAGES + 1);
    if (!session) throw coreError('NOT_FOUND', 'chat session not found');
    const persona = session.persona;
    if (!persona) throw coreError('NOT_FOUND', 'the session\'s persona no longer exists');
    const start = session.path[0];

    let userMessageId: string;
    let parentMessageId: string | null;
    let question: string;
    /** The messages before the turn's user message, nearest first. */
    let earlier: TurnMessage[];
    const answeringUntil = Date.now() + ANSWERING_MS;
    if (input.useExistingUserMessage) {
      const target = start;
      if (!target || target.message_type !== 'user') throw coreError('BAD_REQUEST', 'use_existing_user_message needs a user message of this session to answer');
      if (target.answering) throw answeringConflict(target.message_id);
      earlier = session.path.slice(1);
      userMessageId = target.message_id;
      parentMessageId = target.parent_message_id;
      question = target.message;
      // Answering it makes its branch the latest one, up to the root: it may be below a branch point higher up.
      await setLatestBranch(sql, p.tenantId, session.session_id, userMessageId);
      await markAnswering(sql, p.tenantId, userMessageId, answeringUntil);
    } else {
      if (!start) throw coreError('NOT_FOUND', 'parent message not found in this session');
      // A question goes under an answer (or the session's first message), never under another question.
      let parent = start;
      earlier = session.path;
      if (start.message_type === 'user') {
        if (named !== null) {
          throw coreError('BAD_REQUEST', `message ${named} is a question: a new message goes under an answer; to answer this one, send use_existing_user_message`);
        }
        if (start.answering) throw answeringConflict(start.message_id);
        // The latest question has no answer and none is coming (a seeded question, or a turn that never ended):
        // the new message takes its place, as a sibling that becomes the latest branch.
        const above = session.path[1];
        if (!above || above.message_id !== start.parent_message_id) throw coreError('NOT_FOUND', 'parent message not found in this session');
        parent = above;
        earlier = session.path.slice(1);
      }
      parentMessageId = parent.message_id;
      question = input.message;
      // A named parent may be on an older branch: its branch becomes the shown one, and the new message (its latest
      // child, by the insert) ends it. An unnamed one is on the shown branch already.
      if (named !== null) await setLatestBranch(sql, p.tenantId, session.session_id, parentMessageId);
      userMessageId = await insertMessage(sql, p.tenantId, {
        session_id: session.session_id, parent_message_id: parentMessageId, message_type: 'user', message: question, token_count: countTokens(question), answering_until_ms: answeringUntil,
      });
    }

    // Tools: what the persona allows, narrowed by the request; a forced tool must be among them.
    let allowed = persona.tool_ids;
    if (input.allowedToolIds) allowed = allowed.filter((id) => input.allowedToolIds!.includes(id));
    if (input.forcedToolId !== undefined && !allowed.includes(input.forcedToolId)) {
      throw coreError('BAD_REQUEST', `tool ${input.forcedToolId} is not allowed for this persona and request`);
    }
    // A credential denied the memory (its key scope, app permissions or OAuth scopes) searches nothing: the answer
    // would hand it the documents' content (docs/core.md, "Who may search").
    const searches = readsOwnMemory(p);
    if (!searches && input.forcedToolId !== undefined && toolById(input.forcedToolId)?.name === 'internal_search') {
      throw coreError('FORBIDDEN', 'this credential may not read the memory, so it cannot search it (its key scope, app permissions or OAuth scopes leave the memory out)');
    }
    const names = allowed.map((id) => toolById(id)?.name).filter((n): n is 'internal_search' => n === 'internal_search' && searches);
    // The branch up to (not including) the user message, oldest first.
    const history = earlier.slice(0, HISTORY_MESSAGES).reverse();
    const sourceTypes = turnSourceTypes(persona.source_types, input.sourceTypes);
    // A session in a project answers from the project's files too (unless the source types leave `file` out).
    let files: FilePassage[] = [];
    if (session.project_id !== null && (!sourceTypes || sourceTypes.includes(FILE_SOURCE))) {
      files = rankPassages(await projectFiles(deps, sql, p.tenantId, session.project_id), question);
    }
    return {
      principal: p,
      identityToken,
      sessionId: session.session_id,
      persona,
      userMessageId,
      parentMessageId,
      question,
      history,
      tools: names,
      forced: input.forcedToolId !== undefined ? 'internal_search' : null,
      sourceTypes,
      includeCitations: input.includeCitations,
      overrides: turnOverrides(session, persona),
      projectId: session.project_id,
      files,
      early,
    };
  });
}

/**
 * A project's completed files split into passages, oldest first: those this process indexed before from its cache
 * (./passage-cache.ts), the others read and indexed now.
 */
async function projectFiles(deps: CoreDeps, sql: Sql, tenantId: string, projectId: number): Promise<IndexedFile[]> {
  const heads = await projectFileHeads(sql, tenantId, projectId, FILE_CONTEXT.maxFiles);
  const indexed = new Map(heads.map((h) => [h.file_id, deps.passages.get(PassageCache.key(tenantId, h))]));
  const missing = heads.filter((h) => !indexed.get(h.file_id));
  if (missing.length > 0) {
    const texts = await projectFileTextsOf(sql, tenantId, missing.map((h) => h.file_id), FILE_CONTEXT.maxCharsPerFile);
    for (const h of missing) {
      const text = texts.get(h.file_id);
      if (text === undefined) continue;
      const file = indexFile({ ...h, text });
      deps.passages.set(PassageCache.key(tenantId, h), file);
      indexed.set(h.file_id, file);
    }
  }
  return heads.map((h) => indexed.get(h.file_id)).filter((f): f is IndexedFile => f !== undefined);
}

/**
 * How long a turn's question counts as being answered when its answer never comes (the process answering it died).
 * Longer than any answer takes: the model's calls time out well before.
 */
const ANSWERING_MS = 10 * 60_000;

const answeringConflict = (messageId: string) =>
  coreError('CONFLICT', `message ${messageId} of this session is still being answered: send the next message once its answer has come`);

/** The source type of a chat project's files as answers show them. */
const FILE_SOURCE = 'file';

/** A passage of a project file as a search document the answer may cite. */
function fileDoc(f: FilePassage, projectId: number): SearchDoc {
  const blurb = f.text.length > 240 ? `${cutUnits(f.text, 240).replace(/\s+\S*$/, '')}…` : f.text;
  return {
    document_id: f.fileId,
    chunk_ind: f.index,
    semantic_identifier: f.name,
    link: `/api/chat/projects/${projectId}/files/${f.fileId}`,
    blurb,
    source_type: FILE_SOURCE,
    boost: 0,
    hidden: false,
    metadata: { project_id: String(projectId), file_id: f.fileId },
    score: f.score,
    is_relevant: null,
    relevance_explanation: null,
    match_highlights: [],
    updated_at: f.updatedAt.toISOString(),
    primary_owners: null,
    secondary_owners: null,
    is_internet: false,
  };
}

/** The source type of a document ingested or uploaded into the memory; a connector's documents carry its own. */
const MEMORY_SOURCE = 'memory';

const sourceTypeOf = (c: RetrievedChunk): string => c.source_type ?? MEMORY_SOURCE;

/**
 * What the memory API is asked to keep to for `wanted` source types: connector kinds filter inside the retrieval;
 * `memory` (documents without a connector) cannot be said there, so with it the retrieval is unfiltered and the
 * chunks are kept to `wanted` afterwards.
 */
function retrievalFilter(wanted: string[] | undefined): string[] | undefined {
  return wanted && !wanted.includes(MEMORY_SOURCE) ? wanted : undefined;
}

/** Whether two retrieval filters ask the memory API for the same thing (the same types, in any order). */
function sameFilter(a: string[] | undefined, b: string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const [sa, sb] = [new Set(a), new Set(b)];
  return sa.size === sb.size && [...sa].every((t) => sb.has(t));
}

/**
 * A memory document's path in the memory API, naming the memory the search read (`?memory_id=`), so the same key
 * opens it whatever workspace is active when it follows the link; without it the path read the key's default
 * workspace and was a 404 for a chat run in another one.
 */
function memoryDocumentLink(documentId: string, memoryId: string): string {
  const path = `/api/v1/memory/documents/${encodeURIComponent(documentId)}`;
  return memoryId ? `${path}?memory_id=${encodeURIComponent(memoryId)}` : path;
}

function searchDoc(c: RetrievedChunk, memoryId: string): SearchDoc {
  return {
    document_id: c.document_id,
    chunk_ind: c.chunk_ind,
    semantic_identifier: c.title,
    // A connector's document opens where it lives; a memory document through the memory API.
    link: c.link ?? memoryDocumentLink(c.document_id, memoryId),
    blurb: c.snippet,
    source_type: sourceTypeOf(c),
    boost: 0,
    hidden: false,
    metadata: { ...c.metadata, vault_id: c.vault_id, chunk_id: c.chunk_id, arrived_by: c.source },
    score: c.score,
    is_relevant: null,
    relevance_explanation: null,
    match_highlights: [],
    updated_at: c.updated_at,
    primary_owners: c.primary_owners,
    secondary_owners: c.secondary_owners,
    is_internet: false,
  };
}

/** The queries of an internal_search call, or the question itself when the arguments give none usable. */
function queriesOf(args: string, question: string): string[] {
  try {
    const parsed = JSON.parse(args) as { queries?: unknown };
    const queries = Array.isArray(parsed.queries) ? parsed.queries.filter((q): q is string => typeof q === 'string' && q.trim() !== '').slice(0, 3) : [];
    return queries.length > 0 ? queries : [question];
  } catch {
    return [question];
  }
}

/**
 * The branch before the question as the model reads it: the questions, and the answers that did not fail. An
 * answer's `[n]` markers are left out: they numbered that turn's sources, not this one's.
 */
function conversationOf(turn: PreparedTurn): ConversationMessage[] {
  const out: ConversationMessage[] = [];
  for (const m of turn.history) {
    if (m.message_type === 'user') out.push({ role: 'user', content: m.message });
    else if (m.message_type === 'assistant' && !m.error) out.push({ role: 'assistant', content: withoutCitations(m.message) });
  }
  return out;
}

function historyMessages(turn: PreparedTurn): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (turn.persona.instructions) out.push({ role: 'system', content: turn.persona.instructions });
  out.push(...conversationOf(turn));
  out.push({ role: 'user', content: turn.question });
  return out;
}

/**
 * Answers a prepared turn, part by part (AnswerStreamPart, docs/core.md): the model decides whether to search
 * (or is made to), the one retrieval engine finds the documents with the caller's identity, and the answer is
 * streamed through the one citation checker. The assistant message is stored at the end — with the error when
 * the answer failed — so the session's tree always records what happened.
 */
export async function* answerTurn(deps: CoreDeps, turn: PreparedTurn, signal?: AbortSignal): AsyncGenerator<AnswerStreamPart> {
  // The question's early retrieval follows the answer's signal, and ends with the answer if the search never used it.
  const cancelEarly = () => turn.early?.cancel();
  signal?.addEventListener('abort', cancelEarly, { once: true });
  try {
    yield* answerParts(deps, turn, signal);
  } finally {
    signal?.removeEventListener('abort', cancelEarly);
    cancelEarly();
  }
}

async function* answerParts(deps: CoreDeps, turn: PreparedTurn, signal?: AbortSignal): AsyncGenerator<AnswerStreamPart> {
  const { chat } = deps;
  let early = turn.early;
  yield { type: 'message_start', chat_session_id: turn.sessionId, user_message_id: Number(turn.userMessageId), parent_message_id: turn.parentMessageId === null ? null : Number(turn.parentMessageId) };
  const toolCalls: StoredSearchCall[] = [];
  let docs: SearchDoc[] = [];
  let answer = '';
  let citations: CitationInfo[] = [];
  let error: string | null = null;
  try {
    // A client gone before the answer began (while the turn was prepared) is not waited on: the answer is cancelled.
    signal?.throwIfAborted();
    let sources: SourceChunk[] | null = null;
    // The project's files come first, as their own search documents part; the search (if any) adds to them.
    if (turn.projectId !== null && turn.files.length > 0) {
      docs = turn.files.map((f) => fileDoc(f, turn.projectId!));
      sources = turn.files.map((f, i) => ({ index: i + 1, title: f.name, document_id: f.fileId, content: f.text }));
      yield { type: 'search_documents', top_documents: docs };
    }
    if (turn.tools.includes('internal_search')) {
      let queries = [turn.question];
      let called = turn.forced === 'internal_search';
      if (!called) {
        // `queriesOf` reads the search's arguments itself, tolerating more than three queries or no JSON at all, so
        // the port's strict argument check must not refuse the completion before it can.
        const decision = await chat.languageModel.chat({
          messages: historyMessages(turn), tools: [INTERNAL_SEARCH], tool_choice: 'auto', maxTokens: 256, signal, overrides: turn.overrides,
          uncheckedArguments: [INTERNAL_SEARCH.function.name],
        });
        const call = decision.message.tool_calls?.find((c) => c.function.name === 'internal_search');
        if (call) {
          called = true;
          queries = queriesOf(call.function.arguments, turn.question);
        }
      }
      if (called) {
        const args = { queries };
        yield { type: 'tool_call', tool_name: 'internal_search', tool_arguments: args };
        const found = new Map<string, RetrievedChunk>();
        const wanted = turn.sourceTypes;
        for (const q of queries) {
          // Each query retrieves as many chunks as a memory search answers from (the memory API's default); the
          // question's own was started with the turn.
          const filter = retrievalFilter(wanted);
          const mine = early?.query === q && sameFilter(early.filter, filter) ? early : null;
          if (mine) early = null;
          // A filter that keeps no source type (a persona's and a request's with none in common) finds nothing.
          const retrieved = mine ? mine.chunks : wanted?.length === 0 ? Promise.resolve([]) : chat.knowledge.retrieve(turn.identityToken, q, undefined, signal, filter);
          for (const c of await retrieved) {
            const seen = found.get(c.chunk_id);
            if (!seen || seen.score < c.score) found.set(c.chunk_id, c);
          }
        }
        const chunks = [...found.values()]
          .filter((c) => !wanted || wanted.includes(sourceTypeOf(c)))
          .sort((a, b) => b.score - a.score)
          .slice(0, chat.maxDocuments);
        const searched = chunks.map((c) => searchDoc(c, turn.principal.memoryId));
        const first = sources?.length ?? 0;
        const stored = docs.length;
        docs = [...docs, ...searched];
        sources = [...(sources ?? []), ...chunks.map((c, i) => ({ index: first + i + 1, title: c.title, document_id: c.document_id, content: c.content }))];
        toolCalls.push({ tool_name: 'internal_search', tool_arguments: args, pre_reasoning: null, documents: [stored, stored + searched.length] });
        yield { type: 'search_documents', top_documents: searched };
      }
    }
    if (sources) {
      const fallback = { noSources: 'No indexed document matches this question.', unanswered: 'The documents found do not answer this question.' };
      // Without citations the caller gets no citation_info to read markers by: the text it is sent has none. The
      // stored message keeps them, with its citations.
      const strip = turn.includeCitations ? null : citationStripper();
      // The answer is written with the persona's instructions and the conversation as well as the sources, as an
      // answer without a search is: a follow-up is read in context, in the persona's tone.
      const context = { instructions: turn.persona.instructions, history: conversationOf(turn) };
      for await (const piece of groundedAnswerStream(chat.languageModel, { question: turn.question, sources, maxTokens: chat.answerMaxTokens, signal, fallback, overrides: turn.overrides, ...context })) {
        if (piece.type === 'token') {
          answer += piece.text;
          const text = strip ? strip.push(piece.text) : piece.text;
          if (text) yield { type: 'answer_delta', text };
        } else {
          answer = piece.answer;
          citations = piece.citations.map((c) => ({ citation_num: c.index, document_id: c.document_id }));
        }
      }
      const rest = strip?.end();
      if (rest) yield { type: 'answer_delta', text: rest };
    } else {
      // No search: the model answers from the conversation alone, without citations.
      const completion = await chat.languageModel.chat({ messages: historyMessages(turn), maxTokens: chat.answerMaxTokens, signal, overrides: turn.overrides });
      answer = withoutCitations(completion.message.content ?? '');
      if (answer) yield { type: 'answer_delta', text: answer };
    }
    if (turn.includeCitations) for (const c of citations) yield { type: 'citation_info', ...c };
  } catch (err) {
    error = signal?.aborted ? 'the answer was cancelled' : 'the answer could not be completed';
    deps.logger.warn({ err, session_id: turn.sessionId }, 'chat answer failed');
    yield { type: 'error', error };
  }
  let messageId: string;
  try {
    messageId = await insertMessageAlone(deps.db, turn.principal.tenantId, {
      session_id: turn.sessionId,
      parent_message_id: turn.userMessageId,
      message_type: 'assistant',
      message: answer,
      token_count: countTokens(answer),
      citations: Object.fromEntries(citations.map((c) => [String(c.citation_num), c.document_id])),
      documents: docs,
      tool_calls: toolCalls,
      error,
    });
  } catch (err) {
    // No answer will come for the question now: the session's next turn may replace it at once, rather than meet a
    // 409 until the mark expires.
    await clearAnswering(deps.db, turn.principal.tenantId, turn.userMessageId).catch((e: unknown) => deps.logger.warn({ err: e, session_id: turn.sessionId }, 'could not clear a question\'s answering mark'));
    // The session was hard-deleted while its answer was written (its messages went with it): as absent as any
    // other deleted session, not a fault.
    if ((err as { code?: string }).code === '23503') throw coreError('NOT_FOUND', `chat session ${turn.sessionId} not found: it was deleted while its answer was written`);
    throw err;
  }
  yield { type: 'stop', message_id: Number(messageId), chat_session_id: turn.sessionId, stop_reason: error ? 'error' : 'finished' };
}

/** The complete answer (stream=false): exactly spec 2's fields, built from the same parts a stream sends. */
export interface CompleteAnswer {
  answer: string;
  answer_citationless: string;
  pre_answer_reasoning: string | null;
  tool_calls: ToolCallRecord[];
  top_documents: SearchDoc[];
  citation_info: CitationInfo[];
  message_id: number;
  chat_session_id: string | null;
  error_msg: string | null;
}

export async function completeTurn(deps: CoreDeps, turn: PreparedTurn, signal?: AbortSignal): Promise<CompleteAnswer> {
  const out: CompleteAnswer = { answer: '', answer_citationless: '', pre_answer_reasoning: null, tool_calls: [], top_documents: [], citation_info: [], message_id: 0, chat_session_id: turn.sessionId, error_msg: null };
  let pendingCall: { tool_name: string; tool_arguments: Record<string, unknown> } | null = null;
  for await (const part of answerTurn(deps, turn, signal)) {
    if (part.type === 'answer_delta') out.answer += part.text;
    else if (part.type === 'tool_call') pendingCall = { tool_name: part.tool_name, tool_arguments: part.tool_arguments };
    else if (part.type === 'search_documents') {
      // A project session's file passages come in a part of their own, before the search's.
      out.top_documents = [...out.top_documents, ...part.top_documents];
      if (pendingCall) {
        out.tool_calls.push(searchToolCall(pendingCall, part.top_documents));
        pendingCall = null;
      }
    } else if (part.type === 'citation_info') out.citation_info.push({ citation_num: part.citation_num, document_id: part.document_id });
    else if (part.type === 'error') out.error_msg = part.error;
    else if (part.type === 'stop') out.message_id = part.message_id ?? 0;
  }
  out.answer_citationless = withoutCitations(out.answer);
  if (!turn.includeCitations) out.answer = out.answer_citationless;
  return out;
}

/** A message the caller may act on: in one of their own sessions, which is not deleted ("a deleted session cannot be changed"). */
const actionable = (m: MessageRef | null, p: Principal): m is MessageRef => m !== null && m.owner === p.owner && !m.session_deleted;

/** Switches branches (ChatMessageIdentifier): the message's branch is the one shown, every ancestor's latest child on its path. */
export async function setMessageAsLatest(deps: CoreDeps, p: Principal, messageId: number): Promise<void> {
  const ok = await deps.db.withTenant(p.tenantId, async (sql) => {
    const m = await messageRef(sql, p.tenantId, messageId);
    if (!actionable(m, p)) return false;
    await setLatestBranch(sql, p.tenantId, m.session_id, m.message_id);
    return true;
  });
  if (!ok) throw coreError('NOT_FOUND', 'chat message not found');
}

/** Feedback on an answer of one's own sessions; a second call replaces the first. */
export async function giveFeedback(deps: CoreDeps, p: Principal, f: { chat_message_id: number; is_positive: boolean | null; feedback_text: string | null; predefined_feedback: string | null }): Promise<void> {
  const ok = await deps.db.withTenant(p.tenantId, async (sql) => {
    const m = await messageRef(sql, p.tenantId, f.chat_message_id);
    if (!actionable(m, p)) return 'missing';
    if (m.message_type !== 'assistant') return 'not_answer';
    await upsertFeedback(sql, p.tenantId, { message_id: m.message_id, owner: p.owner, is_positive: f.is_positive, feedback_text: f.feedback_text, predefined_feedback: f.predefined_feedback });
    return 'ok';
  });
  if (ok === 'missing') throw coreError('NOT_FOUND', 'chat message not found');
  if (ok === 'not_answer') throw coreError('BAD_REQUEST', 'feedback is given on answers (assistant messages) only');
}

export async function removeFeedback(deps: CoreDeps, p: Principal, messageId: number): Promise<void> {
  const ok = await deps.db.withTenant(p.tenantId, async (sql) => {
    const m = await messageRef(sql, p.tenantId, messageId);
    if (!actionable(m, p)) return false;
    return deleteFeedback(sql, p.tenantId, m.message_id, p.owner);
  });
  if (!ok) throw coreError('NOT_FOUND', 'no feedback on this message');
}

/**
 * MaxSelectedDocumentTokens: what selected documents may take for this persona. A deleted persona answers too: the
 * sessions made with it still answer with its instructions, so their clients still need its budget (until 2026-11-30
 * it was 404 while `available-context-tokens` of the same sessions answered).
 */
export async function maxSelectedDocumentTokens(deps: CoreDeps, p: Principal, personaId: number): Promise<number> {
  await seedTenant(deps, p.tenantId);
  const persona = await deps.db.withTenant(p.tenantId, (sql) => personaOfSession(sql, p.tenantId, personaId));
  if (!persona) throw coreError('NOT_FOUND', 'persona not found');
  return maxDocumentTokens(persona.instructions);
}

/** AvailableContextTokensResponse: what is left of the context after the persona and the latest branch. */
export async function availableTokens(deps: CoreDeps, p: Principal, sessionId: string): Promise<number> {
  const n = await deps.db.withTenant(p.tenantId, async (sql) => {
    const session = await getSession(sql, p.tenantId, sessionId);
    if (!session || session.owner !== p.owner || session.deleted_at) return null;
    const persona = await personaOfSession(sql, p.tenantId, session.persona_id);
    const used = latestBranch(await sessionMessages(sql, p.tenantId, sessionId)).reduce((sum, m) => sum + m.token_count, 0);
    return availableContextTokens(persona?.instructions ?? '', used);
  });
  if (n === null) throw coreError('NOT_FOUND', 'chat session not found');
  return n;
}

/**
 * ChatSeedRequest (our design): a new session of the caller on a persona, optionally with a first user message
 * left unanswered — `send-message` with `use_existing_user_message` answers it. It counts as a session created
 * (`MAX_SESSIONS_PER_OWNER`, 409 past it).
 */
export async function seedSession(deps: CoreDeps, p: Principal, input: { persona_id: number; description?: string | null; message?: string | null }): Promise<{ chat_session_id: string; message_id: number | null }> {
  await seedTenant(deps, p.tenantId);
  return deps.db.withTenant(p.tenantId, async (sql) => {
    await assertRoomForSession(sql, p);
    const persona = await getPersona(sql, p.tenantId, input.persona_id, true);
    if (!persona) throw coreError('BAD_REQUEST', `persona ${input.persona_id} does not exist`);
    const name = input.description || automaticName(input.message ?? '');
    const session = await insertSession(sql, p.tenantId, { session_id: randomUUID(), owner: p.owner, name, persona_id: persona.persona_id, project_id: null });
    const root = await insertRootMessage(sql, p.tenantId, session.session_id);
    if (!input.message) return { chat_session_id: session.session_id, message_id: null };
    const id = await insertMessage(sql, p.tenantId, { session_id: session.session_id, parent_message_id: root, message_type: 'user', message: input.message, token_count: countTokens(input.message) });
    return { chat_session_id: session.session_id, message_id: Number(id) };
  });
}
