import { splitSentences, stem, STOPWORDS } from '@lore/ai';
import { entityKey, type EntityKind } from './entity-model';

// The kinds and the key are the shared entity model's (entity-model.ts), which the knowledge graphs use too.
export { entityKey, type EntityKind };

export interface ExtractedEntity {
  /** Normalised key: lower case, single spaces, no leading article. Unique per memory. */
  key: string;
  name: string;
  kind: EntityKind;
  mentions: number;
}

/** A statement "subject has attribute = value" found in one sentence of one chunk. */
export interface Fact {
  entity_key: string;
  entity_name: string;
  attribute: string;
  value: string;
  /** Comparable form of the value (numbers without separators, lower case). */
  value_norm: string;
  sentence: string;
  chunk_ord: number;
}

/**
 * A run of capitalised words. Every text that reaches the indexer is matched against it, so it must stay linear
 * whatever the text: a name starts at a word's start (never inside a long token, where every position would be
 * tried again); a word is a capital and at most 40 more characters, or a digit-led code (`3M`); the two word shapes
 * start with different characters and the joiners are lower case, so a run of words can be split one way only (with
 * an all-caps word matching two shapes, `ACME ACME …` had 2^n splits to try when a fact pattern failed after it).
 */
const WORD = String.raw`(?:[A-Z][\p{L}\p{N}&'’-]{0,40}|\d[A-Z0-9]{1,40})`;
const NAME = String.raw`(?<![\p{L}\p{N}&'’-])${WORD}(?:\s+(?:of|for|and|&|de|van|von)\s+[A-Z][\p{L}\p{N}&'’-]{0,40}|\s+${WORD})*`;
const NAME_RE = new RegExp(NAME, 'gu');

const NOT_NAMES = new Set(
  (
    'the a an this that these those it its our we they he she i you there here however therefore also when while if ' +
    'monday tuesday wednesday thursday friday saturday sunday january february march april may june july august ' +
    'september october november december q1 q2 q3 q4 redacted yes no ok note summary introduction conclusion'
  ).split(' '),
);
const ORG_SUFFIX = /\b(?:inc|ltd|llc|gmbh|corp|corporation|company|co|plc|ag|sa|bank|university|group|labs|foundation|institute|agency|ministry|capital|ventures|partners|holdings|technologies|systems|solutions|consulting|industries|associates|fund|trust)\.?$/i;
/**
 * A person's name as context may say so: two to four capitalised words, none of them all capitals. A round "led by
 * Sequoia", a deal "signed by Siemens", "the asset manager BlackRock": one word after such a cue is as often a
 * company, so context alone makes a person only of a name of this shape.
 */
const PERSON_NAME = /^(?:\p{Lu}[\p{Ll}\p{M}'’-]+)(?:\s+\p{Lu}[\p{Ll}\p{M}'’.-]*){1,3}$/u;
const PERSON_TITLE = /\b(?:mr|mrs|ms|dr|prof|sir|madam)\.?\s+$/i;
const PLACE_PREP = /\b(?:in|at|from|near|to)\s+$/i;
/**
 * People without a title: a role just before the name ("CEO Jane Doe", "led by Jane Doe"), or an apposition or a
 * relative clause just after it ("Jane Doe, the CEO of …", "Jane Doe, who …"). Roles are read as words (`CEO`, not
 * `CEOs`); a company does not take "who".
 */
const ROLES = String.raw`(?:CEO|CTO|CFO|COO|CIO|CISO|founder|co-founder|cofounder|president|vice\s+president|chairman|chairwoman|chairperson|chair|director|manager|engineer|analyst|professor|minister|senator|author|editor|spokesperson|spokeswoman|spokesman|lawyer|attorney|consultant|architect|designer|recruiter|head\s+of\s+\p{L}+)`;
const PERSON_ROLE_BEFORE = new RegExp(String.raw`(?:\b${ROLES}|\b(?:led|founded|co-founded|headed|run|managed|chaired|written|signed|approved|presented)\s+by)\s+$`, 'iu');
const PERSON_AFTER = new RegExp(String.raw`^\s*,\s+(?:(?:the|our|their|its|a|an)\s+)?(?:(?:new|former|acting|interim|chief|senior|lead|principal|deputy|assistant|general)\s+)*(?:${ROLES}\b|who\b)`, 'iu');

