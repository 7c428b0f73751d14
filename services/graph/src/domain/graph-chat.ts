/**
 * Graph chat's rules (docs/memory.md, "Graph chat"): how far a question's neighbourhood reaches, when it reads the
 * graph's past, and the answer the embedded default gives from the subgraph alone. Pure: no SQL, no HTTP.
 */

/** Bounds of one answer's subgraph: linked nodes, hops from them, nodes and edges in all. */
export const CHAT_LIMITS = { seeds: 10, hops: 2, nodes: 50, edges: 100 } as const;

/** Longest question read (characters); longer ones are refused by the route's schema. */
export const MAX_QUESTION_CHARS = 2_000;

/**
 * Whether a question asks about the past, so closed edges (facts no longer current, `valid_to` set) are read too:
 * past-tense markers ("used to", "formerly", "previously", "before", "no longer", "was", "were", "history", a year).
 * Otherwise only current edges (`valid_to` null) are read.
 */
export function asksAboutThePast(question: string): boolean {
  return /\b(?:used to|formerly|former|previous(?:ly)?|before|earlier|past|history|historically|no longer|any ?more|was|were|had been|until|left|(?:19|20)\d\d)\b/i.test(question);
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

/** Properties worth saying about a node (short scalar values, never nested objects). */
export function propertyLine(n: SubgraphNode): string {
  const parts = Object.entries(n.properties)
    .filter(([k, v]) => k !== 'name' && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') && String(v).length <= 200)
    .slice(0, 8)
    .map(([k, v]) => `${k}: ${String(v)}`);
  return `${n.name} (${n.label})${parts.length > 0 ? ` — ${parts.join('; ')}` : ''}`;
}

export const NO_ENTITY_ANSWER =
  'The question names no person, company, position, location or report this graph holds, so there is nothing to answer from. Ask about one of its entities by name, alias or domain.';

/**
 * The embedded default's answer: what the graph says about the linked entities, stated from the subgraph alone —
 * the linked nodes with their properties, then each edge as a sentence (at most 20), current ones first.
 */
export function answerFromSubgraph(seeds: readonly SubgraphNode[], nodes: readonly SubgraphNode[], edges: readonly SubgraphEdge[], past: boolean): string {
  if (seeds.length === 0) return NO_ENTITY_ANSWER;
  const about = seeds.map(propertyLine).join('. ');
  const ordered = [...edges].sort((a, b) => Number(a.valid_to !== null) - Number(b.valid_to !== null));
  const lines = factLines(nodes, ordered.slice(0, 20));
  if (lines.length === 0) return `${about}. The graph holds no ${past ? '' : 'current '}relation of ${seeds.length === 1 ? 'it' : 'them'}.`;
  const more = edges.length > 20 ? ` (and ${edges.length - 20} more relations)` : '';
  return `${about}. ${lines.join('. ')}${more}.`;
}

/** The messages the configured language model phrases the answer from: the facts only, numbered, nothing else. */
export function modelPrompt(question: string, seeds: readonly SubgraphNode[], nodes: readonly SubgraphNode[], edges: readonly SubgraphEdge[]): Array<{ role: 'system' | 'user'; content: string }> {
  const entities = nodes.map((n) => `- ${propertyLine(n)}`).join('\n');
  const facts = factLines(nodes, edges).map((l) => `- ${l}`).join('\n');
  return [
    {
      role: 'system',
      content:
        'You answer questions about a knowledge graph. Use only the entities and relations given; if they do not answer the question, say so. ' +
        'A relation with an "until" date no longer holds. Answer in a few plain sentences.',
    },
    {
      role: 'user',
      content: `Question: ${question}\n\nEntities named in the question: ${seeds.map((s) => s.name).join(', ')}\n\nEntities:\n${entities}\n\nRelations:\n${facts || '- none'}`,
    },
  ];
}
