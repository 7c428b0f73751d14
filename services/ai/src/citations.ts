import { ANSWERING, contentTerms, numbersIn, splitSentences, termSet, type TextOptions } from './text';

/** A retrieved chunk as the answerer saw it, numbered from 1 in retrieval order. */
export interface SourceChunk {
  index: number;
  title: string;
  document_id: string;
  content: string;
}

export interface Citation {
  index: number;
  title: string;
  document_id: string;
}

export interface GroundingOptions {
  /** Share of a claim's content terms that must occur in the cited chunk. */
  minOverlap: number;
  /** Attach a marker to an unmarked (or wrongly marked) claim when one source clearly supports it. */
  repair: boolean;
}

export const DEFAULT_GROUNDING: GroundingOptions = { minOverlap: 0.5, repair: true };

export interface GroundedAnswer {
  answer: string;
  citations: Citation[];
  /** Markers dropped: pointing at no source, or at a source that does not support the claim. */
  removed_markers: number;
  /** Markers added by repair. */
  added_markers: number;
  /** Sentences with content that no source supports (left without a marker). */
  unsupported_sentences: number;
}

const MARKER = /\s*\[(\d+)\]/g;

/** A list or range of source numbers in brackets: `[1, 2]`, `[1-3]`, `[ 1 ]`, `[1; 2]`, `[1–3, 5]`, `[1234]`. */
const LIST_MARKER = /[[［【]\s*(\d{1,12}(?:\s*(?:[,;]|[-–—]|and|to)\s*\d{1,12})*)\s*[\]］】]/gi;
/** A short bracketed run on one line (candidates for "another marker form"). */
const BRACKETED = /[[［【]([^[\]［］【】\n]{1,40})[\]］】]/g;
const CITATION_WORDS = /\b(?:sources?|src|refs?|references?|docs?|documents?|chunks?|citations?|cite|passages?|pp?|pages?|no|nr|and|to)\b/gi;

/**
 * Any other bracketed form a model may use to cite a number (`[source 1]`, `[#2]`, `[^3]`, `[doc 1, p. 2]`,
 * `[1a]`, `[1.2]`): it cannot be checked against one source, so it is dropped. Only a bracketed run holding a
 * digit and nothing but citation words, punctuation and at most one other letter qualifies, so ordinary
 * bracketed prose ("[2024 report]", "[see appendix 2]") stays.
 */
