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
 * start with different characters and the joiners are lower case (or `&`), so a run of words can be split one way
 * only (with an all-caps word matching two shapes, `ACME ACME …` had 2^n splits to try when a fact pattern failed
 * after it). "and" joins nothing: "Microsoft and Google" are two runs. The run is then read word by word
 * (`namesOfRun`), which decides where it holds one name and where several.
 */
const WORD = String.raw`(?:\p{Lu}[\p{L}\p{N}&'’-]{0,40}|\d[A-Z0-9]{1,40})`;
/** Lower-case particles inside a person's name: "Ursula von der Leyen", "Luiz da Silva", "Mohammed bin Salman". */
const PARTICLE = String.raw`(?:de|van|von|der|den|da|di|du|del|della|dos|das|la|le|bin|ibn)`;
const JOINER = String.raw`(?:of|for|&|${PARTICLE}(?:\s+${PARTICLE})?)`;
const NAME = String.raw`(?<![\p{L}\p{N}&'’-])${WORD}(?:\s+${JOINER}\s+\p{Lu}[\p{L}\p{N}&'’-]{0,40}|\s+${WORD})*`;
const NAME_RE = new RegExp(NAME, 'gu');
const PARTICLES = new Set(PARTICLE.slice(3, -1).split('|'));

const NOT_NAMES = new Set(
  (
    'the a an this that these those it its our we they he she i you there here however therefore also when while if ' +
    'monday tuesday wednesday thursday friday saturday sunday january february march april may june july august ' +
    'september october november december q1 q2 q3 q4 redacted yes no ok note summary introduction conclusion ' +
    'yesterday today tomorrow tonight meanwhile moreover furthermore nevertheless nonetheless afterwards hence thus ' +
    'indeed according dear hi hello'
  ).split(' '),
);
/** Words that open a sentence as an adverb, followed by a comma: never the first of a list of names. */
const SENTENCE_OPENERS = new Set('otherwise instead overall later earlier finally first second third next then now still again besides'.split(' '));
const ORG_SUFFIX_WORDS =
  'inc|ltd|llc|llp|lp|gmbh|corp|corporation|incorporated|limited|company|co|plc|ag|sa|se|nv|bv|kg|ab|oy|pty|srl|spa|sarl|' +
  'bank|bancorp|university|group|labs|foundation|institute|agency|ministry|capital|ventures|partners|holding|holdings|' +
  'technologies|systems|solutions|consulting|industries|associates|fund|trust|brothers|airlines|motors|pharmaceuticals|' +
  'studios|networks|securities|investments|advisors|advisers|enterprises|robotics|dynamics';
const ORG_SUFFIX = new RegExp(String.raw`\b(?:${ORG_SUFFIX_WORDS})\.?$`, 'i');
const ORG_SUFFIX_WORD = new RegExp(String.raw`^(?:${ORG_SUFFIX_WORDS})\.?$`, 'i');

/**
 * Roles inside a run of capitals ("CEO Jane Doe", "Microsoft CEO Satya Nadella", "VP Engineering", "Head of Sales",
 * "Chief Financial Officer"): a cue, never part of a name and never a name of its own. Acronyms are read as written
 * (all capitals), the other words in any case. Department words and modifiers belong to a role only next to one.
 */
