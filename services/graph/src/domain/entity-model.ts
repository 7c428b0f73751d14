import { createHash } from 'node:crypto';
import { SEGMENTED, STOPWORDS, words as textWords } from '@lore/ai';
import { normalizeDomain, normalizeProfileUrl } from '@lore/contracts';

export { normalizeDomain, normalizeProfileUrl };

/**
 * The one entity model of the graph service (docs/memory.md, "Entities"): what memory ingest extracts from
 * documents (`memory.entity.created`) and what the knowledge graphs hold as typed nodes are the same things, named
 * by the same kinds, labels and keys. Pure: no HTTP, no SQL; memory indexing and the knowledge-graph store both
 * import it.
 */

/** The kind of an entity memory ingest finds in free text (stored in `graph.entities.kind`, sent in events). */
export const ENTITY_KINDS = ['organization', 'person', 'place', 'concept'] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

/**
 * The label of a knowledge-graph node: spec 2's Person, Company, Position, Location, ScanReport, and Document (a
 * connector document a graph was built from; migration 0008's check names the same set).
 */
export const NODE_LABELS = ['Person', 'Company', 'Position', 'Location', 'ScanReport', 'Document'] as const;
export type NodeLabel = (typeof NODE_LABELS)[number];

const KIND_LABEL: Record<EntityKind, NodeLabel | null> = { organization: 'Company', person: 'Person', place: 'Location', concept: null };

/** The node label a memory entity of this kind becomes in a graph; a concept has none (it is not a node type). */
export function labelOfKind(kind: string): NodeLabel | null {
  return (ENTITY_KINDS as readonly string[]).includes(kind) ? KIND_LABEL[kind as EntityKind] : null;
}

/** The memory entity kind of a node label, or null for labels free text does not yield (Position, ScanReport). */
export function kindOfLabel(label: string): EntityKind | null {
  for (const kind of ENTITY_KINDS) if (KIND_LABEL[kind] === label) return kind;
  return null;
}

/**
 * A memory entity's key (unique per memory): lower case, single spaces, no leading article or trailing
 * possessive. Keys stored since the first migration use exactly this form, so it must not change.
 */
