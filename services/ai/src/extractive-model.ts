import { createHash } from 'node:crypto';
import type { SourceChunk } from './citations';
import { extractiveAnswer } from './extractive';
import type { AnswerRequest, ChatCompletion, ChatMessage, ChatRequest, ChatStreamEvent, JsonSchema, LanguageModel, ToolChoice, ToolDefinition } from './ports';
import { fillSchema, nameWords, QUERY_NAMES, snake } from './schema-filler';
import { completeChecked, streamChecked } from './structured-output';
import { contentTerms } from './text';

/**
 * The embedded default language model: no model file, no network, and the same answer for the same input.
 *
 * - Cited answers (`stream`): quoted sentences with their chunk's marker, streamed word by word so the streaming
 *   route behaves as with a real model.
 * - Tool calls (`chat`, `chatStream`): while tools are offered and the conversation holds no tool result after the
 *   last user message, it calls one tool: the named one for a named `tool_choice`; otherwise the tool whose name
 *   and description share the most words with that message, a tool taking a query-like string argument (`query`,
 *   `question`, `q`, …) counting half a word more (so a search tool is called with the user's question). Ties go to
 *   the tool offered first. Under `auto` a tool with no shared word and no query argument is not called; under
 *   `required` the best one is. Arguments are the tool's parameters filled from the message (`fillSchema`). The
 *   call id is a hash of the conversation and the tool name.
 * - Once tool results are present (or tools are not offered, or `tool_choice` is `none`): an extractive answer to
 *   the last user message from the tool results (a JSON list of records with `title`/`content`-like fields is
 *   read as one source per record, anything else as one source per result), with `[n]` markers numbered in that
 *   order. Without results it answers `NO_SOURCES`: system messages are instructions, never quoted as facts.
 * - Structured output (`json_schema`): the schema filled from the last user message and the sources by rules
 *   (`fillSchema`), then checked against the schema like any model's answer.
 */
export class ExtractiveLanguageModel implements LanguageModel {
  readonly kind = 'extractive' as const;
  readonly model = 'lore-extractive-v1';

  async *stream(request: AnswerRequest): AsyncIterable<string> {
    const previous = findLast(request.history ?? [], (m) => m.role === 'user')?.content;
    const text = extractiveAnswer(inContext(request.question, previous), request.sources);
    const pieces = text.match(/\S+\s*/g) ?? [];
    let budget = request.maxTokens;
    for (const piece of pieces) {
      if (request.signal?.aborted || budget <= 0) return;
      budget -= 1;
      yield piece;
    }
  }

  chat(request: ChatRequest): Promise<ChatCompletion> {
    return completeChecked(request, async (r) => embeddedCompletion(r));
  }

  chatStream(request: ChatRequest): AsyncIterable<ChatStreamEvent> {
    return streamChecked(request, (r) => streamCompletion(embeddedCompletion(r)));
  }
}

/** Streams a finished completion the way a server would: words of text, then each call's id and name, then its arguments in pieces. */
async function* streamCompletion(completion: ChatCompletion): AsyncGenerator<ChatStreamEvent> {
  for (const piece of completion.message.content?.match(/\S+\s*/g) ?? []) yield { type: 'text', text: piece };
  for (const [index, call] of (completion.message.tool_calls ?? []).entries()) {
    yield { type: 'tool_call', index, id: call.id, name: call.function.name, arguments: '' };
    for (let i = 0; i < call.function.arguments.length; i += 16) yield { type: 'tool_call', index, arguments: call.function.arguments.slice(i, i + 16) };
  }
  yield { type: 'done', completion };
}

/** The embedded model's text answer when no tool ran: it quotes sources, and instructions are none (since 2026-12-01). */
export const NO_SOURCES = 'No sources were searched for this question, so there is nothing to answer from.';

/** The embedded model's answer to a chat request (see `ExtractiveLanguageModel`). Pure and deterministic. */
export function embeddedCompletion(request: ChatRequest): ChatCompletion {
  const messages = request.messages;
  const lastUser = findLastIndex(messages, (m) => m.role === 'user');
  const asked = lastUser >= 0 ? (messages[lastUser]?.content ?? '') : '';
  const previous = findLast(messages.slice(0, Math.max(0, lastUser)), (m) => m.role === 'user')?.content ?? undefined;
  // A follow-up ("And what about the second one?") is searched for and answered with the question before it.
  const question = inContext(asked, previous);
  const results = messages.slice(lastUser + 1).filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool');
  const tools = request.tools ?? [];
  const choice: ToolChoice = request.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  if (tools.length > 0 && choice !== 'none' && results.length === 0) {
    const tool = chooseTool(tools, choice, question);
    if (tool) {
      const args = tool.function.parameters ? fillSchema(tool.function.parameters, question, question) : {};
      const id = `call_${createHash('sha256').update(JSON.stringify(messages)).update('\0').update(tool.function.name).digest('hex').slice(0, 24)}`;
      return {
        message: { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: tool.function.name, arguments: JSON.stringify(args) } }] },
        finish_reason: 'tool_calls',
      };
    }
  }
  const format = request.response_format;
  if (format?.type === 'json_schema') {
    const sources = results.length > 0 ? sourcesFromResults(messages, results) : sourcesFromSystem(messages);
    const text = [question, ...sources.map((s) => `${s.title}\n${s.content}`)].join('\n\n');
    return { message: { role: 'assistant', content: JSON.stringify(fillSchema(format.json_schema.schema, text, question)) }, finish_reason: 'stop' };
  }
  // System messages are instructions (a persona's, a service's prompt), never facts to quote: without tool results
  // there is nothing to answer from.
  if (results.length === 0) return { message: { role: 'assistant', content: NO_SOURCES }, finish_reason: 'stop' };
  return { message: { role: 'assistant', content: extractiveAnswer(question, sourcesFromResults(messages, results)) }, finish_reason: 'stop' };
}

