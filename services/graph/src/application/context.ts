import { randomUUID } from 'node:crypto';
import type { Embedder, LanguageModel } from '@lore/ai';
import { AppError, counterOn, histogramOn, type BlobStore, type Db, type EventBus, type Logger, type Sql } from '@lore/runtime';
import type { Counter, Histogram, Registry } from 'prom-client';
import type { OcrEngine } from '@lore/extract/ocr';
import { ensureUnassignedVault, insertMemoryRow, memoryErasing } from '../store/memories';

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
  /** Rows (or documents, uploads) deleted per transaction when a memory is erased. */
  eraseBatchRows: number;
  /** Largest body of a connector's batch push (`POST /internal/v1/connector-documents`), in bytes. */
  connectorBodyLimitBytes: number;
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
  eraseBatchRows: 500,
  // 20 documents of up to 5 MB of text each, with room for their JSON escapes and metadata.
  connectorBodyLimitBytes: 64 * 1024 * 1024,
};

export interface GraphMetrics {
  ingested: Counter<'source' | 'routed'>;
  dlpMatches: Counter<'kind'>;
  indexed: Counter<'result'>;
  ingestToIndexed: Histogram;
  searchDuration: Histogram<'mode' | 'stream'>;
  citationsRemoved: Counter;
  uploads: Counter<'kind' | 'result'>;
  erasures: Counter<'outcome'>;
  connectorDocuments: Counter<'outcome'>;
  connectorDeletions: Counter;
}

export function createGraphMetrics(registry: Registry): GraphMetrics {
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) => counterOn(registry, { name, help, labelNames });
  const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]) =>
    histogramOn(registry, { name, help, labelNames, buckets });
  return {
    ingested: counter('lore_memory_documents_ingested_total', 'Documents accepted for indexing', ['source', 'routed']),
    dlpMatches: counter('lore_memory_dlp_matches_total', 'Sensitive values masked before storage, by kind', ['kind']),
    indexed: counter('lore_memory_documents_indexed_total', 'Indexing outcomes', ['result']),
    ingestToIndexed: histogram('lore_memory_ingest_to_indexed_seconds', 'Time from acceptance to searchable', [], [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]),
    searchDuration: histogram('lore_memory_search_duration_seconds', 'Search latency until the answer is complete', ['mode', 'stream'], [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
    citationsRemoved: counter('lore_memory_citation_markers_removed_total', 'Answer markers dropped by the grounding check', []),
    uploads: counter('lore_memory_uploads_total', 'Uploads processed, by detected kind and result', ['kind', 'result']),
    erasures: counter('lore_memory_erasures_total', 'Memory lifecycle messages handled: erasures completed, duplicates, erasures lifted', ['outcome']),
    connectorDocuments: counter('lore_memory_connector_documents_total', 'Documents a connector pushed, by outcome (created, updated, unchanged, skipped)', ['outcome']),
    connectorDeletions: counter('lore_memory_connector_documents_deleted_total', 'Connector documents deleted at a connector\'s request', []),
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
  /**
   * Memories whose row and `v_unassigned` vault this process saw committed; lets requests skip creating them. (The
   * row is never deleted: an erased memory keeps it as its tombstone, and lifting the erasure recreates the vault.)
   */
  knownMemories: Set<string>;
}

/** Who and where: always taken from the verified identity (or, in the worker, from our own messages). */
export interface MemoryScope {
  tenantId: string;
  workspaceId: string;
  memoryId: string;
  /**
   * The caller holds an administrator role (`isAdminRole`): it sees every document, those a connector pushed as not
   * public included. Absent or false: public documents, and those of `groups`.
   */
  admin?: boolean;
  /**
   * The caller's user groups (the identity's `groups`: a signed-in user's; none for keys and OAuth tokens). A
   * document a connector pushed as not public is seen by a caller who is not an administrator only when its
   * `access_groups` name one of them.
   */
  groups?: readonly number[];
}

/**
 * The groups whose private documents the caller may see, or null when it sees every document (an administrator):
 * the value the store's access conditions take (docs/memory.md, "Connector documents", Access).
 */
export function visibleGroups(scope: MemoryScope): readonly number[] | null {
  return scope.admin === true ? null : (scope.groups ?? []);
}

const KNOWN_MEMORIES_LIMIT = 10_000;

/** A write to a memory that is being or was erased (the gateway deleted it without retaining its data). */
export class MemoryErasedError extends AppError {
  constructor() {
    super('NOT_FOUND', 'memory not found');
  }
}

/**
 * Opens the memory for work in the caller's transaction: creates its lazy state unless this process already saw it
 * committed, and refuses (404, `MemoryErasedError`) when it is being or was erased. Every transaction that writes
 * to a memory calls this first, so no write can outlive an erasure (see `memoryErasing` for the locking).
 */
export async function openMemory(deps: MemoryDeps, sql: Sql, scope: MemoryScope): Promise<void> {
  const known = deps.knownMemories.has(`${scope.tenantId}\u0000${scope.memoryId}`);
  if (!known) await insertMemoryRow(sql, scope.tenantId, scope.memoryId);
  if (await memoryErasing(sql, scope.tenantId, scope.memoryId)) throw new MemoryErasedError();
  if (!known) await ensureUnassignedVault(sql, scope.tenantId, scope.memoryId);
}

/** Call after the transaction that ran `openMemory` committed. */
export function rememberMemory(deps: MemoryDeps, scope: MemoryScope): void {
  if (deps.knownMemories.size >= KNOWN_MEMORIES_LIMIT) deps.knownMemories.clear();
  deps.knownMemories.add(`${scope.tenantId}\u0000${scope.memoryId}`);
}

export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replace(/-/g, '')}`;
}
