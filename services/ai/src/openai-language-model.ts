import type { SourceChunk } from './citations';
import { AiProviderError, OpenAiClient, sseData, type OpenAiClientOptions } from './openai-client';
import type { AnswerRequest, LanguageModel } from './ports';

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

export function buildMessages(question: string, sources: SourceChunk[]): Array<{ role: string; content: string }> {
  const listing = sources.map((s) => `[${s.index}] ${s.title}\n${s.content.slice(0, MAX_SOURCE_CHARS)}`).join('\n\n');
  return [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: `Sources:\n${listing}\n\nQuestion: ${question}` },
  ];
}

/** Chat completions with `stream: true` against any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp). */
export class OpenAiLanguageModel implements LanguageModel {
  readonly kind = 'openai' as const;
  readonly model: string;
  private readonly client: OpenAiClient;

  constructor(private readonly options: OpenAiLanguageModelOptions) {
    this.model = options.model;
    this.client = new OpenAiClient(options);
  }

  async *stream(request: AnswerRequest): AsyncIterable<string> {
    const res = await this.client.post(
      '/chat/completions',
      {
        model: this.model,
        messages: buildMessages(request.question, request.sources),
        stream: true,
        max_tokens: request.maxTokens,
        temperature: this.options.temperature ?? 0,
      },
      request.signal,
    );
    if (!res.body) throw new AiProviderError('AI provider sent no body');
    const type = res.headers.get('content-type') ?? '';
    if (!type.includes('text/event-stream')) {
      // Some servers ignore `stream`: accept a whole completion too.
      const json = (await res.json()) as { choices?: Array<{ message?: { content?: string } }> };
      const text = json.choices?.[0]?.message?.content;
      if (typeof text !== 'string') throw new AiProviderError('AI provider answered without a message');
      yield text;
      return;
    }
    for await (const payload of sseData(res.body)) {
      let parsed: { choices?: Array<{ delta?: { content?: string | null } }> };
      try {
        parsed = JSON.parse(payload);
      } catch {
        throw new AiProviderError('AI provider sent a malformed stream event');
      }
      const piece = parsed.choices?.[0]?.delta?.content;
      if (typeof piece === 'string' && piece.length > 0) yield piece;
    }
  }
}
