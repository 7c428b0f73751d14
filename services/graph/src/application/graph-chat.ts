import type { LanguageModel } from '@lore/ai';
import { AppError, detailError, type Db, type Logger, type Sql } from '@lore/runtime';
import {
  CHAT_LIMITS,
  answerFromSubgraph,
  asksAboutThePast,
  modelPrompt,
  noEntityAnswer,
  rankLinks,
  readQuestion,
  type AnswerNotes,
  type RelationCount,
  type SubgraphEdge,
  type SubgraphNode,
} from '../domain/graph-chat';
import { currentRelationCounts, edgesOfNodes, matchKeys, type NodeEdgeRow } from '../store/graph-chat';
import { gatherStatisticsIfBlind, getGraph, nodesByIds, type NodeRow } from '../store/knowledge-graphs';
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
  /** What the answer says beside the facts (left out, not in the graph); not part of the route's response. */
  notes?: AnswerNotes;
}

/** What the walk found: the linked nodes, the subgraph, and what the answer should say of what it left out. */
export interface Neighbourhood {
  linked: string[];
  rows: NodeRow[];
  edges: SubgraphEdge[];
  notes: AnswerNotes;
}

/**
 * The walk itself, inside the caller's transaction: links the question's phrases to nodes (`readQuestion`,
 * `rankLinks`), then at most `CHAT_LIMITS.hops` hops over their edges within the node and edge bounds. Each hop reads
 * a share of edges for every node of its frontier and takes them round-robin, one node's next edge after another's,
 * so a hub among the linked nodes never starves the others: every linked node's own (one-hop) facts come before any
 * second hop. The first hop reads at most max(20, 100 / linked nodes) edges per node and end, the second max(4,
 * what is left of the edge budget / frontier nodes). A linked node whose relations the bounds cut gets its current
 * relations counted by label (one indexed count, at most 100,000 edges per end). Exported for bench:graph-chat, which
 * times exactly this walk with row-level security on and off.
 */
