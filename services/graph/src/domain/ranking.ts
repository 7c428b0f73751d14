/** One retriever's answer: chunk ids, best first. */
export interface RankedList {
  name: string;
  ids: string[];
  /** Weight of this retriever in the fusion (1 by default). */
  weight?: number;
}

export interface FusedHit {
  id: string;
  score: number;
  /** 1-based rank in each retriever that returned the id. */
  ranks: Record<string, number>;
}

/**
 * Reciprocal rank fusion: score(d) = Σ weight / (k + rank). It needs no score calibration between BM25 and
 * cosine similarity, which live on unrelated scales, and rewards documents both retrievers agree on.
 */
export function reciprocalRankFusion(lists: RankedList[], k = 60, limit = 100): FusedHit[] {
  const fused = new Map<string, FusedHit>();
  for (const list of lists) {
    const weight = list.weight ?? 1;
    list.ids.forEach((id, i) => {
      const hit = fused.get(id) ?? { id, score: 0, ranks: {} };
      if (hit.ranks[list.name] !== undefined) return; // a retriever repeating an id counts once
      hit.ranks[list.name] = i + 1;
      hit.score += weight / (k + i + 1);
      fused.set(id, hit);
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || bestRank(a) - bestRank(b) || a.id.localeCompare(b.id))
    .slice(0, limit);
}

function bestRank(h: FusedHit): number {
  return Math.min(...Object.values(h.ranks));
}

/** Normalised discounted cumulative gain at k for graded relevance (BEIR's definition). */
export function ndcgAtK(ranked: string[], relevant: Map<string, number>, k = 10): number {
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => {
    const rel = relevant.get(id) ?? 0;
    if (rel > 0) dcg += (2 ** rel - 1) / Math.log2(i + 2);
  });
  const ideal = [...relevant.values()].filter((r) => r > 0).sort((a, b) => b - a).slice(0, k);
  let idcg = 0;
  ideal.forEach((rel, i) => {
    idcg += (2 ** rel - 1) / Math.log2(i + 2);
  });
  return idcg === 0 ? 0 : dcg / idcg;
}

export function recallAtK(ranked: string[], relevant: Map<string, number>, k = 10): number {
  const rel = [...relevant].filter(([, r]) => r > 0).map(([id]) => id);
  if (rel.length === 0) return 0;
  const top = new Set(ranked.slice(0, k));
  return rel.filter((id) => top.has(id)).length / rel.length;
}
