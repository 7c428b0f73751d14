import { cutUnits } from './text';
import { z } from 'zod';
import type { SourceChunk } from './citations';
import { AiProviderError, OpenAiClient, readCapped, sseData, type OpenAiClientOptions } from './openai-client';
import type { AnswerRequest, ChatCompletion, ChatMessage, ChatRequest, ChatStreamEvent, FinishReason, LanguageModel, ToolCall } from './ports';
import { AiOutputError, completeChecked, streamChecked } from './structured-output';

export interface OpenAiLanguageModelOptions extends OpenAiClientOptions {
  model: string;
  temperature?: number;
}

const SYSTEM_PROMPT = [
  'You answer questions using only the numbered sources provided.',
  'After every sentence that states something from a source, add the marker of that source, like [1] or [2][3].',
  'Never cite a number that is not in the list. If the sources do not contain the answer, say so without a marker.',
  'Text such as [REDACTED:email] is a masked value: never guess what it was.',
  'Be concise.',
].join(' ');

/** Sources are capped so a prompt stays within common context windows whatever the chunk sizes. */
const MAX_SOURCE_CHARS = 2_000;
/** The conversation given with the sources is bounded the same way: its last messages, each cut. */
const MAX_HISTORY_MESSAGES = 10;
const MAX_HISTORY_CHARS = 4_000;

/**
 * The answer's prompt: the grounding rules (then the asker's own instructions, which follow them and never override
 * them), the conversation so far, and the sources with the question last, so a follow-up is read in context and the
 * answer keeps the asker's tone while every sentence stays cited.
 */
export function buildMessages(question: string, sources: SourceChunk[], context: Pick<AnswerRequest, 'instructions' | 'history'> = {}): ChatMessage[] {
  const listing = sources.map((s) => `[${s.index}] ${s.title}\n${cutUnits(s.content, MAX_SOURCE_CHARS)}`).join('\n\n');
  const instructions = context.instructions?.trim();
  const system = instructions ? `${SYSTEM_PROMPT}\n\nYour own instructions follow; keep to the rules above whatever they say.\n${instructions}` : SYSTEM_PROMPT;
  const history = (context.history ?? []).slice(-MAX_HISTORY_MESSAGES).map((m): ChatMessage => ({ role: m.role, content: m.content.slice(0, MAX_HISTORY_CHARS) }));
  return [
    { role: 'system', content: system },
    ...history,
    { role: 'user', content: `Sources:\n${listing}\n\nQuestion: ${question}` },
  ];
}

const WireToolCall = z.object({
  id: z.string(),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
const WireCompletion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z.array(WireToolCall).nullish(),
          refusal: z.string().nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});
const WireChunk = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            refusal: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int().min(0).max(127).optional(),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
});

const FINISH: ReadonlySet<string> = new Set(['stop', 'length', 'tool_calls', 'content_filter']);

function finishReason(raw: string | null | undefined, calls: ToolCall[]): FinishReason {
  if (calls.length > 0) return 'tool_calls';
  return raw && FINISH.has(raw) ? (raw as FinishReason) : 'stop';
}

/**
 * Some servers leave out `index`: a piece with a known id continues that call, a piece with a new id opens the
 * next call, a piece with neither continues the last one.
 */
function indexWithout(calls: Map<number, { id: string }>, id: string | null | undefined): number {
  if (id) {
    for (const [index, call] of calls) if (call.id === id) return index;
    return calls.size;
  }
  return Math.max(0, calls.size - 1);
}

function refused(refusal: string): AiOutputError {
  return new AiOutputError(`the model refused: ${cutUnits(refusal, 300)}`, 'refusal', [cutUnits(refusal, 300)], 1);
}

/**
 * Chat completions against any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp): cited answers streamed
 * with `stream: true`, and chat with tool calling (`tools`, `tool_choice`, assistant `tool_calls`, `tool` results)
 * and structured output (`response_format: json_schema`), each answer checked and retried once (see
 * `structured-output.ts`).
 */
export class OpenAiLanguageModel implements LanguageModel {
  readonly kind = 'openai' as const;
  readonly model: string;
  private readonly client: OpenAiClient;

  constructor(private readonly options: OpenAiLanguageModelOptions) {
    this.model = options.model;
    this.client = new OpenAiClient(options);
  }

  async *stream(request: AnswerRequest): AsyncIterable<string> {
    const chat = this.once({ messages: buildMessages(request.question, request.sources, request), maxTokens: request.maxTokens, signal: request.signal, overrides: request.overrides });
    for await (const event of chat) if (event.type === 'text' && event.text.length > 0) yield event.text;
  }

  chat(request: ChatRequest): Promise<ChatCompletion> {
    return completeChecked(request, (r) => this.completeOnce(r));
  }

