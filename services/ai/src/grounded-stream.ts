import { groundAnswer, indexSources, type Citation, type IndexedSources, type SourceChunk } from './citations';
import type { ConversationMessage, LanguageModel, ModelOverrides } from './ports';

/** Cut point after the last complete sentence (and the markers that follow it) in streamed text. */
export function completeSentencesUpTo(text: string): number {
  let cut = 0;
  // Markers in any bracketed form ([1], [1, 2], [1-3], [source 2]) stay with the sentence before them, and no cut
  // falls before an opening bracket whose marker has not arrived whole.
  for (const m of text.matchAll(/[.!?]["')\]]*(?:\s*[[［【][^[\]［］【】\n]{0,40}[\]］】])*\s+(?=[^\s[［【])/g)) cut = (m.index ?? 0) + m[0].length;
  return cut;
}

export interface GroundedStreamRequest {
  question: string;
  sources: SourceChunk[];
  maxTokens: number;
  signal?: AbortSignal;
  overrides?: ModelOverrides;
  /** Passed to the model as they are (AnswerRequest): the asker's instructions and the conversation before the question. */
  instructions?: string;
  history?: ConversationMessage[];
  /** What to answer when there is no source at all, and when the sources yield no grounded sentence. */
  fallback: { noSources: string; unanswered: string };
}

export type GroundedPiece =
  | { type: 'token'; text: string }
  | { type: 'done'; answer: string; citations: Citation[]; removedMarkers: number };

/** Buffered model text larger than this is cut off: a runaway model cannot grow a buffer without bound. */
const MAX_BUFFER = 100_000;

/**
 * Streams an answer whose every marker was checked, for every Lore service that answers from sources (memory
 * search, chat). The model's text is buffered to sentence boundaries; each complete sentence is grounded against
 * the sources (`groundAnswer`, the one citation checker) before any of it is sent, so an invented or unsupported
 * marker never leaves the service, not even for a moment in a stream. The last piece carries the whole answer
 * (exactly the concatenation of the tokens sent) and the citations actually used.
 */
export async function* groundedAnswerStream(lm: LanguageModel, request: GroundedStreamRequest): AsyncGenerator<GroundedPiece> {
  const { sources } = request;
  const cited = new Map<number, Citation>();
  let sent = '';
  let buffer = '';
  let removed = 0;
  // Every piece is checked against the same sources: their terms are read once, at the first piece.
  let indexed: IndexedSources | null = null;
  const emit = function* (raw: string): Generator<GroundedPiece> {
    indexed ??= indexSources(sources);
    const grounded = groundAnswer(raw, sources, undefined, indexed);
    removed += grounded.removed_markers;
    for (const c of grounded.citations) cited.set(c.index, c);
    if (!grounded.answer) return;
    const text = (sent ? ' ' : '') + grounded.answer;
    sent += text;
    for (const piece of text.match(/\s*\S+/g) ?? []) yield { type: 'token', text: piece };
  };
  if (sources.length > 0) {
    for await (const piece of lm.stream({
      question: request.question, sources, maxTokens: request.maxTokens, signal: request.signal, overrides: request.overrides,
      ...(request.instructions ? { instructions: request.instructions } : {}),
      ...(request.history ? { history: request.history } : {}),
    })) {
      buffer += piece;
      if (buffer.length > MAX_BUFFER) break;
      const cut = completeSentencesUpTo(buffer);
      if (cut > 0) {
        yield* emit(buffer.slice(0, cut));
        buffer = buffer.slice(cut);
      }
    }
  }
  if (buffer.trim()) yield* emit(buffer);
  if (!sent) yield* emit(sources.length === 0 ? request.fallback.noSources : request.fallback.unanswered);
  yield { type: 'done', answer: sent, citations: [...cited.values()].sort((a, b) => a.index - b.index), removedMarkers: removed };
}
