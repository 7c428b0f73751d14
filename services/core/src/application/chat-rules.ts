/**
 * Small pure rules of a chat turn (no SQL, no HTTP), kept apart so each is tested on its own: a session's automatic
 * name, and the source types a turn's search keeps to.
 */

/** The longest automatic session name, in UTF-16 code units (the unit JavaScript strings and the old cut counted). */
export const AUTOMATIC_NAME_MAX = 120;

/**
 * The name a session gets when its first question gives none to read (its start is only invisible characters). An
 * empty name would mean "not named yet": the session would stay nameless, listed with no name.
 */
export const AUTOMATIC_NAME_FALLBACK = 'New chat';

/**
 * Something to read: a character that is neither white space, nor a format character (zero-width spaces and joiners,
 * direction marks, soft hyphen, word joiner, BOM: Unicode's Cf), nor one of the letters and symbols drawn as blank
 * (Hangul fillers, the blank Braille pattern). Until 2026-11-30 only a few of them counted, and a name of U+200E alone
 * was taken.
 */
export const VISIBLE = /[^\s\p{Cf}\u115f\u1160\u2800\u3164\uffa0]/u;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The user-perceived characters of `text`, in order, read only as far as they are asked for. */
function* graphemesOf(text: string): Generator<string> {
  for (const { segment } of graphemes.segment(text)) yield segment;
}

/** How many code units of `parts` (in order) fit in `max`. */
function fitting(parts: Iterable<string>, max: number): number {
  let end = 0;
  for (const part of parts) {
    if (end + part.length > max) break;
    end += part.length;
  }
  return end;
}

/**
 * A session's automatic name: the start of its first question, at most `AUTOMATIC_NAME_MAX` code units, cut between
 * two user-perceived characters (grapheme clusters). A cut by code units could split an emoji's surrogate pair, and
 * PostgreSQL stored the lone half as U+FFFD; a cut by code points could still split a flag or a family emoji. A first
 * grapheme longer than the whole name (a letter under hundreds of combining marks) is cut between code points
 * instead, and a start with nothing to read gives `AUTOMATIC_NAME_FALLBACK`: until 2026-11-30 both gave the empty
 * name, and the session was never named. Only an empty text (no question) gives the empty name.
 */
export function automaticName(text: string): string {
  if (text === '') return '';
  let name = text;
  if (text.length > AUTOMATIC_NAME_MAX) {
    const end = fitting(graphemesOf(text), AUTOMATIC_NAME_MAX) || fitting(text, AUTOMATIC_NAME_MAX);
    name = text.slice(0, end);
  }
  return VISIBLE.test(name) ? name : AUTOMATIC_NAME_FALLBACK;
}

/**
 * The source types a turn's search keeps to: the persona's `source_types` (null: every source) narrowed by the
 * request's `internal_search_filters.source_type`. Both given: only the types in both, so a request can narrow a
 * persona but never widen it (none in common: the search finds nothing). Undefined: every source.
 */
export function turnSourceTypes(persona: readonly string[] | null, request: readonly string[] | undefined): string[] | undefined {
  if (persona === null) return request === undefined ? undefined : [...request];
  if (request === undefined) return [...persona];
  return request.filter((t) => persona.includes(t));
}
