/**
 * Graph chat's rules (docs/memory.md, "Graph chat"): how a question is read for the entities it names, how far a
 * question's neighbourhood reaches, when it reads the graph's past, and the answer the embedded default gives from the
 * subgraph alone. Pure: no SQL, no HTTP.
 */
import { STOPWORDS } from '@lore/ai';
import { foldName, normalizeProfileUrl, questionPhraseSpans, questionWords, type WordSpan } from './entity-model';

/** Bounds of one answer's subgraph: linked nodes, hops from them, nodes and edges in all. */
export const CHAT_LIMITS = { seeds: 10, hops: 2, nodes: 50, edges: 100 } as const;

/** Longest question read (characters); longer ones are refused by the route's schema. */
export const MAX_QUESTION_CHARS = 2_000;

/** Sentences of relations the deterministic answer states at most. */
export const ANSWER_SENTENCES = 20;

/**
 * Whether a question asks about the past, so closed edges (facts no longer current, `valid_to` set) are read too:
 * past-tense markers ("used to", "formerly", "previously", "before", "no longer", "was", "were", "history", a year).
 * Otherwise only current edges (`valid_to` null) are read.
 */
export function asksAboutThePast(question: string): boolean {
  return /\b(?:used to|formerly|former|previous(?:ly)?|before|earlier|past|history|historically|no longer|any ?more|was|were|had been|until|left|(?:19|20)\d\d)\b/i.test(question);
}

/**
 * Titles written before a name (folded). A question's honorific names no one: "Dr. Sarah O'Connor" is read as Sarah
 * O'Connor, and "Dr" alone links nothing.
 */
export const HONORIFICS: ReadonlySet<string> = new Set('dr prof professor mr mrs ms miss mx sir dame herr frau mme mlle rev'.split(' '));

/**
 * Ordinary words of questions (folded), beside the stop words: verbs and nouns a question uses to ask about an
 * entity, not to name one. Such a word alone never links a company through its domain's first label ("work" is not
 * work.com, "data" not data.com, "people" not people.ai), never links a person by a first name or surname, and is
 * never reported as a name missing from the graph. A node whose own name, title or alias is the word still links.
 */
export const COMMON_WORDS: ReadonlySet<string> = new Set(
  (
    // asking and telling
    'ask tell show list give find get know see look let help explain describe name names say said mention mentioned ' +
    'compare summarize summarise summary overview check search display print write answer question questions ' +
    'everything anything something nothing everyone ' +
    'please thanks thank hi hello hey ok okay yes sure maybe also else ever still just really ' +
    // doing, working, moving
    'work works worked working job jobs employ employs employed employee employees employer hire hires hired hiring ' +
    'lead leads led leading run runs ran running manage manages managed managing own owns owned found founded ' +
    'join joins joined leave leaves left move moves moved live lives lived living base based locate located ' +
    'head heads headed report reports reported reporting belong belongs connect connected connection related relation ' +
    'relations relationship make makes made do done go goes went come comes came use uses used need needs want wants ' +
    'sell sells sold buy buys bought build builds built start starts started stop stops end ends ended serve serves ' +
    // people, organisations, places
    'people person persons someone somebody anyone anybody everyone everybody nobody who whoever human humans ' +
    'company companies business businesses firm firms organisation organization organisations organizations ' +
    'team teams group groups staff member members colleague colleagues contact contacts customer customers client ' +
    'clients partner partners vendor vendors supplier suppliers founder founders owner owners boss manager managers ' +
    'office offices headquarters hq branch branches site sites place places city cities town towns country countries ' +
    'region regions area areas address location locations world home ' +
    // roles and positions, as words
    'role roles title titles position positions post seat chief head lead ceo cto cfo coo cmo cio vp svp evp md ' +
    // data and records
    'data info information detail details fact facts record records row rows file files list lists table tables ' +
    'report reports document documents graph graphs entity entities node nodes edge edges link links email emails ' +
    'mail phone phones number numbers profile profiles website websites web site url page pages id ids ' +
    // time and amount
    'time times day days week weeks month months year years today yesterday tomorrow now current currently recent ' +
    'recently new old first last next previous former latest many much more most less least few several number ' +
    'total count all every each any some other others another same different one two three ' +
    // kinds of question
    'about regarding between among across around near within without why how what which where when whose ' +
    'thing things stuff kind kinds type types sort part parts way ways case cases point lot lots ' +
    'good best big small large main top high low real true false right wrong well better ' +
    'money cost costs price prices revenue sales market markets industry industries sector product products service services'
  ).split(' '),
);