const ROLE_ACRONYMS = new Set('CEO CTO CFO COO CIO CISO CMO CPO CRO CHRO CDO CSO CCO CAO CLO VP SVP EVP AVP GM'.split(' '));
/** Roles whose company is named next to them ("Acme CEO …", "CEO of Acme"). */
const EXECUTIVE_ROLES = new Set('president chair chairman chairwoman chairperson founder co-founder cofounder director officer partner head executive'.split(' '));
/** Roles whose "of" names a place ("Mayor of London"). */
const PUBLIC_ROLES = new Set('minister senator governor mayor chancellor ambassador commissioner'.split(' '));
const OTHER_ROLES = new Set('manager treasurer professor engineer analyst architect designer consultant recruiter editor lawyer attorney spokesperson spokesman spokeswoman'.split(' '));
const ROLE_MODIFIERS = new Set(
  'senior junior former acting interim deputy associate assistant executive lead principal chief managing general vice founding new co group global regional country area division divisional national first prime'.split(' '),
);
const DEPARTMENTS = new Set(
  (
    'engineering sales marketing finance financial operations operating product products research legal hr it technology technical ' +
    'information strategy design data growth people security partnerships communications development business customer customers success ' +
    'infrastructure platform revenue commercial digital procurement talent brand creative art program programme project account accounts ' +
    'community analytics innovation risk compliance privacy investor relations public affairs policy quality support administration ' +
    'accounting corporate medical scientific editorial content software hardware ai ml cloud r&d emea apac ' +
    'defence defense health education justice interior foreign trade labour labor transport environment agriculture culture'
  ).split(' '),
);
/** Words a name of two or more words may end in after "of" and still be one name ("Royal Bank of Canada"). */
const OF_HEADS = new Set(
  (
    'bank university institute school college academy ministry department museum council board bureau office federation association ' +
    'society union commission committee court church republic kingdom states emirates city port bay gulf isle islands duke duchess ' +
    'centre center agency foundation fund chamber house hospital library league alliance coalition network authority service ' +
    'government province county district region cape lake mount sea coast'
  ).split(' '),
);
const HONORIFIC = /^(?:Dr|Prof|Mr|Mrs|Ms|Mx|Sir|Dame|Madam)$/;

