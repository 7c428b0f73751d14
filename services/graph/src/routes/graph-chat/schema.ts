import { z } from 'zod';
import type { GraphChatAnswer } from '../../application/graph-chat';
import { MAX_QUESTION_CHARS } from '../../domain/graph-chat';

export const GraphChatBody = z.object({
  listId: z.string().min(1).max(200).describe('the graph to ask (a graph_id of the tenant)'),
  question: z.string().trim().min(1).max(MAX_QUESTION_CHARS),
});

/** Spec 2's graph chat answer: every node and edge is a row of the graph (nodes' ids are their store ids). */
export const GraphChatAnswerSchema = z.object({
  answer: z.string(),
  nodes: z.array(z.object({ id: z.string(), label: z.string(), properties: z.record(z.string(), z.unknown()) })),
  edges: z.array(z.object({ from: z.string(), to: z.string(), label: z.string() })),
});

/**
 * The answer as spec 2 shapes it. A node's `properties` always carry its `name`; edges that state the same fact
 * (the same ends and label from several sources) are one edge of the answer, a current one before a closed one.
 */
export function presentGraphChat(a: GraphChatAnswer): z.input<typeof GraphChatAnswerSchema> {
  const seen = new Set<string>();
  const edges: Array<{ from: string; to: string; label: string }> = [];
  for (const e of [...a.edges].sort((x, y) => Number(x.valid_to !== null) - Number(y.valid_to !== null))) {
    const key = `${e.from}|${e.label}|${e.to}`;
    if (seen.has(key)) continue;
    seen.add(key);
    edges.push({ from: e.from, to: e.to, label: e.label });
  }
  return {
    answer: a.answer,
    // Spec 2: a Person has name and linkedin_url. The store keeps no empty values (a blank cell never erases what an
    // earlier source said), so an unknown profile is told here as the empty string.
    nodes: a.nodes.map((n) => ({ id: n.id, label: n.label, properties: { ...(n.label === 'Person' ? { linkedin_url: '' } : {}), ...n.properties, name: n.name } })),
    edges,
  };
}
