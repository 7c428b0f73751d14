import type { LanguageModel } from '@lore/ai';
import { AppError, detailError, type Db, type Logger, type Sql } from '@lore/runtime';
import { questionPhrases } from '../domain/entity-model';
import { CHAT_LIMITS, answerFromSubgraph, asksAboutThePast, modelPrompt, NO_ENTITY_ANSWER, type SubgraphEdge, type SubgraphNode } from '../domain/graph-chat';
import { edgesTouching, linkNodes } from '../store/graph-chat';
import { getGraph, nodesByIds, type NodeRow } from '../store/knowledge-graphs';
import { visibleGraph, type GraphViewer } from './knowledge-graphs';

export interface GraphChatDeps {
  db: Db;
  languageModel: LanguageModel;
  logger: Logger;
}

export interface GraphChatAnswer {
  answer: string;
  nodes: SubgraphNode[];
  edges: SubgraphEdge[];
  /** The linked nodes' ids (a subset of `nodes`). */
  linked: string[];
  /** Whether closed edges were read (the question asks about the past). */
  history: boolean;
}

/**
 * The walk itself, inside the caller's transaction: links the question's phrases to nodes, then at most
 * `CHAT_LIMITS.hops` hops over their edges within the node and edge bounds. Exported for bench:graph-chat, which
 * times exactly this walk with row-level security on and off.
 */
export async function walkNeighbourhood(sql: Sql, tenantId: string, listId: string, question: string, history: boolean): Promise<{ linked: string[]; rows: NodeRow[]; edges: SubgraphEdge[] }> {
  const linked = (await linkNodes(sql, tenantId, listId, questionPhrases(question), CHAT_LIMITS.seeds)).map((l) => l.node_id);
  const nodeIds = new Set(linked);
  // By fact: the same relation said by many rows is one edge of the walk (a closed one by its end too), so copies
  // never spend the edge budget nor repeat in the answer.
  const edges = new Map<string, SubgraphEdge>();
  const factOf = (e: { from_node: string; label: string; to_node: string; valid_to: Date | string | null }) =>
    `${e.from_node}|${e.label}|${e.to_node}|${e.valid_to === null ? '' : new Date(e.valid_to).toISOString()}`;
  let frontier = linked;
  for (let hop = 0; hop < CHAT_LIMITS.hops && frontier.length > 0 && edges.size < CHAT_LIMITS.edges; hop++) {
    const next: string[] = [];
    for (const e of await edgesTouching(sql, tenantId, listId, frontier, history, CHAT_LIMITS.edges)) {
      if (edges.has(factOf(e)) || edges.size >= CHAT_LIMITS.edges) continue;
      const fresh = [e.from_node, e.to_node].filter((id, i, all) => !nodeIds.has(id) && all.indexOf(id) === i);
      if (nodeIds.size + fresh.length > CHAT_LIMITS.nodes) continue;
      for (const id of fresh) {
        nodeIds.add(id);
        next.push(id);
      }
      edges.set(factOf(e), { id: e.edge_id, from: e.from_node, to: e.to_node, label: e.label, valid_from: e.valid_from, valid_to: e.valid_to });
    }
    frontier = next;
  }
  const rows = await nodesByIds(sql, tenantId, listId, [...nodeIds]);
  return { linked, rows, edges: [...edges.values()] };
}

/**
 * Reads the neighbourhood of the question's entities in one graph of the tenant (404 when the tenant has no graph
 * `listId`): links the question's phrases to nodes (names, aliases, domains; case, accents and punctuation folded),
 * walks at most `CHAT_LIMITS.hops` hops from them over current edges (closed ones too when the question asks about
 * the past), keeping at most `CHAT_LIMITS.nodes` nodes and `CHAT_LIMITS.edges` edges, all in one snapshot.
 */
export async function readSubgraph(db: Db, viewer: GraphViewer, listId: string, question: string): Promise<Omit<GraphChatAnswer, 'answer'>> {
  const history = asksAboutThePast(question);
  const tenantId = viewer.tenantId;
  const found = await db.withTenant(tenantId, async (sql) => (visibleGraph(await getGraph(sql, tenantId, listId), viewer) ? walkNeighbourhood(sql, tenantId, listId, question, history) : null));
  // Spec 2's `{detail}` shape, as the other knowledge-graph routes answer it.
  if (!found) throw detailError(AppError.notFound('graph'), 'graph not found');
  const nodes = found.rows.map((n) => ({ id: n.node_id, label: n.label, name: n.name, properties: n.properties }));
  return { nodes, edges: found.edges, linked: found.linked, history };
}

/**
 * `POST /memory/chat`: the subgraph, and an answer from it. With a configured language model (an OpenAI-compatible
 * provider) the model phrases the answer from the subgraph's entities and relations only; the embedded default
 * (and a model that fails or answers nothing) states them deterministically. A question that names no entity of
 * the graph gets a clear answer and an empty subgraph, without asking the model.
 */
export async function graphChat(deps: GraphChatDeps, viewer: GraphViewer, input: { listId: string; question: string }, signal?: AbortSignal): Promise<GraphChatAnswer> {
  const sub = await readSubgraph(deps.db, viewer, input.listId, input.question);
  const seeds = sub.nodes.filter((n) => sub.linked.includes(n.id));
  if (seeds.length === 0) return { ...sub, answer: NO_ENTITY_ANSWER };
  const fallback = answerFromSubgraph(seeds, sub.nodes, sub.edges, sub.history);
  if (deps.languageModel.kind !== 'openai') return { ...sub, answer: fallback };
  try {
    const completion = await deps.languageModel.chat({ messages: modelPrompt(input.question, seeds, sub.nodes, sub.edges), maxTokens: 600, signal });
    const text = completion.message.content?.trim();
    return { ...sub, answer: text ? text : fallback };
  } catch (err) {
    if (signal?.aborted) throw err;
    deps.logger.warn({ err, graph_id: input.listId }, 'graph chat: the language model failed; answering from the subgraph');
    return { ...sub, answer: fallback };
  }
}
