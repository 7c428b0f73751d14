import type { SourceChunk } from './citations';
import { ANSWERING, contentTerms, splitSentences } from './text';

export interface ExtractiveOptions {
  /** Most sentences in an answer. */
  maxSentences: number;
  /** Least share of the question's terms a sentence must contain to be quoted. */
  minCoverage: number;
}

export const DEFAULT_EXTRACTIVE: ExtractiveOptions = { maxSentences: 4, minCoverage: 0.2 };

/** Words that shape a question but say nothing about its topic ("how long does X take"). */
const QUESTION_NOISE = new Set(
  (
    'how long many much take took taken tell know give get find say explain describe list need use make work happen mean anything something thing ' +
    // Chinese and Japanese question words ("how much", "where", "which", "why", "when")
    '多少 哪里 哪儿 哪个 为什么 几 いくら どこ どれ いつ どう なぜ 何'
  )
    .split(' ')
    .flatMap((w) => contentTerms(w, undefined, ANSWERING)),
);

export const NO_ANSWER = 'The sources hold nothing that answers this question.';

/** A source as the answerer may receive it: a retrieved chunk, with the heading it sits under when the caller knows it. */
export type AnswerSource = SourceChunk & { heading?: string | null };

/** How much a question term counts when a sentence only inherits it from its section's heading or FAQ question. */
const FROM_SECTION = 0.8;

/** Words that make a short line a statement rather than a label ("Refunds are issued …" vs "Refund policy"). */
const VERB_CUES = new Set(
  (
    'is are was were be been being am has have had having will would can could must may might shall should do does did done ' +
    'get gets got need needs needed take takes took include includes included apply applies applied cost costs'
  ).split(' '),
);

interface Candidate {
  sentence: string;
  /** The sentence's `keyOf`, read when it is about to be quoted. */
  key?: string;
  index: number;
  rank: number;
  pos: number;
  own: Set<string>;
  section: Set<string>;
  title: Set<string>;
  /** Every term of the sentence's chunk, its heading and title: where the question's names must meet. */
  chunk: Set<string>;
}

/**
 * The embedded answerer: quotes the retrieved sentences that best cover the question, each followed by the
 * marker of the chunk it came from. Nothing is paraphrased, so every marker is supported by construction; the
 * grounding check still runs on its output like on any model's. Question and sources are read in the answering
 * reading (`ANSWERING`: Chinese, Japanese and Thai segmented into words, numbers whole).
 *
 * - Headings, titles and FAQ question lines are labels, never quoted: the sentences under them inherit their terms
 *   (a heading's and a question line's at `FROM_SECTION`, the document title's at `FROM_TITLE`), so "root cause"
 *   finds the sentences of the section "Root cause".
 * - Scoring: question-term coverage weighted by how rare each term is among the candidate sentences, plus a small
 *   bonus for higher-ranked chunks and earlier sentences.
 * - The question's names must occur together in the chunk (with its heading and title) of a chosen sentence, a
 *   question without names must find its rarest term in a chosen sentence, a price question a price
 *   (`answersTheAsk`); otherwise nothing answers the question.
 * - The same sentence from two copies of a document (differing in emphasis or spacing) is quoted once.
 */
