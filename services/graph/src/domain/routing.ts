import { contentTerms } from '@lore/ai';

/** The vault that receives everything the classifier is not sure about. It always exists in every memory. */
export const UNASSIGNED_VAULT = 'v_unassigned';
/** Spec 1: below this confidence content goes to `v_unassigned` and needs review. */
export const REVIEW_THRESHOLD = 0.7;

export interface VaultProfile {
  vault_id: string;
  name: string;
  description: string;
  examples: string[];
}

export interface RoutingDecision {
  vault_id: string;
  /** In [0, 1], rounded to three decimals. */
  confidence: number;
  needs_review: boolean;
  /** Similarity per candidate vault, best first (for the review queue's "why"). */
  scores: Array<{ vault_id: string; score: number }>;
}

type Vector = Map<string, number>;

function addTerms(into: Vector, text: string, weight: number): void {
  for (const t of contentTerms(text, 20_000)) into.set(t, (into.get(t) ?? 0) + weight);
}

function cosine(a: Vector, b: Vector): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (const [, v] of a) na += v * v;
  for (const [, v] of b) nb += v * v;
  const [small, large] = a.size < b.size ? [a, b] : [b, a];
  for (const [t, v] of small) {
    const w = large.get(t);
    if (w !== undefined) dot += v * w;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * Lexical vault classifier. Each vault becomes a weighted term profile (name ×3, description ×2, each example
 * ×1); terms are weighted by how specific they are to one vault (idf across vaults) and the document is compared
 * to every profile by cosine similarity. Confidence combines two things a reviewer cares about:
 *  - strength: how well the best vault matches at all (saturating in the similarity), and
 *  - separation: how clearly it beats the runner-up.
 * A clear match to one vault lands well above 0.70; an unrelated text or a tie between two vaults falls below.
 */
export function classify(content: string, vaults: VaultProfile[], threshold = REVIEW_THRESHOLD): RoutingDecision {
  const candidates = vaults.filter((v) => v.vault_id !== UNASSIGNED_VAULT);
  if (candidates.length === 0) {
    return { vault_id: UNASSIGNED_VAULT, confidence: 0, needs_review: true, scores: [] };
  }
  const profiles = candidates.map((v) => {
    const vec: Vector = new Map();
    addTerms(vec, v.name.replace(/[_-]/g, ' '), 3);
    addTerms(vec, v.description, 2);
    for (const e of v.examples.slice(0, 50)) addTerms(vec, e, 1);
    return vec;
  });
  const df = new Map<string, number>();
  for (const p of profiles) for (const t of p.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const n = profiles.length;
  const idf = (t: string) => Math.log(1 + n / (df.get(t) ?? n));
  const weighted = profiles.map((p) => new Map([...p].map(([t, v]) => [t, (1 + Math.log(v)) * idf(t)])));

  const doc: Vector = new Map();
  for (const t of contentTerms(content, 20_000)) {
    if (!df.has(t)) continue; // terms no vault mentions cannot tell vaults apart
    doc.set(t, (doc.get(t) ?? 0) + 1);
  }
  const docVec: Vector = new Map([...doc].map(([t, v]) => [t, (1 + Math.log(v)) * idf(t)]));

  const scores = candidates
    .map((v, i) => ({ vault_id: v.vault_id, score: round(cosine(docVec, weighted[i] as Vector)) }))
    .sort((a, b) => b.score - a.score || a.vault_id.localeCompare(b.vault_id));
  const best = scores[0]?.score ?? 0;
  const second = scores[1]?.score ?? 0;
  // One shared word is a coincidence, three are a topic: evidence grows with the distinct matched terms.
  const evidence = Math.min(1, doc.size / 3);
  const strength = (1 - Math.exp(-best / 0.1)) * evidence;
  const separation = best > 0 ? (best - second) / best : 0;
  const confidence = round(Math.min(1, Math.max(0, strength * (0.4 + 0.6 * separation))));
  const chosen = scores[0]?.vault_id ?? UNASSIGNED_VAULT;
  if (confidence < threshold) {
    return { vault_id: UNASSIGNED_VAULT, confidence, needs_review: true, scores };
  }
  return { vault_id: chosen, confidence, needs_review: false, scores };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
