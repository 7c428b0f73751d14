import type { Sql } from '@lore/runtime';

/**
 * Graph chat's reads of a knowledge graph (migration 0008's nodes and edges, 0010's keys). Every function takes the
 * tenant first and runs inside the caller's `db.withTenant` transaction.
 */

export interface MatchedKey {
  node_id: string;
  /** The folded key matched. */
  match_key: string;
  /** The indexes (in `phrases`) of the phrases that fold to it. */
  phrases: number[];
}

export interface MatchedPart {
  node_id: string;
  /** The index (in `parts`) of the word. */
  part: number;
}

/**
 * The nodes the question's phrases name, and the people its lone words may name by part of their name. Each phrase
 * and each node key is folded by the one function (`graph.kg_fold`) and compared by equality (an index condition
 * under row-level security): for each distinct folded phrase its first `perKey` nodes by id. A weak phrase (an
 * ordinary word alone) does not match a node whose only key it equals is the first label of its `domain` ("work" and
 * work.com). A profile phrase (a normalised URL) also matches the person whose resolution key is `profile:<url>`
 * (the nodes' unique index). A word of `parts` matches the key `part:<folded word>` that people's names have for
 * their first and last parts (migration 0016), its first two nodes (one means exactly one person has it). Ranking is
 * the caller's (`rankLinks`).
 */