export function extractiveAnswer(question: string, sources: AnswerSource[], options: ExtractiveOptions = DEFAULT_EXTRACTIVE): string {
  const all = [...new Set(contentTerms(question, undefined, ANSWERING))];
  const topical = all.filter((t) => !QUESTION_NOISE.has(t));
  const q = topical.length > 0 ? topical : all;
  if (q.length === 0 || sources.length === 0) return NO_ANSWER;
  const candidates = candidatesOf(sources);
  const df = new Map<string, number>();
  for (const c of candidates) for (const t of q) if (c.own.has(t) || c.section.has(t) || c.title.has(t)) df.set(t, (df.get(t) ?? 0) + 1);
  const weight = (t: string) => Math.log(1 + (candidates.length + 1) / ((df.get(t) ?? 0) + 0.5));
  const total = q.reduce((sum, t) => sum + weight(t), 0);
  const share = (c: Candidate, t: string) => (c.own.has(t) ? 1 : c.section.has(t) ? FROM_SECTION : 0);
  const scored = candidates
    .map((c) => {
      const coverage = q.reduce((sum, t) => sum + weight(t) * share(c, t), 0) / total;
      return { ...c, coverage, score: coverage + 0.15 / (1 + c.rank) + 0.02 / (1 + c.pos) };
    })
    .filter((c) => c.coverage >= options.minCoverage)
    .sort((a, b) => b.score - a.score);
  const chosen: typeof scored = [];
  const coveredTerms = new Set<string>();
  for (const c of scored) {
    if (chosen.length >= options.maxSentences) break;
    // A sentence that adds no new question term and is weaker than the best one is redundant.
    const adds = q.some((t) => c.own.has(t) && !coveredTerms.has(t));
    if (chosen.length > 0 && !adds && c.score < (chosen[0]?.score ?? 0) * 0.8) continue;
    c.key ??= keyOf(c.sentence);
    if (chosen.some((x) => x.key === c.key)) continue;
    chosen.push(c);
    for (const t of q) if (c.own.has(t)) coveredTerms.add(t);
  }
  if (chosen.length === 0) return NO_ANSWER;
  if (!answersTheAsk(question, q, candidates, chosen)) return NO_ANSWER;
  chosen.sort((a, b) => a.rank - b.rank || a.pos - b.pos);
  return chosen.map((c) => withMarker(c.sentence, c.index)).join(' ');
}

/** Every quotable sentence of the sources, with the terms it owns and inherits; labels are read, not kept. */
function candidatesOf(sources: AnswerSource[]): Candidate[] {
  const out: Candidate[] = [];
  sources.forEach((s, rank) => {
    const title = new Set(contentTerms(s.title, 2_000, ANSWERING));
    const titleKey = keyOf(s.title);
    const headingKey = s.heading ? keyOf(s.heading) : null;
    // A heading that is the title labels the document, not a section.
    let heading = new Set(s.heading && headingKey !== titleKey ? contentTerms(s.heading, 2_000, ANSWERING) : []);
    let asked = new Set<string>();
    // What the next sentences inherit: made anew only when a label changes it, shared by the sentences under it.
    let section: Set<string> | undefined;
    const mine: Candidate[] = [];
    const chunk = new Set([...title, ...heading]);
    // Emphasis is markup, not text: without it a bold FAQ question ("**Where is my data stored?**") ends at its mark.
    const content = s.content.replace(/\*\*|__/g, '');
    splitSentences(content, 400, ANSWERING).forEach((sentence, pos) => {
      const own = new Set(contentTerms(sentence, 2_000, ANSWERING));
      for (const t of own) chunk.add(t);
      // Only a sentence about as long as the title or heading can be it (emphasis and a stop apart): keys cost.
      const near = (label: string | null) => label !== null && Math.abs(sentence.length - label.length) <= 8 && keyOf(sentence) === label;
      const isTitle = near(titleKey);
      const isHeading = near(headingKey);
      if (isTitle && (isHeading || isLabel(sentence, true))) {
        // The title (the first chunk's heading): its terms are every sentence's already.
        asked = new Set();
        section = undefined;
        return;
      }
      if (isHeading || (pos === 0 && isLabel(sentence))) {
        // A heading (the chunker puts it before its section's first sentence): the section's label.
        heading = new Set([...heading, ...own]);
        asked = new Set();
        section = undefined;
        return;
      }
      if (isQuestionLine(sentence)) {
        asked = own;
        section = undefined;
        return;
      }
      if (sentence.length < 12 || sentence.length > 800) return;
      section ??= asked.size === 0 ? heading : new Set([...heading, ...asked]);
      mine.push({ sentence, index: s.index, rank, pos, own, section, title, chunk });
    });
    out.push(...mine);
  });
  return out;
}

