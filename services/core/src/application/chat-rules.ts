/**
 * Small pure rules of a chat turn (no SQL, no HTTP), kept apart so each is tested on its own: a session's automatic
 * name, and the source types a turn's search keeps to.
 */

/** The longest automatic session name, in UTF-16 code units (the unit JavaScript strings and the old cut counted). */
export const AUTOMATIC_NAME_MAX = 120;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * A session's automatic name: the start of its first question, at most `AUTOMATIC_NAME_MAX` code units, cut between
 * two user-perceived characters (grapheme clusters). A cut by code units could split an emoji's surrogate pair, and
 * PostgreSQL stored the lone half as U+FFFD; a cut by code points could still split a flag or a family emoji.
 */
export function automaticName(text: string): string {
  if (text.length <= AUTOMATIC_NAME_MAX) return text;
  let end = 0;
  for (const { segment } of graphemes.segment(text)) {
    if (end + segment.length > AUTOMATIC_NAME_MAX) break;
    end += segment.length;
  }
  return text.slice(0, end);
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