export async function matchKeys(
  sql: Sql,
  tenantId: string,
  graphId: string,
  phrases: ReadonlyArray<{ text: string; weak: boolean; profile?: boolean }>,
  parts: readonly string[],
  perKey: number,
): Promise<{ keys: MatchedKey[]; parts: MatchedPart[] }> {
  if (phrases.length === 0 && parts.length === 0) return { keys: [], parts: [] };
  // Only the look-ups the question needs (most have no profile URL, many no lone word): each is a CTE and a branch.
  const params: unknown[] = [tenantId, graphId];
  const param = (v: unknown) => `$${params.push(v)}`;
  const ctes: string[] = [];
  const branches: string[] = [];
  if (phrases.length > 0) {
    const [texts, weak, limit] = [param(phrases.map((p) => p.text)), param(phrases.map((p) => p.weak)), param(perKey)];
    // One primary-key look-up per folded phrase, whatever the planner knows of the table. The phrases are folded
    // first (MATERIALIZED): under row-level security a condition whose value calls functions that are not leakproof
    // (the fold's) may not be an index condition, so `match_key = ANY(folded phrases)` was a filter over every key of
    // the graph, in the node index's order (6.7 s on 200,000 keys, the whole embedded process waiting; now 22 ms).
    ctes.push(`q AS MATERIALIZED (
       SELECT graph.kg_fold(p.phrase) AS key, array_agg(p.ord::int - 1 ORDER BY p.ord) AS ords, bool_and(p.weak) AS weak
         FROM unnest(${texts}::text[], ${weak}::boolean[]) WITH ORDINALITY AS p(phrase, weak, ord)
        GROUP BY 1)`);
    branches.push(`SELECT k.node_id, q.key AS match_key, q.ords, false AS part
       FROM q
       CROSS JOIN LATERAL (
         SELECT n.node_id FROM graph.kg_node_keys n
          WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.match_key = q.key
            -- The domain-label test of a weak phrase's candidate: a scalar subquery, run for this candidate only (by
            -- the node's primary key); an EXISTS here became a hashed subplan that folded every node of the graph.
            AND (NOT q.weak OR (
              SELECT graph.kg_fold(split_part(m.properties ->> 'domain', '.', 1)) = q.key
                 AND graph.kg_fold(m.name) <> q.key
                 AND graph.kg_fold(coalesce(m.properties ->> 'name', '')) <> q.key
                 AND graph.kg_fold(coalesce(m.properties ->> 'title', '')) <> q.key
                 AND NOT EXISTS (
                   SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(m.properties -> 'aliases') = 'array' THEN m.properties -> 'aliases' ELSE '[]'::jsonb END) AS a(alias)
                    WHERE graph.kg_fold(a.alias) = q.key)
                FROM graph.kg_nodes m
               WHERE m.tenant_id = $1 AND m.graph_id = $2 AND m.node_id = n.node_id) IS NOT TRUE)
          ORDER BY n.node_id LIMIT ${limit}
       ) k
      WHERE q.key <> ''`);
  }
  const profiles = phrases.flatMap((p, i) => (p.profile === true ? [{ text: p.text, i }] : []));
  if (profiles.length > 0) {
    const [texts, ords] = [param(profiles.map((p) => `profile:${p.text}`)), param(profiles.map((p) => p.i))];
    ctes.push(`u AS MATERIALIZED (
       SELECT p.key, array_agg(p.ord ORDER BY p.ord) AS ords FROM unnest(${texts}::text[], ${ords}::int[]) AS p(key, ord) GROUP BY 1)`);
    branches.push(`SELECT k.node_id, u.key, u.ords, false
       FROM u
       CROSS JOIN LATERAL (
         SELECT n.node_id FROM graph.kg_nodes n
          WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.label = 'Person' AND n.resolution_key = u.key
          LIMIT 1
       ) k`);
  }
  if (parts.length > 0) {
    const words = param([...parts]);
    ctes.push(`w AS MATERIALIZED (
       SELECT 'part:' || graph.kg_fold(p.word) AS key, array_agg(p.ord::int - 1 ORDER BY p.ord) AS ords
         FROM unnest(${words}::text[]) WITH ORDINALITY AS p(word, ord)
        WHERE graph.kg_fold(p.word) <> ''
        GROUP BY 1)`);
    branches.push(`SELECT k.node_id, w.key, w.ords, true
       FROM w
       CROSS JOIN LATERAL (
         SELECT n.node_id FROM graph.kg_node_keys n
          WHERE n.tenant_id = $1 AND n.graph_id = $2 AND n.match_key = w.key
          ORDER BY n.node_id LIMIT 2
       ) k`);
  }
  const r = await sql.query<{ node_id: string | number; match_key: string; ords: number[]; part: boolean }>(`WITH ${ctes.join(', ')} ${branches.join(' UNION ALL ')}`, params);
  const keys: MatchedKey[] = [];
  const matchedParts: MatchedPart[] = [];
  for (const row of r.rows) {
    if (row.part) for (const i of row.ords) matchedParts.push({ node_id: String(row.node_id), part: i });
    else keys.push({ node_id: String(row.node_id), match_key: row.match_key, phrases: row.ords.map(Number) });
  }
  return { keys, parts: matchedParts };
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

/** An edge read for one node of the walk's frontier (`node`: the end it was read from). */
export interface NodeEdgeRow extends ChatEdgeRow {
  node: string;
}

/**
 * The edges of each of these nodes, at most `perNode` a node from each end: current ones (open, `valid_to` null)
 * through 0008's partial indexes, and with `history` the closed ones too through 0014's. Per node and end, facts
 * between entities come before the rows that describe them (`DESCRIBES`), then by id; the rows come back in the
 * order the walk takes them (see the sort below). `full` lists the nodes that may
 * have more than were read (an end gave `perNode` rows). A hub's thousands of edges are never all returned, and one
 * node's edges never crowd out another's.
 */
export async function edgesOfNodes(sql: Sql, tenantId: string, graphId: string, nodeIds: readonly string[], history: boolean, perNode: number): Promise<{ rows: NodeEdgeRow[]; full: Set<string> }> {
  if (nodeIds.length === 0 || perNode <= 0) return { rows: [], full: new Set() };
  const part = (i: number, closed: boolean, end: 'from_node' | 'to_node') =>
    `(SELECT ${i} AS part, edge_id, from_node, to_node, label, valid_from, valid_to FROM graph.kg_edges
       WHERE tenant_id = $1 AND graph_id = $2 AND ${end} = f.node AND valid_to IS ${closed ? 'NOT NULL' : 'NULL'}
       ORDER BY label = 'DESCRIBES', edge_id LIMIT $4)`;
  const parts = [part(0, false, 'from_node'), part(1, false, 'to_node'), ...(history ? [part(2, true, 'from_node'), part(3, true, 'to_node')] : [])];
  const r = await sql.query<RawEdge & { node: string | number; part: number }>(
    `SELECT f.node, e.* FROM unnest($3::bigint[]) AS f(node)
      CROSS JOIN LATERAL (${parts.join(' UNION ALL ')}) e`,
    [tenantId, graphId, [...nodeIds], perNode],
  );
  const perPart = new Map<string, number>();
  const full = new Set<string>();
  const rows: NodeEdgeRow[] = [];
  const seen = new Set<string>();
  for (const e of r.rows) {
    const node = String(e.node);
    const k = `${node}|${e.part}`;
    const n = (perPart.get(k) ?? 0) + 1;
    perPart.set(k, n);
    if (n >= perNode) full.add(node);
    // A loop (from = to) comes from both ends: once.
    if (seen.has(`${node}|${e.edge_id}`)) continue;
    seen.add(`${node}|${e.edge_id}`);
    rows.push({
      node,
      edge_id: String(e.edge_id),
      from_node: String(e.from_node),
      to_node: String(e.to_node),
      label: e.label,
      valid_from: new Date(e.valid_from).toISOString(),
      valid_to: e.valid_to === null ? null : new Date(e.valid_to).toISOString(),
    });
  }
  // Per node: current first, entity facts before DESCRIBES; within those, the first relation of each kind (label and
  // direction) before the second of any (a hub's one LOCATED_IN is not behind its 300 WORKS_AT), then by id.
  const byId = (a: NodeEdgeRow, b: NodeEdgeRow) => (BigInt(a.edge_id) < BigInt(b.edge_id) ? -1 : BigInt(a.edge_id) > BigInt(b.edge_id) ? 1 : 0);
  const rank = (e: NodeEdgeRow) => (e.valid_to === null ? 0 : 2) + (e.label === 'DESCRIBES' ? 1 : 0);
  rows.sort(byId);
  const nth = new Map<NodeEdgeRow, number>();
  const kinds = new Map<string, number>();
  for (const e of rows) {
    const kind = `${e.node}|${rank(e)}|${e.label}|${e.from_node === e.node ? '>' : '<'}`;
    const n = kinds.get(kind) ?? 0;
    kinds.set(kind, n + 1);
    nth.set(e, n);
  }
  rows.sort((a, b) => rank(a) - rank(b) || nth.get(a)! - nth.get(b)! || byId(a, b));
  return { rows, full };
}

/** Most edges a relation count reads from each end of a node; past it, the count is "at least". */
export const COUNT_CAP = 100_000;

/**
 * The current relations of each of these nodes in the whole graph, by label: distinct facts (the other end, the
 * direction), not rows. Read from 0008's partial indexes of current edges, which hold the label (an index-only scan
 * when the visibility map allows), at most `cap` edges from each end of a node.
 */
export async function currentRelationCounts(sql: Sql, tenantId: string, graphId: string, nodeIds: readonly string[], cap = COUNT_CAP): Promise<Array<{ node: string; label: string; count: number; atLeast: boolean }>> {
  if (nodeIds.length === 0) return [];
  const r = await sql.query<{ node: string | number; label: string; count: number; capped: boolean }>(
    `SELECT x.node, x.label, count(DISTINCT x.dir || x.other::text)::int AS count, bool_or(x.side_rows >= $4) AS capped
       FROM (
         SELECT f.node, e.dir, e.label, e.other, count(*) OVER (PARTITION BY f.node, e.dir) AS side_rows
           FROM unnest($3::bigint[]) AS f(node)
           CROSS JOIN LATERAL (
             (SELECT '>' AS dir, label, to_node AS other FROM graph.kg_edges
               WHERE tenant_id = $1 AND graph_id = $2 AND from_node = f.node AND valid_to IS NULL LIMIT $4)
             UNION ALL
             (SELECT '<', label, from_node FROM graph.kg_edges
               WHERE tenant_id = $1 AND graph_id = $2 AND to_node = f.node AND valid_to IS NULL LIMIT $4)
           ) e
       ) x
      GROUP BY x.node, x.label
      ORDER BY x.node, count(DISTINCT x.dir || x.other::text) DESC, x.label`,
    [tenantId, graphId, [...nodeIds], cap],
  );
  return r.rows.map((row) => ({ node: String(row.node), label: row.label, count: Number(row.count), atLeast: row.capped }));
}
