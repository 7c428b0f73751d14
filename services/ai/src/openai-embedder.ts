import { AiProviderError, OpenAiClient, readCapped, type OpenAiClientOptions } from './openai-client';
import type { Embedder } from './ports';

export interface OpenAiEmbedderOptions extends OpenAiClientOptions {
  model: string;
  dims: number;
  /** Inputs per request. */
  batchSize?: number;
  /** Send `dimensions` (models that can shorten their vectors, e.g. text-embedding-3-*). */
  requestDimensions?: boolean;
}

/**
 * The most a vector's number takes in JSON (`-0.012345678901234567,` and room for an exponent); a request's answer is
 * read up to its inputs × dims × this, and 64 KiB besides, never more (until 2026-11-30 it was read whole).
 */
const BYTES_PER_NUMBER = 32;
const ANSWER_OVERHEAD_BYTES = 64 * 1024;

/** `/embeddings` of any OpenAI-compatible server; vectors are checked for size and normalised to unit length. */
export class OpenAiEmbedder implements Embedder {
  readonly kind = 'openai' as const;
  readonly model: string;
  readonly dims: number;
  private readonly client: OpenAiClient;

  constructor(private readonly options: OpenAiEmbedderOptions) {
    this.model = options.model;
    this.dims = options.dims;
    this.client = new OpenAiClient(options);
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    const batch = this.options.batchSize ?? 64;
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += batch) {
      const input = texts.slice(i, i + batch);
      const res = await this.client.post(
        '/embeddings',
        { model: this.model, input, encoding_format: 'float', ...(this.options.requestDimensions ? { dimensions: this.dims } : {}) },
        signal,
      );
      const text = await readCapped(res, input.length * this.dims * BYTES_PER_NUMBER + ANSWER_OVERHEAD_BYTES);
      let json: { data?: Array<{ index?: number; embedding?: unknown }> };
      try {
        json = JSON.parse(text) as typeof json;
      } catch {
        throw new AiProviderError('AI provider answered embeddings that are not JSON');
      }
      const data = json.data;
      if (!Array.isArray(data) || data.length !== input.length) throw new AiProviderError('AI provider returned the wrong number of embeddings');
      const ordered = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      for (const item of ordered) {
        const v = item.embedding;
        if (!Array.isArray(v) || v.length !== this.dims || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
          throw new AiProviderError(`AI provider returned an embedding that is not ${this.dims} finite numbers`);
        }
        const norm = Math.sqrt((v as number[]).reduce((s, x) => s + x * x, 0));
        out.push(norm === 0 ? (v as number[]) : (v as number[]).map((x) => x / norm));
      }
    }
    return out;
  }
}