function cleanName(raw: string): string | null {
  let name = raw.replace(/['’]s$/, '').trim();
  const parts = name.split(/\s+/);
  while (parts.length > 0 && NOT_NAMES.has((parts[0] ?? '').toLowerCase())) parts.shift();
  while (parts.length > 0 && /^(?:of|for|and|&|de|van|von)$/i.test(parts[parts.length - 1] ?? '')) parts.pop();
  name = parts.join(' ');
  if (name.length < 2 || name.length > 80) return null;
  if (parts.every((p) => STOPWORDS.has(p.toLowerCase()) || NOT_NAMES.has(p.toLowerCase()))) return null;
  if (/^\d+$/.test(name)) return null;
  return name;
}

/**
 * Rule-based named-entity extraction: runs of capitalised words (with "of", "&"… inside), minus sentence-initial
 * function words. A single capitalised word at the very start of a sentence counts only if it also appears
 * capitalised elsewhere, which keeps ordinary sentence openers out of the graph.
 */
export function extractEntities(text: string, limit = 500): ExtractedEntity[] {
  const found = new Map<string, ExtractedEntity>();
  const sentences = splitSentences(text.replace(/\[REDACTED:[a-z_]+\]/g, ' '), 20_000);
  const midSentence = new Set<string>();
  const candidates: Array<{ name: string; initial: boolean; before: string; after: string }> = [];
  for (const sentence of sentences) {
    for (const m of sentence.matchAll(NAME_RE)) {
      const name = cleanName(m[0]);
      if (!name) continue;
      const offset = m.index ?? 0;
      const initial = sentence.slice(0, offset).trim() === '' && name === m[0].trim();
      if (!initial) midSentence.add(entityKey(name));
      const end = offset + m[0].length;
      candidates.push({ name, initial, before: sentence.slice(Math.max(0, offset - 24), offset), after: sentence.slice(end, end + 60) });
    }
  }
  for (const c of candidates) {
    const key = entityKey(c.name);
    if (!key) continue;
    if (c.initial && !c.name.includes(' ') && !midSentence.has(key) && !/^[A-Z0-9]{2,}$/.test(c.name)) continue;
    const existing = found.get(key);
    if (existing) {
      existing.mentions += 1;
      // A later mention may say what an earlier one did not ("Jane Doe wrote …", then "Jane Doe, the CTO, …").
      if (existing.kind === 'concept') existing.kind = kindOf(c.name, c.before, c.after);
      continue;
    }
    if (found.size >= limit) continue;
    found.set(key, { key, name: c.name, kind: kindOf(c.name, c.before, c.after), mentions: 1 });
  }
  return [...found.values()];
}

function kindOf(name: string, before: string, after: string): EntityKind {
  if (ORG_SUFFIX.test(name)) return 'organization';
  if (PERSON_TITLE.test(before)) return 'person';
  if (/^[A-Z0-9]{2,}$/.test(name)) return 'organization';
  if (PERSON_NAME.test(name) && (PERSON_ROLE_BEFORE.test(before) || PERSON_AFTER.test(after))) return 'person';
  if (PLACE_PREP.test(before)) return 'place';
  return 'concept';
}

const SUBJECT = String.raw`(?<subj>${NAME})`;
const VALUE = String.raw`(?<val>[^.;!?]{1,80}?)`;
const END = String.raw`(?=\s*(?:[.;!?]|,|\s+(?:and|but|since|because|while|which|who|according|as|per|from|until|after|before|when|in\s+\d{4})\b|$))`;

/** Statement shapes that carry a checkable fact. The attribute comes from the pattern or from the text. */
const FACT_PATTERNS: Array<{ re: RegExp; attribute?: string }> = [
  { re: new RegExp(String.raw`${SUBJECT}\s+(?:is|was|are|were)\s+(?:headquartered|based|located)\s+in\s+${VALUE}${END}`, 'u'), attribute: 'location' },
  { re: new RegExp(String.raw`${SUBJECT}\s+(?:was\s+)?(?:founded|established|created)\s+in\s+(?<val>\d{4})`, 'u'), attribute: 'founded' },
  { re: new RegExp(String.raw`${SUBJECT}\s+(?:is|was)\s+(?:led|run|managed|headed)\s+by\s+${VALUE}${END}`, 'u'), attribute: 'leader' },
  { re: new RegExp(String.raw`${SUBJECT}\s+(?:costs?|is\s+priced\s+at)\s+(?<val>[$€£]?\s?\d[\d,.]*(?:\s*(?:[A-Z]{3}|dollars|euros|pounds))?(?:\s+(?:per|a)\s+\w+)?)`, 'u'), attribute: 'price' },
  { re: new RegExp(String.raw`${SUBJECT}\s+(?:has|employs|had|employed)\s+(?:about\s+|around\s+|over\s+|roughly\s+)?(?<val>\d[\d,.]*)\s+(?<attr>[a-z]+)`, 'u') },
  { re: new RegExp(String.raw`${SUBJECT}['’]s\s+(?<attr>[a-z][a-z -]{1,40}?)\s+(?:is|was|are|equals)\s+${VALUE}${END}`, 'u') },
  { re: new RegExp(String.raw`\b(?:[Tt]he\s+)?(?<attr>[A-Za-z][A-Za-z -]{1,40}?)\s+of\s+${SUBJECT}\s+(?:is|was|are|equals)\s+${VALUE}${END}`, 'u') },
];

export function normalizeValue(value: string): string {
  const v = value.trim().replace(/\s+/g, ' ').toLowerCase();
  const num = /^[$€£]?\s?(\d[\d,]*(?:\.\d+)?)\b/.exec(v);
  if (num) {
    const rest = v.slice(num[0].length).trim();
    return `${(num[1] ?? '').replace(/,/g, '').replace(/\.0+$/, '')}${rest ? ` ${rest.split(' ').map(stem).join(' ')}` : ''}`;
  }
  return v.replace(/^(?:the|a|an)\s+/, '').replace(/[.,;:]+$/, '');
}

function normalizeAttribute(attr: string): string {
  return attr
    .trim()
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => !STOPWORDS.has(w))
    .map(stem)
    .join(' ');
}

/** Longest sentence read for facts: a statement of fact is a sentence, not a page (nor a token of 500,000 digits). */
const FACT_SENTENCE_MAX_CHARS = 1_000;

/** Facts of one chunk, at most `limit`. Sentences are checked against each pattern; first match wins. */
export function extractFacts(text: string, chunkOrd: number, limit = 200): Fact[] {
  const out: Fact[] = [];
  for (const sentence of splitSentences(text, 5_000)) {
    if (out.length >= limit) break;
    if (sentence.length > FACT_SENTENCE_MAX_CHARS) continue;
    if (sentence.includes('[REDACTED:')) continue; // masked values are not facts anyone can compare
    for (const p of FACT_PATTERNS) {
      const m = p.re.exec(sentence);
      const groups = m?.groups;
      if (!groups?.subj || !groups.val) continue;
      const name = cleanName(groups.subj);
      const attribute = p.attribute ?? normalizeAttribute(groups.attr ?? '');
      const value = groups.val.trim();
      if (!name || !attribute || !value) continue;
      out.push({
        entity_key: entityKey(name),
        entity_name: name,
        attribute,
        value,
        value_norm: normalizeValue(value),
        sentence: sentence.slice(0, 500),
        chunk_ord: chunkOrd,
      });
      break;
    }
  }
  return out;
}

export interface StoredFact extends Fact {
  doc_id: string;
}

export interface ContradictionPair {
  entity_key: string;
  entity_name: string;
  attribute: string;
  a: StoredFact;
  b: StoredFact;
}

/**
 * Two sources disagree when they state the same attribute of the same entity with different values. Only
 * facts from different documents are compared (a document revising itself is not a contradiction between
 * sources), and each disagreeing (document, value) pair is reported once.
 */
export function findContradictions(incoming: StoredFact[], existing: StoredFact[], limit = 100): ContradictionPair[] {
  const out: ContradictionPair[] = [];
  const seen = new Set<string>();
  for (const f of incoming) {
    for (const e of existing) {
      if (out.length >= limit) return out;
      if (e.doc_id === f.doc_id || e.entity_key !== f.entity_key || e.attribute !== f.attribute) continue;
      if (e.value_norm === f.value_norm) continue;
      const key = `${f.entity_key}\u0000${f.attribute}\u0000${e.doc_id}\u0000${e.value_norm}\u0000${f.value_norm}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ entity_key: f.entity_key, entity_name: f.entity_name, attribute: f.attribute, a: e, b: f });
    }
  }
  return out;
}
