/**
 * The SQL expression that turns text into what `to_tsvector` reads, used by the index and by the query alike so
 * that their lexemes agree.
 *
 * PostgreSQL's text-search parser reads `<...>` as an XML/HTML tag and `<!-- ... -->` as a comment and indexes
 * nothing inside them, so words a document wrote between angle brackets (`a<b`, `<!-- budget freeze -->`,
 * `<user id>`) could never be found; and it re-scans an unclosed `<` to the end of the text, so a chunk full of
 * `<!--` costs time quadratic in its length (16,000 of them took 13 s on one statement). Memory content is text
 * (the extractors already turned HTML into text), so both angle brackets are read as spaces.
 */
export const LEXICAL_TEXT = (expression: string): string => `translate(${expression}, '<>', '  ')`;
