/**
 * Small, dependency-free text analysis shared by routing, citation checking, entity extraction and the
 * embedded language model. Retrieval itself uses PostgreSQL's English configuration; this module only has to
 * agree with it roughly (same stop words, similar stems), never exactly.
 */

export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again against all am an and any are aren as at be because been before being below ' +
    'between both but by can cannot could did didn do does doesn doing don down during each few for from further ' +
    'had has have having he her here hers herself him himself his how i if in into is isn it its itself just me ' +
    'more most my myself no nor not now of off on once only or other our ours ourselves out over own same she ' +
    'should so some such than that the their theirs them themselves then there these they this those through to ' +
    'too under until up very was we were what when where which while who whom why will with would you your yours ' +
    'yourself yourselves also may might must shall us via per s t'
  ).split(' '),
);

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu;
/**
 * A word with its combining marks (`\p{M}`): Thai vowels and tone marks, Devanagari's vowel signs and virama, are
 * marks, and a word of those scripts cut at each of them is no word. The segmented reading's word.
 */
const WORD_WITH_MARKS = /[\p{L}\p{N}][\p{L}\p{M}\p{N}]*(?:['’][\p{L}\p{M}]+)?/gu;

/** How the text helpers read a text. */
export interface TextOptions {
  /**
   * Read scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) word by word,
   * with the platform's word segmenter (`Intl.Segmenter`), and end their sentences as they do (`splitSentences`).
   * Without it such a run is one "word" and a sentence of it runs to the end of its paragraph. Off by default: the
   * hashed embedder's vectors (and so the stored index) are made from the default reading, and stay as they are.
   */
  segment?: boolean;
  /**
   * Read a number written with separators as one word: `12,000` is `12000` (a comma before groups of three digits is
   * a thousands separator) and `12.5` stays `12.5`, where the default reading has the words `12` and `000`, or `12`
   * and `5` (so "12,000 euros" met "€12.5 million"). Off by default, for the same reason as `segment`.
   */
  wholeNumbers?: boolean;
}

/** The reading the citation checks use: runs of scripts without spaces segmented into words. */
export const SEGMENTED: TextOptions = Object.freeze({ segment: true });

/**
 * The reading the answerers use on question and sources at query time (the built-in extractive answer, the grounding
 * of every answer): segmented, and numbers read whole. Nothing stored is read this way.
 */
export const ANSWERING: TextOptions = Object.freeze({ segment: true, wholeNumbers: true });

/** A number with separators (`12,000`, `12.5`, `1,234.50`) not run into letters: one word in the `wholeNumbers` reading. */
const WHOLE_NUMBER = /\p{N}+(?:[.,]\p{N}+)+(?![\p{L}\p{N}])/u;

function withNumbers(pattern: RegExp): RegExp {
  return new RegExp(`${WHOLE_NUMBER.source}|${pattern.source}`, 'gu');
}
const WORD_OR_NUMBER = withNumbers(WORD);
const WORD_WITH_MARKS_OR_NUMBER = withNumbers(WORD_WITH_MARKS);


/** Whether a match of the `wholeNumbers` patterns is a number with separators (only those hold `.` or `,`). */
function isWholeNumber(w: string): boolean {
  return w.includes(',') || w.includes('.');
}

/** A whole number's word: thousands separators dropped (`12,000` → `12000`), a decimal point kept. */
function numberWord(w: string): string {
  return /^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(w) ? w.replace(/,/g, '') : w;
}

/** Letters of the scripts written without spaces between words. Hangul is written with spaces and is not one. */
const UNSPACED = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}]/u;
/** Those letters or a combining mark: a text without any is read alike by the segmented reading and the default one. */
const UNSPACED_OR_MARK = new RegExp(`${UNSPACED.source.slice(0, -1)}\\p{M}]`, 'u');

/**
 * Function words of those scripts that a segmenter returns as words of two letters or more (one-letter words are left
 * out of content terms anyway): they occur in nearly every text of their language, as "the" or "with" do in English.
 */
const UNSPACED_STOPWORDS: ReadonlySet<string> = new Set(
  (
    // Chinese
    '我们 你们 他们 她们 它们 这个 那个 这些 那些 一个 一些 以及 或者 但是 因为 所以 如果 虽然 而且 并且 可以 已经 没有 ' +
    '不是 就是 还是 什么 怎么 这样 那样 这里 那里 其中 之一 通过 对于 关于 由于 根据 其他 自己 之后 之前 同时 进行 ' +
    // Japanese
    'です ます でした ました ません この その あの これ それ あれ ここ そこ から まで など ため として について による ' +
    'において および また ある いる する した され れる られる こと もの よう ない ' +
    // Thai
    'ที่ และ ของ ใน เป็น มี การ ได้ ให้ ว่า จะ ไม่ นี้ กับ แต่ หรือ โดย จาก ซึ่ง เพื่อ ก็ อยู่ คือ ความ แล้ว ไป มา ถึง ยัง ทั้ง'
  ).split(' '),
);

