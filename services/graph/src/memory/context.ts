import { randomUUID } from 'node:crypto';
import type { BlobStore, Db, EventBus, Logger, Sql } from '@lore/runtime';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Embedder, LanguageModel } from '../ai/ports';
import type { OcrEngine } from '../extract/ocr';
import { ensureMemory } from '../store/memories';

export interface MemoryConfig {
  /** Largest upload accepted (bytes); larger answers 413. */
  uploadMaxBytes: number;
  /** Largest `content` of an ingest request (characters). */
  maxContentChars: number;
  /** Chunks handed to the answerer. */
  searchTopK: number;
  /** Candidates each retriever contributes to the fusion. */
  candidatePool: number;
  answerMaxTokens: number;
  /** Least time between two published health assessments of one memory. */
  healthIntervalMs: number;
  /** A queued document older than this counts as stale in the health score. */
  staleAfterMs: number;
  pdfTimeoutMs: number;
  maxPdfPages: number;
  ocrBelowChars: number;
  maxOcrImages: number;
  /** Failed indexing attempts of one document before it is marked failed. */
  maxIndexAttempts: number;
}

export const DEFAULT_MEMORY_CONFIG: MemoryConfig = {
  uploadMaxBytes: 25 * 1024 * 1024,
  maxContentChars: 500_000,
  searchTopK: 6,
  candidatePool: 40,
  answerMaxTokens: 600,
  healthIntervalMs: 60_000,
  staleAfterMs: 10 * 60_000,
  pdfTimeoutMs: 60_000,
  maxPdfPages: 500,
  ocrBelowChars: 20,
  maxOcrImages: 50,
  maxIndexAttempts: 5,
};

export interface GraphMetrics {
  ingested: Counter<'source' | 'routed'>;
  dlpMatches: Counter<'kind'>;
  indexed: Counter<'result'>;
  ingestToIndexed: Histogram;
  searchDuration: Histogram<'mode' | 'stream'>;
  citationsRemoved: Counter;
  uploads: Counter<'kind' | 'result'>;
}

export function createGraphMetrics(registry: Registry): GraphMetrics {
  const existing = (name: string) => registry.getSingleMetric(name);
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    (existing(name) as Counter<L> | undefined) ?? new Counter<L>({ name, help, labelNames, registers: [registry] });
  const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]) =>
    (existing(name) as Histogram<L> | undefined) ?? new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
  return {
    ingested: counter('lore_memory_documents_ingested_total', 'Documents accepted for indexing', ['source', 'routed']),
    dlpMatches: counter('lore_memory_dlp_matches_total', 'Sensitive values masked before storage, by kind', ['kind']),
    indexed: counter('lore_memory_documents_indexed_total', 'Indexing outcomes', ['result']),
    ingestToIndexed: histogram('lore_memory_ingest_to_indexed_seconds', 'Time from acceptance to searchable', [], [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]),
    searchDuration: histogram('lore_memory_search_duration_seconds', 'Search latency until the answer is complete', ['mode', 'stream'], [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
    citationsRemoved: counter('lore_memory_citation_markers_removed_total', 'Answer markers dropped by the grounding check', []),
    uploads: counter('lore_memory_uploads_total', 'Uploads processed, by detected kind and result', ['kind', 'result']),
  };
}

export interface MemoryDeps {
  db: Db;
  bus: EventBus;
  blobs: BlobStore;
  logger: Logger;
  metrics: GraphMetrics;
  languageModel: LanguageModel;
  embedder: Embedder;
  ocr: OcrEngine | null;
  /** True when chunks carry embeddings (pgvector present and not disabled). */
  vectors: boolean;
  config: MemoryConfig;
  /** Memories this process saw committed (memories are never deleted here); lets requests skip ensureMemory. */
  knownMemories: Set<string>;
}

/** Who and where: always taken from the verified identity (or, in the worker, from our own messages). */
export interface MemoryScope {
  tenantId: string;
  workspaceId: string;
  memoryId: string;
}

const KNOWN_MEMORIES_LIMIT = 10_000;

/** Creates the memory's lazy state unless this process already saw it committed. */
export async function ensureMemoryOnce(deps: MemoryDeps, sql: Sql, scope: MemoryScope): Promise<void> {
  if (deps.knownMemories.has(`${scope.tenantId}\u0000${scope.memoryId}`)) return;
  await ensureMemory(sql, scope.tenantId, scope.memoryId);
}

/** Call after the transaction that ran `ensureMemoryOnce` committed. */
export function rememberMemory(deps: MemoryDeps, scope: MemoryScope): void {
  if (deps.knownMemories.size >= KNOWN_MEMORIES_LIMIT) deps.knownMemories.clear();
  deps.knownMemories.add(`${scope.tenantId}\u0000${scope.memoryId}`);
}

export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replace(/-/g, '')}`;
}
