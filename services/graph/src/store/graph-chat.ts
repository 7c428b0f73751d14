import type { Sql } from '@lore/runtime';

/**
 * Graph chat's reads of a knowledge graph (migration 0008's nodes and edges, 0010's keys). Every function takes the
 * tenant first and runs inside the caller's `db.withTenant` transaction.
 */

export interface LinkedNode {
  node_id: string;
  /** The longest key of the node a phrase of the question matched (folded). */
  match_key: string;
}

/**
 * Nodes a phrase of the question names: each phrase and each node key folded by the one function
 * (`graph.kg_fold`), compared by equality (an index condition under row-level security). Longest match first, so
 * "Acme Corp" outranks a node only "Acme" names; at most `limit` nodes.
 */
export async function linkNodes(sql: Sql, tenantId: string, graphId: string, phrases: readonly string[], limit: number): Promise<LinkedNode[]> {
  if (phrases.length === 0) return [];
  const r = await sql.query<{ node_id: string | number; match_key: string }>(
    // One primary-key look-up per folded phrase, whatever the planner knows of the table. The phrases are folded
    // first (MATERIALIZED): under row-level security a condition whose value calls functions that are not leakproof
    // (the fold's) may not be an index condition, so `match_key = ANY(folded phrases)` was a filter over every key of
    // the graph, in the node index's order (6.7 s on 200,000 keys, the whole embedded process waiting; now 22 ms).
    // Each phrase's nodes stop at the limit: a node beyond a phrase's first `limit` by id ranks after those (same
    // length, higher id), so the answer is the same.
    `WITH q AS MATERIALIZED (SELECT DISTINCT graph.kg_fold(p) AS key FROM unnest($3::text[]) AS p)
     SELECT node_id, match_key FROM (
       SELECT DISTINCT ON (k.node_id) k.node_id, k.match_key
         FROM q
         CROSS JOIN LATERAL (
           SELECT n.node_id, n.match_key FROM graph.kg_node_keys n
            WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.match_key = q.key
            ORDER BY n.node_id LIMIT $4
         ) k
        ORDER BY k.node_id, length(k.match_key) DESC
     ) best
     ORDER BY length(match_key) DESC, node_id
     LIMIT $4`,
    [tenantId, graphId, [...phrases], limit],
  );
  return r.rows.map((row) => ({ node_id: String(row.node_id), match_key: row.match_key }));
}

export interface ChatEdgeRow {
  edge_id: string;
  from_node: string;
  to_node: string;
  label: string;
  valid_from: string;
  valid_to: string | null;
}

type RawEdge = { edge_id: string | number; from_node: string | number; to_node: string | number; label: string; valid_from: Date | string; valid_to: Date | string | null };

/**
 * The edges touching any of these nodes, at most `limit`: current ones (open, `valid_to` null) through 0008's
 * partial indexes, and with `history` the closed ones too through 0010's. Current edges come first, then by id.
 */
export async function edgesTouching(sql: Sql, tenantId: string, graphId: string, nodeIds: readonly string[], history: boolean, limit: number): Promise<ChatEdgeRow[]> {
  if (nodeIds.length === 0 || limit <= 0) return [];
  // Each part stops at the limit on its own, so a hub node's thousands of edges are never all gathered.
  const part = (closed: boolean, end: 'from_node' | 'to_node') =>
    `(SELECT edge_id, from_node, to_node, label, valid_from, valid_to FROM graph.kg_edges
       WHERE tenant_id = $1 AND graph_id = $2 AND ${end} = ANY($3::bigint[]) AND valid_to IS ${closed ? 'NOT NULL' : 'NULL'}
       ORDER BY edge_id LIMIT $4)`;
  const parts = [part(false, 'from_node'), part(false, 'to_node'), ...(history ? [part(true, 'from_node'), part(true, 'to_node')] : [])];
  const r = await sql.query<RawEdge>(
    `SELECT DISTINCT ON (valid_to IS NOT NULL, edge_id) * FROM (${parts.join(' UNION ALL ')}) e
      ORDER BY valid_to IS NOT NULL, edge_id
      LIMIT $4`,
    [tenantId, graphId, [...nodeIds], limit],
  );
  return r.rows.map((e) => ({
    edge_id: String(e.edge_id),
    from_node: String(e.from_node),
    to_node: String(e.to_node),
    label: e.label,
    valid_from: new Date(e.valid_from).toISOString(),
    valid_to: e.valid_to === null ? null : new Date(e.valid_to).toISOString(),
  }));
}