export async function walkNeighbourhood(sql: Sql, tenantId: string, listId: string, question: string, history: boolean): Promise<Neighbourhood> {
  const reading = readQuestion(question);
  const found = await matchKeys(sql, tenantId, listId, reading.phrases, reading.parts.map((p) => p.text), CHAT_LIMITS.seeds + 1);
  const linking = rankLinks(reading, found.keys, found.parts, CHAT_LIMITS.seeds);
  const linked = linking.linked;
  const nodeIds = new Set(linked);
  // By fact: the same relation said by many rows is one edge of the walk (a closed one by its end too), so copies
  // never spend the edge budget nor repeat in the answer.
  const edges = new Map<string, SubgraphEdge>();
  const factOf = (e: { from_node: string; label: string; to_node: string; valid_to: string | null }) => `${e.from_node}|${e.label}|${e.to_node}|${e.valid_to ?? ''}`;
  // Linked nodes whose relations were not all read (the walk's bounds, or more edges than a hop reads per node).
  const cut = new Set<string>();
  let frontier = linked;
  for (let hop = 0; hop < CHAT_LIMITS.hops && frontier.length > 0 && edges.size < CHAT_LIMITS.edges; hop++) {
    const left = CHAT_LIMITS.edges - edges.size;
    const perNode = hop === 0 ? Math.max(20, Math.ceil(left / frontier.length)) : Math.min(left, Math.max(4, Math.ceil(left / frontier.length)));
    const read = await edgesOfNodes(sql, tenantId, listId, frontier, history, perNode);
    const queues = new Map<string, NodeEdgeRow[]>(frontier.map((id) => [id, []]));
    for (const e of read.rows) queues.get(e.node)?.push(e);
    if (hop === 0) for (const id of read.full) cut.add(id);
    const next: string[] = [];
    const at = new Map<string, number>(frontier.map((id) => [id, 0]));
    // Round-robin: each node of the frontier in turn takes its next edge that adds a fact within the bounds.
    for (let progressed = true; progressed && edges.size < CHAT_LIMITS.edges; ) {
      progressed = false;
      for (const id of frontier) {
        if (edges.size >= CHAT_LIMITS.edges) break;
        const queue = queues.get(id) ?? [];
        let i = at.get(id) ?? 0;
        for (; i < queue.length; i++) {
          const e = queue[i]!;
          if (edges.has(factOf(e))) continue;
          const fresh = [e.from_node, e.to_node].filter((n, j, all) => !nodeIds.has(n) && all.indexOf(n) === j);
          if (nodeIds.size + fresh.length > CHAT_LIMITS.nodes) {
            if (hop === 0) cut.add(id);
            continue;
          }
          for (const n of fresh) {
            nodeIds.add(n);
            next.push(n);
          }
          edges.set(factOf(e), { id: e.edge_id, from: e.from_node, to: e.to_node, label: e.label, valid_from: e.valid_from, valid_to: e.valid_to });
          progressed = true;
          i++;
          break;
        }
        at.set(id, i);
      }
    }
    // What the edge budget left unread of a linked node's own edges.
    if (hop === 0) for (const id of frontier) if ((at.get(id) ?? 0) < (queues.get(id)?.length ?? 0)) cut.add(id);
    frontier = next;
  }
  const rows = await nodesByIds(sql, tenantId, listId, [...nodeIds]);
  const counts: RelationCount[] = cut.size > 0 ? await currentRelationCounts(sql, tenantId, listId, linked.filter((id) => cut.has(id))) : [];
  const notes: AnswerNotes = { counts, unlooked: linking.unlooked, missing: linking.missing, ambiguous: linking.ambiguous };
  return { linked, rows, edges: [...edges.values()], notes };
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
  const found = await db.withTenant(tenantId, async (sql) => {
    if (!visibleGraph(await getGraph(sql, tenantId, listId), viewer)) return null;
    // A graph asked about right after its first jobs, before autovacuum analyzed it: each phrase's look-up could read
    // every key of the graph (docs/memory.md, "Planner statistics inside a job").
    await gatherStatisticsIfBlind(sql, tenantId, listId);
    return walkNeighbourhood(sql, tenantId, listId, question, history);
  });
  // Spec 2's `{detail}` shape, as the other knowledge-graph routes answer it.
  if (!found) throw detailError(AppError.notFound('graph'), 'graph not found');
  const nodes = found.rows.map((n) => ({ id: n.node_id, label: n.label, name: n.name, properties: n.properties }));
  return { nodes, edges: found.edges, linked: found.linked, history, notes: found.notes };
}

/**
 * `POST /memory/chat`: the subgraph, and an answer from it. With a configured language model (an OpenAI-compatible
 * provider) the model phrases the answer from the subgraph's entities and relations only; the embedded default
 * (and a model that fails or answers nothing) states them deterministically. A question that names no entity of
 * the graph gets a clear answer and an empty subgraph, without asking the model.
 */
export async function graphChat(deps: GraphChatDeps, viewer: GraphViewer, input: { listId: string; question: string }, signal?: AbortSignal): Promise<GraphChatAnswer> {
  const sub = await readSubgraph(deps.db, viewer, input.listId, input.question);
  // In linking order: the best-matched entity first.
  const seeds = sub.linked.map((id) => sub.nodes.find((n) => n.id === id)).filter((n): n is SubgraphNode => n !== undefined);
  if (seeds.length === 0) return { ...sub, answer: noEntityAnswer(sub.notes) };
  const fallback = answerFromSubgraph(seeds, sub.nodes, sub.edges, sub.history, sub.notes);
  if (deps.languageModel.kind !== 'openai') return { ...sub, answer: fallback };
  try {
    const completion = await deps.languageModel.chat({ messages: modelPrompt(input.question, seeds, sub.nodes, sub.edges, sub.notes), maxTokens: 600, signal });
    const text = completion.message.content?.trim();
    return { ...sub, answer: text ? text : fallback };
  } catch (err) {
    if (signal?.aborted) throw err;
    deps.logger.warn({ err, graph_id: input.listId }, 'graph chat: the language model failed; answering from the subgraph');
    return { ...sub, answer: fallback };
  }
}
