import { z } from 'zod';

/**
 * Payloads of the memory events on `lore.events` (spec 1 shows only `memory.ingest.completed`'s; the others are
 * Lore's design, documented in docs/memory.md). Sensitive values never appear: DLP events carry counts per kind.
 */
export const MemoryIngestCompletedSchema = z.object({
  doc_id: z.string(),
  vault_id: z.string(),
  chunk_count: z.number().int(),
  upload_id: z.string().nullable(),
});

export const MemoryDlpFlaggedSchema = z.object({
  doc_id: z.string(),
  dlp_matches: z.number().int().positive(),
  kinds: z.record(z.string(), z.number().int()),
  source: z.enum(['ingest', 'upload', 'connector']),
});

export const MemoryAutoRoutedSchema = z.object({
  doc_id: z.string(),
  vault_id: z.string(),
  routing_confidence: z.number().min(0).max(1),
  needs_review: z.boolean(),
  mode: z.string(),
});

export const MemoryEntityCreatedSchema = z.object({
  entity_id: z.string(),
  name: z.string(),
  kind: z.string(),
  doc_id: z.string(),
});

export const MemoryContradictionSourceSchema = z.object({ document_id: z.string(), value: z.string() });

export const MemoryContradictionDetectedSchema = z.object({
  contradiction_id: z.string(),
  entity: z.string(),
  attribute: z.string(),
  sources: z.array(MemoryContradictionSourceSchema).length(2),
});

export const MemoryContradictionResolvedSchema = z.object({
  contradiction_id: z.string(),
  resolution: z.enum(['keep_first', 'keep_second', 'both_valid', 'dismissed']),
  kept_document_id: z.string().nullable(),
});

export const MemoryHealthAssessedSchema = z.object({
  score: z.number().int().min(0).max(100),
  status: z.enum(['healthy', 'degraded', 'unhealthy']),
  diagnostics: z.array(z.object({ code: z.string(), severity: z.string(), value: z.number() })),
});

/** The message on `lore.memory.ingest` (keyed by memory id): one document to index. */
export const MemoryIngestMessageSchema = z.object({
  event_id: z.string(),
  tenant_id: z.string(),
  workspace_id: z.string(),
  memory_id: z.string(),
  doc_id: z.string(),
});

/** The message on `lore.memory.uploads` (keyed by memory id): one stored upload to extract. */
export const MemoryUploadMessageSchema = z.object({
  event_id: z.string(),
  tenant_id: z.string(),
  workspace_id: z.string(),
  memory_id: z.string(),
  upload_id: z.string(),
});

/**
 * The message on `lore.graph.jobs` (keyed by graph id, so one graph's jobs apply in order): one knowledge-graph job
 * (upload, connector ingest, generate) whose row `graph.graph_jobs` holds what it reads (docs/memory.md, "Knowledge
 * graphs").
 */
export const GraphJobMessageSchema = z.object({
  event_id: z.string().min(1),
  tenant_id: z.string().min(1),
  graph_id: z.string().min(1),
  job_id: z.string().min(1),
});
export type GraphJobMessage = z.infer<typeof GraphJobMessageSchema>;

/**
 * The messages on `lore.memory.lifecycle` (keyed by memory id, so one memory's changes arrive in order), written
 * by the gateway through the outbox in the transaction that changed the memory. `memory.deleted` is sent only when
 * the data is not retained: the data plane erases everything the memory holds. `memory.created` is sent when a
 * memory id is created (again) through the admin API, so a data plane that erased an earlier memory of that id
 * lets the new one be written to.
 */
export const MemoryDeletedMessageSchema = z.object({
  event_id: z.string().min(1),
  type: z.literal('memory.deleted'),
  tenant_id: z.string().min(1),
  memory_id: z.string().min(1),
  retain_data: z.literal(false),
  occurred_at: z.string(),
});

export const MemoryCreatedMessageSchema = z.object({
  event_id: z.string().min(1),
  type: z.literal('memory.created'),
  tenant_id: z.string().min(1),
  memory_id: z.string().min(1),
  occurred_at: z.string(),
});

export const MemoryLifecycleMessageSchema = z.discriminatedUnion('type', [MemoryDeletedMessageSchema, MemoryCreatedMessageSchema]);

export type MemoryDeletedMessage = z.infer<typeof MemoryDeletedMessageSchema>;
export type MemoryCreatedMessage = z.infer<typeof MemoryCreatedMessageSchema>;
export type MemoryLifecycleMessage = z.infer<typeof MemoryLifecycleMessageSchema>;

export type MemoryIngestMessage = z.infer<typeof MemoryIngestMessageSchema>;
export type MemoryUploadMessage = z.infer<typeof MemoryUploadMessageSchema>;
