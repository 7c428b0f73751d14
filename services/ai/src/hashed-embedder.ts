import { contentTerms } from './text';
import type { Embedder } from './ports';

/** FNV-1a, 32 bits: fast, stable across processes and versions (the index depends on it). */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * The embedded default embedder: no model, no network. Features are hashed into a fixed vector with a sign bit
 * (the "hashing trick"): stemmed words (weight 1), adjacent word pairs (0.5, some phrase sense) and character
 * 4-grams of each word (0.35, so "invoice"/"invoicing"/"invoices" and typos land near each other). Weights are
 * sublinear in frequency and the vector is L2-normalised. It is lexical at heart, so it complements full text
 * mostly through sub-word overlap; an OpenAI-compatible embedder gives real semantics.
 */
export class HashedEmbedder implements Embedder {
  readonly kind = 'hashed' as const;
  readonly model: string;

  /** `detail`: why this embedder runs (e.g. no local model in the cache), shown in `/readyz`. */
  constructor(
    readonly dims = 384,
    readonly detail?: string,
  ) {
    if (!Number.isInteger(dims) || dims < 16 || dims > 4096) throw new Error('dims must be an integer in [16, 4096]');
    this.model = `lore-hashed-v1-${dims}`;
  }

  async embed(texts: string[]): Promise<number[][]> {
    return texts.map((t) => this.embedOne(t));
  }

  embedOne(text: string): number[] {
    const counts = new Map<string, { n: number; w: number }>();
    const add = (feature: string, w: number) => {
      const c = counts.get(feature);
      if (c) c.n += 1;
      else counts.set(feature, { n: 1, w });
    };
    const terms = contentTerms(text, 5_000);
    terms.forEach((t, i) => {
      add(`w:${t}`, 1);
      const next = terms[i + 1];
      if (next !== undefined) add(`b:${t} ${next}`, 0.5);
      const padded = `<${t}>`;
      if (padded.length > 5) for (let j = 0; j + 4 <= padded.length; j += 1) add(`c:${padded.slice(j, j + 4)}`, 0.35);
    });
    const v = new Array<number>(this.dims).fill(0);
    for (const [feature, { n, w }] of counts) {
      const slot = fnv1a(feature) % this.dims;
      const sign = (fnv1a(feature, 0x9e3779b1) & 1) === 0 ? 1 : -1;
      v[slot] = (v[slot] ?? 0) + sign * w * (1 + Math.log(n));
    }
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    return norm === 0 ? v : v.map((x) => x / norm);
  }
}