/** A phrase of the question that may name a node, with every place it stands. */
export interface LinkPhrase {
  text: string;
  spans: WordSpan[];
  /**
   * An ordinary word alone (`COMMON_WORDS`, or its plural): it links a node by the node's own names only, never
   * through a domain's first label.
   */
  weak: boolean;
  /** A profile URL, normalised: it is looked up as a person's resolution key (`profile:<url>`). */
  profile?: boolean;
}

/** A word of the question (as written) and where it stands. */
export interface QuestionTerm {
  text: string;
  span: WordSpan;
}

/** What graph chat reads in a question. */
export interface QuestionReading {
  /** Phrases looked up among the nodes' keys. */
  phrases: LinkPhrase[];
  /**
   * Single words standing alone ("Sarah", "O'Connor", not part of "Sarah Smith") that may name a person by a first
   * name or surname: such a word links the person when exactly one person of the graph has it as a part of the name.
   */
  parts: QuestionTerm[];
  /** Names the question clearly writes (runs of capitalised words): those the graph does not hold are said so. */
  names: QuestionTerm[];
}

/** Words that mark a question as English (none of them a word of German, French, Spanish or Italian). */
const ENGLISH_MARKERS: ReadonlySet<string> = new Set('the is are does do did who what where which how at for with about has have was were there any of and to by from'.split(' '));

const isHonorific = (folded: string) => HONORIFICS.has(folded);
const isOrdinary = (folded: string) => folded === '' || STOPWORDS.has(folded) || COMMON_WORDS.has(folded) || HONORIFICS.has(folded);

/**
 * The singular forms of an English plural written in a question ("engineers" → "engineer", "companies" →
 * "company", "branches" → "branch" and "branche"), or none. Only words of letters, four or more, ending in one `s`.
 */
export function singularForms(word: string): string[] {
  const lower = word.toLowerCase();
  if (lower.length < 4 || !/^\p{L}+$/u.test(lower) || !lower.endsWith('s') || /(?:ss|us|is)$/.test(lower)) return [];
  if (lower.endsWith('ies')) return [`${word.slice(0, -3)}${word.slice(-3, -2) === 'I' ? 'Y' : 'y'}`];
  if (/(?:ses|xes|zes|ches|shes)$/.test(lower)) return [word.slice(0, -2), word.slice(0, -1)];
  return [word.slice(0, -1)];
}

