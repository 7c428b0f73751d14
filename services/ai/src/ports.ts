import type { SourceChunk } from './citations';

export interface AnswerRequest {
  question: string;
  /** Retrieved chunks, numbered from 1; the model cites them as [n]. */
  sources: SourceChunk[];
  maxTokens: number;
  signal?: AbortSignal;
  /** This request's model and sampling temperature instead of the configured ones (a chat persona's or session's). */
  overrides?: ModelOverrides;
  /**
   * The asker's own instructions (a chat persona's: tone, language, format), followed within the grounding rules,
   * which they never override. A model that cannot use them (the embedded one) ignores them.
   */
  instructions?: string;
  /**
   * The conversation before the question, oldest first, so a follow-up ("and its budget?") is read in context.
   * Adapters keep only its last messages, each cut to a bound; the embedded model ignores it.
   */
  history?: ConversationMessage[];
}

/** An earlier message of a conversation, as an answer's context. */
export interface ConversationMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** A request's own model and temperature; a provider that has one fixed model may ignore them. */
export interface ModelOverrides {
  model?: string;
  temperature?: number;
}

/** A JSON Schema (the subset OpenAI's structured outputs accept: objects, arrays, scalars, enums, anyOf, $defs). */
export type JsonSchema = Record<string, unknown>;

/** A call the assistant asks for, in the OpenAI wire format: `arguments` is a JSON text. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One chat message in the OpenAI wire format. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** A function the model may call; `parameters` is the JSON Schema of its arguments object. */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: JsonSchema; strict?: boolean };
}

/** `auto`: the model decides; `none`: no call; `required`: at least one call; or this one function. */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** Structured output: the answer is one JSON value that matches `schema`. */
export interface JsonSchemaFormat {
  type: 'json_schema';
  json_schema: { name: string; description?: string; schema: JsonSchema; strict?: boolean };
}

export type ResponseFormat = { type: 'text' } | JsonSchemaFormat;

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  tool_choice?: ToolChoice;
  response_format?: ResponseFormat;
  maxTokens?: number;
  signal?: AbortSignal;
  overrides?: ModelOverrides;
  /**
   * Offered tools whose arguments the caller reads itself, tolerating what does not match their `parameters` (for
   * example core's `internal_search`, which keeps the first three queries and falls back to the question): a call
   * of one of them is accepted whatever its arguments, so a model that adds a fourth query does not fail the
   * request. The call must still name an offered tool; every other tool's arguments are checked as always.
   */
  uncheckedArguments?: readonly string[];
  /**
   * Called before every request a model sends for this chat (a retry after a network error or a 5xx, and the second
   * answer asked for after a refused one, each count) with the messages it sends, so a caller can charge each
   * attempt to a budget; a throw ends the chat there, before that request is sent. Not sent to the provider.
   */
  onAttempt?: (messages: readonly ChatMessage[]) => void;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface ChatCompletion {
  message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] };
  finish_reason: FinishReason;
  /** With a `json_schema` response format: the answer parsed and validated against the schema. */
  parsed?: unknown;
}

/**
 * A streamed chat completion: text as it arrives, each tool call's pieces as they arrive (`arguments` is the next
 * piece of the JSON text; `id` and `name` come with the first piece of a call), then the whole completion, checked
 * like `chat`'s. `retry`: the answer streamed so far did not match the request and is dropped; a second answer
 * follows (at most once).
 */
export type ChatStreamEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments: string }
  | { type: 'retry'; reason: string; issues: string[] }
  | { type: 'done'; completion: ChatCompletion };

/**
 * A language model. `stream` writes an answer from numbered sources, streaming text pieces; whatever it writes is
 * checked by the citation grounding before it leaves the service, so an implementation need not be trusted to
 * cite correctly. `chat` and `chatStream` are chat completions in the OpenAI wire format with tool calling and
 * structured output: every tool call names an offered tool with arguments that match its parameters, and a
 * `json_schema` answer matches its schema, or the call fails with an `AiOutputError` (after one retry).
 */
export interface LanguageModel {
  readonly kind: 'extractive' | 'openai';
  readonly model: string;
  stream(request: AnswerRequest): AsyncIterable<string>;
  chat(request: ChatRequest): Promise<ChatCompletion>;
  chatStream(request: ChatRequest): AsyncIterable<ChatStreamEvent>;
}

/** Turns texts into unit-length vectors of `dims` dimensions (cosine similarity = dot product). */
export interface Embedder {
  readonly kind: 'hashed' | 'openai' | 'local-model';
  /** Stored with every embedding: vectors of different models are never compared. */
  readonly model: string;
  readonly dims: number;
  /** Why this embedder runs or where its model comes from, for `/readyz` and the start-up log. */
  readonly detail?: string;
  embed(texts: string[], signal?: AbortSignal): Promise<number[][]>;
}

export interface AiDescription {
  language_model: { kind: LanguageModel['kind']; model: string };
  embedder: { kind: Embedder['kind']; model: string; dims: number; detail?: string };
}

export function describeAi(lm: LanguageModel, embedder: Embedder): AiDescription {
  return {
    language_model: { kind: lm.kind, model: lm.model },
    embedder: { kind: embedder.kind, model: embedder.model, dims: embedder.dims, ...(embedder.detail ? { detail: embedder.detail } : {}) },
  };
}