function findLast<T>(items: readonly T[], test: (item: T) => boolean): T | undefined {
  for (let i = items.length - 1; i >= 0; i -= 1) if (test(items[i] as T)) return items[i];
  return undefined;
}

/** Words that make a message lean on the one before it: pronouns and determiners pointing back, "and" or "what about" leading. */
const POINTS_BACK = /^(?:and|but|also|so|what about|how about|and what|then)\b|\b(?:it|its|they|them|their|theirs|this|that|these|those|he|him|his|she|her|hers|one|ones|former|latter|same|there|then)\b/i;

/**
 * The question a message asks, read in its conversation: a short follow-up that points back ("And what about the
 * second one?", "When is it released?": at most eight words and a pronoun, or a leading "and"/"what about") is read
 * with the user's question before it, joined. Any other message is read alone.
 */
export function inContext(question: string, previous: string | null | undefined): string {
  if (!previous || previous.trim() === '') return question;
  const words = question.trim().split(/\s+/).filter((w) => w !== '');
  if (words.length === 0 || words.length > 8 || !POINTS_BACK.test(question.trim())) return question;
  return `${previous.trim()} ${question.trim()}`;
}

function findLastIndex<T>(items: T[], test: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i -= 1) if (test(items[i] as T)) return i;
  return -1;
}

function takesQuery(parameters: JsonSchema | undefined): boolean {
  const props = (parameters?.properties ?? {}) as Record<string, JsonSchema>;
  const isString = (p: JsonSchema | undefined) => p !== undefined && (p.type === 'string' || (Array.isArray(p.type) && p.type.includes('string')));
  // A query parameter: a string, or a list of strings (`queries`), under a name that says so.
  return Object.entries(props).some(([key, p]) => QUERY_NAMES.test(snake(key)) && (isString(p) || (p.type === 'array' && isString(p.items as JsonSchema | undefined))));
}

/** The tool the embedded model calls, or none (see `ExtractiveLanguageModel`). */
export function chooseTool(tools: ToolDefinition[], choice: ToolChoice, message: string): ToolDefinition | undefined {
  if (typeof choice === 'object') return tools.find((t) => t.function.name === choice.function.name);
  if (choice === 'none') return undefined;
  const asked = new Set(contentTerms(message));
  let best: { tool: ToolDefinition; score: number } | undefined;
  for (const tool of tools) {
    const terms = new Set(contentTerms(`${nameWords(tool.function.name)} ${tool.function.description ?? ''}`));
    let score = takesQuery(tool.function.parameters) ? 0.5 : 0;
    for (const t of asked) if (terms.has(t)) score += 1;
    if (!best || score > best.score) best = { tool, score };
  }
  if (!best) return undefined;
  return choice === 'required' || best.score > 0 ? best.tool : undefined;
}

const LIST_KEYS = ['results', 'items', 'data', 'documents', 'hits', 'sources', 'chunks', 'matches'];
const TITLE_KEYS = ['title', 'name', 'heading', 'subject'];
const CONTENT_KEYS = ['content', 'text', 'snippet', 'body', 'answer', 'summary', 'description'];
const ID_KEYS = ['document_id', 'id', 'url', 'chunk_id'];
const MAX_SOURCES = 20;

function field(record: Record<string, unknown>, keys: string[]): string | undefined {
  for (const k of keys) {
    const v = record[k];
    if (typeof v === 'string' && v.trim() !== '') return v;
    if (typeof v === 'number') return String(v);
  }
  return undefined;
}

/** Tool results as numbered sources: one per record of a JSON list of records, else one per result. */
function sourcesFromResults(messages: ChatMessage[], results: Array<Extract<ChatMessage, { role: 'tool' }>>): SourceChunk[] {
  const names = new Map<string, string>();
  for (const m of messages) if (m.role === 'assistant') for (const c of m.tool_calls ?? []) names.set(c.id, c.function.name);
  const out: SourceChunk[] = [];
  for (const result of results) {
    const toolName = names.get(result.tool_call_id) ?? 'tool result';
    let parsed: unknown;
    try {
      parsed = JSON.parse(result.content);
    } catch {
      parsed = undefined;
    }
    let records: unknown[] | undefined;
    if (Array.isArray(parsed)) records = parsed;
    else if (parsed && typeof parsed === 'object') {
      const list = LIST_KEYS.map((k) => (parsed as Record<string, unknown>)[k]).find(Array.isArray);
      records = list ?? [parsed];
    }
    if (!records) {
      out.push({ index: out.length + 1, title: toolName, document_id: result.tool_call_id, content: result.content });
      continue;
    }
    for (const [i, record] of records.entries()) {
      if (out.length >= MAX_SOURCES) break;
      if (typeof record === 'string') {
        out.push({ index: out.length + 1, title: toolName, document_id: `${result.tool_call_id}#${i}`, content: record });
      } else if (record && typeof record === 'object') {
        const r = record as Record<string, unknown>;
        out.push({
          index: out.length + 1,
          title: field(r, TITLE_KEYS) ?? toolName,
          document_id: field(r, ID_KEYS) ?? `${result.tool_call_id}#${i}`,
          content: field(r, CONTENT_KEYS) ?? JSON.stringify(r),
        });
      }
    }
  }
  return out.slice(0, MAX_SOURCES);
}

function sourcesFromSystem(messages: ChatMessage[]): SourceChunk[] {
  return messages
    .filter((m): m is Extract<ChatMessage, { role: 'system' }> => m.role === 'system')
    .slice(0, MAX_SOURCES)
    .map((m, i) => ({ index: i + 1, title: 'context', document_id: `system#${i}`, content: m.content }));
}
