import { extractiveAnswer } from './extractive';
import type { AnswerRequest, LanguageModel } from './ports';

/**
 * The embedded default language model: extractive answers (quoted sentences with their chunk's marker), streamed
 * word by word so the streaming route behaves as with a real model.
 */
export class ExtractiveLanguageModel implements LanguageModel {
  readonly kind = 'extractive' as const;
  readonly model = 'lore-extractive-v1';

  async *stream(request: AnswerRequest): AsyncIterable<string> {
    const text = extractiveAnswer(request.question, request.sources);
    const pieces = text.match(/\S+\s*/g) ?? [];
    let budget = request.maxTokens;
    for (const piece of pieces) {
      if (request.signal?.aborted || budget <= 0) return;
      budget -= 1;
      yield piece;
    }
  }
}