const lower = (w: string): string => w.replace(/['’]s$/, '').toLowerCase();
const roleWord = (w: string, prev: string | undefined, next: string | undefined): 'executive' | 'public' | 'other' | null => {
  if (ROLE_ACRONYMS.has(w) || (w.endsWith('s') && ROLE_ACRONYMS.has(w.slice(0, -1)))) return 'executive';
  const l = w.toLowerCase();
  if (l === 'head') return next === 'of' ? 'executive' : null;
  if (l === 'executive') return prev?.toLowerCase() === 'chief' ? 'executive' : null;
  if (l === 'partner') return prev !== undefined && /^(?:managing|general|senior|founding|equity)$/i.test(prev) ? 'executive' : null;
  if (EXECUTIVE_ROLES.has(l)) return 'executive';
  if (PUBLIC_ROLES.has(l)) return 'public';
  if (OTHER_ROLES.has(l)) return 'other';
  return null;
};
const isDepartment = (w: string): boolean => DEPARTMENTS.has(w.toLowerCase());

/** What the words around a name in its run say of it. */
type RunCue = 'honorific' | 'role' | 'company-of-role' | 'place-of-role' | null;

interface RunName {
  /** Offsets in the run. */
  start: number;
  end: number;
  cue: RunCue;
}

/**
 * The names a run of capitals holds, with what the run says of each: honorifics (`Dr`, `Prof`, `Mr`, `Sir` …) and
 * roles are cues and are dropped; "&" between two single words ("Johnson & Johnson") or before a company suffix
 * ("Smith & Partners") stays inside a name and splits it otherwise; "of"/"for" stays after a single word ("Bank of
 * America") or an institution ("Royal Bank of Canada", "Centre for …") and splits two names otherwise ("Liu Yang of
 * Tencent Holdings"). One pass over the run's words.
 */
function namesOfRun(run: string): RunName[] {
  const tokens: Array<{ text: string; start: number; end: number }> = [];
  let at = 0;
  for (const piece of run.split(/(\s+)/)) {
    if (piece && !/^\s/.test(piece)) tokens.push({ text: piece, start: at, end: at + piece.length });
    at += piece.length;
  }
  let first = 0;
  while (first < tokens.length && NOT_NAMES.has(lower(tokens[first]?.text ?? ''))) first += 1;
  // What each token is: part of a name, a joiner, an honorific or part of a role.
  const kind: Array<'word' | 'particle' | 'joiner' | 'honorific' | 'role'> = [];
  const roleSort: Array<'executive' | 'public' | 'other' | null> = [];
  for (let i = 0; i < tokens.length; i += 1) {
    const t = tokens[i]?.text ?? '';
    if (t === '&' || t === 'of' || t === 'for') kind.push('joiner');
    else if (PARTICLES.has(t)) kind.push('particle');
    else if (HONORIFIC.test(t)) kind.push('honorific');
    else kind.push('word');
    roleSort.push(null);
  }
  for (let i = first; i < tokens.length; i += 1) {
    if (kind[i] !== 'word') continue;
    const sort = roleWord(tokens[i]?.text ?? '', tokens[i - 1]?.text, tokens[i + 1]?.text);
    if (!sort) continue;
    kind[i] = 'role';
    roleSort[i] = sort;
    // Modifiers and departments before it ("Senior Vice President", "Sales Director") and departments after it
    // ("VP Engineering", "Head of Sales", "Director of Product Management") are the role's.
    for (let j = i - 1; j >= first && kind[j] === 'word' && (ROLE_MODIFIERS.has((tokens[j]?.text ?? '').toLowerCase()) || isDepartment(tokens[j]?.text ?? '')); j -= 1) {
      kind[j] = 'role';
      roleSort[j] = sort;
    }
    let j = i + 1;
    for (;;) {
      if (kind[j] === 'word' && isDepartment(tokens[j]?.text ?? '')) j += 1;
      else if (tokens[j]?.text === 'of' && kind[j + 1] === 'word' && isDepartment(tokens[j + 1]?.text ?? '')) j += 2;
      else break;
    }
    for (let k = i + 1; k < j; k += 1) {
      kind[k] = 'role';
      roleSort[k] = sort;
    }
    i = j - 1;
  }
  const out: RunName[] = [];
  let current: { from: number; to: number; cue: RunCue; words: string[] } | null = null;
  let lastRole: 'executive' | 'public' | 'other' | null = null;
  let cue: RunCue = null;
  const close = (): void => {
    if (current && current.words.length > 0) {
      out.push({ start: tokens[current.from]?.start ?? 0, end: tokens[current.to]?.end ?? 0, cue: current.cue });
    }
    current = null;
  };
  for (let i = first; i < tokens.length; i += 1) {
    const k = kind[i];
    const text = tokens[i]?.text ?? '';
    if (k === 'honorific') {
      close();
      cue = 'honorific';
      lastRole = null;
    } else if (k === 'role') {
      const sort = roleSort[i] ?? null;
      // The name just before an executive's role is its company ("Microsoft CEO Satya Nadella").
      const c = current as { from: number; to: number; cue: RunCue; words: string[] } | null;
      if (c && c.to === i - 1 && sort === 'executive' && c.cue === null) c.cue = 'company-of-role';
      lastRole = sort;
      close();
      cue = 'role';
    } else if (k === 'joiner') {
      const c = current as { from: number; to: number; cue: RunCue; words: string[] } | null;
      const next = nextName(tokens, kind, i + 1);
      if (c && c.cue === null && next && glues(text, c.words, next)) {
        // Kept inside the name: the words after it join the current one.
        continue;
      }
      close();
      // "CTO of Nordwind Logistics GmbH", "Mayor of London": the name after a role's "of" is where the role is.
      cue = (text === 'of' || text === 'for') && kind[i - 1] === 'role' && lastRole ? (lastRole === 'public' ? 'place-of-role' : 'company-of-role') : null;
      lastRole = null;
    } else {
      if (!current) current = { from: i, to: i, cue, words: [] };
      current.to = i;
      if (k === 'word') current.words.push(text);
      cue = null;
      if (k === 'word') lastRole = null;
    }
  }
  close();
  return out;
}

/** The words of the name that starts at token `from` (up to the next joiner, role or honorific). */
function nextName(tokens: Array<{ text: string }>, kind: string[], from: number): string[] {
  const words: string[] = [];
  for (let i = from; i < tokens.length && (kind[i] === 'word' || kind[i] === 'particle'); i += 1) if (kind[i] === 'word') words.push(tokens[i]?.text ?? '');
  return words;
}

function glues(joiner: string, left: string[], right: string[]): boolean {
  if (left.length === 0 || right.length === 0) return false;
  if (joiner === '&') return (left.length === 1 && right.length === 1) || ORG_SUFFIX_WORD.test(right[right.length - 1] ?? '');
  return left.length === 1 || OF_HEADS.has(lower(left[left.length - 1] ?? ''));
}

/**
 * A person's name as context may say so: two to four capitalised words (particles between them allowed), none of
 * them all capitals, the first of two letters or more. A round "led by Sequoia", a deal "signed by Siemens", "the
 * asset manager BlackRock": one word after such a cue is as often a company, so context alone makes a person only of
 * a name of this shape.
 */
function personShaped(name: string): boolean {
  const words = name.split(/\s+/).filter((w) => !PARTICLES.has(w));
  if (words.length < 2 || words.length > 4) return false;
  return words.every((w, i) => /^\p{Lu}/u.test(w) && !/\d/.test(w) && (/\p{Ll}/u.test(w) || (i > 0 && w.length === 1)) && (i > 0 || w.length > 1));
}
const ACRONYM = /^[\p{Lu}\d&]{2,}$/u;
const PERSON_TITLE = /\b(?:mr|mrs|ms|mx|dr|prof|sir|dame|madam)\.?\s+$/i;
/** Before a name, a place: "in Berlin", "from Rotterdam", "near Austin" ("at" is read apart: a workplace or a venue). */
const PLACE_PREP = /\b(?:in|from|near|to|into|across|throughout|outside)\s+$/i;
const AT = /\bat\s+$/i;
/** "at" after these, or before a venue's word, is a place ("based at", "landed at Heathrow Airport"). */
const AT_PLACE = /\b(?:based|located|held|hosted|arrived|arrive|arrives|landed|stayed|stopped|stationed|headquartered|meet|meets|met|meeting)\s+at\s+$/i;
const VENUE = /\b(?:airport|station|square|street|st|road|avenue|hotel|park|centre|center|hall|stadium|arena|campus|plaza|bridge|harbour|harbor|terminal)\.?$/i;
/** A workplace before the name: "joined Initech", "works for Globex", "acquired Hooli". */
const WORKPLACE_BEFORE = /\b(?:joined|joins|join|joining|rejoined|acquired|acquires|acquiring|(?:works?|worked|working)\s+for|employed\s+by|partnered\s+with)\s+$/i;
/** An acronym is a company by context only: "led by IBM", "a deal with NATO", "IBM announced …". */
const ACRONYM_ORG_BEFORE = /\b(?:by|with)\s+$/i;
const ACRONYM_ORG_AFTER = /^\s+(?:(?:has|have|had|will|would|also|recently|today|yesterday|then)\s+){0,2}(?:announced|announces|approved|approves|acquired|acquires|reported|reports|signed|signs|launched|launches|released|releases|hired|hires|raised|raises|agreed|agrees|confirmed|confirms|unveiled|unveils|invested|invests|bought|buys|sold|sells|owns|filed|files|sued|sues|partnered|expanded|expands|opened|opens|posted|posts|plans|employs|shipped|ships|appointed|appoints|said|says)\b/i;
/**
 * People without a title: a role just before the name ("CEO Jane Doe", "led by Jane Doe", "according to Jane Doe"),
 * an apposition, a bracket or a relative clause just after it ("Jane Doe, the CEO of …", "Alice Walker (Chair)",
 * "Jane Doe, who …"), or a verb only people take ("Tom Becker previously worked at …"). Roles are read as words (`CEO`,
 * not `CEOs`); a company does not take "who".
 */
const ROLES = String.raw`(?:CEO|CTO|CFO|COO|CIO|CISO|CMO|CPO|CRO|CHRO|VP|SVP|EVP|founder|co-founder|cofounder|president|vice\s+president|chairman|chairwoman|chairperson|chair|director|managing\s+director|manager|partner|engineer|analyst|professor|minister|senator|author|editor|spokesperson|spokeswoman|spokesman|lawyer|attorney|consultant|architect|designer|recruiter|head\s+of\s+\p{L}+|chief\s+\p{L}+\s+officer)`;
const PERSON_ROLE_BEFORE = new RegExp(
  String.raw`(?:\b${ROLES},?|\b(?:led|founded|co-founded|headed|run|managed|chaired|written|signed|approved|presented|introduced)\s+by|\baccording\s+to|\breport(?:s|ed|ing)?\s+to|\b(?:appointed|hired|promoted|interviewed|thanked|congratulated))\s+$`,
  'iu',
);
const PERSON_AFTER = new RegExp(
  String.raw`^\s*(?:,\s+|\(\s*)(?:(?:the|our|their|its|a|an)\s+)?(?:(?:new|former|acting|interim|chief|senior|lead|principal|deputy|assistant|general|managing|executive)\s+)*(?:${ROLES}\b|who\b)`,
  'iu',
);
const PERSON_VERB_AFTER = /^\s+(?:(?:previously|formerly|now|currently|also|still|recently|later|then|once|has|had|have|will|would)\s+){0,2}(?:worked|works|joined|joins|spoke|speaks|told|wrote|writes|explained|presented|emailed|argued|believes|thinks|replied|resigned|retired|graduated|studied|recalled)\b/i;
/** Between a person and their company: "Jonathan Price from Bluefin Capital", "Peter Novak of Initech Corp". */
const PERSON_OF_COMPANY_GAP = /^\s*,?\s*(?:of|from|at|with)\s+$/i;
const COORDINATION_GAP = /^\s*(?:,|,?\s+and|&)\s+$/i;
/** The word before "of"/"for" makes the kind of a name that holds one: "Bank of America", "Gulf of Mexico". */
const HEAD_OF = /^(?:\S+\s+){0,3}?(\S+)\s+(?:of|for)\s/;
const PLACE_HEADS = new Set('city|port|gulf|isle|islands|bay|cape|lake|mount|sea|coast|republic|kingdom|states|emirates|province|county|district|region'.split('|'));

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

/** A word opening a sentence that is one item of a list of names ("Apple, Amazon and Netflix …", "Microsoft and Google …"). */
const LIST_AFTER = /^(?:\s*,\s*\p{Lu}[^,]{0,60}(?:,|\s(?:and|&|or)\s)|\s+(?:and|&|or)\s+\p{Lu})/u;

interface Candidate {
  name: string;
  initial: boolean;
  before: string;
  after: string;
  cue: RunCue;
  /** The name's offsets in its sentence. */
  start: number;
  end: number;
  kind: EntityKind;
}

/**
 * Rule-based named-entity extraction: runs of capitalised words (with "of", "&"… inside, read by `namesOfRun`), minus
 * sentence-initial function words, honorifics and roles. A single capitalised word at the very start of a sentence
 * counts only if it also appears capitalised elsewhere or opens a list of names, which keeps ordinary sentence
 * openers out of the graph.
 */
export function extractEntities(text: string, limit = 500): ExtractedEntity[] {
  const found = new Map<string, ExtractedEntity>();
  const sentences = splitSentences(text.replace(/\[REDACTED:[a-z_]+\]/g, ' '), 20_000);
  const midSentence = new Set<string>();
  const candidates: Candidate[] = [];
  for (const sentence of sentences) {
    const inSentence: Candidate[] = [];
    const lead = sentence.length - sentence.trimStart().length;
    for (const m of sentence.matchAll(NAME_RE)) {
      const offset = m.index ?? 0;
      for (const part of namesOfRun(m[0])) {
        const raw = m[0].slice(part.start, part.end);
        const name = cleanName(raw);
        if (!name) continue;
        const start = offset + part.start;
        const end = offset + part.end;
        const after = sentence.slice(end, end + 80);
        // A name the run says something of ("Microsoft CEO …") is a name wherever it stands.
        const initial = part.cue === null && start <= lead && name === raw.trim() && !(isListOpener(name) && LIST_AFTER.test(after));
        if (!initial) midSentence.add(entityKey(name));
        const before = sentence.slice(Math.max(0, start - 48), start);
        const c: Candidate = { name, initial, before, after, cue: part.cue, start, end, kind: 'concept' };
        c.kind = kindOf(c);
        inSentence.push(c);
      }
    }
    for (let i = 0; i + 1 < inSentence.length; i += 1) {
      const c = inSentence[i] as Candidate;
      const next = inSentence[i + 1] as Candidate;
      const gap = sentence.slice(c.end, next.start);
      // A person-shaped name followed by "of", "from" or "at" and a company is that company's person.
      if (c.kind === 'concept' && next.kind === 'organization' && personShaped(c.name) && PERSON_OF_COMPANY_GAP.test(gap)) c.kind = 'person';
      // People listed together are people: "led by Peter Novak and Ana Lima".
      if (c.kind === 'person' && next.kind === 'concept' && personShaped(next.name) && COORDINATION_GAP.test(gap)) next.kind = 'person';
    }
    for (const c of inSentence) candidates.push(c);
  }
  for (const c of candidates) {
    const key = entityKey(c.name);
    if (!key) continue;
    if (c.initial && !c.name.includes(' ') && !midSentence.has(key) && !ACRONYM.test(c.name)) continue;
    const existing = found.get(key);
    if (existing) {
      existing.mentions += 1;
      // A later mention may say what an earlier one did not ("Jane Doe wrote …", then "Jane Doe, the CTO, …").
      if (existing.kind === 'concept') existing.kind = c.kind;
      continue;
    }
    if (found.size >= limit) continue;
    found.set(key, { key, name: c.name, kind: c.kind, mentions: 1 });
  }
  return [...found.values()];
}

/** A sentence's first word may open a list of names unless it is an adverb ("Separately, Acme and Globex …"). */
function isListOpener(name: string): boolean {
  return !name.includes(' ') && !/ly$/i.test(name) && !STOPWORDS.has(name.toLowerCase()) && !SENTENCE_OPENERS.has(name.toLowerCase());
}

function kindOf(c: Pick<Candidate, 'name' | 'before' | 'after' | 'cue'>): EntityKind {
  const { name, before, after, cue } = c;
  if (ORG_SUFFIX.test(name)) return 'organization';
  const head = HEAD_OF.exec(name)?.[1];
  if (head && ORG_SUFFIX_WORD.test(head)) return 'organization';
  if (head && PLACE_HEADS.has(head.toLowerCase())) return 'place';
  if (cue === 'honorific' || PERSON_TITLE.test(before)) return 'person';
  if (cue === 'company-of-role') return 'organization';
  if (cue === 'place-of-role') return 'place';
  const words = name.split(/\s+/);
  // A department ("in Sales", "Engineering") is no organisation, person or place.
  if (words.every(isDepartment)) return 'concept';
  const acronym = ACRONYM.test(name);
  if (!acronym && personShaped(name) && (cue === 'role' || PERSON_ROLE_BEFORE.test(before) || PERSON_AFTER.test(after) || PERSON_VERB_AFTER.test(after))) return 'person';
  if (AT.test(before)) return AT_PLACE.test(before) || VENUE.test(name) ? 'place' : 'organization';
  if (WORKPLACE_BEFORE.test(before)) return 'organization';
  if (acronym && (ACRONYM_ORG_BEFORE.test(before) || ACRONYM_ORG_AFTER.test(after))) return 'organization';
  if (PLACE_PREP.test(before)) return 'place';
  return 'concept';
}

/**
 * The entity a fact's subject names: the run read as `extractEntities` reads it, honorifics and roles left out; of
 * several names, the first that is not only the company or place of a role ("Liu Yang of Tencent Holdings" is Liu
 * Yang, "Acme CEO Jane Doe" is Jane Doe).
 */
function subjectName(run: string): string | null {
  const head = namesOfRun(run).find((n) => n.cue !== 'company-of-role' && n.cue !== 'place-of-role');
  return head ? cleanName(run.slice(head.start, head.end)) : null;
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
      const name = subjectName(groups.subj);
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
