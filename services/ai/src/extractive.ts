import type { SourceChunk } from './citations';
import { contentTerms, splitSentences } from './text';

export interface ExtractiveOptions {
  /** Most sentences in an answer. */
  maxSentences: number;
  /** Least share of the question's terms a sentence must contain to be quoted. */
  minCoverage: number;
}

export const DEFAULT_EXTRACTIVE: ExtractiveOptions = { maxSentences: 4, minCoverage: 0.2 };

/** Words that shape a question but say nothing about its topic ("how long does X take"). */
const QUESTION_NOISE = new Set(
  'how long many much take took taken tell know give get find say explain describe list need use make work happen mean anything something thing'
    .split(' ')
    .flatMap((w) => contentTerms(w)),
);

export const NO_ANSWER = 'The sources hold nothing that answers this question.';

/**
 * The embedded answerer: quotes the retrieved sentences that best cover the question, each followed by the
 * marker of the chunk it came from. Nothing is paraphrased, so every marker is supported by construction; the
 * grounding check still runs on its output like on any model's. Scoring: question-term coverage weighted by
 * how rare each term is among the candidate sentences, plus a small bonus for higher-ranked chunks.
 */
export function extractiveAnswer(question: string, sources: SourceChunk[], options: ExtractiveOptions = DEFAULT_EXTRACTIVE): string {
  const all = [...new Set(contentTerms(question))];
  const topical = all.filter((t) => !QUESTION_NOISE.has(t));
  const q = topical.length > 0 ? topical : all;
  if (q.length === 0 || sources.length === 0) return NO_ANSWER;
  const candidates: Array<{ sentence: string; index: number; rank: number; terms: Set<string>; pos: number }> = [];
  sources.forEach((s, rank) => {
    splitSentences(s.content, 400).forEach((sentence, pos) => {
      if (sentence.length < 12 || sentence.length > 800) return;
      candidates.push({ sentence, index: s.index, rank, terms: new Set(contentTerms(sentence)), pos });
    });
  });
  const df = new Map<string, number>();
  for (const c of candidates) for (const t of q) if (c.terms.has(t)) df.set(t, (df.get(t) ?? 0) + 1);
  const weight = (t: string) => Math.log(1 + (candidates.length + 1) / ((df.get(t) ?? 0) + 0.5));
  const total = q.reduce((sum, t) => sum + weight(t), 0);
  const scored = candidates
    .map((c) => {
      const covered = q.filter((t) => c.terms.has(t));
      const coverage = covered.reduce((sum, t) => sum + weight(t), 0) / total;
      return { ...c, coverage, score: coverage + 0.15 / (1 + c.rank) + 0.02 / (1 + c.pos) };
    })
    .filter((c) => c.coverage >= options.minCoverage)
    .sort((a, b) => b.score - a.score);
  const chosen: typeof scored = [];
  const coveredTerms = new Set<string>();
  for (const c of scored) {
    if (chosen.length >= options.maxSentences) break;
    // A sentence that adds no new question term and is weaker than the best one is redundant.
    const adds = q.some((t) => c.terms.has(t) && !coveredTerms.has(t));
    if (chosen.length > 0 && !adds && c.score < (chosen[0]?.score ?? 0) * 0.8) continue;
    if (chosen.some((x) => x.sentence === c.sentence)) continue;
    chosen.push(c);
    for (const t of q) if (c.terms.has(t)) coveredTerms.add(t);
  }
  if (chosen.length === 0) return NO_ANSWER;
  chosen.sort((a, b) => a.rank - b.rank || a.pos - b.pos);
  return chosen.map((c) => withMarker(c.sentence, c.index)).join(' ');
}

function withMarker(sentence: string, index: number): string {
  const clean = sentence.replace(/\s*\[\d{1,3}\]/g, '').trim();
  const end = /[.!?]+["')\]]*$/.exec(clean);
  return end ? `${clean.slice(0, end.index)} [${index}]${end[0]}` : `${clean} [${index}].`;
}