export function entityKey(name: string): string {
  return name
    .replace(/^(?:the|a|an)\s+/i, '')
    .replace(/['’]s$/i, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

/**
 * The form names are compared in: Unicode compatibility forms folded (NFKD), accents (the combining diacritical
 * marks) dropped, lower case, every run of punctuation or space one space, no leading article. "Café Nöel GmbH",
 * "cafe noel gmbh" and "The CAFÉ-Noël GmbH" all read `cafe noel gmbh`.
 */
export function foldName(name: string): string {
  return name
    .normalize('NFKD')
    // The combining diacritical marks only, as graph.kg_fold drops them: the marks of other scripts (a Devanagari
    // vowel sign, a Japanese voicing mark) make another name, not an accented one.
    .replace(/[\u0300-\u036f]+/g, '')
    .toLowerCase()
    .replace(/['’]s\b/g, '')
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ')
    .trim()
    .replace(/^(?:the|a|an) /, '');
}

const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');

/**
 * Who a node is (entity resolution): two facts about the same key are about one node of the graph. A company is
 * one per domain (else per name); a person one per profile URL, else per name with company; a position is its
 * title at its company; a location its name; a scan report or a document its id, else its URL, else its name (an
 * id first: a report's other properties may hold any column, a `url` among them, that other reports share). Null when the
 * properties name nothing.
 */
export function resolutionKey(label: NodeLabel, properties: Record<string, unknown>): string | null {
  const key = unboundedKey(label, properties);
  return key === null ? null : boundedKey(key);
}

/** The most characters a resolution key keeps as written; a unique index holds it (at most 8 KiB a row). */
export const MAX_KEY_CHARS = 512;

/**
 * A key as it is, when short; a longer one (a 10,000-character name is within an upload's limits) is its start and
 * the SHA-256 of the whole, so equal keys stay equal, different ones different, and the index always holds it.
 */
export function boundedKey(key: string): string {
  if (key.length <= MAX_KEY_CHARS) return key;
  return `${Array.from(key).slice(0, 400).join('')}#sha256:${createHash('sha256').update(key).digest('hex')}`;
}

function unboundedKey(label: NodeLabel, properties: Record<string, unknown>): string | null {
  const name = foldName(text(properties.name));
  switch (label) {
    case 'Company': {
      const domain = normalizeDomain(text(properties.domain)) || normalizeDomain(text(properties.website));
      if (domain) return `domain:${domain}`;
      return name ? `name:${name}` : null;
    }
    case 'Person': {
      const profile = normalizeProfileUrl(text(properties.linkedin_url)) || normalizeProfileUrl(text(properties.profile_url));
      if (profile) return `profile:${profile}`;
      const company = normalizeDomain(text(properties.company_domain)) || foldName(text(properties.company));
      if (name && company) return `name:${name}|${company}`;
      return name ? `name:${name}` : null;
    }
    case 'Position': {
      const title = foldName(text(properties.title)) || name;
      const company = normalizeDomain(text(properties.company_domain)) || foldName(text(properties.company));
      if (!title) return null;
      return company ? `title:${title}|${company}` : `title:${title}`;
    }
    case 'Location':
      return name ? `name:${name}` : null;
    case 'Document':
    case 'ScanReport': {
      const ref = text(properties.id) || text(properties.url);
      if (ref) return `ref:${ref.toLowerCase()}`;
      return name ? `name:${name}` : null;
    }
  }
}

/** Longest phrase (in words) a question is searched for; names longer than this are found by their start. */
export const MAX_PHRASE_WORDS = 6;

/**
 * The phrases of a question that could name a node (graph chat's entity linking): every run of 1 to
 * `MAX_PHRASE_WORDS` consecutive words, as written in the question, separators included ("ACME Corp", "acme.com",
 * "O’Brien"). A single word counts unless it is a stop word. A longer run counts when one of its words is not a stop
 * word ("Will Smith Holdings", "On Holding"), or when its words are joined without spaces ("AT&T"). The question is
 * read in compatibility form (NFKC: "Acme™" is "AcmeTM", as its node's folded name). The database folds the phrases
 * and a node's names with one function (`graph.kg_fold`, migration 0010), so case, accents and punctuation never
 * decide a match. At most `limit` phrases, the shorter runs first; the default takes every run of a question of the
 * longest length chat accepts.
 */
export function questionPhrases(question: string, limit = 6_000): string[] {
  return questionPhraseSpans(question, limit).map((p) => p.text);
}

/** Where a phrase stands in its question: the indexes of its first and last word in `questionWords`. */
export interface WordSpan {
  first: number;
  last: number;
}

/** A phrase of a question, as written, and every place it is written. */
export interface PhraseSpan {
  text: string;
  spans: WordSpan[];
}

/** A word of a question (NFKC form): where it starts and ends in that form, and its folded form. */
export interface QuestionWord {
  start: number;
  end: number;
  folded: string;
}

/** Letters of the scripts written without spaces between words (as `@lore/ai`'s segmented reading knows them). */
const UNSPACED = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}]/u;

/**
 * The question in compatibility form (NFKC) and its words: runs of letters, marks and digits; a run holding letters
 * of a script written without spaces (Chinese, Japanese, Thai…) cut into its words by `@lore/ai`'s segmented reading
 * (`words` with `SEGMENTED`, the platform's word segmenter), so "谁在腾讯工作" has the words of "腾讯".
 */
export function questionWords(question: string): { text: string; words: QuestionWord[] } {
  const text = question.normalize('NFKC');
  const words: QuestionWord[] = [];
  for (const m of text.matchAll(/[\p{L}\p{M}\p{N}]+/gu)) {
    const start = m.index ?? 0;
    const whole = () => words.push({ start, end: start + m[0].length, folded: foldName(m[0]) });
    const lower = m[0].toLowerCase();
    if (!UNSPACED.test(m[0]) || lower.length !== m[0].length) {
      whole();
      continue;
    }
    // The segmenter's words in order, found back in the run (they are its pieces, lower-cased as it is).
    const pieces: QuestionWord[] = [];
    let at = 0;
    for (const piece of textWords(m[0], m[0].length, SEGMENTED)) {
      const i = lower.indexOf(piece, at);
      if (i < 0) break;
      pieces.push({ start: start + i, end: start + i + piece.length, folded: foldName(m[0].slice(i, i + piece.length)) });
      at = i + piece.length;
    }
    if (pieces.length === 0) whole();
    else words.push(...pieces);
  }
  return { text, words };
}

/** `questionPhrases` with the places of each phrase (graph chat knows which words a match covers). */
export function questionPhraseSpans(question: string, limit = 6_000): PhraseSpan[] {
  const { text, words } = questionWords(question);
  const meaningful = words.map((w) => w.folded !== '' && !STOPWORDS.has(w.folded));
  const spaced = words.map((w, i) => i + 1 < words.length && /\s/u.test(text.slice(w.end, words[i + 1]!.start)));
  const out = new Map<string, PhraseSpan>();
  for (let n = 1; n <= MAX_PHRASE_WORDS; n++) {
    for (let i = 0; i + n <= words.length; i++) {
      const run = meaningful.slice(i, i + n);
      const tight = n > 1 && !spaced.slice(i, i + n - 1).some(Boolean);
      if (!run.some(Boolean) && !tight) continue;
      if (n === 1 && !run[0]) continue;
      const phrase = text.slice(words[i]!.start, words[i + n - 1]!.end);
      const span = { first: i, last: i + n - 1 };
      // Words the segmenter cut apart (nothing between them) are also read spaced: a name stored as "李 雷" is
      // asked as "李雷".
      const cut = n > 1 && words.slice(i + 1, i + n).every((w, j) => w.start === words[i + j]!.end);
      for (const p of cut ? [phrase, words.slice(i, i + n).map((w) => text.slice(w.start, w.end)).join(' ')] : [phrase]) {
        const known = out.get(p);
        if (known) {
          known.spans.push(span);
          continue;
        }
        if (out.size >= limit) return [...out.values()];
        out.set(p, { text: p, spans: [span] });
      }
    }
  }
  return [...out.values()];
}
