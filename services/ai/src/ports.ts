import type { SourceChunk } from './citations';

export interface AnswerRequest {
  question: string;
  /** Retrieved chunks, numbered from 1; the model cites them as [n]. */
  sources: SourceChunk[];
  maxTokens: number;
  signal?: AbortSignal;
}

/**
 * Writes an answer from numbered sources, streaming text pieces. Whatever it writes is checked by the citation
 * grounding before it leaves the service, so an implementation need not be trusted to cite correctly.
 */
export interface LanguageModel {
  readonly kind: 'extractive' | 'openai';
  readonly model: string;
  stream(request: AnswerRequest): AsyncIterable<string>;
}

/** Turns texts into unit-length vectors of `dims` dimensions (cosine similarity = dot product). */
export interface Embedder {
  readonly kind: 'hashed' | 'openai' | 'local-model';
  /** Stored with every embedding: vectors of different models are never compared. */
  readonly model: string;
  readonly dims: number;
  /** Why this embedder runs or where its model comes from, for `/readyz` and the start-up log. */
  readonly detail?: string;
  embed(texts: string[], signal?: AbortSignal): Promise<number[][]>;
}

export interface AiDescription {
  language_model: { kind: LanguageModel['kind']; model: string };
  embedder: { kind: Embedder['kind']; model: string; dims: number; detail?: string };
}

export function describeAi(lm: LanguageModel, embedder: Embedder): AiDescription {
  return {
    language_model: { kind: lm.kind, model: lm.model },
    embedder: { kind: embedder.kind, model: embedder.model, dims: embedder.dims, ...(embedder.detail ? { detail: embedder.detail } : {}) },
  };
}
