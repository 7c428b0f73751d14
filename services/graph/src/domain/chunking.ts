import { splitSentences, words } from '@lore/ai';

export interface Chunk {
  ord: number;
  content: string;
  /** Nearest Markdown heading above the chunk, if any: gives citations and embeddings context. */
  heading: string | null;
}

export interface ChunkOptions {
  /** Preferred chunk size in words. */
  targetWords: number;
  /** Hard ceiling in words; a single longer sentence is cut at this size. */
  maxWords: number;
  /** Upper bound on chunks per document (a limit on every loop). */
  maxChunks: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { targetWords: 120, maxWords: 220, maxChunks: 4000 };

/**
 * Splits a document into retrieval units that keep whole sentences together. Sections (Markdown headings or
 * blank-line blocks) are packed greedily up to the target size; a chunk never mixes two headings, so a citation
 * points at text about one thing.
 */
export function chunkText(text: string, options: ChunkOptions = DEFAULT_CHUNKING): Chunk[] {
  const chunks: Chunk[] = [];
  const sections = splitSections(text);
  for (const section of sections) {
    let current: string[] = [];
    let count = 0;
    const flush = () => {
      if (current.length === 0) return;
      if (chunks.length < options.maxChunks) {
        chunks.push({ ord: chunks.length, content: current.join(' '), heading: section.heading });
      }
      current = [];
      count = 0;
    };
    for (const sentence of splitSentences(section.body, 100_000)) {
      for (const piece of cutLong(sentence, options.maxWords)) {
        const n = words(piece, options.maxWords + 1).length;
        if (count > 0 && count + n > options.targetWords) flush();
        current.push(piece);
        count += n;
      }
      if (chunks.length >= options.maxChunks) return chunks;
    }
    flush();
  }
  return chunks;
}

interface Section {
  heading: string | null;
  body: string;
}

function splitSections(text: string): Section[] {
  const out: Section[] = [];
  let heading: string | null = null;
  let body: string[] = [];
  const push = () => {
    const joined = body.join('\n').trim();
    if (joined) out.push({ heading, body: joined });
    body = [];
  };
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    const h = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (h) {
      push();
      heading = (h[1] ?? '').trim() || null;
      // The heading also belongs to its section's text so it is searchable.
      body.push(`${heading ?? ''}.`);
      continue;
    }
    body.push(line);
  }
  push();
  return out;
}

/** Cuts a run-on sentence (tables, logs, minified text) into pieces of at most `maxWords` words. */
function cutLong(sentence: string, maxWords: number): string[] {
  const parts = sentence.split(/\s+/);
  if (parts.length <= maxWords) return [sentence];
  const out: string[] = [];
  for (let i = 0; i < parts.length; i += maxWords) out.push(parts.slice(i, i + maxWords).join(' '));
  return out;
}