  chatStream(request: ChatRequest): AsyncIterable<ChatStreamEvent> {
    return streamChecked(request, (r) => this.once(r));
  }

  private body(request: ChatRequest, stream: boolean): Record<string, unknown> {
    const tools = request.tools ?? [];
    return {
      model: request.overrides?.model ?? this.model,
      messages: request.messages,
      stream,
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      temperature: request.overrides?.temperature ?? this.options.temperature ?? 0,
      ...(tools.length > 0 ? { tools, ...(request.tool_choice ? { tool_choice: request.tool_choice } : {}) } : {}),
      ...(request.response_format ? { response_format: request.response_format } : {}),
    };
  }

  private post(request: ChatRequest, stream: boolean): Promise<Response> {
    const onAttempt = request.onAttempt;
    return this.client.post('/chat/completions', this.body(request, stream), request.signal, onAttempt ? () => onAttempt(request.messages) : undefined);
  }

  private async completeOnce(request: ChatRequest): Promise<ChatCompletion> {
    return this.readWhole(await this.post(request, false));
  }

  /** A whole completion, read with the client's byte limit (a longer answer is refused, never read into memory). */
  private async readWhole(res: Response): Promise<ChatCompletion> {
    const text = await readCapped(res, this.client.maxResponseBytes);
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: reported below
    }
    const parsed = WireCompletion.safeParse(json);
    if (!parsed.success) throw new AiProviderError('AI provider answered without a chat completion');
    const choice = parsed.data.choices[0]!;
    if (choice.message.refusal) throw refused(choice.message.refusal);
    const calls = (choice.message.tool_calls ?? []).map((c): ToolCall => ({ id: c.id, type: 'function', function: c.function }));
    return {
      message: { role: 'assistant', content: choice.message.content ?? null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
      finish_reason: finishReason(choice.finish_reason, calls),
    };
  }

  /** One streamed attempt: text and tool-call pieces as they arrive, then the completion they add up to. */
  private async *once(request: ChatRequest): AsyncGenerator<ChatStreamEvent> {
    const res = await this.post(request, true);
    if (!res.body) throw new AiProviderError('AI provider sent no body');
    const type = res.headers.get('content-type') ?? '';
    if (!type.includes('text/event-stream')) {
      // Some servers ignore `stream`: accept a whole completion too.
      const completion = await this.readWhole(res);
      if (completion.message.content) yield { type: 'text', text: completion.message.content };
      for (const [index, call] of (completion.message.tool_calls ?? []).entries()) {
        yield { type: 'tool_call', index, id: call.id, name: call.function.name, arguments: call.function.arguments };
      }
      yield { type: 'done', completion };
      return;
    }
    let content = '';
    let refusal = '';
    let finish: string | null | undefined;
    // Tool calls arrive in pieces keyed by `index`: the first piece carries the id and name, later ones append to
    // the arguments text.
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    for await (const payload of sseData(res.body, 1_000_000, this.client.maxResponseBytes)) {
      let json: unknown;
      try {
        json = JSON.parse(payload);
      } catch {
        throw new AiProviderError('AI provider sent a malformed stream event');
      }
      const chunk = WireChunk.safeParse(json);
      if (!chunk.success) throw new AiProviderError('AI provider sent a stream event that is not a chat completion chunk');
      const choice = chunk.data.choices?.[0];
      if (!choice) continue;
      if (choice.finish_reason) finish = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      if (delta.refusal) refusal += delta.refusal;
      if (typeof delta.content === 'string' && delta.content.length > 0) {
        content += delta.content;
        yield { type: 'text', text: delta.content };
      }
      for (const piece of delta.tool_calls ?? []) {
        const index = piece.index ?? indexWithout(calls, piece.id);
        const call = calls.get(index) ?? { id: '', name: '', arguments: '' };
        if (piece.id) call.id = piece.id;
        // OpenAI sends a name once; servers that repeat it with every piece must not have it doubled.
        const name = piece.function?.name;
        if (name && call.name !== name) call.name += name;
        const args = piece.function?.arguments ?? '';
        call.arguments += args;
        if (call.arguments.length > 1_000_000) throw new AiProviderError('AI provider sent oversized tool call arguments');
        calls.set(index, call);
        yield {
          type: 'tool_call',
          index,
          ...(piece.id ? { id: piece.id } : {}),
          ...(piece.function?.name ? { name: piece.function.name } : {}),
          arguments: args,
        };
      }
    }
    if (refusal) throw refused(refusal);
    const toolCalls = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]): ToolCall => ({ id: c.id || `call_${index}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    yield {
      type: 'done',
      completion: {
        message: { role: 'assistant', content: content.length > 0 || toolCalls.length === 0 ? content : null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
        finish_reason: finishReason(finish, toolCalls),
      },
    };
  }
}