// Each starts only where a run of its characters starts (the look-behind), so a long run without a match is read
// once, not once per letter.
const EMAIL = /(?<![\p{L}\p{N}._%+-])[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu;
const URL_LIKE = /(?<![\p{L}\p{N}.:/-])(?:https?:\/\/)?(?:[\p{L}\p{N}-]+\.)+\p{L}{2,}\/[^\s"'<>]*/gu;

/**
 * Reads a question for graph chat's linking (docs/memory.md, "Graph chat"):
 *
 * - the phrases of `questionPhraseSpans` (every run of one to six words), less a lone honorific ("Dr"); a phrase
 *   ending in a plural also in the singular ("engineers" → "engineer", "software engineers" → "software engineer");
 *   an e-mail address and a profile URL written in the question each as one phrase (a URL normalised as a person's
 *   profile key is: no scheme, `www.`, query or trailing slash, and looked up as that key), whatever its number of
 *   words;
 * - a single ordinary word (`COMMON_WORDS`) is weak: it never links a company through its domain's first label;
 * - single words standing alone that may be a first name or surname (`parts`);
 * - the capitalised runs the question writes (`names`), leading honorifics dropped, runs made only of ordinary words
 *   left out ("Tell", "Which", "CEO"); a run of one word only when it looks like a name in any language ("IBM",
 *   "BigCo", "Person001") or stands inside a sentence of an English question ("Does Microsoft…", not "Microsoft
 *   has…", nor the nouns German capitalises).
 */
export function readQuestion(question: string, limit = 6_000): QuestionReading {
  const { text, words } = questionWords(question);
  const phrases = new Map<string, LinkPhrase>();
  const placed = new Map<string, Set<string>>();
  const add = (phraseText: string, spans: WordSpan[], weak: boolean, profile = false) => {
    const known = phrases.get(phraseText);
    if (!known && phrases.size >= limit) return;
    const phrase = known ?? { text: phraseText, spans: [], weak, ...(profile ? { profile } : {}) };
    if (known) {
      known.weak &&= weak;
      if (profile) known.profile = true;
    } else phrases.set(phraseText, phrase);
    const at = placed.get(phraseText) ?? new Set<string>();
    placed.set(phraseText, at);
    for (const s of spans) {
      if (at.has(`${s.first}:${s.last}`)) continue;
      at.add(`${s.first}:${s.last}`);
      phrase.spans.push(s);
    }
  };
  const wordsOf = (start: number, end: number): WordSpan | null => {
    const inside = words.map((w, i) => (w.start < end && w.end > start ? i : -1)).filter((i) => i >= 0);
    return inside.length === 0 ? null : { first: inside[0]!, last: inside[inside.length - 1]! };
  };
  for (const m of text.matchAll(EMAIL)) {
    const span = wordsOf(m.index ?? 0, (m.index ?? 0) + m[0].length);
    if (span) add(m[0], [span], false);
  }
  for (const m of text.matchAll(URL_LIKE)) {
    const raw = m[0].replace(/[.,;:!?)\]}]+$/u, '');
    const profile = normalizeProfileUrl(raw);
    const span = wordsOf(m.index ?? 0, (m.index ?? 0) + raw.length);
    if (span && profile.includes('/')) add(profile, [span], false, true);
  }
  for (const p of questionPhraseSpans(question, limit)) {
    const { first, last } = p.spans[0]!;
    if (first === last && isHonorific(words[first]!.folded)) continue;
    const single = first === last;
    add(p.text, p.spans, single && COMMON_WORDS.has(words[first]!.folded));
    // The singular of a plural noun ("engineers"), not of an ordinary word ("works", "companies") nor a stop word.
    const lastWord = words[last]!;
    if (isOrdinary(lastWord.folded)) continue;
    for (const singular of singularForms(text.slice(lastWord.start, lastWord.end))) {
      if (!isOrdinary(foldName(singular))) add(`${text.slice(words[first]!.start, lastWord.start)}${singular}`, p.spans, false);
    }
  }

  // Tokens: words joined without a space ("O'Connor", "Hans-Peter", "acme.com"); `joined[i]` says whether token i
  // and token i + 1 are separated by spaces only (so they may be one name).
  const tokens: Array<{ first: number; last: number; text: string; folded: string; capital: boolean }> = [];
  const joined: boolean[] = [];
  for (let i = 0; i < words.length; i++) {
    const between = i === 0 ? ' ' : text.slice(words[i - 1]!.end, words[i]!.start);
    if (i > 0 && !/\s/u.test(between)) {
      tokens[tokens.length - 1]!.last = i;
    } else {
      if (i > 0) joined[tokens.length - 1] = /^\s+$/u.test(between);
      tokens.push({ first: i, last: i, text: text.slice(words[i]!.start, words[i]!.end), folded: '', capital: false });
    }
  }
  for (const t of tokens) {
    t.text = text.slice(words[t.first]!.start, words[t.last]!.end);
    t.folded = foldName(t.text);
    t.capital = /[\p{Lu}\p{Lt}]/u.test(t.text);
  }

  const parts: QuestionTerm[] = [];
  tokens.forEach((t, i) => {
    if (isOrdinary(t.folded) || t.folded.length < 2 || !/\p{L}/u.test(t.folded) || /[@/.]/u.test(t.text)) return;
    const nameLike = (j: number) => j >= 0 && j < tokens.length && !isOrdinary(tokens[j]!.folded);
    if ((joined[i - 1] && nameLike(i - 1)) || (joined[i] && nameLike(i + 1))) return;
    parts.push({ text: t.text, span: { first: t.first, last: t.last } });
  });

  const names: QuestionTerm[] = [];
  const english = words.some((w) => ENGLISH_MARKERS.has(w.folded));
  const startsSentence = (t: { first: number }) => /(?:^|[.?!:;¿¡"“«(])\s*$/u.test(text.slice(0, words[t.first]!.start));
  let run: number[] = [];
  const close = () => {
    let r = run;
    while (r.length > 0 && isHonorific(tokens[r[0]!]!.folded)) r = r.slice(1);
    // One capitalised word is a name when it looks like one whatever the language (`IBM`, `BigCo`, `Person001`), or
    // inside a sentence of an English question: German capitalises every noun, and any language its first word.
    const single = r.length === 1 ? tokens[r[0]!]! : null;
    const clear = !single || /\p{L}.*[\p{Lu}\p{Lt}]|\p{L}.*\p{N}|\p{N}.*\p{L}/u.test(single.text) || (english && !startsSentence(single));
    if (clear && r.some((i) => !isOrdinary(tokens[i]!.folded))) {
      const a = tokens[r[0]!]!;
      const b = tokens[r[r.length - 1]!]!;
      names.push({ text: text.slice(words[a.first]!.start, words[b.last]!.end), span: { first: a.first, last: b.last } });
    }
    run = [];
  };
  tokens.forEach((t, i) => {
    const continues = run.length > 0 && joined[i - 1] === true;
    if (!continues && run.length > 0) close();
    const inName = !STOPWORDS.has(t.folded) && t.folded !== '' && (t.capital || (run.length > 0 && /^\p{N}+$/u.test(t.folded)));
    if (inName) run.push(i);
    else if (run.length > 0) close();
  });
  if (run.length > 0) close();
  return { phrases: [...phrases.values()], parts, names };
}

/** A node a key matched: which node, by which folded key, for which phrases (indexes into `reading.phrases`). */
export interface KeyMatch {
  node_id: string;
  match_key: string;
  phrases: number[];
}

/** A person a lone word names as a part of their name (`part` indexes `reading.parts`). */
export interface PartMatch {
  node_id: string;
  part: number;
}

/** The outcome of linking: the nodes the walk starts from, and what the answer should say of the rest. */
export interface Linking {
  /** The linked nodes, best first, at most the limit. */
  linked: string[];
  /** Phrases (as written) whose nodes were left out by the seed limit. */
  unlooked: string[];
  /** Names the question writes that match nothing in the graph. */
  missing: string[];
  /** Lone first names or surnames that several people of the graph have. */
  ambiguous: string[];
}

const compareIds = (a: string, b: string) => (a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0);
const chars = (s: string) => Array.from(s).length;

/**
 * Ranks what the keys matched (deterministic): a phrase that lies inside a longer phrase that matched links nothing
 * itself ("Acme" inside "Acme Corp", "acme.de" inside "anna@acme.de"); each node by its longest matching key, longest
 * first, then by id; then the people a lone first name or surname names, each only when exactly one person has it
 * and no phrase covering that word matched. At most `limit` nodes; the others are `unlooked`.
 */
export function rankLinks(reading: QuestionReading, keys: readonly KeyMatch[], parts: readonly PartMatch[], limit: number): Linking {
  const matched: WordSpan[] = [];
  for (const k of keys) for (const p of k.phrases) matched.push(...(reading.phrases[p]?.spans ?? []));
  const inside = (s: WordSpan) => matched.some((t) => t.first <= s.first && s.last <= t.last && t.last - t.first > s.last - s.first);
  const covered = new Set<number>();
  for (const s of matched) for (let i = s.first; i <= s.last; i++) covered.add(i);

  const best = new Map<string, { length: number; phrase: string }>();
  for (const k of keys) {
    const live = k.phrases.map((p) => reading.phrases[p]).filter((p): p is LinkPhrase => p !== undefined && p.spans.some((s) => !inside(s)));
    if (live.length === 0) continue;
    const length = chars(k.match_key);
    const known = best.get(k.node_id);
    if (!known || length > known.length) best.set(k.node_id, { length, phrase: live[0]!.text });
  }
  const ranked = [...best.entries()].sort((a, b) => b[1].length - a[1].length || compareIds(a[0], b[0])).map(([id, b]) => ({ id, phrase: b.phrase }));

  const ambiguous: string[] = [];
  const byPart = new Map<number, string[]>();
  for (const m of parts) byPart.set(m.part, [...(byPart.get(m.part) ?? []), m.node_id]);
  reading.parts.forEach((p, i) => {
    const nodes = byPart.get(i);
    if (!nodes) return;
    const { first, last } = p.span;
    let free = true;
    for (let w = first; w <= last; w++) if (covered.has(w)) free = false;
    if (!free) return;
    for (let w = first; w <= last; w++) covered.add(w);
    if (nodes.length > 1) ambiguous.push(p.text);
    else if (!best.has(nodes[0]!) && !ranked.some((r) => r.id === nodes[0])) ranked.push({ id: nodes[0]!, phrase: p.text });
  });

  const missing = reading.names.filter((n) => {
    for (let w = n.span.first; w <= n.span.last; w++) if (covered.has(w)) return false;
    return true;
  });
  const unlooked: string[] = [];
  for (const r of ranked.slice(limit)) if (!unlooked.includes(r.phrase)) unlooked.push(r.phrase);
  return {
    linked: ranked.slice(0, limit).map((r) => r.id),
    unlooked,
    missing: [...new Set(missing.map((n) => n.text))],
    ambiguous: [...new Set(ambiguous)],
  };
}

export interface SubgraphNode {
  id: string;
  label: string;
  name: string;
  properties: Record<string, unknown>;
}

export interface SubgraphEdge {
  id: string;
  from: string;
  to: string;
  label: string;
  valid_from: string;
  valid_to: string | null;
}

/** A linked node's current relations of one label, counted in the whole graph (not only the subgraph). */
export interface RelationCount {
  node: string;
  label: string;
  count: number;
  /** The count stopped at its cap: the node has at least `count`. */
  atLeast: boolean;
}

/** What the answer says beside the subgraph's facts: what was left out, and what the question names in vain. */
export interface AnswerNotes {
  /** Current relations by label of the linked nodes whose relations the walk's bounds cut. */
  counts?: readonly RelationCount[];
  /** Phrases whose nodes the seed limit left out. */
  unlooked?: readonly string[];
  /** Names the question writes that the graph does not hold. */
  missing?: readonly string[];
  /** Lone first names or surnames several people of the graph have. */
  ambiguous?: readonly string[];
}

/** `WORKS_AT` → `works at`. */
export function relationPhrase(label: string): string {
  return label.toLowerCase().replace(/_+/g, ' ').trim();
}

/** One line per edge: "Ada Brook (Person) works at Acme (Company)", a closed one "… (until 2026-05-01)". */
export function factLines(nodes: readonly SubgraphNode[], edges: readonly SubgraphEdge[]): string[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const name = (id: string) => {
    const n = byId.get(id);
    return n ? `${n.name} (${n.label})` : `node ${id}`;
  };
  return edges.map((e) => {
    const until = e.valid_to ? ` (from ${e.valid_from.slice(0, 10)} until ${e.valid_to.slice(0, 10)})` : '';
    return `${name(e.from)} ${relationPhrase(e.label)} ${name(e.to)}${until}`;
  });
}

/** What the answer knows of a linked node from the subgraph's edges. */
export interface NodeStanding {
  /** Whether the node has a current relation (false: only closed ones, or none). */
  current: boolean;
  /** Companies (or positions) a person currently works at (holds), whichever is more. */
  positions: number;
}

/** Properties of a person that belong to one of their positions, not to the person. */
const PER_POSITION = new Set(['title', 'company', 'company_domain']);

/**
 * Properties worth saying about a node (short scalar values, never nested objects). With its standing: a node
 * without a current relation is said to be history ("no current relation; recorded with …"), and a person holding
 * positions at several companies is not given one position's `title`, `company` and `company_domain` as theirs.
 */
export function propertyLine(n: SubgraphNode, standing?: NodeStanding): string {
  const several = standing !== undefined && n.label === 'Person' && standing.positions > 1;
  const parts = Object.entries(n.properties)
    .filter(([k, v]) => k !== 'name' && !(several && PER_POSITION.has(k)) && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') && String(v).length <= 200)
    .filter(([, v]) => String(v) !== '')
    .slice(0, 8)
    .map(([k, v]) => `${k}: ${String(v)}`);
  const head = `${n.name} (${n.label})`;
  if (standing && !standing.current) return `${head} — history only, no current relation${parts.length > 0 ? `; recorded with ${parts.join('; ')}` : ''}`;
  const tail = several ? [...parts, `positions at ${standing.positions} companies`] : parts;
  return `${head}${tail.length > 0 ? ` — ${tail.join('; ')}` : ''}`;
}

/** The standing of each linked node, read from the subgraph's edges (the walk reads every linked node's first edges). */
export function standings(seeds: readonly SubgraphNode[], edges: readonly SubgraphEdge[]): Map<string, NodeStanding> {
  const out = new Map<string, NodeStanding>();
  for (const s of seeds) {
    const current = edges.filter((e) => e.valid_to === null && (e.from === s.id || e.to === s.id));
    const targets = (label: string) => new Set(current.filter((e) => e.from === s.id && e.label === label).map((e) => e.to)).size;
    out.set(s.id, { current: current.length > 0, positions: Math.max(targets('WORKS_AT'), targets('HOLDS_POSITION')) });
  }
  return out;
}

export const NO_ENTITY_ANSWER =
  'The question names no person, company, position, location or report this graph holds, so there is nothing to answer from. Ask about one of its entities by name, alias or domain.';

const quoted = (xs: readonly string[]) => xs.map((x) => `"${x}"`).join(', ');

/** The answer to a question that links no node, with the names it writes that the graph lacks. */
export function noEntityAnswer(notes: AnswerNotes = {}): string {
  return [NO_ENTITY_ANSWER, ...linkingNotes(notes)].join(' ');
}

/** Sentences on what linking could not do: names the graph lacks, ambiguous first names, entities left out. */
export function linkingNotes(notes: AnswerNotes): string[] {
  const out: string[] = [];
  if (notes.missing && notes.missing.length > 0) out.push(`Not in this graph: ${notes.missing.slice(0, 8).join(', ')}${notes.missing.length > 8 ? ` and ${notes.missing.length - 8} more` : ''}.`);
  if (notes.ambiguous && notes.ambiguous.length > 0) out.push(`${quoted(notes.ambiguous.slice(0, 5))} could be several people of this graph; name one in full.`);
  if (notes.unlooked && notes.unlooked.length > 0) {
    out.push(`The question names more entities than one answer looks at (${CHAT_LIMITS.seeds}); not looked at: entities named ${quoted(notes.unlooked.slice(0, 5))}${notes.unlooked.length > 5 ? ' and more' : ''}.`);
  }
  return out;
}

/**
 * The sentence on a neighbourhood the walk's bounds cut: each linked node's current relations by label in the whole
 * graph against those `stated` ("BigCo (Company) has 300 current "works at" relations, 7 stated here"). Labels all of
 * whose relations are stated are not mentioned; nothing when no count passes what is stated.
 */
export function boundsNote(seeds: readonly SubgraphNode[], stated: readonly SubgraphEdge[], counts: readonly RelationCount[]): string | null {
  const said: string[] = [];
  for (const s of seeds) {
    // Relations between entities first, the rows describing the node last; more first, then by label.
    const mine = counts
      .filter((c) => c.node === s.id)
      .sort((a, b) => Number(a.label === 'DESCRIBES') - Number(b.label === 'DESCRIBES') || b.count - a.count || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
    const items: string[] = [];
    for (const c of mine) {
      const shown = new Set(stated.filter((e) => e.valid_to === null && e.label === c.label && (e.from === s.id || e.to === s.id)).map((e) => (e.from === s.id ? `>${e.to}` : `<${e.from}`))).size;
      if (!c.atLeast && shown >= c.count) continue;
      items.push(`${c.atLeast ? 'at least ' : ''}${c.count} current "${relationPhrase(c.label)}" relation${c.count === 1 ? '' : 's'} (${shown === 0 ? 'none' : shown} stated here)`);
    }
    if (items.length > 0) said.push(`${s.name} (${s.label}) has ${items.join(', ')}`);
  }
  if (said.length === 0) return null;
  return `This is only part of what the graph holds (one answer reads at most ${CHAT_LIMITS.nodes} entities and ${CHAT_LIMITS.edges} relations): ${said.join('; ')}.`;
}

/**
 * The order relations are told in: facts between entities before the rows and records that describe them
 * (`DESCRIBES`, from a ScanReport), current ones before closed ones within each, and otherwise as the walk read them
 * (every linked node's own relations first).
 */
export function tellingOrder(edges: readonly SubgraphEdge[]): SubgraphEdge[] {
  const rank = (e: SubgraphEdge) => (e.label === 'DESCRIBES' ? 2 : 0) + (e.valid_to === null ? 0 : 1);
  return edges.map((e, i) => ({ e, i })).sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i).map((x) => x.e);
}

/**
 * The embedded default's answer: what the graph says about the linked entities, stated from the subgraph alone —
 * names the question writes that the graph lacks, the linked nodes with their properties (a node without a current
 * relation as history), then each edge as a sentence (at most `ANSWER_SENTENCES`) in `tellingOrder`, then what the
 * walk's bounds or the seed limit left out.
 */
export function answerFromSubgraph(seeds: readonly SubgraphNode[], nodes: readonly SubgraphNode[], edges: readonly SubgraphEdge[], past: boolean, notes: AnswerNotes = {}): string {
  if (seeds.length === 0) return noEntityAnswer(notes);
  const standing = standings(seeds, edges);
  const missing = notes.missing && notes.missing.length > 0 ? linkingNotes({ missing: notes.missing }) : [];
  const about = seeds.map((s) => propertyLine(s, standing.get(s.id))).join('. ');
  const ordered = tellingOrder(edges);
  const stated = ordered.slice(0, ANSWER_SENTENCES);
  const lines = factLines(nodes, stated);
  const tail = [...(notes.counts ? [boundsNote(seeds, stated, notes.counts)].filter((x): x is string => x !== null) : []), ...linkingNotes({ ambiguous: notes.ambiguous, unlooked: notes.unlooked })];
  const body =
    lines.length === 0
      ? `${about}. The graph holds no ${past ? '' : 'current '}relation of ${seeds.length === 1 ? 'it' : 'them'}.`
      : `${about}. ${lines.join('. ')}${edges.length > ANSWER_SENTENCES ? ` (and ${edges.length - ANSWER_SENTENCES} more relations)` : ''}.`;
  return [...missing, body, ...tail].join(' ');
}

/** The messages the configured language model phrases the answer from: the facts only, numbered, nothing else. */
export function modelPrompt(question: string, seeds: readonly SubgraphNode[], nodes: readonly SubgraphNode[], edges: readonly SubgraphEdge[], notes: AnswerNotes = {}): Array<{ role: 'system' | 'user'; content: string }> {
  const standing = standings(seeds, edges);
  const entities = nodes.map((n) => `- ${propertyLine(n, standing.get(n.id))}`).join('\n');
  const ordered = tellingOrder(edges);
  const facts = factLines(nodes, ordered).map((l) => `- ${l}`).join('\n');
  const bounds = notes.counts ? boundsNote(seeds, ordered, notes.counts) : null;
  const said = [...linkingNotes(notes), ...(bounds ? [bounds] : [])];
  return [
    {
      role: 'system',
      content:
        'You answer questions about a knowledge graph. Use only the entities and relations given; if they do not answer the question, say so. ' +
        'A relation with an "until" date no longer holds. Answer in a few plain sentences, and say what the notes say is missing or left out.',
    },
    {
      role: 'user',
      content: `Question: ${question}\n\nEntities named in the question: ${seeds.map((s) => s.name).join(', ')}\n\nEntities:\n${entities}\n\nRelations:\n${facts || '- none'}${said.length > 0 ? `\n\nNotes:\n${said.map((s) => `- ${s}`).join('\n')}` : ''}`,
    },
  ];
}
