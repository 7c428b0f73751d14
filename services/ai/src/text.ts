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

/** Lower-cased word tokens; apostrophe suffixes ("acme's") are dropped. */
export function words(text: string, limit = 200_000): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(WORD)) {
    if (out.length >= limit) break;
    out.push(m[0].toLowerCase().replace(/['’][\p{L}]+$/u, ''));
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
export function contentTerms(text: string, limit = 200_000): string[] {
  const out: string[] = [];
  for (const w of words(text, limit)) {
    if (STOPWORDS.has(w) || w.length < 2) continue;
    out.push(stem(w));
  }
  return out;
}

export function termSet(text: string): Set<string> {
  return new Set(contentTerms(text));
}

const ABBREVIATIONS = new Set(['e.g', 'i.e', 'etc', 'mr', 'mrs', 'ms', 'dr', 'prof', 'inc', 'ltd', 'co', 'corp', 'vs', 'no', 'fig', 'st', 'jr', 'sr']);

/**
 * Splits prose into sentences. Handles abbreviations, decimals and citation markers that follow the period
 * ("... revenue grew. [2] Next ..." keeps "[2]" with the first sentence).
 */
export function splitSentences(text: string, limit = 10_000): string[] {
  const out: string[] = [];
  for (const block of blocksOf(text)) {
    const flat = block.replace(/\s+/g, ' ').trim();
    if (!flat) continue;
    let start = 0;
    const re = /[.!?]+(?:["')\]]+)?(?:\s*\[\d+\])*(?=\s+|$)/g;
    let m: RegExpExecArray | null;
    while ((m = re.exec(flat)) !== null) {
      const end = m.index + m[0].length;
      // Only the word before the stop and the letter after it decide: both read from a short window, so a long
      // run of stops that end no sentence ("e.g. e.g. ...", "a. b. c.") costs linear time, not quadratic.
      const lastWord = (flat.slice(Math.max(start, m.index - 64), m.index).match(/([\p{L}.]+)$/u)?.[1] ?? '').toLowerCase();
      const next = flat.slice(end, end + 8).trimStart();
      if (m[0].startsWith('.') && (ABBREVIATIONS.has(lastWord) || /^[a-z]$/.test(lastWord))) continue;
      if (next && /^[a-z]/.test(next)) continue;
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