/**
 * The longest piece of one run the segmenter is given at a time: its time per letter grows with the run (a run of
 * 200,000 letters took minutes whole, under a second in pieces). A word cut at a piece's end is read as two, once
 * every few hundred letters.
 */
const SEGMENT_PIECE = 300;

let segmenter: Intl.Segmenter | undefined;
function wordSegmenter(): Intl.Segmenter {
  segmenter ??= new Intl.Segmenter('und', { granularity: 'word' });
  return segmenter;
}

/**
 * Lower-cased word tokens; apostrophe suffixes ("acme's") are dropped. With `segment`, a word keeps its combining
 * marks (`WORD_WITH_MARKS`), and a token holding letters of a script written without spaces is cut into its words by
 * the segmenter (so only such runs pay for it), at most `limit` words in all, read lazily: the work is linear in the
 * text and stops at the limit.
 */
export function words(text: string, limit = 200_000, options: TextOptions = {}): string[] {
  const numbers = options.wholeNumbers === true;
  // Without letters of a script written without spaces and without combining marks, the segmented reading reads a
  // text exactly as the default one does: the default's loop is the cheaper one.
  if (options.segment !== true || !UNSPACED_OR_MARK.test(text)) {
    const out: string[] = [];
    for (const m of text.matchAll(numbers ? WORD_OR_NUMBER : WORD)) {
      if (out.length >= limit) break;
      out.push(numbers && isWholeNumber(m[0]) ? numberWord(m[0]) : m[0].toLowerCase().replace(/['’][\p{L}]+$/u, ''));
    }
    return out;
  }
  const out: string[] = [];
  const segment = UNSPACED.test(text);
  for (const m of text.matchAll(numbers ? WORD_WITH_MARKS_OR_NUMBER : WORD_WITH_MARKS)) {
    if (out.length >= limit) break;
    if (numbers && isWholeNumber(m[0])) {
      out.push(numberWord(m[0]));
      continue;
    }
    const w = m[0].toLowerCase().replace(/['’][\p{L}\p{M}]+$/u, '');
    if (!segment || !UNSPACED.test(w)) {
      out.push(w);
      continue;
    }
    for (let at = 0; at < w.length && out.length < limit; ) {
      const piece = cutUnits(w.slice(at, at + SEGMENT_PIECE + 1), SEGMENT_PIECE);
      at += piece.length;
      for (const s of wordSegmenter().segment(piece)) {
        if (out.length >= limit) break;
        if (s.isWordLike) out.push(s.segment);
      }
    }
  }
  return out;
}

/**
 * A light English stemmer: strips the common inflectional suffixes so "invoices", "invoicing" and "invoiced"
 * meet. Derivational morphology is left alone on purpose: over-stemming hurts citation checks more than it helps.
 */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3 || /\d/.test(w)) return w;
  if (w.endsWith('ies') && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('es') && /(?:ch|sh|x|z|ss)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  if (w.endsWith('ing') && w.length > 5) w = undouble(w.slice(0, -3));
  else if (w.endsWith('ed') && w.length > 4) w = undouble(w.slice(0, -2));
  if (w.endsWith('ly') && w.length > 5) w = w.slice(0, -2);
  if (w.endsWith('e') && w.length > 4) w = w.slice(0, -1);
  return w;
}

function undouble(w: string): string {
  return /([bdfgmnprt])\1$/.test(w) ? w.slice(0, -1) : w;
}

/** Stemmed, stop-word-free terms: the unit of overlap for routing and support checks. */
export function contentTerms(text: string, limit = 200_000, options: TextOptions = {}): string[] {
  const out: string[] = [];
  for (const w of words(text, limit, options)) {
    if (STOPWORDS.has(w) || w.length < 2 || (options.segment === true && UNSPACED_STOPWORDS.has(w))) continue;
    out.push(stem(w));
  }
  return out;
}

export function termSet(text: string, options: TextOptions = {}): Set<string> {
  return new Set(contentTerms(text, undefined, options));
}

const ABBREVIATIONS = new Set(['e.g', 'i.e', 'etc', 'mr', 'mrs', 'ms', 'dr', 'prof', 'inc', 'ltd', 'co', 'corp', 'vs', 'no', 'fig', 'st', 'jr', 'sr']);

/** A sentence's stop in any script: `.`, `!`, `?` before a space or the end, closing quotes and markers with it. */
const STOP = /[.!?]+(?:["')\]]+)?(?:\s*\[\d+\])*(?=\s+|$)/g;
/**
 * With `segment`, also the stops of scripts written without spaces, which need no space after them (`。`, `｡`, `！`,
 * `？`, Myanmar's `။`, Khmer's `។` and `៕`, with closing quotes and brackets and markers after them), and the markers
 * that end a run of such a script before a space and more of it: Thai, Lao, Khmer and Myanmar mark a sentence with a
 * space, not a stop, and a cited sentence ends at its marker. A space there without a marker may just as well part
 * two clauses of one sentence, and does not end one.
 */
const STOP_SEGMENTED = new RegExp(
  `${STOP.source}|[。｡！？။។៕]+(?:[」』”’）》)\\]"']+)?(?:\\s*\\[\\d+\\])*|(?<=${UNSPACED.source})(?:\\s*\\[\\d+\\])+(?=\\s+${UNSPACED.source})`,
  'gu',
);

/**
 * Splits prose into sentences. Handles abbreviations, decimals and citation markers that follow the period
 * ("... revenue grew. [2] Next ..." keeps "[2]" with the first sentence). With `segment`, also ends the sentences of
 * scripts written without spaces (`STOP_SEGMENTED`).
 */
export function splitSentences(text: string, limit = 10_000, options: TextOptions = {}): string[] {
  const out: string[] = [];
  for (const block of blocksOf(text)) {
    const flat = block.replace(/\s+/g, ' ').trim();
    if (!flat) continue;
    let start = 0;
    const re = new RegExp(options.segment === true ? STOP_SEGMENTED : STOP);
    let m: RegExpExecArray | null;
    while ((m = re.exec(flat)) !== null) {
      const end = m.index + m[0].length;
      if (/^[.!?]/.test(m[0])) {
        // Only the word before the stop and the letter after it decide: both read from a short window, so a long
        // run of stops that end no sentence ("e.g. e.g. ...", "a. b. c.") costs linear time, not quadratic.
        const lastWord = (flat.slice(Math.max(start, m.index - 64), m.index).match(/([\p{L}.]+)$/u)?.[1] ?? '').toLowerCase();
        const next = flat.slice(end, end + 8).trimStart();
        if (m[0].startsWith('.') && (ABBREVIATIONS.has(lastWord) || /^[a-z]$/.test(lastWord))) continue;
        if (next && /^[a-z]/.test(next)) continue;
      }
      const sentence = flat.slice(start, end).trim();
      if (sentence) out.push(sentence);
      if (out.length >= limit) return out;
      start = end;
    }
    const rest = flat.slice(start).trim();
    if (rest) out.push(rest);
    if (out.length >= limit) return out;
  }
  return out;
}

const HEADING_LINE = /^[ \t]*#{1,6}[ \t]/;
const LIST_ITEM_LINE = /^\s*(?:[-*•]|\d+[.)])\s/;

/**
 * The blocks of a text, line by line (linear in its length): paragraphs (ended by a blank line), list items (each a
 * block), and Markdown headings (a heading line is a block of its own: its last words are not the start of the next
 * line's sentence, nor of a name in it). A single line break inside a paragraph is a wrapped line and reads as a
 * space.
 */
function blocksOf(text: string): string[] {
  const blocks: string[] = [];
  let current: string[] = [];
  const flush = () => {
    if (current.length > 0) blocks.push(current.join('\n'));
    current = [];
  };
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    if (line.trim() === '') flush();
    else if (HEADING_LINE.test(line)) {
      flush();
      blocks.push(line);
    } else {
      if (LIST_ITEM_LINE.test(line)) flush();
      current.push(line);
    }
  }
  flush();
  return blocks;
}

/** A Markdown link or image, `[text](address)` or `[text](address "title")`: its text is kept, the rest goes. */
const MARKDOWN_LINK = /!?\[([^[\]\n]{0,500})\]\([^()\s]{0,2048}(?:\([^()\s]{0,256}\)[^()\s]{0,2048})?(?:\s+"[^"\n]{0,300}")?\s*\)/g;
/** A bare web address (`https://…`, `ftp://…`, `www.…`) up to a space, a bracket or a quote, less its final punctuation. */
const BARE_URL = /\b(?:(?:https?|ftp):\/\/|www\.)[^\s<>()[\]{}"'`]*[^\s<>()[\]{}"'`.,;:!?]/gi;

/**
 * A text without its link addresses: a Markdown link is left as its text, a bare address goes. What a claim says,
 * and what a page says in its prose, is in the words around the links; the words of an address (its host and path,
 * numbers and all) are neither. Linear: a link's text stops at the next bracket, its address at a bounded length.
 */
export function withoutLinks(text: string): string {
  return text.replace(MARKDOWN_LINK, (_all, label: string) => label).replace(BARE_URL, ' ');
}

/** Numbers as written in a text (digits with separators), normalised to their digits and decimal point. */
export function numbersIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\d[\d,]*(?:\.\d+)?/g)) {
    out.push(m[0].replace(/,/g, '').replace(/\.0+$/, ''));
  }
  return out;
}

/**
 * The text's first `max` UTF-16 units at most, never between the halves of a surrogate pair: a lone half is no
 * character, and jsonb and PostgreSQL's text refuse it (a snippet cut through an emoji failed every chat answer that
 * cited it, until 2026-11-30).
 */
export function cutUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max > 0 && /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return text.slice(0, Math.max(0, end));
}

/** A snippet of at most `max` units and `…`: cut at its last space past 60 % of it, else between code points. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = cutUnits(text, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
