import { countTokens as count } from 'gpt-tokenizer';

/** Special-token text in user input is counted as plain text, never refused (and never a crash). */
const PLAIN = { disallowedSpecial: new Set<string>() };

/**
 * Characters of one kind in a row counted in one piece at most. Byte-pair merging takes time that grows with the
 * square of a pre-token's length, and a run of one kind (letters and marks without a space between them: CJK or Thai
 * prose, a DNA sequence; symbols, punctuation or emoji; white space) is one pre-token: 20,000 such characters took
 * seconds on the process's one thread, where every tenant waited (until 2026-11-30). A longer run is counted in pieces
 * of this many UTF-16 units (never between the halves of a surrogate pair). Runs of ordinary text are shorter and
 * count exactly as before; a run cut into pieces counts within about one token a piece of its whole count.
 */
const RUN_PIECE = 256;
const LONG_RUN = new RegExp(`[\\p{L}\\p{M}]{${RUN_PIECE + 1},}|[^\\s\\p{L}\\p{M}\\p{N}]{${RUN_PIECE + 1},}|\\s{${RUN_PIECE + 1},}`, 'gu');

/** The run's pieces of at most RUN_PIECE units, cut between code points. */
function runPieces(run: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < run.length; ) {
    let end = Math.min(run.length, i + RUN_PIECE);
    if (end < run.length && /[\uD800-\uDBFF]/.test(run[end - 1]!)) end -= 1;
    out.push(run.slice(i, end));
    i = end;
  }
  return out;
}

/** Tokens of `text` in the o200k_base encoding (current OpenAI models; a close measure for other models). */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  let total = 0;
  let from = 0;
  for (const m of text.matchAll(LONG_RUN)) {
    if (m.index > from) total += count(text.slice(from, m.index), PLAIN);
    for (const piece of runPieces(m[0])) total += count(piece, PLAIN);
    from = m.index + m[0].length;
  }
  if (from < text.length) total += count(text.slice(from), PLAIN);
  return total;
}

/** Text counted by `countTokensYielding` between two turns of the event loop. */
const YIELD_EVERY_CHARS = 16_384;

/**
 * `countTokens` for long texts (a project file's up to 2 MiB): counted a slice of about 16 KiB at a time, each cut at
 * a space where there is one, letting the event loop run between slices, so other requests are not held while a
 * large file is counted.
 */
export async function countTokensYielding(text: string): Promise<number> {
  let total = 0;
  for (let i = 0; i < text.length; ) {
    let end = Math.min(text.length, i + YIELD_EVERY_CHARS);
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end);
      if (space > i + YIELD_EVERY_CHARS / 2) end = space;
      else if (/[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
    }
    total += countTokens(text.slice(i, end));
    i = end;
    if (i < text.length) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return total;
}

/**
 * The context budget of chat answers (our design; spec 2 names the routes, not the numbers). A persona's model
 * window, minus what its instructions take, minus room for the answer, is what documents and history may fill.
 */
export const CONTEXT = {
  /** Tokens of the model's context window when the model is not one Lore knows. */
  defaultWindow: 128_000,
  /** Room kept for the answer itself. */
  answerReserve: 2_048,
  /** Share of the remaining window that selected documents may take (the rest is for the conversation). */
  documentShare: 0.5,
} as const;

/** How many tokens selected documents may take for a persona with these instructions. */
export function maxDocumentTokens(instructions: string, window: number = CONTEXT.defaultWindow): number {
  const free = window - countTokens(instructions) - CONTEXT.answerReserve;
  return Math.max(0, Math.floor(free * CONTEXT.documentShare));
}

/** Tokens still free in a session's context after its instructions and the messages of its latest branch. */
export function availableContextTokens(instructions: string, messageTokens: number, window: number = CONTEXT.defaultWindow): number {
  return Math.max(0, window - countTokens(instructions) - CONTEXT.answerReserve - messageTokens);
}
