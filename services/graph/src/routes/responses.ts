import { z } from 'zod';

/** Response shapes of the memory routes (documented in docs/memory.md, published in openapi.json). */
export const ErrorSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    request_id: z.string(),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

export const DocumentSchema = z.object({
  doc_id: z.string(),
  vault_id: z.string(),
  title: z.string(),
  content_type: z.string(),
  source: z.enum(['ingest', 'upload']),
  upload_id: z.string().nullable(),
  status: z.enum(['queued', 'indexed', 'failed']),
  routing_mode: z.string(),
  routing_confidence: z.number().min(0).max(1),
  needs_review: z.boolean(),
  dlp_matches: z.number().int(),
  dlp_kinds: z.record(z.string(), z.number().int()),
  chunk_count: z.number().int(),
  entity_count: z.number().int(),
  error: z.string().nullable(),
  created_at: z.string(),
  indexed_at: z.string().nullable(),
});

export const DocumentListSchema = z.object({ documents: z.array(DocumentSchema), count: z.number().int(), next_cursor: z.string().nullable() });

export const VaultSchema = z.object({
  vault_id: z.string(),
  name: z.string(),
  description: z.string(),
  examples: z.array(z.string()),
  document_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const VaultListSchema = z.object({ vaults: z.array(VaultSchema), count: z.number().int() });

export const UploadSchema = z.object({
  upload_id: z.string(),
  status: z.enum(['pending', 'extracting', 'indexing', 'completed', 'failed']),
  filename: z.string(),
  size_bytes: z.number().int(),
  doc_id: z.string().nullable(),
  extractor: z.string().nullable(),
  ocr: z.boolean(),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const SideSchema = z.object({ document_id: z.string(), title: z.string().nullable(), value: z.string(), sentence: z.string() });

export const ContradictionSchema = z.object({
  contradiction_id: z.string(),
  entity: z.string(),
  attribute: z.string(),
  status: z.enum(['open', 'resolved']),
  sources: z.tuple([SideSchema, SideSchema]),
  resolution: z.string().nullable(),
  kept_document_id: z.string().nullable(),
  note: z.string().nullable(),
  detected_at: z.string(),
  resolved_at: z.string().nullable(),
});

export const ContradictionListSchema = z.object({ contradictions: z.array(ContradictionSchema), count: z.number().int() });

export const HealthSchema = z.object({
  score: z.number().int().min(0).max(100),
  status: z.enum(['healthy', 'degraded', 'unhealthy']),
  diagnostics: z.array(z.object({ code: z.string(), severity: z.enum(['info', 'warning', 'critical']), message: z.string(), penalty: z.number(), value: z.number() })),
  inputs: z.record(z.string(), z.number()),
  assessed_at: z.string(),
});