function isOtherNumberMarker(inner: string): boolean {
  if (!/\d/.test(inner)) return false;
  const rest = inner.replace(CITATION_WORDS, '').replace(/[\d\s#^:.,;\-–—()]/g, '');
  return rest.length <= 1;
}
/** Ranges longer than this are not a citation of each source in them; they are dropped whole. */
const MAX_RANGE = 20;

/**
 * Rewrites every bracketed-number marker into single `[n]` markers before grounding: a list `[1, 2]` or a range
 * `[1-3]` becomes `[1][2][3]` (each then checked like any other), `[ 1 ]` becomes `[1]`, and any other
 * bracketed-number form is removed. Returns the rewritten text and how many markers were dropped outright.
 */
export function normalizeMarkers(text: string): { text: string; dropped: number } {
  let dropped = 0;
  const listed = text.replace(LIST_MARKER, (_all, body: string) => {
    const out: string[] = [];
    for (const part of body.split(/\s*[,;]\s*|\s+and\s+/i)) {
      const range = /^(\d+)\s*(?:[-–—]|to)\s*(\d+)$/i.exec(part.trim());
      if (range) {
        const from = Number(range[1]);
        const to = Number(range[2]);
        if (to < from || to - from >= MAX_RANGE) {
          dropped += 1;
          continue;
        }
        for (let n = from; n <= to; n += 1) out.push(`[${n}]`);
      } else if (/^\d+$/.test(part.trim())) {
        out.push(`[${Number(part.trim())}]`);
      } else {
        dropped += 1;
      }
    }
    return out.join('');
  });
  const cleaned = listed.replace(BRACKETED, (all: string, inner: string) => {
    if (/^\[\d+\]$/.test(all) || !isOtherNumberMarker(inner)) return all;
    dropped += 1;
    return '';
  });
  return { text: cleaned, dropped };
}

/**
 * How well `chunk` supports `claim`: the share of the claim's content terms found in the chunk, forced to 0
 * when the claim states a number the chunk does not contain (numbers are where paraphrase turns into error).
 * `options`: how the claim is read into terms (the chunk's terms must have been read the same way).
 */
export function supportScore(claim: string, chunkTerms: Set<string>, chunkNumbers: Set<string>, options: TextOptions = {}): number {
  const terms = new Set(contentTerms(claim, undefined, options));
  if (terms.size === 0) return 0;
  for (const n of numbersIn(claim)) if (!chunkNumbers.has(n)) return 0;
  let hit = 0;
  for (const t of terms) if (chunkTerms.has(t)) hit += 1;
  return hit / terms.size;
}

interface Segment {
  text: string;
  markers: number[];
}

/** "A [1] and B [2]." → [{A,[1]}, {and B,[2]}, {.,[]}]: each marker vouches for the text just before it. */
function segments(sentence: string): Segment[] {
  const out: Segment[] = [];
  let cursor = 0;
  let current: Segment = { text: '', markers: [] };
  for (const m of sentence.matchAll(MARKER)) {
    const before = sentence.slice(cursor, m.index);
    if (current.markers.length > 0 && before.trim() !== '') {
      out.push(current);
      current = { text: '', markers: [] };
    }
    current.text += before;
    current.markers.push(Number(m[1]));
    cursor = (m.index ?? 0) + m[0].length;
  }
  const tail = sentence.slice(cursor);
  if (current.markers.length > 0 && tail.trim() !== '') {
    out.push(current);
    current = { text: tail, markers: [] };
  } else {
    current.text += tail;
  }
  out.push(current);
  return out;
}

/** The sources by marker number, each with its terms and numbers: what checking a claim against them reads. */
export type IndexedSources = ReadonlyMap<number, { source: SourceChunk; terms: Set<string>; numbers: Set<string> }>;

/**
 * Reads each source's terms and numbers once, in the answering reading (`ANSWERING`: Chinese, Japanese and Thai
 * segmented into words, numbers whole), the reading `groundAnswer` reads claims in. A caller that checks several
 * pieces of one answer against the same sources (a streamed answer, sentence by sentence) indexes them once and
 * passes the index to each `groundAnswer`.
 */
export function indexSources(sources: readonly SourceChunk[]): IndexedSources {
  return new Map(sources.map((s) => [s.index, { source: s, terms: termSet(`${s.title} ${s.content}`, ANSWERING), numbers: new Set(numbersIn(`${s.title} ${s.content}`)) }]));
}

/**
 * Checks every `[n]` marker of an answer against the chunk it cites before the answer leaves the service
 * (list and range markers are first split into single ones, other bracketed-number forms removed):
 * markers that cite nothing or an unsupportive chunk are removed, a claim no source supports carries no
 * marker, and (with repair on) a supported claim gets the marker of its best source. The citation list holds
 * exactly the sources still cited, so every marker maps to a citation and every citation to a marker. Answer and
 * sources are read in the answering reading (`ANSWERING`), so a faithful Chinese, Japanese or Thai paraphrase keeps
 * its marker and its sentences end at `。`, `！`, `？`.
 */
export function groundAnswer(answer: string, sources: SourceChunk[], options: GroundingOptions = DEFAULT_GROUNDING, byIndex: IndexedSources = indexSources(sources)): GroundedAnswer {
  const normalized = normalizeMarkers(answer);
  let removed = normalized.dropped;
  let added = 0;
  let unsupported = 0;
  const used = new Set<number>();

  const paragraphs = normalized.text.replace(/\r\n?/g, '\n').split('\n');
  const outParagraphs = paragraphs.map((paragraph) => {
    if (paragraph.trim() === '') return '';
    const lead = /^\s*(?:[-*•]|\d+[.)])\s+/.exec(paragraph)?.[0] ?? '';
    const sentences = splitSentences(paragraph.slice(lead.length), 500, ANSWERING);
    const rendered = sentences.map((sentence) => {
      const segs = segments(sentence);
      const wholeClaim = sentence.replace(MARKER, '');
      let sentenceHasMarker = false;
      for (const seg of segs) {
        const claim = contentTerms(seg.text, undefined, ANSWERING).length >= 2 ? seg.text : wholeClaim;
        const kept: number[] = [];
        for (const n of seg.markers) {
          const s = byIndex.get(n);
          if (!s || kept.includes(n) || supportScore(claim, s.terms, s.numbers, ANSWERING) < options.minOverlap) {
            removed += 1;
            continue;
          }
          kept.push(n);
        }
        seg.markers = kept;
        if (kept.length > 0) sentenceHasMarker = true;
      }
      const isClaim = contentTerms(wholeClaim, undefined, ANSWERING).length >= 2;
      if (!sentenceHasMarker && isClaim) {
        const best = options.repair ? bestSource(wholeClaim, byIndex, options.minOverlap) : undefined;
        if (best !== undefined) {
          const target = [...segs].reverse().find((s) => s.text.replace(/[\s.!?;:,"')\]]/g, '').length > 0) ?? segs[0];
          target?.markers.push(best);
          added += 1;
        } else {
          unsupported += 1;
        }
      }
      for (const seg of segs) for (const n of seg.markers) used.add(n);
      return render(segs);
    });
    return lead + rendered.join(' ');
  });

  const citations = [...used]
    .sort((a, b) => a - b)
    .map((n) => {
      const s = byIndex.get(n)?.source as SourceChunk;
      return { index: n, title: s.title, document_id: s.document_id };
    });
  return {
    answer: outParagraphs.join('\n').replace(/\n{3,}/g, '\n\n').trim(),
    citations,
    removed_markers: removed,
    added_markers: added,
    unsupported_sentences: unsupported,
  };
}

function bestSource(
  claim: string,
  byIndex: ReadonlyMap<number, { terms: Set<string>; numbers: Set<string> }>,
  minOverlap: number,
): number | undefined {
  let best: number | undefined;
  let bestScore = minOverlap;
  for (const [n, s] of byIndex) {
    const score = supportScore(claim, s.terms, s.numbers, ANSWERING);
    if (score > bestScore || (score === bestScore && best === undefined && score >= minOverlap)) {
      best = n;
      bestScore = score;
    }
  }
  return best;
}

function render(segs: Segment[]): string {
  let out = '';
  for (const seg of segs) {
    if (seg.markers.length === 0) {
      out += seg.text;
      continue;
    }
    const text = seg.text.replace(/\s+$/, '');
    const marks = seg.markers.map((n) => `[${n}]`).join('');
    // Markers sit before the sentence's closing punctuation: "… five days [1]."
    const end = /[.!?;:。！？；：]+["')\]」』]*$/u.exec(text);
    out += end ? `${text.slice(0, end.index).trimEnd()} ${marks}${end[0]}` : `${text} ${marks}`;
  }
  return out.replace(/\s+([.!?;:,])/g, '$1').replace(/\s{2,}/g, ' ').trim();
}

/** Every marker of `answer` (for tests and for the invariant check before responding). */
export function markersIn(answer: string): number[] {
  return [...answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]));
}

/** Whether `answer` holds a bracketed-number marker in any form other than a single `[n]` (never after grounding). */
export function hasOtherMarkerForm(answer: string): boolean {
  return normalizeMarkers(answer).text !== answer;
}