/** The form two copies of one sentence share: no emphasis, quotes' styles, case or spacing. */
function keyOf(text: string): string {
  return text
    .replace(/[*_`]+/g, '')
    .replace(/[.:;!?。！？]+$/u, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

/**
 * A short line without a verb or a closing stop of its own: a heading ("Root cause.", "First 90 days."), at most eight
 * words without a colon; a title ("Post-mortem: Atlas outage on 21 August 2026") may have a colon and fourteen words.
 * A line of five words or more without a colon must also be written like a title (most of its longer words
 * capitalised): "The Gannet archive keeps invoices for ten years" is a sentence, and a note titled by it is quoted.
 */
function isLabel(sentence: string, title = false): boolean {
  const body = sentence.replace(/[.。]$/u, '').trim();
  if (body === '' || /[.!?;:。！？]/u.test(body.slice(-1))) return false;
  const tokens = body.match(/[\p{L}\p{N}][\p{L}\p{M}\p{N}'’-]*/gu) ?? [];
  const colon = body.includes(':');
  if (tokens.length === 0 || tokens.length > (title ? 14 : 8) || (!title && colon)) return false;
  if (tokens.some((w) => VERB_CUES.has(w.toLowerCase()))) return false;
  if (tokens.length >= 5 && !colon) {
    const cased = tokens.filter((w) => w.length >= 4 && /^[\p{Lu}\p{Ll}]/u.test(w));
    if (cased.filter((w) => /^\p{Lu}/u.test(w)).length * 2 <= cased.length) return false;
  }
  return true;
}

/** A question in the sources (an FAQ's question line): it asks, it does not answer. */
function isQuestionLine(sentence: string): boolean {
  return /[?？]["')\]」』]*$/u.test(sentence.trim());
}

/** Question terms that ask for a price ("what does X cost"): an answer to them states one. */
const PRICE_ASK = new Set(['cost', 'pric', 'fee', 'charg']);
const PRICE_TOLD = /[€$£¥₹]|\b(?:eur|usd|gbp|chf|cost|costs|price|prices|priced|fee|fees|charge|charged|free)\b|\d\s*(?:euros?|dollars?|pounds?|yuan|yen|元)/iu;

/**
 * Whether the chosen sentences can answer the question, beyond sharing words with it. The names the question uses (a
 * capitalised word not opening a sentence, or an all-capitals one; words with digits left out) must occur together in
 * the chunk of one chosen sentence, with its heading and title ("Who is the CEO of Lumetric?" is not answered by a
 * CEO in one source and Lumetric in another). A question without names must find its rarest term the
 * candidates hold in a chosen sentence. A question asking for a price must find a price or an amount.
 */
function answersTheAsk(question: string, q: string[], candidates: Candidate[], chosen: Candidate[]): boolean {
  const holds = (c: Candidate, t: string) => c.own.has(t) || c.section.has(t) || c.title.has(t);
  const names = new Set<string>();
  for (const m of question.matchAll(/(^|[.!?。！？]\s*|\s|[("'“‘])(\p{Lu}[\p{L}\p{M}'’-]*)/gu)) {
    const opens = m.index === 0 || /[.!?。！？]/u.test(m[1] ?? '');
    const word = m[2] ?? '';
    if (opens && !/^\p{Lu}{2,}$/u.test(word)) continue;
    for (const t of contentTerms(word, 4, ANSWERING)) if (q.includes(t) && !/\d/.test(t)) names.add(t);
  }
  if (names.size > 0) {
    if (!chosen.some((c) => [...names].every((t) => c.chunk.has(t)))) return false;
  } else {
    let rarest: { t: string; n: number } | undefined;
    for (const t of q) {
      if (/\d/.test(t)) continue;
      const n = candidates.filter((c) => holds(c, t)).length;
      if (n > 0 && (rarest === undefined || n < rarest.n)) rarest = { t, n };
    }
    if (rarest && !chosen.some((c) => holds(c, rarest.t))) return false;
  }
  if (q.some((t) => PRICE_ASK.has(t)) && !chosen.some((c) => PRICE_TOLD.test(c.sentence))) return false;
  return true;
}

function withMarker(sentence: string, index: number): string {
  const clean = sentence.replace(/\s*\[\d{1,3}\]/g, '').trim();
  const end = /[.!?。！？]+["')\]」』]*$/u.exec(clean);
  return end ? `${clean.slice(0, end.index)} [${index}]${end[0]}` : `${clean} [${index}].`;
}
